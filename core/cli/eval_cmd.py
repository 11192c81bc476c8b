"""`hat eval …`: evaluation suites through the agent loop, and the harness-change gate.

    hat eval run --model demo --suite ls-qa --suite hv-qa --limit 50 --variants 4
    hat eval run --suite all --base-url http://127.0.0.1:8000/v1      # a server that runs
    hat eval run --suite ls-qa --oracle                               # the ceiling, no server
    hat eval list | show RUN [--failed] | resume RUN
    hat eval impact --model demo --from production --to staging --suite ls-qa --limit 100

A run's rows are stored as items complete, so Ctrl-C (or a dead server) loses nothing:
`hat eval resume RUN` continues where it stopped. `--out DIR` writes the report (JSON,
Markdown and plots) when the report module is installed, else the rows as JSONL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from core.cli.common import ProgressLines, console, err_console, fail, open_store
from core.eval.command import RUN_DEFAULTS
from core.store.errors import StoreError

if TYPE_CHECKING:
    from core.eval.api import ClientFactory, EvalRun
    from core.eval.results import EvalResult, Suite
    from core.store import Store

app = typer.Typer(help="Evaluate models: LS-QA, HV-QA, robustness, IFEval; harness impact.")

SUITE_NAMES = ("ls-qa", "hv-qa", "robustness", "ifeval", "tasks", "hv-tasks", "all")

ModelOpt = Annotated[
    str | None, typer.Option("--model", help="Registered model (default: the demo model).")
]
AdapterOpt = Annotated[str | None, typer.Option("--adapter", help="Registered adapter.")]
SuiteOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--suite",
        "-s",
        help="ls-qa | hv-qa | robustness | ifeval | tasks (a task file) | hv-tasks (the task "
        "file under heldout variants) | all (repeatable).",
    ),
]
LimitOpt = Annotated[
    int | None, typer.Option("--limit", min=1, help="At most N tasks (prompts) per suite.")
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option("--base-url", help="Use a running OpenAI-compatible server (no managed one)."),
]
OracleOpt = Annotated[
    bool,
    typer.Option(
        "--oracle",
        help="The gold as the model: the simulator's oracle, or a task file's gold run (agent "
        "suites).",
    ),
]


def _suites(names: list[str] | None) -> list[Suite]:
    from core.eval.api import ALL_SUITES
    from core.eval.results import Suite

    chosen: list[Suite] = []
    for name in names or ["ls-qa"]:
        if name == "all":
            chosen.extend(ALL_SUITES)
            continue
        try:
            chosen.append(Suite(name))
        except ValueError:
            fail(f"unknown suite {name!r}; suites: {', '.join(SUITE_NAMES)}")
    return list(dict.fromkeys(chosen))


def _version_id(ref: str) -> str:
    """A stored harness version's id (the fixed oracle names its runs by it)."""
    with open_store() as store:
        try:
            return store.resolve(ref)
        except StoreError as exc:
            fail(f"--oracle-fixed: {exc}")


def _oracle(store: Store, memorised: str | None = None) -> ClientFactory:
    from core.eval.oracle_model import oracle_factory

    return oracle_factory(store, memorised)


class _Bar:
    """A progress bar on stderr fed by the runner's progress callback. It appears with the
    first progress report, so a run refused before it starts (unknown model, bad request)
    prints only its error."""

    def __init__(self, label: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[last]}"),
            console=err_console,
            transient=False,
        )
        self.task = self.progress.add_task(label, total=None, last="")
        self.shown = False
        # without a terminal (a log, CI) a bar draws nothing until the end: print lines
        self.lines = None if err_console.is_terminal else ProgressLines(label)

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.shown and self.lines is None:
            self.progress.__exit__(None, None, None)

    def __call__(self, done: int, total: int, last: EvalResult | None) -> None:
        if self.lines is not None:
            mark = ""
            if last is not None:
                verdict = "pass" if last.passed else (last.status.value if last.reason else "fail")
                mark = f"{last.suite.value} {last.task_id}: {verdict}"
            self.lines.update(done, total, mark)
            return
        if not self.shown:
            self.progress.__enter__()
            self.shown = True
        text = ""
        if last is not None:
            mark = "pass" if last.passed else (last.status.value if last.reason else "fail")
            text = f"{last.suite.value} {last.task_id}: {mark}"
        self.progress.update(self.task, completed=done, total=total, last=text)


