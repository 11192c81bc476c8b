"""What an evaluation produces, one row per scored item: the contract between the suite
runner (which makes rows and stores them), the statistics and reports (which only read rows),
the harness-change impact gate and the studio's views.

A row is one (suite, task, variant, sample). Its `score` is the suite's headline number for
that item in [0, 1] (agent suites: the mean of the four Core II grades; IFEval: prompt-level
strict, 1 or 0), `passed` its pass/fail reading (agent suites: full marks; IFEval: every
instruction followed, strict). The full detail stays in `grades` so a report can break it
down without re-running anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Suite(StrEnum):
    LS_QA = "ls-qa"
    """Live-Stream QA: the test tasks under the original harness."""
    HV_QA = "hv-qa"
    """Harness-Variant QA: the same tasks under K `heldout`-bank HSA variants."""
    ROBUSTNESS = "robustness"
    """Seeded faults and distractor tools."""
    IFEVAL = "ifeval"
    """IFEval's official prompts, scored with the official checkers."""
    TASKS = "tasks"
    """The operator's own task file (core/taskfile), test split, under the run's harness."""
    HV_TASKS = "hv-tasks"
    """Harness-Variant QA of the task file: its test tasks under K `heldout`-bank variants."""


HV_BASE: dict[Suite, Suite] = {Suite.HV_QA: Suite.LS_QA, Suite.HV_TASKS: Suite.TASKS}
"""Each Harness-Variant suite and the suite of the same tasks under the run's own harness
(what a variant's cost is measured against)."""


SUITE_LABELS: dict[Suite, str] = {
    Suite.LS_QA: "LS-QA",
    Suite.HV_QA: "HV-QA",
    Suite.ROBUSTNESS: "Robustness",
    Suite.IFEVAL: "IFEval",
    Suite.TASKS: "Your tasks",
    Suite.HV_TASKS: "HV: your tasks",
}
"""How tables, plots and the studio name each suite (the one table of suite labels)."""


class ResultStatus(StrEnum):
    OK = "ok"
    """The item ran to a reply and was graded (a wrong answer is still `ok`, with score 0)."""
    FAILED = "failed"
    """The model could not complete the item (an endless tool loop, empty output, no variant
    to play); `reason` says why. Failed items count as score 0 and are listed apart."""
    ERROR = "error"
    """Infrastructure error: the item could not be played for a reason that says nothing
    about the model (the server refused, dropped or answered 5xx; a call or the item timed
    out; the product's own code crashed). Not scored: reports leave these rows out of every
    score and show their count beside it, and "retry failed items" runs them again."""


INFRA_FAILURES = frozenset({"model_error", "timeout", "crash"})
"""The reason kinds of an infrastructure error (ResultStatus.ERROR)."""


def failure_kind(reason: str | None) -> str:
    """The kind a failed row's reason starts with (`model_error: ...` -> model_error)."""
    return (reason or "").split(":", 1)[0].strip()


def scored(rows: Iterable[EvalResult]) -> list[EvalResult]:
    """The rows a score is computed over: every row but infrastructure errors (a server
    timing out must not read as a wrong answer, nor a crash as a right one)."""
    return [r for r in rows if r.status is not ResultStatus.ERROR]


class EvalResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: Suite
    task_id: str
    sample: int = Field(default=0, ge=0, description="Repeat index (pass^k over samples).")
    variant_seed: int | None = Field(
        default=None, description="HV-QA: the HSA seed of the variant the task ran under."
    )
    dimension: str | None = Field(
        default=None,
        description="HV-QA: the HSA dimension the variant changed (skill_ids, skill_content, "
        "tool_schemas, prompt, hooks) or 'all' for a full heldout policy.",
    )
    category: str | None = Field(default=None, description="Task category (agent suites).")
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    grades: dict[str, Any] = Field(
        default_factory=dict,
        description="Agent suites: Grades.model_dump(); IFEval: per-instruction strict/loose.",
    )
    status: ResultStatus = ResultStatus.OK
    reason: str | None = None
    trace_id: str | None = None
    latency_s: float | None = Field(default=None, description="Agent end-to-end seconds.")

    @property
    def key(self) -> tuple[str, str, int | None, int]:
        """Identity of the item within a run: resume skips keys already stored."""
        return (self.suite.value, self.task_id, self.variant_seed, self.sample)
