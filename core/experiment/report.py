"""The replication report: the report's table for base / fixed-SFT / HAT, with intervals.

**The headline: answered correctly.** An agent item is *answered correctly* when its accuracy
grade is 1 AND its effectiveness grade is 1 (core/sim/graders.py): the facts right and the
ask answered, the report's "accurate yet effective". Accuracy alone is 1 whenever nothing the
reply states is false, also when the reply does not answer the question (a polite "let me
check" is accurate); effectiveness alone is 1 when every intent is answered, also with a
wrong number. Effectiveness must be 1, not 0.5: 0.5 is a partial answer (some of the asks
answered, or a "can't check right now" after a fault that was not retried), which did not do
the job. A failed item (status failed: max_turns, empty output) counts 0. An infrastructure
error (status error: the server unreachable or 5xx, a timeout, a crash) is left out of every
number, on both sides of a paired comparison, and counted in the "failed items" column.

Numbers (all from stored evaluation rows, core/eval):

- **LS-QA**, **HV-QA**: answered correctly first; accuracy (the binary accuracy grade),
  effectiveness (share with effectiveness 1), the mean of the four grades and full marks (all
  four grades 1) are secondary columns. HV-QA intervals are clustered by task (a task's
  variants are not independent). The variant gap (LS − HV, paired per task), worst-of-K (a
  task counts only if every variant of it is answered correctly), the per-HSA-dimension cost
  and HAT − fixed-SFT on HV-QA (paired per task) are all on answered correctly. P5 stays on
  the mean of the four grades: the 5th percentile of a 0/1 value is 0 unless 95 % of the
  items are right, so it would say nothing worst-of-K does not.
- **IFEval**: prompt-level and instruction-level strict accuracy
  (`core.eval.ifeval.aggregate_results`); the instruction-level interval is clustered by prompt.
- **Harness edit**: the error rate, 1 − answered correctly, on the same LS-QA tasks under the
  original and under the edited harness, and the error reduction after the edit relative to
  the base model under the edited harness, `(err(base) − err(model)) / err(base)`, and of HAT
  relative to fixed SFT; ratio intervals come from a paired bootstrap over tasks (the same
  resampled tasks for both models). The full-marks error is a secondary column.

Every interval is a 95 % percentile bootstrap (2000 resamples, seed 0; core/eval/stats.py).

report.json keeps, per model and agent suite, `per_task_answered` (each task's answered
correctly, its variants averaged) and `per_task_accuracy` (the same for accuracy), so runs of
other seeds can be paired task by task (core/experiment/seeds.py). Reports written before
2026-12-08 name the accuracy one `per_task`: a reader saw 1.0 for every task of a model that
answered under half of them, so no key is named without its measure any more. Its
`headline` key names the headline measure; a report.json without it predates answered
correctly: its variant gap, worst-of-K, HAT − fixed and edit errors are on accuracy and full
marks.

**HAT stage by stage** (the `eval-stages` step, with the profile's `eval.stages`): answered
correctly on LS-QA and HV-QA and IFEval prompt-level strict after HSA-SFT, after OPD and
after HSA-RL (the HAT model's own rows), with fixed SFT for reference, all on the same items
(report.json `stages`); and the RL stage's reward spread, the mean over its logged steps of
GRPO's within-group reward std (0 in every step: the advantages were 0, RL had no gradient).

In a task-file world (core/experiment/replicate.py) the same columns hold the task file's
test split: LS-QA is the `tasks` suite, HV-QA the `hv-tasks` suite, the edit test the `tasks`
suite under the edited harness; the report says so under its title.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.eval.ifeval import aggregate_results
from core.eval.results import EvalResult, ResultStatus, Suite, failure_kind, scored
from core.eval.stats import Interval, bootstrap_ci, dimension_breakdown, paired_bootstrap
from core.experiment.profiles import project_root
from core.experiment.steps import HAT_STAGES, MODELS, STEPS
from core.source import source_line
from core.train.events import events_path, read_events

if TYPE_CHECKING:
    from core.experiment.replicate import Replication

LABELS = {"base": "base", "fixed": "fixed-SFT", "hat": "HAT"}
RESAMPLES = 2000
UNDERTRAINED = 0.6
"""Fixed SFT answering less of LS-QA correctly on its own harness: the run is under-trained."""
HEADLINE = "answered correctly (accuracy 1 and effectiveness 1)"
"""report.json's `headline` key (module doc: a report without it predates this measure)."""


def accuracy(row: EvalResult) -> float:
    if row.status is not ResultStatus.OK:
        return 0.0
    acc = (row.grades.get("accuracy") or {}).get("score")
    return float(acc) if isinstance(acc, int | float) else 0.0


def effective(row: EvalResult) -> float:
    """1 when the reply answered every ask (effectiveness grade 1; 0.5 is a partial answer),
    else 0; a failed item counts 0."""
    if row.status is not ResultStatus.OK:
        return 0.0
    return 1.0 if _grade(row, "effectiveness") == 1 else 0.0


def answered(row: EvalResult) -> float:
    """The headline (module doc): 1 when the facts are right (accuracy 1) AND the ask is
    answered (effectiveness 1), else 0; a failed item counts 0."""
    if row.status is not ResultStatus.OK:
        return 0.0
    return 1.0 if _grade(row, "accuracy") == 1 and _grade(row, "effectiveness") == 1 else 0.0


def _error_kinds(rows: Sequence[EvalResult]) -> dict[str, int]:
    """Infrastructure errors by reason kind (module doc: not scored, counted)."""
    return dict(Counter(failure_kind(r.reason) for r in rows if r.status is ResultStatus.ERROR))


def _fails_cell(s: dict[str, Any]) -> str:
    """The "failed items" cell: the model's failures, then the errors left out of the scores."""
    parts = [f"{k} {v}" for k, v in sorted(s["failed"].items())]
    parts += [f"{k} {v} (not scored)" for k, v in sorted((s.get("errors") or {}).items())]
    return ", ".join(parts) or "0"