def summarize(results: list[EvalResult]) -> list[dict[str, Any]]:
    """Per suite: items, mean score, pass rate, failed items (failed count as 0) and
    infrastructure errors (left out of score and pass rate)."""
    from core.eval.results import ResultStatus, Suite, scored

    out: list[dict[str, Any]] = []
    order = list(Suite)
    suites = sorted({r.suite for r in results}, key=order.index)
    for suite in suites:
        every = [r for r in results if r.suite is suite]
        rows = scored(every)
        ok = [r for r in rows if r.status is ResultStatus.OK]
        n = len(rows)
        out.append(
            {
                "suite": suite.value,
                "items": len(every),
                "score": sum(r.score for r in ok) / n if n else None,
                "pass_rate": sum(r.passed for r in ok) / n if n else None,
                "failed": n - len(ok),
                "errors": len(every) - n,
            }
        )
    return out


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _print_summary(run: EvalRun, results: list[EvalResult]) -> None:
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for column in ("suite", "items", "score", "pass rate", "failed", "errors"):
        table.add_column(column, justify="left" if column == "suite" else "right")
    for row in summarize(results):
        table.add_row(
            row["suite"],
            str(row["items"]),
            _share(row["score"]),
            _share(row["pass_rate"]),
            str(row["failed"]),
            str(row["errors"]),
        )
    console.print(table)
    status = run.status.value + (f" ({run.reason})" if run.reason else "")
    console.print(f"run {run.id}: {status}, {run.done}/{run.total} items", markup=False)
    if run.errors:
        console.print(
            f"{run.errors} item(s) hit an infrastructure error (server, timeout, crash) and "
            f"are not scored; run them again with: hat eval resume {run.id}",
            markup=False,
        )
    elif run.status.value != "done":
        console.print(f"continue with: hat eval resume {run.id}", markup=False)


def _write_out(store: Store, run: EvalRun, out: Path) -> None:
    from core.eval.api import load_results

    results = load_results(store, run.id)
    out.mkdir(parents=True, exist_ok=True)
    import importlib

    try:
        report_module: Any = importlib.import_module("core.eval.report")
    except ImportError:
        report_module = None
    writer = getattr(report_module, "write_report", None) if report_module else None
    if callable(writer):
        meta = {
            "run": run.id,
            "status": run.status.value,
            "model": run.model,
            "adapter": run.adapter,
            "harness": run.harness,
            "harness_version": run.harness_version,
            "request": run.request.model_dump(mode="json"),
        }
        paths = writer(results, out, meta=meta)
        console.print(f"report written to {out}", markup=False)
        for path in paths or []:
            console.print(f"  {path}", markup=False)
        return
    path = out / f"{run.id}.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for result in results:
            handle.write(result.model_dump_json() + "\n")
    console.print(f"rows written to {path}", markup=False)


def _finish(store: Store, run: EvalRun, out: Path | None) -> None:
    from core.eval.api import load_results

    results = load_results(store, run.id)
    _print_summary(run, results)
    if out is not None and not results:  # the summary above says why
        err_console.print(
            f"no report written to {out}: run {run.id} {run.status.value} before any item finished",
            markup=False,
            soft_wrap=True,
        )
    elif out is not None:
        _write_out(store, run, out)
    if run.status.value == "failed":
        raise typer.Exit(1)


def _interrupted(store: Store) -> None:
    from core.eval.api import list_eval_runs

    runs = list_eval_runs(store)
    hint = f": hat eval resume {runs[-1].id}" if runs else ""
    err_console.print(f"stopped; the stored items are kept{hint}", markup=False)
    raise typer.Exit(130)


def _engine(requested: str, base_url: str | None) -> str:
    """The engine a managed server uses (core.serving.engines.pick_engine), its fallback
    notice printed once; irrelevant (and not checked for) with --base-url."""
    from core.serving.engines import EngineError, pick_engine

    try:
        engine, notice = pick_engine(requested)
    except EngineError as exc:
        fail(str(exc))
    if notice is not None and base_url is None:
        err_console.print(notice, style="yellow", markup=False)
    return engine


