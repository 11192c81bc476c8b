"""Evaluation reports: from EvalResult rows to numbers with intervals, and from those to
report.json, report.md and PNG plots (core/eval/plots.py).

    report = build_report(load_results(store, run_id), meta={"model": "demo", "run": run_id})
    paths = write_report(report, out_dir)            # report.json, report.md, *.png
    table = compare_reports({"base": r0, "fixed SFT": r1, "HAT": r2})
    paths = write_comparison({"base": r0, ...}, out_dir)

A report covers one model (one run, or rows pooled from runs of one model); `meta` is free
(model, adapter, harness version, run ids, package versions...) and is printed as given.
Every score carries a 95 % percentile bootstrap interval that resamples tasks, not rows
(core/eval/stats.py says why); failed rows count as 0 and are listed with their reasons.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.eval import plots as charts
from core.eval.ifeval import IfevalScore
from core.eval.results import (
    HV_BASE,
    INFRA_FAILURES,
    SUITE_LABELS,
    EvalResult,
    ResultStatus,
    Suite,
    failure_kind,
    scored,
)
from core.eval.stats import (
    DEFAULT_LEVEL,
    DEFAULT_RESAMPLES,
    DimensionCost,
    Interval,
    VariantDistribution,
    bootstrap_ci,
    dimension_breakdown,
    pass_hat_k_curve,
    pass_interval,
    score_interval,
    trials_by_task,
    variant_distribution,
)

IFEVAL_LABELS = {
    "prompt_level_strict_acc": "prompt-level strict",
    "inst_level_strict_acc": "instruction-level strict",
    "prompt_level_loose_acc": "prompt-level loose",
    "inst_level_loose_acc": "instruction-level loose",
}


class FailureKind(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    """The reason's leading word (`model_error: ...` -> model_error)."""
    count: int
    example: str
    """One full reason of this kind, for the reader."""
    infra: bool = False
    """An infrastructure kind (results.INFRA_FAILURES): not scored, retried on resume."""


class SuiteReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: Suite
    items: int
    tasks: int
    samples: int = Field(description="Most samples any item has (pass^k needs > 1).")
    failed: int
    score: Interval | None
    """Over the scored rows (all but errors); None when every row is an error."""
    pass_rate: Interval | None
    errors: int = 0
    """Infrastructure errors: left out of `score` and `pass_rate`, counted here."""
    failures: list[FailureKind] = Field(default_factory=list)
    by_category: dict[str, float] = Field(default_factory=dict)
    pass_k: dict[int, float] | None = None
    variants: VariantDistribution | None = None
    ifeval: dict[str, Interval] | None = Field(
        default=None, description="IFEval: the four official numbers, each with its interval."
    )

    @property
    def label(self) -> str:
        return SUITE_LABELS[self.suite]


class EvalReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    meta: dict[str, Any] = Field(default_factory=dict)
    created_at: str
    resamples: int
    seed: int
    level: float
    suites: list[SuiteReport]
    dimensions: list[DimensionCost] = Field(
        default_factory=list, description="HV-QA per HSA dimension against LS-QA, costliest first."
    )

    @property
    def label(self) -> str:
        """How tables and plots name this report's model."""
        for key in ("label", "model"):
            if self.meta.get(key):
                return str(self.meta[key])
        return "model"

    def suite(self, suite: Suite | str) -> SuiteReport | None:
        wanted = Suite(suite)
        return next((s for s in self.suites if s.suite is wanted), None)


# ----------------------------------------------------------------------------- build


def _kind(reason: str | None) -> str:
    return failure_kind(reason) or "unknown"


def _failures(rows: Sequence[EvalResult]) -> list[FailureKind]:
    """Failed and error rows by reason kind, errors first (they are not the model's)."""
    failed = [r for r in rows if r.status is not ResultStatus.OK]
    counts = Counter(_kind(r.reason) for r in failed)
    examples: dict[str, str] = {}
    for r in failed:
        examples.setdefault(_kind(r.reason), (r.reason or "no reason recorded").strip())
    order = sorted(counts, key=lambda k: (k not in INFRA_FAILURES, -counts[k], k))
    return [
        FailureKind(kind=k, count=counts[k], example=examples[k], infra=k in INFRA_FAILURES)
        for k in order
    ]


