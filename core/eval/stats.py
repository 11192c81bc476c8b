"""Statistics over evaluation rows: bootstrap intervals, pass^k, the distribution over harness
variants and the per-HSA-dimension breakdown. Pure functions of numbers or EvalResult rows;
core/eval/report.py puts them together.

Conventions:
- Intervals are percentile bootstrap intervals (numpy quantiles, linear interpolation) from a
  seeded numpy Generator: the same input and seed give the same interval.
- Items of one task are not independent (HV-QA runs each task under K variants, pass^k
  repeats samples), so report intervals resample *tasks* (clusters) with all their items:
  `bootstrap_ci(values, groups=task_ids)`. The point estimate stays the plain item mean.
- A failed row (ResultStatus.FAILED) counts as score 0 / not passed everywhere here; it is
  never dropped, or a model that loops would look better than one that answers wrong. An
  error row (ResultStatus.ERROR: infrastructure) is dropped before the rows reach these
  functions (results.scored; the reports count them apart); here it scores 0 like a failure.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from core.eval.results import HV_BASE, EvalResult, ResultStatus

DEFAULT_RESAMPLES = 2000
DEFAULT_LEVEL = 0.95
_CHUNK = 4_000_000
"""Resample-matrix entries drawn at once (bounds memory for large suites)."""


class Interval(BaseModel):
    """A mean with its bootstrap interval."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mean: float
    low: float
    high: float
    level: float = DEFAULT_LEVEL
    n: int = Field(ge=0, description="Items (for a paired interval: pairs).")
    clusters: int | None = Field(
        default=None, description="Groups resampled (tasks), when the bootstrap was clustered."
    )

    @property
    def width(self) -> float:
        return self.high - self.low

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def _as_array(values: Iterable[float], what: str) -> NDArray[np.float64]:
    arr = np.asarray(list(values), dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{what}: expected a flat sequence of numbers")
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: values must be finite numbers")
    return arr


def _check(n: int, level: float) -> None:
    if n < 1:
        raise ValueError(f"resamples must be at least 1, got {n}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")


def _resampled_means(
    sums: NDArray[np.float64], counts: NDArray[np.float64], n: int, seed: int
) -> NDArray[np.float64]:
    """Means of `n` resamples of the clusters (each resample draws len(sums) clusters with
    replacement; its mean is the sum of the drawn sums over the sum of the drawn counts)."""
    rng = np.random.default_rng(seed)
    k = sums.size
    out = np.empty(n, dtype=np.float64)
    step = max(1, _CHUNK // k)
    for start in range(0, n, step):
        stop = min(n, start + step)
        picks = rng.integers(0, k, size=(stop - start, k))
        out[start:stop] = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    return out


def _interval(
    point: float, means: NDArray[np.float64], level: float, n: int, clusters: int | None
) -> Interval:
    tail = (1.0 - level) / 2.0
    low, high = (float(x) for x in np.quantile(means, [tail, 1.0 - tail]))
    if float(np.ptp(means)) <= 1e-12 * max(1.0, abs(point)):
        # identical values: a resampled mean can differ from them in the last bit
        low = high = point
    return Interval(mean=point, low=low, high=high, level=level, n=n, clusters=clusters)


def bootstrap_ci(
    values: Sequence[float],
    *,
    n: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    groups: Sequence[Hashable] | None = None,
) -> Interval:
    """Percentile bootstrap interval of the mean of `values`.

    `groups` (same length, e.g. task ids): resample whole groups instead of single values
    (a cluster bootstrap), for items that are not independent. Raises ValueError for no
    values, mismatched lengths or non-finite values."""
    _check(n, level)
    arr = _as_array(values, "values")
    if arr.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    point = float(arr.mean())
    if groups is None:
        sums, counts, clusters = arr, np.ones_like(arr), None
    else:
        if len(groups) != arr.size:
            raise ValueError(f"groups has {len(groups)} entries for {arr.size} values")
        index: dict[Hashable, int] = {}
        ids = np.fromiter((index.setdefault(g, len(index)) for g in groups), dtype=np.int64)
        sums = np.bincount(ids, weights=arr).astype(np.float64)
        counts = np.bincount(ids).astype(np.float64)
        clusters = len(index)
    means = _resampled_means(sums, counts, n, seed)
    return _interval(point, means, level, int(arr.size), clusters)


def paired_bootstrap(
    before: Sequence[float],
    after: Sequence[float],
    *,
    n: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    groups: Sequence[Hashable] | None = None,
) -> Interval:
    """Interval of mean(after - before) over aligned pairs, each pair resampled as one
    (or, with `groups`, each group of pairs). Raises ValueError for unequal lengths."""
    a = _as_array(before, "before")
    b = _as_array(after, "after")
    if a.size != b.size:
        raise ValueError(f"paired samples differ in length: {a.size} before, {b.size} after")
    return bootstrap_ci(list(b - a), n=n, seed=seed, level=level, groups=groups)


# ----------------------------------------------------------------------------- pass^k


def pass_hat_k(trials: Mapping[str, Sequence[bool]], k: int) -> float:
    """tau-bench's pass^k: the chance that k i.i.d. trials of a task all pass, estimated per
    task without bias from c passes in n trials as C(c, k) / C(n, k), averaged over tasks.

    pass^1 is the mean pass rate; pass^k never increases with k. Raises ValueError for no
    tasks, k < 1, or a task with fewer than k trials."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not trials:
        raise ValueError("pass^k needs at least one task")
    total = 0.0
    for task, outcomes in trials.items():
        n_trials = len(outcomes)
        if n_trials < k:
            raise ValueError(f"task {task}: {n_trials} trials, fewer than k = {k}")
        c = sum(bool(o) for o in outcomes)
        total += math.comb(c, k) / math.comb(n_trials, k)
    return total / len(trials)


def pass_hat_k_curve(trials: Mapping[str, Sequence[bool]]) -> dict[int, float]:
    """pass^k for k = 1 .. the fewest trials any task has."""
    if not trials:
        return {}
    most = min(len(v) for v in trials.values())
    return {k: pass_hat_k(trials, k) for k in range(1, most + 1)}


def trials_by_task(results: Iterable[EvalResult]) -> dict[str, list[bool]]:
    """Per item (task, variant) the pass outcomes of its samples, in sample order; the item
    is named `task` or `task@variant_seed`. A failed row is a failed trial."""
    found: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for r in results:
        name = r.task_id if r.variant_seed is None else f"{r.task_id}@{r.variant_seed}"
        found[name].append((r.sample, _passed(r)))
    return {name: [p for _, p in sorted(rows)] for name, rows in found.items()}


# ----------------------------------------------------------------------------- rows


def _score(r: EvalResult) -> float:
    return r.score if r.status is ResultStatus.OK else 0.0


def _passed(r: EvalResult) -> bool:
    return r.status is ResultStatus.OK and r.passed


def score_interval(
    results: Sequence[EvalResult], *, n: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Interval:
    """Mean score of the rows with a task-clustered interval."""
    return bootstrap_ci(
        [_score(r) for r in results], n=n, seed=seed, groups=[r.task_id for r in results]
    )


def pass_interval(
    results: Sequence[EvalResult], *, n: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Interval:
    """Pass rate of the rows with a task-clustered interval."""
    return bootstrap_ci(
        [float(_passed(r)) for r in results], n=n, seed=seed, groups=[r.task_id for r in results]
    )


class VariantDistribution(BaseModel):
    """How one model's scores spread over harness variants (HV-QA).

    A variant is one (task, variant seed); its score is the mean over its samples. `p5` is
    the 5th percentile of those scores (linear interpolation), `worst` the lowest.
    `worst_per_task` is the mean over tasks of each task's worst variant: the score a model
    keeps when every task meets its least favourable harness edit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    variants: int
    tasks: int
    mean: float
    p5: float
    worst: float
    worst_per_task: float
    scores: list[float] = Field(description="Every variant's score, for plots.")


def variant_distribution(results: Iterable[EvalResult]) -> VariantDistribution | None:
    """The distribution over variants of the rows that have a variant seed; None if none."""
    by_variant: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in results:
        if r.variant_seed is not None:
            by_variant[(r.task_id, r.variant_seed)].append(_score(r))
    if not by_variant:
        return None
    scores = {key: float(np.mean(v)) for key, v in by_variant.items()}
    per_task: dict[str, list[float]] = defaultdict(list)
    for (task, _), s in scores.items():
        per_task[task].append(s)
    values = np.asarray(list(scores.values()), dtype=np.float64)
    return VariantDistribution(
        variants=len(scores),
        tasks=len(per_task),
        mean=float(values.mean()),
        p5=float(np.percentile(values, 5)),
        worst=float(values.min()),
        # exact (rational) mean: a float sum put it an ulp below `worst` when all were equal
        worst_per_task=float(statistics.mean(min(v) for v in per_task.values())),
        scores=[float(v) for v in values],
    )


class DimensionCost(BaseModel):
    """HV-QA on variants that changed one HSA dimension, against LS-QA on the same tasks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dimension: str
    rows: int
    tasks: int
    score: Interval
    """Mean HV-QA score of this dimension's rows (task-clustered interval)."""
    original: float | None
    """LS-QA mean score over the same tasks (the original harness); None without LS-QA rows."""
    cost: Interval | None
    """original - variant, paired per task (a task's variant rows against its LS-QA rows);
    positive = the dimension costs score. None without LS-QA rows for these tasks."""


def dimension_breakdown(
    results: Sequence[EvalResult], *, n: int = DEFAULT_RESAMPLES, seed: int = 0
) -> list[DimensionCost]:
    """Per HSA dimension (EvalResult.dimension on HV-QA and hv-tasks rows) its score and its
    cost against the original harness (the same tasks' LS-QA or tasks rows), costliest first
    (dimensions without a cost last, by name)."""
    original: dict[str, list[float]] = defaultdict(list)
    variants: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    bases = set(HV_BASE.values())
    for r in results:  # a task is keyed by its base suite: two suites may share task ids
        if r.suite in bases:
            original[f"{r.suite.value}/{r.task_id}"].append(_score(r))
        elif r.suite in HV_BASE and r.dimension:
            key = f"{HV_BASE[r.suite].value}/{r.task_id}"
            variants[r.dimension][key].append(_score(r))
    out: list[DimensionCost] = []
    for dim, by_task in variants.items():
        rows = [(task, s) for task, scores in by_task.items() for s in scores]
        score = bootstrap_ci([s for _, s in rows], n=n, seed=seed, groups=[t for t, _ in rows])
        paired = [t for t in by_task if t in original]
        cost: Interval | None = None
        base: float | None = None
        if paired:
            before = [float(np.mean(original[t])) for t in paired]
            after = [float(np.mean(by_task[t])) for t in paired]
            base = float(np.mean(before))
            cost = paired_bootstrap(after, before, n=n, seed=seed)  # original - variant
        out.append(
            DimensionCost(
                dimension=dim,
                rows=len(rows),
                tasks=len(by_task),
                score=score,
                original=base,
                cost=cost,
            )
        )
    out.sort(key=lambda d: (d.cost is None, -(d.cost.mean if d.cost else 0.0), d.dimension))
    return out