def _ci(values: Sequence[float], groups: Sequence[str] | None = None) -> Interval | None:
    if not values:
        return None
    return bootstrap_ci(list(values), n=RESAMPLES, groups=list(groups) if groups else None)


def _ci_dict(ci: Interval | None) -> dict[str, Any] | None:
    if ci is None:
        return None
    return {"mean": ci.mean, "low": ci.low, "high": ci.high, "n": ci.n}


def agent_summary(rows: Sequence[EvalResult], *, clustered: bool = False) -> dict[str, Any]:
    groups = [r.task_id for r in rows] if clustered else None
    failed: dict[str, int] = {}
    for r in rows:
        if r.status is not ResultStatus.OK:
            kind = (r.reason or "failed").split(":", 1)[0]
            failed[kind] = failed.get(kind, 0) + 1
    return {
        "n": len(rows),
        "answered": _ci_dict(_ci([answered(r) for r in rows], groups)),
        "accuracy": _ci_dict(_ci([accuracy(r) for r in rows], groups)),
        "effective": _ci_dict(_ci([effective(r) for r in rows], groups)),
        "score": _ci_dict(_ci([r.score for r in rows], groups)),
        "pass": _ci_dict(_ci([float(r.passed) for r in rows], groups)),
        "failed": failed,
    }


def ifeval_summary(rows: Sequence[EvalResult]) -> dict[str, Any]:

    rows = [r for r in rows if r.suite is Suite.IFEVAL]
    if not rows:
        return {"n": 0}
    official = aggregate_results(rows) or {}
    prompt = _ci([1.0 if (r.passed and r.status is ResultStatus.OK) else 0.0 for r in rows])
    inst_values: list[float] = []
    inst_groups: list[str] = []
    for r in rows:
        for check in r.grades.get("instructions") or []:
            ok = bool(check.get("strict")) and r.status is ResultStatus.OK
            inst_values.append(1.0 if ok else 0.0)
            inst_groups.append(r.task_id)
    inst = _ci(inst_values, inst_groups) if inst_values else None
    return {
        "n": len(rows),
        "official": official,
        "prompt_strict": _ci_dict(prompt),
        "inst_strict": _ci_dict(inst),
        "failed": sum(r.status is ResultStatus.FAILED for r in rows),
    }


def _errors(rows: Sequence[EvalResult], value: Any = answered) -> dict[str, float]:
    """Each task's error, 1 - value (answered correctly unless told)."""
    return {r.task_id: 1.0 - float(value(r)) for r in rows}


def _full_marks(row: EvalResult) -> float:
    return 1.0 if row.passed and row.status is ResultStatus.OK else 0.0


def _ratio_ci(
    num: dict[str, float], den: dict[str, float], seed: int = 0
) -> tuple[float | None, float | None, float | None]:
    """1 - mean(num)/mean(den) = (mean(den) - mean(num)) / mean(den) over the shared tasks,
    with a paired bootstrap interval (the same resampled tasks for both; resamples whose
    reference errors are all 0 are left out). None when the reference made no errors."""
    keys = sorted(set(num) & set(den))
    if not keys:
        return None, None, None
    a = np.array([num[k] for k in keys])
    b = np.array([den[k] for k in keys])
    if b.mean() == 0:
        return None, None, None
    point = 1.0 - a.mean() / b.mean()
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(keys), size=(RESAMPLES, len(keys)))
    den_means = b[picks].mean(axis=1)
    ok = den_means > 0
    if not ok.any():
        return float(point), None, None
    ratios = 1.0 - a[picks].mean(axis=1)[ok] / den_means[ok]
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(point), float(low), float(high)


def edit_summary(before: Sequence[EvalResult], after: Sequence[EvalResult]) -> dict[str, Any]:
    """The harness-edit numbers of one model: error = 1 - answered correctly per task before
    (its LS-QA rows of the edit's tasks) and after the edit; the full-marks error after the
    edit as a secondary number."""
    after_ids = {r.task_id for r in after}
    before = [r for r in before if r.task_id in after_ids]
    err_before = _errors(before)
    err_after = _errors(after)
    full_after = _errors(after, _full_marks)
    return {
        "n": len(after),
        "measure": "1 - answered correctly",
        "error_before": _ci_dict(_ci(list(err_before.values()))),
        "error_after": _ci_dict(_ci(list(err_after.values()))),
        "errors_before": err_before,
        "errors_after": err_after,
        "full_marks_error_after": _ci_dict(_ci(list(full_after.values()))),
    }


def _grade(row: EvalResult, name: str) -> float | None:
    value = (row.grades.get(name) or {}).get("score")
    return float(value) if isinstance(value, int | float) else None


def _reasons(row: EvalResult, name: str) -> list[str]:
    return [str(r) for r in (row.grades.get(name) or {}).get("reasons") or []]


TURNS = ("skill", "tool", "argument", "reply", "no reply")
"""The protocol's turns in order: load the right skill, call the right tool, with the right
arguments, then reply with the facts; "no reply" is an item that never got to a final reply
(max_turns, an empty or failed model call)."""