@app.command("run")
def run_cmd(
    model: ModelOpt = None,
    adapter: AdapterOpt = None,
    suite: SuiteOpt = None,
    limit: LimitOpt = None,
    variants: Annotated[
        int, typer.Option("--variants", min=1, help="HV-QA variants (K).")
    ] = RUN_DEFAULTS["variants"],
    samples: Annotated[
        int, typer.Option("--samples", min=1, help="Repeats (pass^k).")
    ] = RUN_DEFAULTS["samples"],
    seed: Annotated[int, typer.Option("--seed", min=0)] = RUN_DEFAULTS["seed"],
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Items in flight (batched on the server).")
    ] = RUN_DEFAULTS["concurrency"],
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1)] = RUN_DEFAULTS["max_tokens"],
    temperature: Annotated[float, typer.Option("--temperature", min=0.0)] = RUN_DEFAULTS[
        "temperature"
    ],
    call_timeout: Annotated[
        float,
        typer.Option(
            "--call-timeout", min=0.001, help="Seconds one model call may take (then: error)."
        ),
    ] = RUN_DEFAULTS["call_timeout_s"],
    item_timeout: Annotated[
        float,
        typer.Option(
            "--item-timeout", min=0.001, help="Seconds one whole item may take (then: error)."
        ),
    ] = RUN_DEFAULTS["item_timeout_s"],
    harness: Annotated[
        str | None,
        typer.Option("--harness", help="Stored version (default: live-host@production)."),
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", help="auto (vLLM where installed) | transformers | vllm")
    ] = "auto",
    base_url: BaseUrlOpt = None,
    model_id: Annotated[
        str | None, typer.Option("--model-id", help="Model id at --base-url.")
    ] = None,
    ifeval: Annotated[
        Path | None, typer.Option("--ifeval", help="IFEval prompts JSONL (input_data.jsonl).")
    ] = None,
    tasks: Annotated[
        Path | None,
        typer.Option("--tasks", help="Task file (JSONL) for the tasks suite (implies it)."),
    ] = None,
    judge_url: Annotated[
        str | None, typer.Option("--judge-url", help="Judge endpoint for reference-only tasks.")
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", help="Judge model id.")
    ] = None,
    oracle: OracleOpt = False,
    oracle_fixed: Annotated[
        str | None,
        typer.Option(
            "--oracle-fixed",
            help="The oracle fixed on this stored harness version: it keeps calling tools "
            "and skills by that version's names (a stand-in for a model trained on it).",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report here.")] = None,
) -> None:
    """Evaluate a model on one or more suites; rows are stored as they complete."""
    from pydantic import ValidationError

    from core.eval.api import EvalError, EvalRequest, run_eval
    from core.eval.oracle_model import fixed_name
    from core.models import DEMO_MODEL_NAME

    engine = _engine(engine, base_url)
    name = model or ("oracle" if oracle else DEMO_MODEL_NAME)
    fixed_id: str | None = None
    if oracle_fixed is not None:
        fixed_id = _version_id(oracle_fixed)
        name = fixed_name(fixed_id)
    try:
        request = EvalRequest(
            model=name,
            adapter=adapter,
            suites=_suites(suite if suite or tasks is None else ["tasks"]),
            harness=harness,
            limit=limit,
            variants=variants,
            samples=samples,
            seed=seed,
            concurrency=concurrency,
            max_tokens=max_tokens,
            temperature=temperature,
            call_timeout_s=call_timeout,
            item_timeout_s=item_timeout,
            base_url=base_url,
            model_id=model_id,
            engine=engine,  # type: ignore[arg-type]
            ifeval_path=str(ifeval) if ifeval is not None else None,
            task_file=str(tasks.resolve()) if tasks is not None else None,
            judge_url=judge_url,
            judge_model=judge_model,
        )
    except ValidationError as exc:
        fail(f"invalid evaluation request: {exc}")
    with open_store() as store:
        factory = _oracle(store, fixed_id) if oracle or fixed_id else None
        try:
            with _Bar("eval") as bar:
                run = run_eval(store, request, on_progress=bar, client_factory=factory)
        except EvalError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            _interrupted(store)
        _finish(store, run, out)


@app.command("resume")
def resume_cmd(
    run_id: Annotated[str, typer.Argument(help="Run id or unique prefix.")],
    base_url: BaseUrlOpt = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed/--keep-failed",
            help="Run again items that failed for transport reasons (server errors, timeouts).",
        ),
    ] = True,
    oracle: OracleOpt = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report here.")] = None,
) -> None:
    """Continue a run where it stopped (stored items are skipped)."""
    from core.eval.api import EvalError, resume_eval

    with open_store() as store:
        factory = _oracle(store) if oracle else None
        try:
            with _Bar("resume") as bar:
                run = resume_eval(
                    store,
                    run_id,
                    on_progress=bar,
                    client_factory=factory,
                    base_url=base_url,
                    retry_failed=retry_failed,
                )
        except EvalError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            _interrupted(store)
        _finish(store, run, out)


@app.command("list")
def list_cmd() -> None:
    """Evaluation runs, oldest first."""
    from core.eval.api import list_eval_runs

    with open_store() as store:
        runs = list_eval_runs(store)
    if not runs:
        console.print("no evaluation runs (hat eval run starts one)")
        return
    for run in runs:
        model = run.model + (f"+{run.adapter}" if run.adapter else "")
        version = (run.harness_version or "")[:8]
        suites = ",".join(s.value for s in run.suites)
        console.print(
            f"{run.id}  {run.status.value:<7}  {run.done}/{run.total} items  "
            f"{run.passed} passed  {run.failed} failed  {run.errors} errors  {model}  "
            f"{run.harness}@{version}  {suites}",
            markup=False,
            soft_wrap=True,
        )