def _ifeval_intervals(rows: Sequence[EvalResult], n: int, seed: int) -> dict[str, Interval]:
    """The four official numbers with prompt-clustered intervals (a prompt's instructions
    and samples are resampled together). Rows without instruction detail count at prompt
    level only; a failed row follows nothing."""
    prompt_strict: list[float] = []
    prompt_loose: list[float] = []
    inst_strict: list[float] = []
    inst_loose: list[float] = []
    prompt_groups: list[str] = []
    inst_groups: list[str] = []
    for r in rows:
        try:
            score: IfevalScore | None = IfevalScore.model_validate(r.grades)
        except ValidationError:
            score = None
        prompt_groups.append(r.task_id)
        if score is None:
            prompt_strict.append(0.0)
            prompt_loose.append(0.0)
            continue
        ok = r.status is ResultStatus.OK
        prompt_strict.append(float(ok and score.prompt_strict))
        prompt_loose.append(float(ok and score.prompt_loose))
        for check in score.instructions:
            inst_strict.append(float(ok and check.strict))
            inst_loose.append(float(ok and check.loose))
            inst_groups.append(r.task_id)
    out = {
        "prompt_level_strict_acc": bootstrap_ci(
            prompt_strict, n=n, seed=seed, groups=prompt_groups
        ),
    }
    if inst_strict:
        out["inst_level_strict_acc"] = bootstrap_ci(inst_strict, n=n, seed=seed, groups=inst_groups)
    out["prompt_level_loose_acc"] = bootstrap_ci(prompt_loose, n=n, seed=seed, groups=prompt_groups)
    if inst_loose:
        out["inst_level_loose_acc"] = bootstrap_ci(inst_loose, n=n, seed=seed, groups=inst_groups)
    return out


def _suite_report(suite: Suite, every: Sequence[EvalResult], n: int, seed: int) -> SuiteReport:
    """One suite's numbers over its scored rows; errors are counted, never scored."""
    rows = scored(every)
    by_item: Counter[tuple[str, int | None]] = Counter((r.task_id, r.variant_seed) for r in rows)
    samples = max(by_item.values(), default=1)
    pass_k = pass_hat_k_curve(trials_by_task(rows)) if samples > 1 else None
    categories: dict[str, list[float]] = {}
    for r in rows:
        if r.category:
            categories.setdefault(r.category, []).append(
                0.0 if r.status is not ResultStatus.OK else r.score
            )
    return SuiteReport(
        suite=suite,
        items=len(every),
        tasks=len({r.task_id for r in every}),
        samples=samples,
        failed=sum(r.status is ResultStatus.FAILED for r in rows),
        errors=len(every) - len(rows),
        score=score_interval(rows, n=n, seed=seed) if rows else None,
        pass_rate=pass_interval(rows, n=n, seed=seed) if rows else None,
        failures=_failures(every),
        by_category={c: sum(v) / len(v) for c, v in sorted(categories.items())},
        pass_k=pass_k,
        variants=variant_distribution(rows),
        ifeval=_ifeval_intervals(rows, n, seed) if suite is Suite.IFEVAL and rows else None,
    )