def failing_turn(row: EvalResult) -> str | None:
    """The first turn of the protocol an item gets wrong (None: full marks), from its grades
    in protocol order: skill selection, then tool rationality (an unknown tool name or a
    missing call is the tool turn; a call of a needed tool with wrong arguments, seen as a
    missing call beside a useless call, is the argument turn), then the reply's accuracy and
    effectiveness."""
    if row.passed and row.status is ResultStatus.OK:
        return None
    skill = _grade(row, "skill_selection")
    if skill is not None and skill < 1:
        return "skill"
    tool = _grade(row, "tool_rationality")
    if tool is not None and tool < 1:
        reasons = _reasons(row, "tool_rationality")
        if any(r.startswith("unknown tool") for r in reasons):
            return "tool"
        missing = any(r.startswith("missing call") for r in reasons)
        useless = any(r.startswith("useless call") for r in reasons)
        return "argument" if missing and useless else "tool"
    if row.status is not ResultStatus.OK or not row.grades:
        return "no reply"
    reasons = _reasons(row, "accuracy") + _reasons(row, "effectiveness")
    if any(r.startswith("no final reply") for r in reasons):
        return "no reply"
    return "reply"


def turn_counts(rows: Sequence[EvalResult]) -> dict[str, int]:
    counts = dict.fromkeys(TURNS, 0)
    for row in rows:
        turn = failing_turn(row)
        if turn is not None:
            counts[turn] += 1
    return counts


def _per_task(rows: Sequence[EvalResult], value: Any = accuracy) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in rows:
        out.setdefault(r.task_id, []).append(float(value(r)))
    return out


def task_means(rows: Sequence[EvalResult], value: Any = accuracy) -> dict[str, float]:
    """Each task's accuracy (or `value`: answered correctly), its variants averaged, kept in
    report.json so that runs of other seeds can be paired with this one task by task
    (core/experiment/seeds.py)."""
    return {task: float(np.mean(values)) for task, values in sorted(_per_task(rows, value).items())}


def variant_summary(ls: Sequence[EvalResult], hv: Sequence[EvalResult]) -> dict[str, Any]:
    """HV-QA against LS-QA on the same tasks, on answered correctly: the variant gap (LS - HV,
    paired per task), worst-of-K (a task counts only if every variant of it is answered
    correctly) and per-HSA-dimension cost (core.eval.stats.dimension_breakdown, paired per
    task); and P5 of the variants' mean-of-four-grades scores (bootstrapped over tasks; module
    doc: why not on answered correctly)."""

    out: dict[str, Any] = {}
    # A task file's suites (`tasks`, `hv-tasks`) play the LS-QA and HV-QA roles here.
    ls = [r if r.suite is Suite.LS_QA else r.model_copy(update={"suite": Suite.LS_QA}) for r in ls]
    hv = [r if r.suite is Suite.HV_QA else r.model_copy(update={"suite": Suite.HV_QA}) for r in hv]
    hv_tasks = _per_task(hv, answered)
    ls_tasks = _per_task(ls, answered)
    shared = [t for t in hv_tasks if t in ls_tasks]
    if shared:
        gap = paired_bootstrap(
            [float(np.mean(hv_tasks[t])) for t in shared],
            [float(np.mean(ls_tasks[t])) for t in shared],
            n=RESAMPLES,
        )  # mean(LS - HV)
        out["gap"] = _ci_dict(gap)
    if hv_tasks:
        out["worst_of_k"] = _ci_dict(_ci([min(v) for v in hv_tasks.values()]))
        scores = _per_task(hv, lambda r: r.score)
        keys = sorted(scores)
        point = float(np.percentile([s for k in keys for s in scores[k]], 5))
        rng = np.random.default_rng(0)
        boot = []
        for _ in range(RESAMPLES):
            pick = rng.integers(0, len(keys), size=len(keys))
            boot.append(np.percentile([s for i in pick for s in scores[keys[i]]], 5))
        low, high = np.quantile(boot, [0.025, 0.975])
        out["p5_score"] = {"mean": point, "low": float(low), "high": float(high),
                           "n": sum(len(v) for v in scores.values())}  # fmt: skip
    # dimension_breakdown reads each row's score: give it answered correctly as the score
    headline = [r.model_copy(update={"score": answered(r)}) for r in (*ls, *hv)]
    costs = dimension_breakdown(headline, n=RESAMPLES)
    out["dimension_cost"] = {
        c.dimension: {
            "rows": c.rows,
            "score": _ci_dict(c.score),
            "original": c.original,
            "cost": _ci_dict(c.cost) if c.cost else None,
        }
        for c in costs
    }
    return out


def hv_difference(
    hat: Sequence[EvalResult], fixed: Sequence[EvalResult], value: Any = answered
) -> dict[str, Any] | None:
    """HAT - fixed-SFT on HV-QA answered correctly (or `value`), paired over the tasks both
    ran (a task's variants averaged first)."""

    a, b = _per_task(fixed, value), _per_task(hat, value)
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    ci = paired_bootstrap(
        [float(np.mean(a[t])) for t in shared], [float(np.mean(b[t])) for t in shared],
        n=RESAMPLES,
    )  # fmt: skip
    return _ci_dict(ci)


def collect(run: Replication) -> dict[str, Any]:
    """Every model's numbers from the stored evaluation runs (module doc)."""
    from core.eval.api import load_results  # heavy: sqlalchemy, alembic, httpx

    runs = {model: run.eval_runs(model) for model in MODELS}
    rows = {
        model: {part: load_results(run.store, rid) for part, rid in runs[model].items()}
        for model in MODELS
    }
    return summarise(rows, runs)


