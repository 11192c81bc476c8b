"""`hat data …`: build training data. `generate` runs a teacher over simulator tasks.

    hat data generate --teacher oracle --tasks train --out data/sft.jsonl
    hat data generate --teacher-url http://localhost:8000/v1 --teacher-model Qwen/Qwen3-32B \\
        --tasks train --variants 3 --out data/sft.jsonl

Interrupted runs resume: run the same command again (see core/datagen/generate.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from core.cli import drafts_cmd
from core.cli.common import (
    JudgeModelOpt,
    JudgeUrlOpt,
    ProgressLines,
    TrustOpt,
    console,
    err_console,
    esc,
    fail,
    open_store,
    print_problems,
)
from core.datagen.paths import REJECTS_SUFFIX
from core.harness import Harness, HarnessError
from core.sim.models import Task
from core.taskfile.models import OwnTask

app = typer.Typer(
    help="Build training data: from the simulator or a task file, and task drafts from logs.",
    no_args_is_help=True,
)
app.add_typer(drafts_cmd.app, name="drafts")


def _tasks(source: str, seed: int, per_category: int | None) -> list[Task | OwnTask]:
    """The tasks `--tasks` names, by the one resolver (core/taskfile/sources.py)."""
    from core.taskfile.sources import TaskSourceError, load_source

    try:
        return load_source(source, seed=seed, per_category=per_category)
    except TaskSourceError as exc:
        fail(str(exc))


def _harness(
    path: Path | None, version: str | None, trust: bool = False
) -> tuple[Harness, str | None]:
    """`--harness FOLDER`, `--harness-version REF`, or the one default rule (live-host@
    production, else @head, else the bundled demo: core/store/harness_ref.py)."""
    from core.store.errors import StoreError
    from core.store.harness_ref import resolve_harness, resolve_stored

    if path is not None and not path.is_dir():
        fail(f"{path}: no such harness folder")
    try:
        with open_store() as store:
            if version is not None:
                harness, _name, version_id = resolve_stored(store, version)
                return harness, version_id
            return resolve_harness(store, str(path) if path is not None else None, trust=trust)
    except HarnessError as exc:
        print_problems(exc, path or Path("."))
        raise typer.Exit(1) from None
    except StoreError as exc:
        fail(str(exc))


@app.command()
def generate(
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to append rows to.")],
    tasks: Annotated[
        str, typer.Option("--tasks", help="train | dev | test | ls-qa | robustness | a JSONL file.")
    ] = "train",
    teacher: Annotated[
        str | None,
        typer.Option("--teacher", help="oracle, or openai (the default when a URL is given)."),
    ] = None,
    teacher_url: Annotated[
        str | None, typer.Option("--teacher-url", help="OpenAI-compatible base URL (…/v1).")
    ] = None,
    teacher_model: Annotated[
        str | None, typer.Option("--teacher-model", help="Model name on that server.")
    ] = None,
    api_key_env: Annotated[
        str, typer.Option("--api-key-env", help="Environment variable holding the API key.")
    ] = "OPENAI_API_KEY",
    temperature: Annotated[float, typer.Option("--temperature")] = 0.0,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=1, help="Per teacher call (a remote teacher).")
    ] = 1024,
    variants: Annotated[
        int, typer.Option("--variants", "-k", min=0, help="Sampled harness variants per task.")
    ] = 0,
    sampler: Annotated[
        str,
        typer.Option(
            "--sampler",
            help="Variant sampler: hsa (train bank, medium), hsa-light, hsa-heavy, hsa-heldout "
            "(evaluation data only) or identity (the original harness).",
        ),
    ] = "hsa",
    harness: Annotated[
        Path | None, typer.Option("--harness", help="Harness folder (default: the demo).")
    ] = None,
    harness_version: Annotated[
        str | None, typer.Option("--harness-version", help="A stored version or label instead.")
    ] = None,
    per_category: Annotated[
        int | None, typer.Option("--per-category", min=1, help="Tasks per category (splits).")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Stop after N jobs.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Task and variant seed.")] = 0,
    concurrency: Annotated[int, typer.Option("--concurrency", "-j", min=1)] = 4,
    keep_whole: Annotated[
        float,
        typer.Option("--keep-whole", min=0.0, max=1.0, help="Hook-retry rows kept unpruned."),
    ] = 0.1,
    recovery: Annotated[
        float,
        typer.Option(
            "--recovery",
            min=0.0,
            max=1.0,
            help="Oracle: share of variant jobs renaming a parameter the gold passes that are "
            "played as recovery rows (old name rejected, then the right call).",
        ),
    ] = 0.25,
    min_effectiveness: Annotated[float, typer.Option("--min-effectiveness")] = 0.5,
    rejects: Annotated[
        Path | None,
        typer.Option("--rejects", help=f"Rejected jobs (default <out>{REJECTS_SUFFIX})."),
    ] = None,
    retry_rejects: Annotated[
        bool, typer.Option("--retry-rejects", help="Run previously rejected jobs again.")
    ] = False,
    job_timeout: Annotated[float, typer.Option("--job-timeout", help="Seconds per job.")] = 600.0,
    trust: TrustOpt = False,
    judge_url: JudgeUrlOpt = None,
    judge_model: JudgeModelOpt = None,
) -> None:
    """Run a teacher on every task under the original and K harness variants (HSA train-bank
    variants by default); keep the good trajectories (accuracy 1, effectiveness >= 0.5) as
    JSONL rows with provenance."""
    import os

    from core.datagen import (
        GenerateConfig,
        GenerateSummary,
        OpenAITeacher,
        Teacher,
        generate,
        get_sampler,
    )
    from core.sim.catalog import load_catalog

    kind = teacher or ("openai" if teacher_url else None)
    if kind is None:
        fail("give --teacher-url URL --teacher-model NAME, or --teacher oracle")
    if kind not in ("oracle", "openai"):
        fail(f"unknown teacher {kind!r}: use oracle or openai")
    if kind == "openai" and (not teacher_url or not teacher_model):
        fail("a remote teacher needs --teacher-url and --teacher-model")
    try:
        variant_sampler = get_sampler(sampler)
    except ValueError as exc:
        fail(str(exc))
    base, version_id = _harness(harness, harness_version, trust)
    catalog = load_catalog()
    task_list = _tasks(tasks, seed, per_category)
    remote: OpenAITeacher | None = None
    if kind == "oracle":
        chosen = Teacher.oracle(catalog)
    else:
        assert teacher_url is not None and teacher_model is not None
        remote = OpenAITeacher(
            teacher_url,
            teacher_model,
            api_key=os.environ.get(api_key_env),
            temperature=temperature,
            max_tokens=max_tokens,
        )
        chosen = Teacher.shared(remote.spec, remote)
    from core.taskfile.sources import source_is_task_file

    task_file = source_is_task_file(tasks)
    judged = [t.id for t in task_list if task_file and getattr(t, "needs_judge", False)]
    if judged and not (judge_url and judge_model) and not chosen.gold:
        fail(
            f"tasks {', '.join(judged[:5])} have only a reference answer: give --judge-url and "
            "--judge-model, or add facts"
        )
    judge = None
    if judge_url and judge_model:
        from core.serving.judge import http_judge
        from core.taskfile.judge import JudgeUnavailable, check_judge

        judge = http_judge(judge_url, judge_model)
        try:
            asyncio.run(check_judge(judge))
        except JudgeUnavailable as exc:
            fail(str(exc))
    config = GenerateConfig(
        out=out,
        variants=variants,
        rejects=rejects,
        job_seed=seed,
        concurrency=concurrency,
        keep_whole_fraction=keep_whole,
        recovery_fraction=recovery,
        min_effectiveness=min_effectiveness,
        retry_rejects=retry_rejects,
        job_timeout_s=job_timeout,
        limit=limit,
        harness_version=version_id or harness_version,
        sampler=variant_sampler,
        sampler_name=sampler,
        judge=judge,
    )

    from core.datagen.generate import JobResult, pending_jobs

    total = pending_jobs(task_list, config)
    # lines, not a bar: they read the same in a terminal, a log file and CI
    lines = ProgressLines("generate", every_s=10.0 if err_console.is_terminal else 30.0)
    done = 0

    def progress(result: JobResult) -> None:
        nonlocal done
        done += 1
        verdict = "kept" if result.kept else (result.reason_kind or "rejected")
        lines.update(done, total, f"{result.key}: {verdict}")

    async def run() -> GenerateSummary:
        from core.episode.open_world import open_world

        try:
            async with open_world(base, task_file=task_file, catalog=catalog, judge=judge) as world:
                return await generate(
                    task_list, base, catalog, chosen, config, world=world, on_result=progress
                )
        finally:
            if remote is not None:
                await remote.close()
            if judge is not None:
                await judge.close()

    try:
        summary = asyncio.run(run())
    except ValueError as exc:  # bindings that cannot run, golds that cannot play: nothing ran
        fail(str(exc))
    data = summary.to_dict()
    console.print(
        f"wrote {data['written']} rows to {esc(out)} ({data['rejected']} rejected, "
        f"{data['skipped']} already done) in {data['elapsed_s']:.1f} s "
        f"({data['rows_per_s']:.0f} rows/s)"
    )
    if data["recovery"]:
        console.print(
            f"{data['recovery']} recovery rows (a renamed parameter's old name, then the fix)"
        )
    if data["reasons"]:
        console.print("rejected: " + json.dumps(data["reasons"]), markup=False)
    failed = summary.failed(oracle=chosen.gold)
    if failed:
        shown = "\n".join(f"  {kind}: {text}" for kind, text in summary.examples.items())
        what = "jobs the oracle did not get full marks on" if chosen.gold else "failed jobs"
        fail(f"{failed} {what} (first of each kind):\n{shown}")
