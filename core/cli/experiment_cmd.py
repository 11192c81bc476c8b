"""`hat experiment …`: the mini-replication of the HAT report.

    hat experiment replicate --profile cpu --ifeval input_data.jsonl
    hat experiment replicate --profile order-desk         # on an operator's harness and tasks
    hat experiment replicate --resume <run folder>        # continue where it stopped
    hat experiment status <run folder>

Run folders default to `<home>/experiments/<profile>-<UTC stamp>/`; `--results DIR` also
copies the report (Markdown, JSON, plots) there. See core/experiment/replicate.py.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from core.cli.common import console, fail, open_store

app = typer.Typer(
    help="Replicate the HAT report's experiment on a small budget.", no_args_is_help=True
)


def _say(message: str) -> None:
    stamp = datetime.now(UTC).strftime("%H:%M:%S")
    console.print(f"{stamp} {message}", markup=False)


@app.command()
def replicate(
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-p",
            help="ci | cpu | cpu-shared | gpu (the live room), order-desk-ci | order-desk (a "
            "task-file world), or a profile YAML file.",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Run folder (default <home>/experiments/...).")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Continue the replication in this folder.")
    ] = None,
    ifeval: Annotated[
        Path | None,
        typer.Option(
            "--ifeval",
            help="IFEval prompts (official input_data.jsonl); default: "
            "<home>/datasets/ifeval/ when present, else IFEval is left out.",
        ),
    ] = None,
    results: Annotated[
        Path | None, typer.Option("--results", help="Also copy the report into this folder.")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Stop after this step (setup, data, ...).")
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            min=0,
            help="Seed of a new replication: training tasks, HSA variants, RL tasks, data "
            "order and LoRA initialisation (evaluation items stay the same). Default: the "
            "profile's.",
        ),
    ] = None,
    deadline: Annotated[
        str | None,
        typer.Option(
            "--deadline",
            help="UTC time (HH:MM, or an ISO date-time) after which no evaluation item starts; "
            "the report is then written from the items done (resume to finish).",
        ),
    ] = None,
) -> None:
    """Build oracle data, train fixed-harness SFT and HAT with matched step budgets, evaluate
    base / fixed-SFT / HAT (LS-QA, HV-QA, IFEval, a harness edit) and write the report."""
    from core.experiment.profiles import load_profile
    from core.experiment.replicate import STEPS, Replication, ReplicationError
    from core.paths import home
    from core.train.config import ConfigError

    if until is not None and until not in STEPS:
        fail(f"--until {until!r}: one of {', '.join(STEPS)}")
    if (profile is None) == (resume is None):
        fail("give --profile NAME for a new replication or --resume FOLDER")
    if seed is not None and resume is not None:
        fail("--seed is set when a replication starts; a resumed one keeps its own")
    ifeval_path: str | None = None
    if ifeval is not None:
        if not ifeval.is_file():
            fail(f"--ifeval {ifeval}: no such file")
        ifeval_path = str(ifeval.resolve())
    else:
        from core.eval.ifeval import default_prompts_path

        default = default_prompts_path()
        if default.is_file():
            ifeval_path = str(default)
    import signal

    # A plain SIGTERM would skip the `finally` blocks that stop the model servers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with open_store() as store:
        try:
            if resume is not None:
                run = Replication.open(store, resume)
                if ifeval_path and not run.ifeval_path:
                    run.ifeval_path = run.state["ifeval_path"] = ifeval_path
            else:
                assert profile is not None
                prof = load_profile(profile)
                if seed is not None:
                    prof = prof.with_seed(seed)
                stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
                folder = out or home() / "experiments" / f"{prof.name}-{stamp}"
                run = Replication.create(store, prof, folder, ifeval_path=ifeval_path)
            run.deadline = _deadline(deadline) if deadline else None
            given = {"--profile": profile, "--resume": resume, "--out": out, "--ifeval": ifeval,
                     "--seed": seed, "--results": results, "--until": until,
                     "--deadline": deadline}  # fmt: skip
            if resume is None:
                run.state["command"] = _command_line(given)
            else:  # the command that started it stays the report's, with the seed it set
                run.state.setdefault("resumed_with", []).append(_command_line(given))
            run.save()
            _say(f"replication {run.profile.name} in {run.folder}")
            run.run_all(on_message=_say, until=until)
        except ConfigError as exc:
            fail("; ".join(exc.lines()))
        except ReplicationError as exc:
            fail(f"{exc} (continue with: hat experiment replicate --resume {run.folder})")
        report = run.step("report").get("files") or {}
        if results is not None and report:
            results.mkdir(parents=True, exist_ok=True)
            for path in report.values():
                shutil.copy2(path, results / Path(path).name)
            _say(f"report copied to {results}")
        if report:
            console.print(Path(report["markdown"]).read_text(encoding="utf-8"), markup=False)
        _say(f"total wall time {run.total_wall_s() / 60:.1f} min")


def _command_line(options: Mapping[str, object]) -> str:
    """The command as the user would retype it, rebuilt from the parsed options: `sys.argv`
    belongs to the host process (pytest, the studio) whenever the CLI runs in-process."""
    words = ["hat", "experiment", "replicate"]
    for flag, value in options.items():
        if value is not None:
            words += [flag, str(value)]
    return shlex.join(words)


def _deadline(text: str) -> float:
    """Epoch seconds of `--deadline` (HH:MM today in UTC, or an ISO date-time)."""
    try:
        if len(text) <= 5 and ":" in text:
            hours, minutes = (int(x) for x in text.split(":"))
            now = datetime.now(UTC)
            return now.replace(hour=hours, minute=minutes, second=0, microsecond=0).timestamp()
        when = datetime.fromisoformat(text)
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    except ValueError:
        fail(f"--deadline {text!r}: give HH:MM (UTC) or an ISO date-time")


@app.command()
def status(folder: Annotated[Path, typer.Argument(help="A replication run folder.")]) -> None:
    """Each step's status and wall time."""
    from core.experiment.replicate import STEPS, Replication, ReplicationError

    with open_store() as store:
        try:
            run = Replication.open(store, folder)
        except ReplicationError as exc:
            fail(str(exc))
        for name in STEPS:
            entry = run.step(name)
            wall = entry.get("wall_s")
            extra = f" {entry.get('reason')}" if entry.get("reason") else ""
            console.print(
                f"{name:12} {entry.get('status', 'pending'):8} "
                f"{'' if wall is None else f'{wall:.0f} s'}{extra}",
                markup=False,
            )


@app.command()
def seeds(
    reports: Annotated[
        list[Path],
        typer.Argument(help="Replications' report.json files (or the folders holding them)."),
    ],
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the table to this Markdown file.")
    ] = None,
) -> None:
    """Several seeds' replications side by side, with HAT - fixed-SFT on HV-QA pooled over
    seeds and paired by task (core/experiment/seeds.py)."""
    from core.experiment.seeds import SeedsError, read_report, seeds_markdown

    try:
        text = seeds_markdown([read_report(path) for path in reports])
    except SeedsError as exc:
        fail(str(exc))
    if out is not None:
        out.write_text(text, encoding="utf-8")
    typer.echo(text)  # Markdown: never wrapped to the terminal's width