def summarise(
    rows_of: dict[str, dict[str, list[EvalResult]]], runs_of: dict[str, dict[str, str]]
) -> dict[str, Any]:
    """Every model's numbers from its rows by part (`ls-qa`, `hv-qa`, `ifeval`, `edit`);
    `runs_of` names the evaluation run of each (kept in report.json)."""
    models: dict[str, Any] = {}
    hv_rows: dict[str, list[EvalResult]] = {}
    for model in MODELS:
        every = rows_of.get(model) or {}
        rows = {part: scored(found) for part, found in every.items()}
        errors = {part: _error_kinds(found) for part, found in every.items()}
        entry: dict[str, Any] = {"runs": runs_of.get(model) or {}}
        entry["turns"] = {
            part: turn_counts(rows[part]) for part in ("ls-qa", "hv-qa", "edit") if part in rows
        }
        if "hv-qa" in rows:
            hv_rows[model] = rows["hv-qa"]
            entry["variants"] = variant_summary(rows.get("ls-qa", []), rows["hv-qa"])
        for part in ("ls-qa", "hv-qa"):
            if part in rows:
                entry[part] = agent_summary(rows[part], clustered=part == "hv-qa")
                entry[part]["categories"] = _breakdown(rows[part], "category")
                entry[part]["per_task_accuracy"] = task_means(rows[part])
                entry[part]["per_task_answered"] = task_means(rows[part], answered)
        if "hv-qa" in rows:
            entry["hv-qa"]["dimensions"] = _breakdown(rows["hv-qa"], "dimension")
        if "ifeval" in rows:
            entry["ifeval"] = ifeval_summary(rows["ifeval"])
            entry["ifeval"]["errors"] = errors["ifeval"]
        if "edit" in rows and "ls-qa" in rows:
            entry["edit"] = edit_summary(rows["ls-qa"], rows["edit"])
            entry["edit"]["ls-qa-edited"] = agent_summary(rows["edit"])
            entry["edit"]["ls-qa-edited"]["errors"] = errors["edit"]
        for part in ("ls-qa", "hv-qa"):
            if part in rows:
                entry[part]["errors"] = errors[part]
        models[model] = entry
    base_after = (models.get("base", {}).get("edit") or {}).get("errors_after") or {}
    fixed_after = (models.get("fixed", {}).get("edit") or {}).get("errors_after") or {}
    for model in ("fixed", "hat"):
        edit = models.get(model, {}).get("edit")
        if edit:
            edit["reduction_vs_base"] = _ratio_ci(edit["errors_after"], base_after)
    hat_edit = models.get("hat", {}).get("edit")
    if hat_edit:
        hat_edit["reduction_vs_fixed"] = _ratio_ci(hat_edit["errors_after"], fixed_after)
    if "hat" in hv_rows and "fixed" in hv_rows:
        models["hat"]["hv_minus_fixed"] = hv_difference(hv_rows["hat"], hv_rows["fixed"])
    return models


STAGE_ROWS = (
    ("sft", "after HSA-SFT"),
    ("opd", "+ OPD"),
    ("rl", "+ HSA-RL (the HAT model)"),
    ("fixed", "fixed SFT (reference)"),
)
"""The stage table's rows (module doc, "HAT stage by stage"): report.json `stages.rows` keys."""


def stage_rows(rows_of: dict[str, dict[str, list[EvalResult]]]) -> dict[str, Any]:
    """The stage table's numbers from each row's evaluation rows by part (keys of
    STAGE_ROWS; `rl` is the HAT model's rows): answered correctly on LS-QA and HV-QA (HV-QA
    clustered by task) and IFEval prompt-level strict; a part without rows is None."""
    out: dict[str, Any] = {}
    for key, _ in STAGE_ROWS:
        rows = {part: scored(found) for part, found in (rows_of.get(key) or {}).items()}
        entry: dict[str, Any] = {"n": {part: len(r) for part, r in rows.items()}}
        for part in ("ls-qa", "hv-qa"):
            found = rows.get(part)
            entry[part] = (
                agent_summary(found, clustered=part == "hv-qa")["answered"] if found else None
            )
        found = rows.get("ifeval")
        entry["ifeval"] = ifeval_summary(found)["prompt_strict"] if found else None
        out[key] = entry
    return out


def reward_spread(events: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The RL stage's reward spread from its training events (`log` events with a step; TRL
    GRPO's `reward_std`, the within-group std of the summed reward, and `rewards/<name>/std`):
    the mean and max over steps, the steps where it was 0, and each reward's mean std. None
    when no step logged one."""
    stds: list[float] = []
    per_reward: dict[str, list[float]] = {}
    for event in events:
        if event.get("event") != "log" or event.get("step") is None:
            continue
        metrics = event.get("metrics") or {}
        value = metrics.get("reward_std")
        if not isinstance(value, int | float):
            continue
        stds.append(float(value))
        for key, v in metrics.items():
            if key.startswith("rewards/") and key.endswith("/std") and isinstance(v, int | float):
                per_reward.setdefault(key.split("/")[1], []).append(float(v))
    if not stds:
        return None
    return {
        "steps": len(stds),
        "mean_std": float(np.mean(stds)),
        "max_std": max(stds),
        "zero_steps": sum(v == 0 for v in stds),
        "per_reward_mean_std": {k: float(np.mean(v)) for k, v in sorted(per_reward.items())},
    }


def collect_stages(run: Replication) -> dict[str, Any] | None:
    """report.json's `stages` (module doc): None when the run has no eval-stages rows (a
    run folder from before the step, or a profile without `eval.stages`)."""
    from core.eval.api import load_results  # heavy: sqlalchemy, alembic, httpx

    runs = {stage: run.eval_runs(f"hat-{stage}") for stage in HAT_STAGES}
    if not any(runs.values()):
        return None
    runs["rl"] = run.eval_runs("hat")
    runs["fixed"] = run.eval_runs("fixed")
    parts = ("ls-qa", "hv-qa", "ifeval")
    rows = {
        key: {part: load_results(run.store, rid) for part, rid in found.items() if part in parts}
        for key, found in runs.items()
    }
    return {"rows": stage_rows(rows), "runs": runs, "rl_reward": rl_reward_spread(run)}


def rl_reward_spread(run: Replication) -> dict[str, Any] | None:
    """`reward_spread` of the HAT pipeline's RL stage run (None without one or its events)."""
    from core.store.training import find_run  # heavy: sqlalchemy, alembic

    stages = ((run.state.get("steps", {}).get("train") or {}).get("hat") or {}).get("stages")
    rl = (stages or {}).get("rl") or {}
    record = find_run(run.store, rl["run"]) if rl.get("run") else None
    if record is None:
        return None
    events, _ = read_events(events_path(Path(record.run_dir)))
    return reward_spread(events)