def build_report(
    results: Sequence[EvalResult],
    *,
    meta: Mapping[str, Any] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> EvalReport:
    """Numbers for one model's rows: per suite score and pass rate with intervals, failures
    by reason, pass^k (when items have several samples), the distribution over variants and
    the per-HSA-dimension cost. Raises ValueError for no rows or duplicate item keys."""
    rows = list(results)
    if not rows:
        raise ValueError("no evaluation results to report on")
    seen: set[tuple[str, str, int | None, int]] = set()
    for r in rows:
        if r.key in seen:
            raise ValueError(f"duplicate evaluation item {r.key}: one row per item")
        seen.add(r.key)
    suites = [
        _suite_report(s, [r for r in rows if r.suite is s], resamples, seed)
        for s in Suite
        if any(r.suite is s for r in rows)
    ]
    return EvalReport(
        meta=dict(meta or {}),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        resamples=resamples,
        seed=seed,
        level=DEFAULT_LEVEL,
        suites=suites,
        dimensions=dimension_breakdown(scored(rows), n=resamples, seed=seed),
    )


# ----------------------------------------------------------------------------- markdown


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or value != value:  # None or NaN
        return "–"
    return f"{value:.{digits}f}"


def fmt_interval(ci: Interval | None, digits: int = 3) -> str:
    if ci is None:
        return "–"
    return f"{fmt(ci.mean, digits)} [{fmt(ci.low, digits)}, {fmt(ci.high, digits)}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def esc(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(h) for h in header) + " |"]
    lines.append("|" + "|".join("---" for _ in header) + "|")
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return lines


def _suite_markdown(s: SuiteReport, level: float) -> list[str]:
    pct = f"{level:.0%}"
    lines = [f"### {s.label}", ""]
    rows = [
        ["score", fmt_interval(s.score)],
        ["pass rate", fmt_interval(s.pass_rate)],
        ["items / tasks", f"{s.items} / {s.tasks}"],
        ["failed", str(s.failed)],
        ["infrastructure errors (not scored)", str(s.errors)],
    ]
    if s.pass_k:
        rows.append(["pass^k", ", ".join(f"k={k}: {fmt(v)}" for k, v in sorted(s.pass_k.items()))])
    lines += _table(["metric", f"value [{pct} interval]"], rows)
    if s.ifeval:
        lines += ["", "IFEval, the four official numbers:", ""]
        lines += _table(
            ["metric", f"value [{pct} interval]"],
            [[IFEVAL_LABELS.get(k, k), fmt_interval(v)] for k, v in s.ifeval.items()],
        )
    if s.by_category:
        lines += ["", "By task category (mean score):", ""]
        lines += _table(["category", "score"], [[c, fmt(v)] for c, v in s.by_category.items()])
    if s.failures:
        lines += ["", "Failures by reason:", ""]
        lines += _table(
            ["reason", "count", "example"],
            [[_kind_label(f), str(f.count), _short(f.example)] for f in s.failures],
        )
    lines.append("")
    return lines


def _kind_label(f: FailureKind) -> str:
    return f"{f.kind} (infrastructure, not scored)" if f.infra else f.kind


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def report_markdown(report: EvalReport) -> str:
    pct = f"{report.level:.0%}"
    lines = [f"# Evaluation report: {report.label}", ""]
    for key, value in report.meta.items():
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        lines.append(f"- **{key}**: {shown}")
    lines += [
        f"- **created**: {report.created_at}",
        f"- **intervals**: {pct} percentile bootstrap over tasks, {report.resamples} resamples, "
        f"seed {report.seed}; failed items count as 0, infrastructure errors (server "
        "unreachable, timeouts, crashes) are left out and counted apart",
        "",
        "## Summary",
        "",
    ]
    lines += _table(
        ["suite", "score", "pass rate", "items", "failed", "errors (not scored)"],
        [
            [
                s.label,
                fmt_interval(s.score),
                fmt_interval(s.pass_rate),
                str(s.items),
                str(s.failed),
                str(s.errors),
            ]
            for s in report.suites
        ],
    )
    lines += ["", "## Suites", ""]
    for s in report.suites:
        lines += _suite_markdown(s, report.level)
    variants = [s for s in report.suites if s.variants]
    if variants:
        lines += [
            "## Distribution over harness variants",
            "",
            "A variant is one (task, variant seed), scored as the mean over its samples. "
            "Worst per task: the mean over tasks of each task's least favourable variant.",
            "",
        ]
        lines += _table(
            ["suite", "variants", "tasks", "mean", "P5", "worst", "worst per task"],
            [
                [
                    s.label,
                    str(d.variants),
                    str(d.tasks),
                    fmt(d.mean),
                    fmt(d.p5),
                    fmt(d.worst),
                    fmt(d.worst_per_task),
                ]
                for s in variants
                if (d := s.variants) is not None
            ],
        )
        lines.append("")
    if report.dimensions:
        lines += [
            "## Per HSA dimension",
            "",
            "HV-QA rows grouped by the dimension their variant changed, against LS-QA (the "
            "original harness) on the same tasks. Cost = LS-QA − HV-QA, paired per task; "
            "positive means the change costs score. Costliest first.",
            "",
        ]
        lines += _table(
            ["dimension", "rows", "tasks", "HV-QA score", "LS-QA (same tasks)", "cost"],
            [
                [
                    d.dimension,
                    str(d.rows),
                    str(d.tasks),
                    fmt_interval(d.score),
                    fmt(d.original),
                    fmt_interval(d.cost),
                ]
                for d in report.dimensions
            ],
        )
        costly = [d for d in report.dimensions if d.cost is not None]
        if costly:
            top = costly[0]
            assert top.cost is not None
            lines += ["", f"Costliest dimension: **{top.dimension}** ({fmt(top.cost.mean)})."]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# ----------------------------------------------------------------------------- comparison


class Cell(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mean: float | None = None
    low: float | None = None
    high: float | None = None

    def text(self, digits: int = 3) -> str:
        if self.mean is None:
            return "–"
        if self.low is None or self.high is None:
            return fmt(self.mean, digits)
        return f"{fmt(self.mean, digits)} [{fmt(self.low, digits)}, {fmt(self.high, digits)}]"


class ComparisonTable(BaseModel):
    """Rows = models (report labels, in the order given), columns = metrics."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    columns: list[str]
    """Column keys (see `column_label`)."""
    rows: dict[str, dict[str, Cell]]

    def markdown(self, digits: int = 3) -> str:
        header = ["model", *(column_label(c) for c in self.columns)]
        body = [
            [label, *(cells.get(c, Cell()).text(digits) for c in self.columns)]
            for label, cells in self.rows.items()
        ]
        return "\n".join(_table(header, body)) + "\n"


def column_label(key: str) -> str:
    """`hv-qa` -> HV-QA; `hv-qa:p5` -> HV-QA P5; `ifeval:inst_level_loose_acc` -> IFEval
    instruction-level loose; `ls-qa:pass` -> LS-QA pass rate."""
    suite, _, part = key.partition(":")
    known = _suite(suite)
    name = SUITE_LABELS[known] if known is not None else suite
    if not part:
        return name
    extra = {
        "pass": "pass rate",
        "p5": "P5",
        "worst": "worst",
        "worst_per_task": "worst per task",
    }.get(part) or IFEVAL_LABELS.get(part, part)
    return f"{name} {extra}"


def _suite(name: str) -> Suite | None:
    try:
        return Suite(name)
    except ValueError:
        return None


def _cell(report: EvalReport, key: str) -> Cell:
    suite, _, part = key.partition(":")
    known = _suite(suite)
    s = report.suite(known) if known is not None else None
    if s is None:
        return Cell()
    ci: Interval | None = None
    if not part:
        ci = s.score
    elif part == "pass":
        ci = s.pass_rate
    elif part in ("p5", "worst", "worst_per_task", "mean"):
        if s.variants is None:
            return Cell()
        return Cell(mean=float(getattr(s.variants, part)))
    elif part.startswith("pass^") and s.pass_k:
        value = s.pass_k.get(int(part[5:]))
        return Cell(mean=value)
    elif s.ifeval and part in s.ifeval:
        ci = s.ifeval[part]
    if ci is None:
        return Cell()
    return Cell(mean=ci.mean, low=ci.low, high=ci.high)


def default_columns(reports: Mapping[str, EvalReport]) -> list[str]:
    """Every suite any report has (score), then HV-QA P5 and worst when variants exist."""
    present = {s.suite for r in reports.values() for s in r.suites}
    columns = [s.value for s in Suite if s in present]
    for hv in HV_BASE:
        if any((s := r.suite(hv)) and s.variants for r in reports.values()):
            columns += [f"{hv.value}:p5", f"{hv.value}:worst"]
    return columns


def compare_reports(
    reports: Mapping[str, EvalReport], *, columns: Sequence[str] | None = None
) -> ComparisonTable:
    """A model-by-metric table over several reports (keys are the row labels).

    Column keys: a suite (`ls-qa`, `hv-qa`, `robustness`, `ifeval`: its score with interval),
    `<suite>:pass` (pass rate), `<suite>:p5|worst|worst_per_task|mean` (variant
    distribution), `<suite>:pass^K`, `ifeval:<official metric>`. A report without the
    metric gets an empty cell."""
    if not reports:
        raise ValueError("no reports to compare")
    cols = list(columns) if columns is not None else default_columns(reports)
    return ComparisonTable(
        columns=cols,
        rows={label: {c: _cell(r, c) for c in cols} for label, r in reports.items()},
    )


# ----------------------------------------------------------------------------- files


def write_report(
    report_or_results: EvalReport | Sequence[EvalResult],
    out_dir: str | Path,
    *,
    meta: Mapping[str, Any] | None = None,
    plots: bool = True,
) -> list[Path]:
    """Write report.json, report.md and the PNG plots into `out_dir` (created); returns the
    paths written. Rows are turned into a report first (with `meta`)."""

    report = (
        report_or_results
        if isinstance(report_or_results, EvalReport)
        else build_report(list(report_or_results), meta=meta)
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.json", out / "report.md"]
    written[0].write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    written[1].write_text(report_markdown(report), encoding="utf-8")
    if plots:
        written += charts.report_plots(report, out)
    return written


def write_comparison(
    reports: Mapping[str, EvalReport],
    out_dir: str | Path,
    *,
    columns: Sequence[str] | None = None,
    plots: bool = True,
) -> list[Path]:
    """comparison.json, comparison.md and comparison plots for several models."""

    table = compare_reports(reports, columns=columns)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "comparison.json", out / "comparison.md"]
    written[0].write_text(table.model_dump_json(indent=2) + "\n", encoding="utf-8")
    written[1].write_text(table.markdown(), encoding="utf-8")
    if plots:
        written += charts.comparison_plots(reports, out)
    return written
