"""`hat experiment …`: the mini-replication of the HAT report.

    hat experiment replicate --profile cpu --ifeval input_data.jsonl
    hat experiment replicate --profile order-desk         # on an operator's harness and tasks
    hat experiment replicate --resume <run folder>        # continue where it stopped
    hat experiment replicate --profile cpu --seeds 0 1 2 --out runs/cpu-seeds
    hat experiment status <run folder>
    hat experiment seeds <report.json> <report.json>      # runs started one by one, pooled

Run folders default to `<home>/experiments/<profile>-<UTC stamp>/` (with `--seeds`:
`<home>/experiments/<profile>-seeds/`, one `seed-N` folder per seed, so the same command
resumes); `--results DIR` also copies the report (Markdown, JSON, plots) there. See
core/experiment/replicate.py and core/experiment/seeds.py.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping
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


@app.command(context_settings={"allow_extra_args": True})
def replicate(
    ctx: typer.Context,
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
    seeds: Annotated[
        str | None,
        typer.Option(
            "--seeds",
            help="Several seeds as one experiment: `--seeds 0 1 2` runs each seed's "
            "replication in <out>/seed-N (a seed whose folder exists is resumed, never "
            "trained again), then writes <out>/pooled.md: HAT - fixed-SFT on HV-QA pooled "
            "over the seeds and paired by task, then each seed's numbers.",
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
    seed_list: list[int] | None = None
    if seeds is not None:
        from core.experiment.seeds import SeedsError, parse_seeds

        try:  # `--seeds 0 1 2`: the words after the first arrive as extra arguments
            seed_list = parse_seeds([seeds, *ctx.args])
        except SeedsError as exc:
            fail(str(exc))
        if resume is not None or seed is not None:
            fail("--seeds runs and resumes every seed under --out: give it with --profile, "
                 "without --resume or --seed")  # fmt: skip
    elif ctx.args:
        fail(f"unexpected argument(s): {' '.join(ctx.args)}")
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
    if seed_list is not None:
        assert profile is not None
        given_seeds = {"--profile": profile, "--seeds": [str(s) for s in seed_list],
                       "--out": out, "--ifeval": ifeval, "--results": results,
                       "--until": until, "--deadline": deadline}  # fmt: skip
        _replicate_seeds(profile, seed_list, out, ifeval_path, results, until, deadline,
                         _command_line(given_seeds))  # fmt: skip
        return
    with open_store() as store:
        run: Replication | None = None
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
            if run is None:  # nothing started: e.g. --out already holds a replication
                fail(str(exc))
            fail(f"{exc} (continue with: hat experiment replicate --resume {run.folder})")
        assert run is not None
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
        if isinstance(value, list):
            words += [flag, *(str(v) for v in value)]
        elif value is not None:
            words += [flag, str(value)]
    return shlex.join(words)


def _replicate_seeds(
    profile_name: str,
    seed_list: list[int],
    out: Path | None,
    ifeval_path: str | None,
    results: Path | None,
    until: str | None,
    deadline: str | None,
    command: str,
) -> None:
    """`replicate --seeds`: each seed's run in `<out>/seed-N` (an existing one resumed), then
    the pooled report once every seed has its own (core/experiment/seeds.py)."""
    from core.experiment.profiles import load_profile
    from core.experiment.replicate import ReplicationError
    from core.experiment.report import HEADLINE
    from core.experiment.seeds import (
        SeedsError,
        open_seed,
        read_report,
        seed_folder,
        write_pooled_report,
    )
    from core.paths import home
    from core.train.config import ConfigError

    try:
        prof = load_profile(profile_name)
    except ConfigError as exc:
        fail("; ".join(exc.lines()))
    folder = (out or home() / "experiments" / f"{prof.name}-seeds").expanduser().resolve()
    again = "run the same command again to resume: finished seeds and steps are kept"
    with open_store() as store:
        for seed in seed_list:
            try:
                run, resumed = open_seed(store, prof, folder, seed, ifeval_path=ifeval_path)
            except (SeedsError, ReplicationError) as exc:
                fail(f"seed {seed}: {exc}")
            run.deadline = _deadline(deadline) if deadline else None
            if resumed:
                run.state.setdefault("resumed_with", []).append(command)
            else:
                run.state["command"] = command
            run.save()
            _say(f"seed {seed}: {'resuming' if resumed else 'new'} replication in {run.folder}")
            say = _seed_say(seed)
            try:
                run.run_all(on_message=say, until=until)
                report = run.step("report")
                files = report.get("files") or {}
                if report.get("status") == "done" and files and until in (None, "report"):
                    data = json.loads(Path(files["json"]).read_text(encoding="utf-8"))
                    if data.get("headline") != HEADLINE:  # an older report: rows are stored
                        say("its report predates answered correctly: writing it again")
                        run.run_step("report", on_message=say)
            except ConfigError as exc:
                fail(f"seed {seed}: {'; '.join(exc.lines())} ({again})")
            except ReplicationError as exc:
                fail(f"seed {seed}: {exc} ({again})")
    found = {s: seed_folder(folder, s) / "report" / "report.json" for s in seed_list}
    waiting = [str(s) for s, path in found.items() if not path.is_file()]
    if waiting:
        _say(f"pooled report not written: no report yet for seed(s) {', '.join(waiting)}")
        return
    try:
        reports = [read_report(path) for path in found.values()]
        paths = write_pooled_report(folder, reports)
    except SeedsError as exc:
        fail(str(exc))
    if results is not None:
        results.mkdir(parents=True, exist_ok=True)
        for path in paths.values():
            shutil.copy2(path, results / path.name)
        for seed in seed_list:
            shutil.copytree(seed_folder(folder, seed) / "report", results / f"seed-{seed}",
                            dirs_exist_ok=True)  # fmt: skip
        _say(f"pooled report and each seed's report copied to {results}")
    typer.echo(paths["markdown"].read_text(encoding="utf-8"))


def _seed_say(seed: int) -> Callable[[str], None]:
    return lambda message: _say(f"[seed {seed}] {message}")


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
    """Several seeds' replications as one experiment: HAT - fixed-SFT on HV-QA answered
    correctly pooled over seeds and paired by task first, each seed's numbers below; refused
    for runs whose profiles (but for the seed) or HV-QA tasks differ (core/experiment/seeds.py)."""
    from core.experiment.seeds import SeedsError, read_report, seeds_markdown

    try:
        text = seeds_markdown([read_report(path) for path in reports])
    except SeedsError as exc:
        fail(str(exc))
    if out is not None:
        out.write_text(text, encoding="utf-8")
    typer.echo(text)  # Markdown: never wrapped to the terminal's width