def stage_lines(stages: dict[str, Any] | None) -> list[str]:
    """The report's "HAT stage by stage" section (module doc)."""
    lines = ["", "### HAT stage by stage", ""]
    if not stages:
        return [*lines, "Not run (the profile's `eval.stages` is off, or the run predates the "
                "`eval-stages` step).", ""]  # fmt: skip
    lines += [
        "Each kept stage adapter of HAT on the HAT model's items: LS-QA and HV-QA answered "
        "correctly, IFEval prompt-level strict, in % with 95 % intervals (+ HSA-RL is the HAT "
        "model above).",
        "",
        "| after stage | LS-QA | HV-QA | IFEval prompt (strict) |",
        "|---|---|---|---|",
    ]
    rows = stages.get("rows") or {}
    for key, label in STAGE_ROWS:
        r = rows.get(key) or {}
        lines.append(
            f"| {label} | {cell(r.get('ls-qa'))} | {cell(r.get('hv-qa'))} "
            f"| {cell(r.get('ifeval'))} |"
        )
    spread = stages.get("rl_reward")
    lines.append("")
    if not spread:
        lines.append("RL reward spread: no RL step logged a reward std.")
    elif spread["mean_std"] == 0:
        lines.append(
            f"RL's reward spread was 0.0 in every step at this budget ({spread['steps']} "
            f"step{'s' if spread['steps'] != 1 else ''}): no gradient."
        )
    else:
        per = ", ".join(f"{k} {v:.3f}" for k, v in spread["per_reward_mean_std"].items())
        lines.append(
            f"RL reward spread (GRPO's within-group reward std): mean {spread['mean_std']:.3f} "
            f"over {spread['steps']} steps (max {spread['max_std']:.3f}; 0 in "
            f"{spread['zero_steps']} of them)" + (f"; per reward: {per}." if per else ".")
        )
    return lines


def _breakdown(rows: Sequence[EvalResult], by: str) -> dict[str, dict[str, float]]:
    """Answered correctly and accuracy per value of a row field (`dimension`, `category`);
    empty when no row has one."""
    out: dict[str, list[EvalResult]] = {}
    for r in rows:
        key = getattr(r, by)
        if key:
            out.setdefault(str(key), []).append(r)
    return {
        k: {"n": len(v), "answered": float(np.mean([answered(r) for r in v])),
            "accuracy": float(np.mean([accuracy(r) for r in v]))}
        for k, v in sorted(out.items())
    }  # fmt: skip


# ----------------------------------------------------------------------------- formatting


def pct(value: float | None) -> str:
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{100 * value:.1f}"
    )


def cell(ci: dict[str, Any] | None) -> str:
    if not ci:
        return "—"
    return f"{pct(ci['mean'])} [{pct(ci['low'])}, {pct(ci['high'])}]"


def ratio_cell(value: tuple[float | None, float | None, float | None] | list[Any] | None) -> str:
    if not value or value[0] is None:
        return "—"
    point, low, high = value
    if low is None or high is None:
        return f"{pct(point)} %"
    return f"{pct(point)} % [{pct(low)}, {pct(high)}]"


def packages(run: Replication) -> dict[str, Any]:
    from core.store.training import get_run  # heavy: sqlalchemy, alembic

    for model in ("hat", "fixed"):
        entry = run.step("train").get(model) or {}
        run_id = entry.get("run")
        if not run_id:
            continue
        record = get_run(run.store, run_id)
        if record.packages:
            return dict(record.packages)
        stages = entry.get("stages") or {}
        for stage in stages.values():
            sub = get_run(run.store, stage["run"])
            if sub.packages:
                return dict(sub.packages)
    return {}


