"""Statistics for evaluation reports (core/eval/stats.py): bootstrap intervals, paired and
clustered; pass^k; the variant distribution; the per-HSA-dimension cost."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.eval.results import EvalResult, ResultStatus, Suite
from core.eval.stats import (
    bootstrap_ci,
    dimension_breakdown,
    paired_bootstrap,
    pass_hat_k,
    pass_hat_k_curve,
    pass_interval,
    score_interval,
    trials_by_task,
    variant_distribution,
)

FAST = {"n": 300}
scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
samples = st.lists(scores, min_size=1, max_size=40)


@given(value=scores, size=st.integers(1, 30), seed=st.integers(0, 2**32 - 1))
def test_constant_data_gives_a_point_interval_at_the_mean(value: float, size: int, seed: int):
    ci = bootstrap_ci([value] * size, seed=seed, **FAST)
    assert ci.low == ci.mean == ci.high == pytest.approx(value)
    assert ci.contains(ci.mean) and ci.n == size


@given(values=samples, seed=st.integers(0, 1000))
def test_interval_lies_within_the_data_and_is_reproducible(values: list[float], seed: int):
    ci = bootstrap_ci(values, seed=seed, **FAST)
    assert min(values) - 1e-12 <= ci.low <= ci.high <= max(values) + 1e-12
    assert ci.mean == pytest.approx(float(np.mean(values)))
    assert bootstrap_ci(values, seed=seed, **FAST) == ci


@given(values=samples, factor=st.floats(1.0, 10.0), seed=st.integers(0, 1000))
def test_interval_widens_with_the_spread(values: list[float], factor: float, seed: int):
    """Stretching every value away from the mean by `factor` stretches the interval by it."""
    mean = float(np.mean(values))
    wider = [mean + factor * (v - mean) for v in values]
    a = bootstrap_ci(values, seed=seed, **FAST)
    b = bootstrap_ci(wider, seed=seed, **FAST)
    assert b.width == pytest.approx(factor * a.width, abs=1e-9)
    assert b.width >= a.width - 1e-12


@given(values=samples, shift=st.floats(-5, 5), seed=st.integers(0, 1000))
def test_interval_moves_with_a_shift(values: list[float], shift: float, seed: int):
    a = bootstrap_ci(values, seed=seed, **FAST)
    b = bootstrap_ci([v + shift for v in values], seed=seed, **FAST)
    assert (b.low, b.high) == pytest.approx((a.low + shift, a.high + shift), abs=1e-9)


def test_more_data_narrows_the_interval():
    rng = np.random.default_rng(1)
    small = bootstrap_ci(list(rng.random(20)), seed=0)
    large = bootstrap_ci(list(rng.random(2000)), seed=0)
    assert large.width < small.width / 4


def test_level_orders_intervals():
    values = list(np.random.default_rng(2).random(50))
    narrow = bootstrap_ci(values, level=0.5, seed=3)
    wide = bootstrap_ci(values, level=0.99, seed=3)
    assert wide.low <= narrow.low <= narrow.high <= wide.high


@given(
    task_means=st.lists(scores, min_size=1, max_size=15),
    per_task=st.integers(1, 6),
    seed=st.integers(0, 1000),
)
def test_clustered_bootstrap_resamples_whole_tasks(
    task_means: list[float], per_task: int, seed: int
):
    """With equal-size tasks, resampling tasks is resampling their means."""
    values = [m for m in task_means for _ in range(per_task)]
    groups = [i for i in range(len(task_means)) for _ in range(per_task)]
    clustered = bootstrap_ci(values, groups=groups, seed=seed, **FAST)
    of_means = bootstrap_ci(task_means, seed=seed, **FAST)
    assert (clustered.low, clustered.high) == pytest.approx((of_means.low, of_means.high))
    assert clustered.clusters == len(task_means) and clustered.n == len(values)


def test_clustered_interval_is_wider_for_correlated_items():
    """Eight identical variants per task are one piece of evidence, not eight."""
    task_scores = list(np.random.default_rng(4).integers(0, 2, size=20).astype(float))
    values = [s for s in task_scores for _ in range(8)]
    groups = [t for t in range(20) for _ in range(8)]
    naive = bootstrap_ci(values, seed=0)
    clustered = bootstrap_ci(values, groups=groups, seed=0)
    assert clustered.width > 2 * naive.width


@given(values=samples, delta=st.floats(-1, 1), seed=st.integers(0, 1000))
def test_paired_bootstrap_of_a_constant_shift(values: list[float], delta: float, seed: int):
    ci = paired_bootstrap(values, [v + delta for v in values], seed=seed, **FAST)
    assert ci.low == pytest.approx(delta, abs=1e-9) and ci.high == pytest.approx(delta, abs=1e-9)


def test_paired_bootstrap_sees_a_difference_unpaired_noise_hides():
    rng = np.random.default_rng(5)
    base = rng.random(60)
    after = base + 0.05 + rng.normal(0, 0.01, 60)
    ci = paired_bootstrap(list(base), list(after), seed=0)
    assert ci.low > 0.03 and ci.high < 0.07
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([1.0], [1.0, 2.0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"values": []}, "at least one value"),
        ({"values": [1.0, math.nan]}, "finite"),
        ({"values": [1.0], "n": 0}, "resamples"),
        ({"values": [1.0], "level": 1.0}, "level"),
        ({"values": [1.0, 2.0], "groups": ["a"]}, "groups has 1"),
    ],
)
def test_bad_input(kwargs: dict[str, object], message: str):
    values = kwargs.pop("values")
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(values, **kwargs)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- pass^k

trial_sets = st.dictionaries(
    st.text("abc", min_size=1, max_size=3),
    st.lists(st.booleans(), min_size=4, max_size=8),
    min_size=1,
    max_size=8,
)


@given(trials=trial_sets)
def test_pass1_is_the_mean_pass_rate(trials: dict[str, list[bool]]):
    expected = np.mean([np.mean(v) for v in trials.values()])
    assert pass_hat_k(trials, 1) == pytest.approx(expected)


@given(trials=trial_sets)
def test_pass_k_never_increases_with_k(trials: dict[str, list[bool]]):
    curve = pass_hat_k_curve(trials)
    assert list(curve) == list(range(1, min(len(v) for v in trials.values()) + 1))
    values = list(curve.values())
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(values))


def test_pass_k_exact_values():
    # one task, 2 of 4 pass: pass^2 = C(2,2)/C(4,2) = 1/6; pass^3 = 0
    assert pass_hat_k({"t": [True, True, False, False]}, 2) == pytest.approx(1 / 6)
    assert pass_hat_k({"t": [True, True, False, False]}, 3) == 0.0
    assert pass_hat_k({"a": [True] * 4, "b": [False] * 4}, 4) == 0.5
    with pytest.raises(ValueError, match="fewer than k"):
        pass_hat_k({"t": [True]}, 2)
    with pytest.raises(ValueError):
        pass_hat_k({}, 1)


def row(
    task: str,
    score: float,
    *,
    suite: Suite = Suite.LS_QA,
    sample: int = 0,
    seed: int | None = None,
    dim: str | None = None,
    failed: bool = False,
) -> EvalResult:
    return EvalResult(
        suite=suite,
        task_id=task,
        sample=sample,
        variant_seed=seed,
        dimension=dim,
        score=score,
        passed=score == 1.0,
        status=ResultStatus.FAILED if failed else ResultStatus.OK,
        reason="server_died" if failed else None,
    )


def test_trials_by_task_orders_samples_and_counts_failures():
    rows = [
        row("t", 1.0, sample=1),
        row("t", 0.0, sample=0),
        row("t", 1.0, sample=2, failed=True),
        row("u", 1.0, seed=7, suite=Suite.HV_QA),
    ]
    assert trials_by_task(rows) == {"t": [False, True, False], "u@7": [True]}


def test_failed_rows_count_as_zero():
    rows = [row("a", 1.0), row("b", 1.0, failed=True)]
    assert score_interval(rows).mean == 0.5
    assert pass_interval(rows).mean == 0.5


# ----------------------------------------------------------------------------- variants


def test_variant_distribution():
    rows = [
        row("a", 1.0, suite=Suite.HV_QA, seed=1),
        row("a", 0.5, suite=Suite.HV_QA, seed=2),
        row("a", 0.0, suite=Suite.HV_QA, seed=2, sample=1),  # seed 2 averages to 0.25
        row("b", 1.0, suite=Suite.HV_QA, seed=3),
        row("b", 0.75, suite=Suite.HV_QA, seed=4),
        row("c", 1.0),  # no variant: not part of it
    ]
    dist = variant_distribution(rows)
    assert dist is not None
    assert dist.variants == 4 and dist.tasks == 2
    assert dist.mean == pytest.approx((1.0 + 0.25 + 1.0 + 0.75) / 4)
    assert dist.worst == 0.25
    assert dist.worst_per_task == pytest.approx((0.25 + 0.75) / 2)
    assert dist.worst <= dist.p5 <= dist.mean
    assert variant_distribution([row("c", 1.0)]) is None


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), scores), min_size=1, max_size=30))
@example([(t, 0, 0.3813726374131451) for t in range(3)])  # np.mean put it an ulp below worst
@settings(max_examples=50)
def test_variant_distribution_orders_its_numbers(items: list[tuple[int, int, float]]):
    rows = [row(f"t{t}", s, suite=Suite.HV_QA, seed=v) for t, v, s in items]
    dist = variant_distribution(rows)
    assert dist is not None
    assert dist.worst <= dist.p5 + 1e-12
    # each task's worst variant is at most that task's mean variant (tasks weigh alike here;
    # `mean` weighs variants, so a task with more variants would tilt it)
    by_task: dict[str, dict[int, list[float]]] = {}
    for t, v, s in items:
        by_task.setdefault(f"t{t}", {}).setdefault(v, []).append(s)
    task_means = [np.mean([np.mean(x) for x in vs.values()]) for vs in by_task.values()]
    assert dist.worst <= dist.worst_per_task <= float(np.mean(task_means)) + 1e-12


# ----------------------------------------------------------------------------- dimensions


def test_dimension_breakdown_names_the_costliest_dimension():
    rows = [row(t, 1.0) for t in ("a", "b", "c", "d")]
    for i, t in enumerate(("a", "b", "c", "d")):
        rows.append(row(t, 0.0 if i < 2 else 1.0, suite=Suite.HV_QA, seed=i, dim="tool_schemas"))
        rows.append(row(t, 1.0, suite=Suite.HV_QA, seed=10 + i, dim="prompt"))
    rows.append(row("a", 1.0, suite=Suite.HV_QA, seed=20, dim="hooks", failed=True))
    rows.append(row("z", 0.5, suite=Suite.HV_QA, seed=21, dim="skill_ids"))  # no LS-QA for z
    out = dimension_breakdown(rows, n=300)
    assert [d.dimension for d in out] == ["hooks", "tool_schemas", "prompt", "skill_ids"]
    hooks, tools, prompt, skills = out
    assert hooks.cost is not None and hooks.cost.mean == 1.0  # a failure counts as 0
    assert tools.cost is not None and tools.cost.mean == pytest.approx(0.5)
    assert tools.score.mean == 0.5 and tools.original == 1.0 and tools.tasks == 4
    assert tools.cost.low <= 0.5 <= tools.cost.high
    assert prompt.cost is not None and prompt.cost.mean == 0.0
    assert skills.cost is None and skills.original is None and skills.score.mean == 0.5
