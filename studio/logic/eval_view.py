"""The Evaluate page's logic: which models can be evaluated, the launch form turned into an
`EvalRequest` (core/eval/api.py), runs as background jobs with progress and stop, and stored
runs turned into what the page shows: per-suite scores with 95 % intervals, the per-HSA-
dimension cost, the distribution over harness variants per model, the items with their
traces, and the harness-change impact report.

All numbers come from core.eval (stats, report, impact); this module only selects and shapes
them. Besides registered models, two baselines need no server: the simulator's **oracle**
(the ceiling of every agent suite) and the oracle **fixed on one harness version** (it keeps
calling tools and skills by that version's names: a stand-in for a model fine-tuned on one
fixed harness, which is what the harness-change impact gate is about).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.eval.command import RUN_DEFAULTS, run_command
from core.eval.oracle_model import ORACLE, ORACLE_FIXED, fixed_name, oracle_factory
from core.eval.results import HV_BASE, EvalResult, ResultStatus, Suite
from core.eval.results import SUITE_LABELS as REPORT_SUITE_LABELS
from core.hsa.dimensions import DIMENSION_LABELS
from studio.logic.data_turns import TurnItem, turns_from_trace
from studio.logic.requests import RequestError, check_url

if TYPE_CHECKING:
    from core.eval.api import ClientFactory, EvalRequest, EvalRun, ImpactReport
    from core.eval.report import EvalReport
    from core.eval.stats import VariantDistribution
    from core.store import Store

SUITE_CHOICES: tuple[tuple[str, str, str], ...] = (
    ("ls-qa", "LS-QA", "Live-Stream QA: test tasks under the original harness"),
    ("hv-qa", "HV-QA", "Harness-Variant QA: the same tasks under held-out HSA variants"),
    ("robustness", "Robustness", "faults and distractor tools"),
    ("ifeval", "IFEval", "instruction following, official checkers"),
    ("tasks", "Your tasks", "a task file (JSONL): its test split under the harness version"),
    (
        "hv-tasks",
        "HV: tasks",
        "Harness-Variant QA of your tasks: the task file's test split under held-out variants",
    ),
)
TASK_FILE_SUITES = ("tasks", "hv-tasks")
"""The suites that play a task file (the form's task-file field serves both)."""
HV_SUITE_KEYS = ("hv-qa", "hv-tasks")
"""The suites that play held-out variants (the form's variants field serves both)."""
SUITE_LABELS = {suite.value: title for suite, title in REPORT_SUITE_LABELS.items()}
"""Core's report labels by suite name (one table, core/eval/report.py)."""
RESAMPLES = 1000
"""Bootstrap resamples for the page (the CLI reports use 2000; 1000 keeps a click snappy)."""


# ----------------------------------------------------------------------------- models


@dataclass(frozen=True)
class ModelChoice:
    key: str
    """Registered model name, or ORACLE / ORACLE_FIXED."""
    label: str
    kind: str
    """model | oracle | oracle-fixed"""
    adapters: tuple[str, ...] = ()
    detail: str = ""


def model_choices(store: Store) -> list[ModelChoice]:
    """Registered models (base and merged, each with its adapters; an adapter's merged copy is
    not listed: the adapter stands for it), then the two oracles."""
    from core.models import group_models
    from core.store.serving import list_models

    grouped = group_models(list_models(store))
    out: list[ModelChoice] = []
    for r in grouped.models:
        adapters = tuple(a.name for a in grouped.adapters.get(r.name, []))
        size = f"{r.parameters / 1e6:.0f}M params" if r.parameters else r.source
        out.append(ModelChoice(r.name, r.name, "model", adapters, size))
    out.append(ModelChoice(ORACLE, "Oracle (simulator ceiling)", "oracle", (), "no server"))
    out.append(
        ModelChoice(
            ORACLE_FIXED,
            "Oracle fixed on a harness version",
            "oracle-fixed",
            (),
            "stand-in for a fixed-harness fine-tune",
        )
    )
    return out


# ----------------------------------------------------------------------------- launching


@dataclass(frozen=True)
class NumberField:
    """One numeric field of the Run form, as core defines it: its lower bound and help from
    `EvalRequest`'s field, its starting value from `hat eval run`'s defaults (`RUN_DEFAULTS`),
    so a bound or default changed in core changes the form with it."""

    name: str
    minimum: float
    default: float
    help: str


def number_field(name: str) -> NumberField:
    """`EvalRequest.<name>`'s bound (`ge`, or `gt` as the next whole number) and description."""
    from core.eval.api import EvalRequest

    info = EvalRequest.model_fields[name]
    minimum = 0.0
    for rule in info.metadata:
        if getattr(rule, "ge", None) is not None:
            minimum = float(rule.ge)
        elif getattr(rule, "gt", None) is not None:
            minimum = float(rule.gt) + 1
    default = RUN_DEFAULTS.get(name, info.default)
    return NumberField(name, minimum, float(default), info.description or "")


@dataclass(frozen=True)
class LaunchRequest:
    """The Run form's values: an `EvalRequest` (its fields, defaults and checks, core's) plus
    what only the form has: which kind of model (a registered one, the oracle, the oracle
    fixed on a version) and whether a server is started or given by URL. Its command line is
    core's (`core.eval.command.run_command`), the one `hat eval run` reads back."""

    model: str
    kind: str = "model"
    adapter: str | None = None
    harness: str | None = None
    """Stored version id the run uses."""
    suites: tuple[str, ...] = ("ls-qa",)
    limit: int | None = 20
    variants: int = RUN_DEFAULTS["variants"]
    samples: int = RUN_DEFAULTS["samples"]
    concurrency: int = RUN_DEFAULTS["concurrency"]
    max_tokens: int = RUN_DEFAULTS["max_tokens"]
    call_timeout_s: float = RUN_DEFAULTS["call_timeout_s"]
    """One model call; longer is an infrastructure error (not scored, retryable)."""
    item_timeout_s: float = RUN_DEFAULTS["item_timeout_s"]
    """One whole item (every turn and tool call)."""
    server: str = "managed"
    """managed (start a server for the model) | url (a running OpenAI-compatible server)"""
    engine: str = "transformers"
    base_url: str = ""
    model_id: str = ""
    ifeval_path: str = ""
    task_file: str = ""
    """The `tasks` suite's task file (docs/task-files.md)."""
    fixed_on: str | None = None
    """oracle-fixed: the harness version whose names it keeps."""

    @property
    def model_name(self) -> str:
        if self.kind == "oracle-fixed":
            return fixed_name(self.fixed_on or "")
        return ORACLE if self.kind == "oracle" else self.model

    def validate(self) -> None:
        """What the form alone knows, then core's own checks (`eval_request`)."""
        self.eval_request()

    def _check_form(self) -> None:
        if not self.model:
            raise RequestError("model", "pick a model")
        if not self.suites:
            raise RequestError("suites", "pick at least one suite")
        if self.kind != "model" and "ifeval" in self.suites:
            raise RequestError("suites", "the oracle answers agent tasks only, not IFEval")
        if self.kind == "oracle-fixed" and not self.fixed_on:
            raise RequestError("fixed_on", "pick the harness version the oracle keeps")
        if self.kind == "model" and self.server == "url":
            check_url("base_url", self.base_url, "a running server")
        if self.uses_task_file:
            path = Path(self.task_file.strip()).expanduser()
            if not self.task_file.strip():
                raise RequestError("task_file", "name the task file of the task-file suites")
            if not path.is_file():
                raise RequestError("task_file", f"{path}: no such file")

    @property
    def uses_task_file(self) -> bool:
        return any(s in self.suites for s in TASK_FILE_SUITES)

    def _fields(self) -> dict[str, Any]:
        url = self.kind == "model" and self.server == "url"
        task_file = self.task_file.strip()
        return {
            "model": self.model_name,
            "adapter": self.adapter if self.kind == "model" else None,
            "suites": [Suite(s) for s in self.suites],
            "harness": self.harness,
            "limit": self.limit,
            "variants": self.variants,
            "samples": self.samples,
            "concurrency": self.concurrency,
            "max_tokens": self.max_tokens,
            "call_timeout_s": self.call_timeout_s,
            "item_timeout_s": self.item_timeout_s,
            "engine": self.engine,
            "base_url": (self.base_url.strip() or None) if url else None,
            "model_id": (self.model_id.strip() or None) if url else None,
            "ifeval_path": self.ifeval_path.strip() or None,
            "task_file": (
                str(Path(task_file).expanduser().resolve())
                if self.uses_task_file and task_file
                else None
            ),
        }

    def eval_request(self) -> EvalRequest:
        """The request, built and checked by core: a value core refuses is a RequestError
        naming the form's field, with core's message."""
        from pydantic import ValidationError

        from core.eval.api import EvalRequest

        self._check_form()
        try:
            return EvalRequest(**self._fields())
        except ValidationError as exc:
            error = exc.errors()[0]
            message = str(error.get("msg", exc)).removeprefix("Value error, ")
            where = [str(p) for p in error.get("loc", ())]
            if where:
                raise RequestError(where[0], message) from None
            field_name, _, said = message.partition(": ")  # a check of several fields
            raise RequestError(field_name, said) from None

    def command(self) -> str:
        """The equivalent `hat eval run` line (core's), shown while the form is still being
        filled in: the values as they stand, checked or not."""
        from core.eval.api import EvalRequest

        return run_command(
            EvalRequest.model_construct(**self._fields()),
            oracle=self.kind == "oracle",
            fixed_on=self.fixed_on if self.kind == "oracle-fixed" else None,
        )

    def factory(self, store: Store) -> ClientFactory | None:
        if self.kind == "oracle":
            return oracle_factory(store)
        if self.kind == "oracle-fixed":
            return oracle_factory(store, self.fixed_on)
        return None


@dataclass
class EvalProgress:
    done: int
    total: int
    last: str = ""
    last_ok: bool = True
    passed: int = 0
    failed: int = 0
    """Items this job finished without passing (errors included), so passed + failed is
    what the job finished."""
    errors: int = 0
    """Of `failed`, infrastructure errors (server, timeouts): not scored, retryable."""


class EvalJob:
    """One evaluation or impact gate run in a worker thread, with progress and stop.

    `stop()` sets the runner's stop flag: items in flight finish and are stored, the run is
    stored as stopped, and resume continues it."""

    def __init__(self, work: Callable[[Any, Any], Any]) -> None:
        self._work = work
        self.stop_flag = threading.Event()
        self.progress = EvalProgress(0, 0)

    def stop(self) -> None:
        self.stop_flag.set()

    @property
    def stopped(self) -> bool:
        return self.stop_flag.is_set()

    def run(self, on_progress: Callable[[EvalProgress], None] | None = None) -> Any:
        progress = self.progress

        def callback(done: int, total: int, last: EvalResult | None) -> None:
            progress.done, progress.total = done, total
            if last is not None:
                ok = last.status is ResultStatus.OK and last.passed
                progress.passed += ok
                progress.failed += not ok
                progress.errors += last.status is ResultStatus.ERROR
                mark = "pass" if ok else (last.reason or "not passed")
                seed = f"#{last.variant_seed}" if last.variant_seed is not None else ""
                progress.last = f"{SUITE_LABELS[last.suite.value]} · {last.task_id}{seed}: {mark}"
                progress.last_ok = ok
            if on_progress is not None:
                on_progress(EvalProgress(**progress.__dict__))

        return self._work(callback, self.stop_flag)


def launch_job(store: Store, launch: LaunchRequest) -> EvalJob:
    """A job that runs the launch request (validated now: RequestError names the field)."""
    from core.eval.api import run_eval

    request = launch.eval_request()
    factory = launch.factory(store)

    def work(on_progress: Any, stop: Any) -> EvalRun:
        return run_eval(store, request, on_progress=on_progress, stop=stop, client_factory=factory)

    return EvalJob(work)


def resume_job(store: Store, run_id: str, base_url: str | None = None) -> EvalJob:
    """A job that continues a stopped or failed run (oracle runs get their oracle back)."""
    from core.eval.api import get_eval_run, resume_eval

    run = get_eval_run(store, run_id)
    factory = None
    if run.model == ORACLE:
        factory = oracle_factory(store)
    elif run.model.startswith(f"{ORACLE_FIXED}@"):
        factory = oracle_factory(store, run.model.split("@", 1)[1])

    def work(on_progress: Any, stop: Any) -> EvalRun:
        return resume_eval(
            store,
            run.id,
            on_progress=on_progress,
            stop=stop,
            client_factory=factory,
            base_url=base_url or None,
        )

    return EvalJob(work)


@dataclass(frozen=True)
class ImpactLaunch:
    model: str
    kind: str
    from_version: str
    to_version: str
    suites: tuple[str, ...] = ("ls-qa",)
    limit: int | None = 24
    adapter: str | None = None
    variants: int = 4
    base_url: str = ""

    def validate(self) -> None:
        if not self.from_version or not self.to_version:
            raise RequestError("versions", "pick the two harness versions to compare")
        if self.from_version == self.to_version:
            raise RequestError("versions", "pick two different versions")
        if not self.suites:
            raise RequestError("suites", "pick at least one suite")
        if self.kind != "model" and "ifeval" in self.suites:
            raise RequestError("suites", "the oracle answers agent tasks only, not IFEval")

    @property
    def model_name(self) -> str:
        return fixed_name(self.from_version) if self.kind == "oracle-fixed" else self.model


def impact_job(store: Store, launch: ImpactLaunch) -> EvalJob:
    from core.eval.api import EvalRequest, impact

    launch.validate()
    suites = [Suite(s) for s in launch.suites]
    factory = None
    if launch.kind == "oracle":
        factory = oracle_factory(store)
    elif launch.kind == "oracle-fixed":
        factory = oracle_factory(store, launch.from_version)
    request = EvalRequest(model=launch.model_name, suites=suites, variants=launch.variants)

    def work(on_progress: Any, stop: Any) -> ImpactReport:
        return impact(
            store,
            launch.model_name,
            launch.from_version,
            launch.to_version,
            suites=suites,
            limit=launch.limit,
            adapter=launch.adapter if launch.kind == "model" else None,
            base_url=launch.base_url.strip() or None,
            request=request,
            on_progress=on_progress,
            stop=stop,
            client_factory=factory,
        )

    return EvalJob(work)


# ----------------------------------------------------------------------------- runs


def model_label(model: str, adapter: str | None = None) -> str:
    if model == ORACLE:
        label = "oracle"
    elif model.startswith(f"{ORACLE_FIXED}@"):
        label = f"oracle fixed @ {model.split('@', 1)[1][:7]}"
    else:
        label = model
    return f"{label} + {adapter}" if adapter else label


def when(moment: Any, now: Any = None) -> str:
    """`14:05` today, `Nov 30` before."""
    from datetime import datetime

    if moment is None:
        return ""
    local = moment.astimezone()
    today = (now or datetime.now().astimezone()).date()
    return str(local.strftime("%H:%M") if local.date() == today else local.strftime("%b %d"))


@dataclass(frozen=True)
class RunRow:
    run: Any
    id: str
    model: str
    version: str
    suites: str
    status: str
    progress: float
    pass_rate: float | None
    created: str


def run_rows(runs: list[EvalRun], labels: dict[str, tuple[str, ...]] | None = None) -> list[RunRow]:
    """Rows for the runs table, newest first. `labels`: version id -> its labels."""
    out = []
    for run in sorted(runs, key=lambda r: r.created_at or r.id, reverse=True):
        tags = (labels or {}).get(run.harness_version or "", ())
        version = (run.harness_version or "")[:7] + (f" {tags[0]}" if tags else "")
        out.append(
            RunRow(
                run=run,
                id=run.id,
                model=model_label(run.model, run.adapter),
                version=version,
                suites=", ".join(SUITE_LABELS.get(s.value, s.value) for s in run.suites),
                status=run.status.value,
                progress=run.done / run.total if run.total else 0.0,
                pass_rate=run.passed / run.done if run.done else None,
                created=when(run.created_at),
            )
        )
    return out


@dataclass
class ItemRow:
    result: EvalResult
    suite: str
    task_id: str
    variant: str
    category: str
    score: float
    passed: bool
    status: str
    reason: str

    @property
    def key(self) -> tuple[str, str, int | None, int]:
        return self.result.key


def item_rows(results: list[EvalResult]) -> list[ItemRow]:
    out = []
    for r in results:
        variant = ""
        if r.variant_seed is not None:
            variant = f"{DIMENSION_LABELS.get(r.dimension or '', r.dimension or 'variant')}"
        if r.sample:
            variant = f"{variant} · sample {r.sample}".strip(" ·")
        failed = r.status is not ResultStatus.OK
        reason = r.reason or ""
        if not reason and not r.passed:
            reason = _first_failing_reason(r.grades)
        if r.status is ResultStatus.ERROR:
            reason = f"not scored (infrastructure): {reason}"
        out.append(
            ItemRow(
                result=r,
                suite=SUITE_LABELS.get(r.suite.value, r.suite.value),
                task_id=r.task_id,
                variant=variant,
                category=(r.category or "").replace("_", " "),
                score=0.0 if failed else r.score,
                passed=r.passed and not failed,
                status=(
                    "error"
                    if r.status is ResultStatus.ERROR
                    else "failed"
                    if failed
                    else ("pass" if r.passed else "fail")
                ),
                reason=reason,
            )
        )
    return out


def _first_failing_reason(grades: dict[str, Any]) -> str:
    for name in ("accuracy", "effectiveness", "tool_rationality", "skill_selection"):
        entry = grades.get(name)
        if isinstance(entry, dict) and float(entry.get("score", 1.0)) < 1.0:
            reasons = entry.get("reasons") or []
            return f"{name.replace('_', ' ')}: {reasons[0]}" if reasons else name
    return ""


@dataclass
class SuiteRow:
    suite: str
    items: int
    tasks: int
    failed: int
    score: tuple[float, float, float] | None
    pass_rate: tuple[float, float, float] | None
    extra: str = ""
    errors: int = 0
    """Infrastructure errors: left out of score and pass rate."""


@dataclass
class DimensionRow:
    dimension: str
    rows: int
    score: tuple[float, float, float]
    cost: tuple[float, float, float] | None


@dataclass
class RunView:
    run: Any
    results: list[EvalResult]
    report: EvalReport | None
    suites: list[SuiteRow] = field(default_factory=list)
    dimensions: list[DimensionRow] = field(default_factory=list)
    items: list[ItemRow] = field(default_factory=list)
    failures: list[tuple[str, int, str]] = field(default_factory=list)
    active: bool = False
    """A process is executing the run now (no Resume then)."""

    @property
    def resumable(self) -> bool:
        status = self.run.status.value
        return status in ("stopped", "failed") or (status == "running" and not self.active)

    @property
    def retryable(self) -> int:
        """Error items a finished run can run again ("Retry failed items"); 0 while the run
        is executing or when Resume (which retries them too) is the way on."""
        if self.active or self.resumable or self.run.status.value == "running":
            return 0
        return int(self.run.errors)


def _triple(ci: Any) -> tuple[float, float, float] | None:
    if ci is None:
        return None
    return (float(ci.mean), float(ci.low), float(ci.high))


def run_view(store: Store, run_id: str, resamples: int = RESAMPLES) -> RunView:
    """One run's rows and report (None while it has no rows)."""
    from core.eval.api import eval_run_active, get_eval_run, load_results
    from core.eval.report import IFEVAL_LABELS, build_report

    run = get_eval_run(store, run_id)
    active = run.status.value == "running" and eval_run_active(store, run.id)
    results = load_results(store, run.id)
    if not results:
        return RunView(run, results, None, active=active)
    report = build_report(
        results,
        meta={"model": model_label(run.model, run.adapter), "run": run.id},
        resamples=resamples,
    )
    suites = []
    failures = []
    for s in report.suites:
        extra = ""
        if s.ifeval:
            extra = " · ".join(
                f"{IFEVAL_LABELS.get(k, k)} {v.mean * 100:.1f}" for k, v in s.ifeval.items()
            )
        elif s.variants is not None:
            v = s.variants
            extra = f"{v.variants} variants · P5 {v.p5 * 100:.0f} · worst {v.worst * 100:.0f}"
        if s.pass_k:
            extra += (" · " if extra else "") + ", ".join(
                f"pass^{k} {p * 100:.0f}" for k, p in sorted(s.pass_k.items())
            )
        suites.append(
            SuiteRow(
                suite=s.label,
                items=s.items,
                tasks=s.tasks,
                failed=s.failed,
                score=_triple(s.score),
                pass_rate=_triple(s.pass_rate),
                extra=extra,
                errors=s.errors,
            )
        )
        failures += [
            (f"{s.label}: {f.kind}" + (" (not scored)" if f.infra else ""), f.count, f.example)
            for f in s.failures
        ]
    dims = [
        DimensionRow(
            dimension=DIMENSION_LABELS.get(d.dimension, d.dimension),
            rows=d.rows,
            score=_triple(d.score),
            cost=_triple(d.cost) if d.cost is not None else None,
        )
        for d in report.dimensions
    ]
    return RunView(run, results, report, suites, dims, item_rows(results), failures, active=active)


@dataclass(frozen=True)
class ModelDistribution:
    label: str
    run_id: str
    distribution: VariantDistribution


def variant_distributions(store: Store, runs: list[EvalRun]) -> list[ModelDistribution]:
    """Per model (and adapter), the distribution over HV-QA variants of its newest run that
    has HV-QA rows, in the order models were first evaluated."""
    from core.eval.api import load_results
    from core.eval.stats import variant_distribution

    newest: dict[str, EvalRun] = {}
    order: list[str] = []
    for run in sorted(runs, key=lambda r: r.created_at or r.id):
        hv = next((s for s in HV_BASE if s in run.suites), None)
        if hv is None or not run.done:
            continue
        label = model_label(run.model, run.adapter)
        if label not in newest:
            order.append(label)
        newest[label] = run
    out = []
    for label in order:
        run = newest[label]
        hv = next(s for s in HV_BASE if s in run.suites)
        dist = variant_distribution(load_results(store, run.id, suite=hv))
        if dist is not None:
            out.append(ModelDistribution(label, run.id, dist))
    return out


def trace_items(store: Store, run_id: str, key: tuple[str, str, int | None, int]) -> list[TurnItem]:
    """The stored trace of one item as readable turns ([] when the item has no trace)."""
    from core.eval.api import load_trace
    from core.runtime.trace import Trace

    data = load_trace(store, run_id, key)
    if data is None:
        return []
    return turns_from_trace(Trace.model_validate(data))


# ----------------------------------------------------------------------------- impact


@dataclass
class GroupRow:
    label: str
    component: str
    name: str
    change: str
    broke: int
    fixed: int
    flips: list[Any]


@dataclass
class FlipRow:
    flip: Any
    suite: str
    task_id: str
    variant: str
    direction: str
    before: float
    after: float
    reason: str


COMPONENT_RANK = {"tool": 0, "skill": 1, "hook": 2, "prompt": 3, "manifest": 4}
"""Ties in flip counts list the most specific change first (a renamed tool before the skill
text that mentions it)."""


def impact_groups(report: ImpactReport) -> list[GroupRow]:
    """Groups with flips first (most broken first), then the changed components no flip
    touched (so every change of the diff is listed)."""
    rows: list[GroupRow] = []
    seen: set[str] = set()
    for g in report.groups:
        if g.change is None:
            rows.append(
                GroupRow("No changed component touched", "", "", "", g.broke, g.fixed, g.flips)
            )
            continue
        seen.add(g.change.label)
        rows.append(
            GroupRow(
                g.change.label,
                g.change.component,
                g.change.name
                if g.change.old_name is None
                else f"{g.change.old_name} → {g.change.name}",
                g.change.change,
                g.broke,
                g.fixed,
                list(g.flips),
            )
        )
    for c in report.changes:
        if c.label not in seen:
            name = c.name if c.old_name is None else f"{c.old_name} → {c.name}"
            rows.append(GroupRow(c.label, c.component, name, c.change, 0, 0, []))
    rows.sort(
        key=lambda r: (-(r.broke + r.fixed), -r.broke, COMPONENT_RANK.get(r.component, 5), r.label)
    )
    return rows


def flip_rows(flips: list[Any]) -> list[FlipRow]:
    out = []
    for f in flips:
        suite, task, seed, sample = f.key
        variant = f"#{seed}" if seed is not None else ""
        if sample:
            variant += f" s{sample}"
        after = f.after
        failed = after.status is not ResultStatus.OK
        reason = after.reason or "" if failed else _first_failing_reason(after.grades)
        if f.direction == "fixed":
            before = f.before
            reason = before.reason or _first_failing_reason(before.grades)
        out.append(
            FlipRow(
                flip=f,
                suite=SUITE_LABELS.get(suite, suite),
                task_id=task,
                variant=variant.strip(),
                direction=f.direction,
                before=0.0 if f.before.status is not ResultStatus.OK else f.before.score,
                after=0.0 if failed else after.score,
                reason=reason,
            )
        )
    return out


def pace_line(done: int, total: int, elapsed_s: float, first_done: int = 0) -> str:
    """ "12 / 40 items · about 3 min left" from this job's own pace (items it finished over
    the time it ran; a resumed run's earlier items do not count towards the pace)."""
    line = f"{done} / {total} items"
    finished = done - first_done
    if finished <= 0 or done >= total or elapsed_s <= 0:
        return line
    left = (total - done) * elapsed_s / finished
    return f"{line} · about {_rough(left)} left"


def _rough(seconds: float) -> str:
    if seconds < 90:
        return f"{max(5, round(seconds / 5) * 5):.0f} s"
    if seconds < 5400:
        return f"{round(seconds / 60):.0f} min"
    return f"{seconds / 3600:.1f} h"


def size_line(items: int, pace_per_min: float | None = None, *, complete: bool = True) -> str:
    """What a run of `items` will cost, before it starts: the count, and the time at the
    pace of the last run this session measured (none yet: said so). Not `complete`: the
    IFEval prompts could not be counted yet."""
    if items <= 0 and complete:
        return "no items to run"
    head = f"{items} item{'s' if items != 1 else ''}" + ("" if complete else " + IFEval's")
    if not pace_per_min:
        return f"{head} · the time shows once the first items are done"
    return f"{head} · about {_rough(60 * items / pace_per_min)} at the last run's pace"


def planned_items(request: EvalRequest) -> tuple[int, bool]:
    """(items, complete): how many items `request` runs, for the line under the form.

    The agent suites are planned exactly (`plan_items`, as the run will). IFEval's prompts are
    counted as the non-empty lines of their JSONL file, not loaded: loading validates every
    instruction with the official checkers (seconds of imports), too much for a line that
    follows every edit. Without a readable file the count leaves IFEval out (`complete`
    False)."""
    from core.eval.planning import plan_items

    agent = request.model_copy(
        update={"suites": [s for s in request.suites if s is not Suite.IFEVAL]}
    )
    items = len(plan_items(agent))
    if Suite.IFEVAL not in request.suites:
        return items, True
    from core.eval.ifeval import default_prompts_path

    path = Path(request.ifeval_path) if request.ifeval_path else default_prompts_path()
    try:
        prompts = _line_count(str(path), path.stat().st_mtime_ns)
    except OSError:
        return items, False
    if request.limit is not None:
        prompts = min(prompts, request.limit)
    return items + prompts * request.samples, True


@functools.lru_cache(maxsize=8)
def _line_count(path: str, _mtime_ns: int) -> int:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if line.strip())