def _plots(models: dict[str, Any], out: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths: dict[str, Path] = {}
    columns = [("ls-qa", "answered", "LS-QA"), ("hv-qa", "answered", "HV-QA"),
               ("ifeval", "prompt_strict", "IFEval prompt"),
               ("ifeval", "inst_strict", "IFEval inst")]  # fmt: skip
    fig, ax = plt.subplots(figsize=(8, 4), dpi=120)
    width = 0.26
    for i, model in enumerate(("base", "fixed", "hat")):
        means, lows, highs = [], [], []
        for part, key, _ in columns:
            ci = (models.get(model, {}).get(part) or {}).get(key)
            m = 100 * ci["mean"] if ci else 0.0
            means.append(m)
            lows.append(m - 100 * ci["low"] if ci else 0.0)
            highs.append(100 * ci["high"] - m if ci else 0.0)
        xs = np.arange(len(columns)) + (i - 1) * width
        ax.bar(xs, means, width, yerr=[lows, highs], capsize=3, label=LABELS[model])
    ax.set_xticks(np.arange(len(columns)), [c[2] for c in columns])
    ax.set_ylabel("% (95% bootstrap interval)")
    ax.set_ylim(0, 100)
    ax.legend()
    ax.set_title("Replication: answered correctly (agent suites), IFEval strict")
    fig.tight_layout()
    paths["scores"] = out / "scores.png"
    fig.savefig(paths["scores"])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    for i, (phase, label) in enumerate(
        (("error_before", "original harness"), ("error_after", "edited harness"))
    ):
        means, lows, highs = [], [], []
        for model in ("base", "fixed", "hat"):
            ci = (models.get(model, {}).get("edit") or {}).get(phase)
            m = 100 * ci["mean"] if ci else 0.0
            means.append(m)
            lows.append(m - 100 * ci["low"] if ci else 0.0)
            highs.append(100 * ci["high"] - m if ci else 0.0)
        xs = np.arange(3) + (i - 0.5) * 0.36
        ax.bar(xs, means, 0.36, yerr=[lows, highs], capsize=3, label=label)
    ax.set_xticks(np.arange(3), [LABELS[m] for m in ("base", "fixed", "hat")])
    ax.set_ylabel("error rate % (1 − answered correctly)")
    ax.set_ylim(0, 105)
    ax.legend()
    ax.set_title("Harness-edit test")
    fig.tight_layout()
    paths["edit"] = out / "harness_edit.png"
    fig.savefig(paths["edit"])
    plt.close(fig)
    return paths


def _completeness(run: Replication) -> list[str]:
    """A warning line per evaluation step that did not finish (deadline or failure), and the
    run's notes (what an operator changed during the run, and why)."""
    lines = [f"> **Run note:** {note}" for note in run.state.get("notes") or []]
    for model in MODELS:
        entry = run.step(f"eval-{model}")
        status = entry.get("status", "pending")
        if status not in ("done",):
            lines.append(
                f"> **Incomplete:** `eval-{model}` is {status}"
                + (f" ({entry['note']})" if entry.get("note") else "")
                + "; its numbers cover the items that ran (n in the secondary table)."
            )
    stages = run.state.get("steps", {}).get("eval-stages") or {}
    if stages and stages.get("status") != "done":
        lines.append(
            f"> **Incomplete:** `eval-stages` is {stages.get('status', 'pending')}; the stage "
            "table covers the items that ran."
        )
    return [*lines, ""] if lines else []


def _shown(path: str | None) -> str:
    """A profile's path as the report shows it: from the project root when it is inside."""

    if path is None:
        return "—"
    try:
        return str(Path(path).relative_to(project_root()))
    except ValueError:
        return path


def _world_lines(run: Replication) -> list[str]:
    """What the task-file world's report says about its world and suites (none for the live
    room, whose report names its suites by their own names)."""
    if not run.in_task_file:
        return []
    setup = run.step("setup")
    counts = setup.get("task_counts") or {}
    prof = run.profile
    return [
        f"World: **task-file**. Harness folder `{_shown(prof.harness_folder)}`, edited harness "
        f"folder `{_shown(prof.edited_harness_folder)}`, task file `{_shown(prof.task_file)}` "
        f"({counts.get('train', '?')} train, {counts.get('test', '?')} test tasks).",
        "",
        "LS-QA and HV-QA below are the task file's **test split**: LS-QA is the `tasks` suite "
        "under the harness, HV-QA the `hv-tasks` suite (the same tasks under heldout-bank HSA "
        "variants of it); the harness-edit test is the `tasks` suite under the edited harness "
        "(gold calls matched by binding in the original harness's names). Training data and "
        "RL tasks come from the file's train split.",
        "",
    ]


def report_markdown(
    run: Replication,
    models: dict[str, Any],
    plots: dict[str, Path],
    stages: dict[str, Any] | None = None,
) -> str:
    prof = run.profile
    steps = run.state.get("steps", {})
    lines = [f"# HAT mini-replication — profile `{prof.name}`", ""]
    fixed_ls = ((models.get("fixed") or {}).get("ls-qa") or {}).get("answered")
    if fixed_ls is None or fixed_ls["mean"] < UNDERTRAINED:
        seen = "not measured" if fixed_ls is None else f"{pct(fixed_ls['mean'])} %"
        lines += [
            f"> **Under-trained:** fixed-harness SFT answers {seen} of LS-QA correctly on its "
            f"own harness (below {pct(UNDERTRAINED)} %), so this run does not train long enough "
            "for the comparison to say much about the method.",
            "",
        ]
    command = run.state.get("command")
    resumed = [str(c) for c in run.state.get("resumed_with") or []]
    if command or resumed:
        lines += ["Command:", "", "```", *([command] if command else []), *resumed, "```", ""]
    where = (
        f"world `task-file` (harness `{run.step('setup').get('harness_name')}`)"
        if run.in_task_file
        else f"harness mode `{prof.harness}`"
    )
    lines += [
        f"Run folder `{run.folder.name}`, created {run.state.get('created_at')}, seed "
        f"{prof.seed}. "
        f"Student `{run.step('setup').get('base_model')}` (LoRA), {where}, "
        f"total wall time {run.total_wall_s() / 60:.1f} min.",
        "",
        *_world_lines(run),
        "## Results",
        "",
        *_completeness(run),
        "LS-QA and HV-QA: **answered correctly** in % with 95 % bootstrap intervals (accuracy "
        "1 and effectiveness 1: the facts right and the ask answered; accuracy, effectiveness "
        "and full marks are in the secondary table); IFEval strict; harness-edit error = 1 − "
        "answered correctly on the edit's LS-QA items (before → after the edit).",
        "",
        "| model | LS-QA | HV-QA | IFEval prompt (strict) | IFEval inst (strict) "
        "| harness-edit error |",
        "|---|---|---|---|---|---|",
    ]
    for model in ("base", "fixed", "hat"):
        m = models.get(model, {})
        edit = m.get("edit") or {}
        before = (edit.get("error_before") or {}).get("mean")
        lines.append(
            f"| {LABELS[model]} | {cell((m.get('ls-qa') or {}).get('answered'))} "
            f"| {cell((m.get('hv-qa') or {}).get('answered'))} "
            f"| {cell((m.get('ifeval') or {}).get('prompt_strict'))} "
            f"| {cell((m.get('ifeval') or {}).get('inst_strict'))} "
            f"| {pct(before)} → {cell(edit.get('error_after'))} |"
        )
    ev = prof.eval
    tests = int((run.step("setup").get("task_counts") or {}).get("test", 0))
    ls_n, hv_n, edit_n = (
        (min(ev.ls_qa, tests), min(ev.hv_qa, tests), min(ev.edit, tests))
        if run.in_task_file
        else (ev.ls_qa, ev.hv_qa, ev.edit)
    )
    lines += [
        "",
        f"Items per model: LS-QA {ls_n} test tasks, HV-QA {hv_n} tasks × {ev.hv_variants} "
        f"heldout variant(s), IFEval {ev.ifeval if run.ifeval_path else 0} prompts, harness edit "
        f"{edit_n} tasks; max {ev.max_tokens} tokens per model call, greedy decoding.",
        *stage_lines(stages),
        "",
        "### Harness-edit test",
        "",
        "Error = 1 − answered correctly, on the same LS-QA tasks under the original harness "
        "(before) and the edited one (after). Error reduction vs base = (error of base − error "
        "of the model) / error of base, both under the edited harness, with a paired bootstrap "
        "interval over tasks. Full-marks error (items without all four grades at 1) is "
        "secondary.",
        "",
        "| model | error before edit | error after edit | error reduction after edit vs base "
        "| full-marks error after edit |",
        "|---|---|---|---|---|",
    ]
    for model in ("base", "fixed", "hat"):
        edit = (models.get(model) or {}).get("edit") or {}
        red = ratio_cell(edit.get("reduction_vs_base")) if model != "base" else "(reference)"
        lines.append(
            f"| {LABELS[model]} | {cell(edit.get('error_before'))} "
            f"| {cell(edit.get('error_after'))} | {red} "
            f"| {cell(edit.get('full_marks_error_after'))} |"
        )
    hat_edit = (models.get("hat") or {}).get("edit") or {}
    lines += [
        "",
        "Error reduction of HAT vs fixed-SFT after the edit: "
        f"{ratio_cell(hat_edit.get('reduction_vs_fixed'))} (— when the reference model made "
        "no errors or was not evaluated).",
        "",
        "### Secondary numbers",
        "",
        "Answered correctly (the headline), then its parts: accuracy (nothing stated is false, "
        "also when the ask is not answered), effectiveness (every ask answered: grade 1), the "
        "mean of the four grades and full marks (all four at 1). All in %, 95 % intervals.",
        "",
        "| model | suite | n | answered correctly | accuracy | effectiveness | mean of 4 grades "
        "| full marks | failed items |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for model in ("base", "fixed", "hat"):
        m = models.get(model, {})
        for part, label in (("ls-qa", "LS-QA"), ("hv-qa", "HV-QA")):
            s = m.get(part)
            if s:
                fails = _fails_cell(s)
                lines.append(f"| {LABELS[model]} | {label} | {_secondary(s)} | {fails} |")
        s = (m.get("edit") or {}).get("ls-qa-edited")
        if s:
            fails = _fails_cell(s)
            lines.append(f"| {LABELS[model]} | LS-QA, edited harness | {_secondary(s)} | {fails} |")
    lines += _category_lines(models)
    lines += [
        "",
        "### Harness variants",
        "",
        "On answered correctly: variant gap = LS-QA − HV-QA, paired per task; worst-of-K = "
        "share of tasks answered correctly under every heldout variant. P5 = 5th percentile of "
        "the variants' mean-of-4-grades scores (bootstrapped over tasks; a 0/1 value has no "
        "useful percentile). All in %, 95 % intervals.",
        "",
        "| model | variant gap (LS − HV) | worst-of-K answered correctly | P5 score |",
        "|---|---|---|---|",
    ]
    for model in ("base", "fixed", "hat"):
        v = (models.get(model) or {}).get("variants") or {}
        lines.append(
            f"| {LABELS[model]} | {cell(v.get('gap'))} | {cell(v.get('worst_of_k'))} "
            f"| {cell(v.get('p5_score'))} |"
        )
    diff = (models.get("hat") or {}).get("hv_minus_fixed")
    lines += [
        "",
        f"**HAT − fixed-SFT on HV-QA, answered correctly** (paired over tasks): {cell(diff)} "
        "points.",
        "",
        "Per-HSA-dimension cost: answered correctly on LS-QA of the same tasks − on the HV-QA "
        "variants that changed that dimension (%, paired per task; positive = the dimension "
        "costs answers):",
        "",
    ]
    for model in ("base", "fixed", "hat"):
        dims = ((models.get(model) or {}).get("variants") or {}).get("dimension_cost") or {}
        text = ", ".join(f"{k} {cell(v.get('cost'))} (n={v['rows']})" for k, v in dims.items())
        lines.append(f"- {LABELS[model]}: {text or '—'}")
    lines += ["", "HV-QA answered correctly by HSA dimension of the heldout variant:", ""]
    for model in ("base", "fixed", "hat"):
        dims = (models.get(model, {}).get("hv-qa") or {}).get("dimensions") or {}
        lines.append(f"- {LABELS[model]}: {_breakdown_text(dims)}")
    lines += [
        "",
        "### Where the models fail",
        "",
        "Items without full marks, by the first protocol turn they get wrong (skill → tool → "
        "argument → reply; no reply = never reached a final reply):",
        "",
        "| model | suite | " + " | ".join(TURNS) + " |",
        "|---|---|" + "---|" * len(TURNS),
    ]
    for model in ("base", "fixed", "hat"):
        for part, counts in ((models.get(model) or {}).get("turns") or {}).items():
            lines.append(
                f"| {LABELS[model]} | {part} | " + " | ".join(str(counts[t]) for t in TURNS) + " |"
            )
    lines += ["", "## Plots", ""]
    for key, path in plots.items():
        lines.append(f"![{key}]({path.name})")
    lines += ["", "## Training", ""]
    hat = prof.hat
    data = run.step("data").get("counts") or {}
    lines += [
        f"- Data (oracle teacher, train split, {prof.data.per_category} tasks per category, "
        f"{data.get('tasks', '?')} tasks): fixed-SFT "
        f"{((data.get('fixed') or {}).get('rows', '?'))} rows "
        f"(K = 0); HAT {((data.get('hat') or {}).get('rows', '?'))} rows (original + K = "
        f"{prof.data.hat_variants} `{prof.data.sampler}` train-bank variants per task).",
        f"- HAT: HSA-SFT {hat.sft.max_steps} steps → OPD {hat.opd.max_steps} steps (reverse KL "
        f"to the base) → HSA-RL {hat.rl.max_steps} steps (GRPO, {hat.rl.num_generations} "
        f"generations, a fresh train-bank variant per group"
        + (
            f"; {data.get('rl_tasks', '?')} train tasks of the task file, played through the "
            "harness's own tools)."
            if run.in_task_file
            else ")."
        ),
        f"- fixed-SFT: {prof.fixed_sft().max_steps} SFT steps (= HAT's total; same batch "
        f"{hat.sft.per_device_batch_size}, learning rate {hat.sft.learning_rate:g}, LoRA r "
        f"{hat.sft.lora.r}).",
        "",
        "## Wall time",
        "",
        "| step | wall time (s) |",
        "|---|---|",
    ]
    for name in STEPS:
        entry = steps.get(name) or {}
        if name == "eval-stages" and not entry:
            continue  # a run folder from before the step
        lines.append(f"| {name} ({entry.get('status', 'pending')}) | {entry.get('wall_s', '—')} |")
        for model in ("fixed", "hat"):
            sub = entry.get(model) if name == "train" else None
            if sub:
                lines.append(f"| &nbsp;&nbsp;{name} / {LABELS[model]} | {sub.get('wall_s')} |")
                for stage, info in (sub.get("stages") or {}).items():
                    lines.append(f"| &nbsp;&nbsp;&nbsp;&nbsp;{stage} | {info.get('wall_s')} |")
        if name.startswith("eval-") and entry.get("server_start_s") is not None:
            lines.append(f"| &nbsp;&nbsp;server start | {entry['server_start_s']} |")
        for part, wall in (entry.get("walls") or {}).items():
            lines.append(f"| &nbsp;&nbsp;{name} / {part} | {wall} |")
        for stage in HAT_STAGES if name == "eval-stages" else ():
            for part, wall in ((entry.get(stage) or {}).get("walls") or {}).items():
                lines.append(f"| &nbsp;&nbsp;{name} / {stage} / {part} | {wall} |")
    lines.append(f"| **total** | **{run.total_wall_s()}** |")
    pkgs = packages(run)
    machine = run.state.get("machine") or {}
    lines += [
        "",
        "## Environment",
        "",
        "Packages (from the training runs): "
        + ", ".join(
            f"{k} {v}"
            for k, v in sorted(pkgs.items())
            if k in ("torch", "transformers", "trl", "peft", "accelerate", "datasets")
        )
        + f"; python {machine.get('python', '?')}.",
        "",
        f"Machine: {machine.get('cpus', '?')} CPU cores ({machine.get('cpu', '?')}), "
        f"{machine.get('platform', '?')}; load average at start {machine.get('load_at_start')}.",
        "",
        source_line(run.state.get("code") or {}),
        "",
    ]
    return "\n".join(lines)


def _secondary(s: dict[str, Any]) -> str:
    """n and the score cells of the secondary table (the headline first)."""
    keys = ("answered", "accuracy", "effective", "score", "pass")
    return f"{s['n']} | " + " | ".join(cell(s.get(k)) for k in keys)


def _breakdown_text(values: dict[str, Any]) -> str:
    """`name answered% (n=N)` for each entry of a `_breakdown` (old reports: accuracy)."""
    text = ", ".join(
        f"{k} {pct(v.get('answered', v.get('accuracy')))} (n={v['n']})" for k, v in values.items()
    )
    return text or "—"


def _category_lines(models: dict[str, Any]) -> list[str]:
    """Answered correctly by task category, per suite and model (none when no row has one)."""
    lines: list[str] = []
    for part, label in (("ls-qa", "LS-QA"), ("hv-qa", "HV-QA")):
        found = {m: (models.get(m, {}).get(part) or {}).get("categories") for m in MODELS}
        if not any(found.values()):
            continue
        lines += ["", f"{label} answered correctly by task category:", ""]
        for model in MODELS:
            lines.append(f"- {LABELS[model]}: {_breakdown_text(found[model] or {})}")
    return lines


def headline_summary(models: dict[str, Any]) -> dict[str, Any]:
    """report.json's first key (keys are sorted): the headline measure per model and suite,
    with intervals, and HAT - fixed-SFT on HV-QA, paired. A reader opening the file sees
    answered correctly first, not a model's accuracy (which a reply that answers nothing
    also scores) deep in `models`."""
    out: dict[str, Any] = {"measure": HEADLINE}
    for model in MODELS:
        entry = models.get(model) or {}
        row = {part: (entry.get(part) or {}).get("answered") for part in ("ls-qa", "hv-qa")}
        edit = entry.get("edit") or {}
        row["edit error after"] = edit.get("error_after")
        out[model] = row
    out["hat minus fixed on hv-qa"] = (models.get("hat") or {}).get("hv_minus_fixed")
    return out


def write_replication_report(run: Replication, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    models = collect(run)
    stages = collect_stages(run)
    plots = _plots(models, out)
    markdown = report_markdown(run, models, plots, stages)
    paths = {"markdown": out / "report.md", "json": out / "report.json", **plots}
    paths["markdown"].write_text(markdown, encoding="utf-8")
    data = {
        "answered_correctly": headline_summary(models),
        "headline": HEADLINE,
        "profile": run.profile.model_dump(mode="json"),
        "state": run.state,
        "models": models,
        "stages": stages,
        "packages": packages(run),
    }
    paths["json"].write_text(
        json.dumps(data, indent=2, sort_keys=True, default=str), encoding="utf-8"
    )
    return paths