@app.command("show")
def show_cmd(
    run_id: Annotated[str, typer.Argument(help="Run id or unique prefix.")],
    failed: Annotated[
        bool, typer.Option("--failed", help="List the failed and error items.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Run, summary and rows as JSON.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report here.")] = None,
) -> None:
    """A run's settings, per-suite summary, and (with --failed) its failed items."""
    from core.eval.api import get_eval_run, load_results
    from core.eval.results import ResultStatus

    with open_store() as store:
        run = get_eval_run(store, run_id)
        results = load_results(store, run.id)
        if as_json:
            data = {
                "id": run.id,
                "status": run.status.value,
                "reason": run.reason,
                "model": run.model,
                "adapter": run.adapter,
                "harness": run.harness,
                "harness_version": run.harness_version,
                "request": run.request.model_dump(mode="json"),
                "total": run.total,
                "done": run.done,
                "summary": summarize(results),
                "results": [r.model_dump(mode="json") for r in results],
            }
            console.print_json(json.dumps(data))
            return
        console.print(
            f"run {run.id}  model {run.model}"
            + (f" + {run.adapter}" if run.adapter else "")
            + f"  harness {run.harness}@{(run.harness_version or '')[:12]}",
            markup=False,
        )
        settings = run.request.model_dump(
            exclude={"model", "adapter", "harness", "suites"}, exclude_none=True
        )
        console.print("settings: " + json.dumps(settings), markup=False)
        _print_summary(run, results)
        if failed:
            for result in results:
                if result.status is not ResultStatus.OK:
                    where = f"{result.suite.value} {result.task_id}"
                    if result.status is ResultStatus.ERROR:
                        where += " [error, not scored]"
                    if result.variant_seed is not None:
                        where += f" #{result.variant_seed} ({result.dimension})"
                    console.print(f"  {where}: {result.reason}", markup=False)
        if out is not None:
            _write_out(store, run, out)


@app.command("impact")
def impact_cmd(
    from_ref: Annotated[str, typer.Option("--from", help="Harness version now deployed.")],
    to_ref: Annotated[str, typer.Option("--to", help="Harness version to deploy.")],
    model: ModelOpt = None,
    adapter: AdapterOpt = None,
    suite: SuiteOpt = None,
    limit: LimitOpt = None,
    variants: Annotated[int, typer.Option("--variants", min=1, help="HV-QA variants (K).")] = 8,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1)] = 256,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Items in flight (batched on the server).")
    ] = 8,
    engine: Annotated[
        str, typer.Option("--engine", help="auto (vLLM where installed) | transformers | vllm")
    ] = "auto",
    base_url: BaseUrlOpt = None,
    oracle: Annotated[
        bool,
        typer.Option(
            "--oracle",
            help="Instead of a model, the oracle fixed on the --from harness's names: a "
            "stand-in for a model fine-tuned on it (shows what the edit breaks).",
        ),
    ] = False,
    tasks: Annotated[
        Path | None,
        typer.Option("--tasks", help="Task file (JSONL) for the tasks suite (implies it)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
) -> None:
    """What moving from one harness version to another does to a model: flipped tasks by
    changed component, score change with its 95 % interval."""
    from core.eval.api import EvalError, EvalRequest, impact
    from core.eval.impact import report_markdown
    from core.eval.oracle_model import fixed_name
    from core.models import DEMO_MODEL_NAME

    engine = _engine(engine, base_url)
    suites = _suites(suite if suite or tasks is None else ["tasks"])
    with open_store() as store:
        # The fixed oracle is its own "model" per version it memorised, so stored runs of the
        # plain oracle (or one fixed on another version) are never reused for it.
        try:
            fixed = fixed_name(store.resolve(from_ref)) if oracle else None
        except StoreError as exc:
            fail(str(exc))
    name = model or fixed or DEMO_MODEL_NAME
    request = EvalRequest(
        model=name,
        suites=suites,
        variants=variants,
        max_tokens=max_tokens,
        concurrency=concurrency,
        engine=engine,  # type: ignore[arg-type]
        task_file=str(tasks.resolve()) if tasks is not None else None,
    )
    with open_store() as store:
        factory = _oracle(store, from_ref) if oracle else None
        try:
            with _Bar("impact") as bar:
                report = impact(
                    store,
                    name,
                    from_ref,
                    to_ref,
                    suites=suites,
                    limit=limit,
                    adapter=adapter,
                    base_url=base_url,
                    request=request,
                    on_progress=bar,
                    client_factory=factory,
                )
        except EvalError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            _interrupted(store)
    if as_json:
        console.print_json(json.dumps(report.to_dict()))
    else:
        console.print(report_markdown(report), markup=False)
