"""The data types of evaluation: requests, runs, planned items, impact reports, errors.

They live apart from the modules that implement them (core/eval/planning.py plans items,
core/eval/items.py plays one, core/eval/runner.py runs them, core/eval/impact.py compares two
versions) so that a page, a report or a store module can import them without pulling in the
runner, and so the runner imports them without a cycle. `core.eval.api` re-exports them with
the functions callers use.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from core.eval.results import EvalResult, Suite
from core.harness.demo import DEMO_HARNESS
from core.sim.models import TaskCategory

DEFAULT_HARNESS = DEMO_HARNESS
"""The harness a request without `harness` runs under: the one rule of
core/store/harness_ref.py (its `production` label, else its newest stored version, else the
bundled demo harness, committed first so every run names a stored version)."""

if TYPE_CHECKING:
    from core.harness.models import Harness
    from core.runtime.client import ChatClient
    from core.sim.models import Task
    from core.sim.surface import HarnessSurface
    from core.taskfile.models import OwnTask

ALL_SUITES: tuple[Suite, ...] = (Suite.LS_QA, Suite.HV_QA, Suite.ROBUSTNESS, Suite.IFEVAL)


class EvalRequest(BaseModel):
    """What to evaluate and how; frozen and stored with the run (resume reads it back)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="Registered model name (core/models registry).")
    adapter: str | None = Field(default=None, description="Registered adapter on the model.")
    suites: list[Suite] = Field(min_length=1)
    harness: str | None = Field(
        default=None,
        description="Stored harness version: id, prefix, label, name@label or name@head. "
        "None: live-host@production, else live-host@head, else the bundled demo harness.",
    )
    limit: int | None = Field(
        default=None, ge=1, description="At most this many tasks (prompts) per suite."
    )
    categories: list[str] | None = Field(
        default=None,
        description="Agent suites: only tasks of these categories (None: every category).",
    )
    variants: int = Field(default=8, ge=1, description="HV-QA: heldout variants per task (K).")
    samples: int = Field(default=1, ge=1, description="Repeats of every item (pass^k).")
    seed: int = Field(default=0, ge=0, description="Suite seed and HV-QA variant seeds.")
    concurrency: int = Field(default=1, ge=1, description="Items in flight at once.")
    max_tokens: int = Field(default=256, ge=1, description="Per model call.")
    temperature: float = Field(default=0.0, ge=0.0)
    base_url: str | None = Field(
        default=None,
        description="An already running OpenAI-compatible server (no managed server).",
    )
    model_id: str | None = Field(
        default=None,
        description="The model id requests name at base_url (default: the server's first).",
    )
    engine: Literal["transformers", "vllm"] = "transformers"
    call_timeout_s: float = Field(default=120.0, gt=0, description="One model call.")
    item_timeout_s: float = Field(default=600.0, gt=0, description="One whole item.")
    ifeval_path: str | None = Field(
        default=None,
        description="IFEval prompts: the official input_data.jsonl or a JSON/JSONL export of "
        "google/IFEval. None: core.eval.ifeval's default file (<home>/datasets/ifeval/).",
    )
    task_file: str | None = Field(
        default=None, description="The `tasks` suite: a task file (JSONL, core/taskfile)."
    )
    task_file_harness: str | None = Field(
        default=None,
        description="The stored harness version the task file names tools and skills in "
        "(default: the run's harness). A run under an edited harness names the original here, "
        "so gold calls of renamed tools are still matched by binding.",
    )
    judge_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint of the LLM judge for tasks with only a "
        "reference answer (the `tasks` suite).",
    )
    judge_model: str | None = Field(default=None, description="The judge's model id.")

    @field_validator("categories")
    @classmethod
    def _known_categories(cls, categories: list[str] | None) -> list[str] | None:

        if categories is None:
            return None
        known = {c.value for c in TaskCategory}
        unknown = [c for c in categories if c not in known]
        if unknown:
            raise ValueError(
                f"unknown task categories {unknown}; known: {', '.join(sorted(known))}"
            )
        if not categories:
            raise ValueError("categories: name at least one, or leave it unset for all")
        return list(dict.fromkeys(categories))

    @field_validator("suites")
    @classmethod
    def _unique_suites(cls, suites: list[Suite]) -> list[Suite]:
        return list(dict.fromkeys(suites))

    @model_validator(mode="after")
    def _an_item_outlasts_a_call(self) -> EvalRequest:
        """An item shorter than one model call would time every item out before its first
        answer: refused here, for the CLI and the studio's form alike."""
        if self.item_timeout_s < self.call_timeout_s:
            raise ValueError(
                f"item_timeout_s: an item ({self.item_timeout_s:g} s) must be allowed at least "
                f"one model call ({self.call_timeout_s:g} s)"
            )
        return self

    @field_serializer("base_url", "judge_url")
    def _stored_url(self, url: str | None) -> str | None:
        """What a dump (the store, report.json, the fingerprint) records: the URL without
        credentials (`redact_url`); the request in memory keeps what it was given, so the
        run it starts can still authenticate."""
        from core.serving.client import redact_url  # heavy: openai, sqlalchemy, alembic

        return None if url is None else redact_url(url)

    def fingerprint(self) -> str:
        """What makes two runs' rows comparable item by item: everything that changes an
        item's outcome except the harness (stored apart, as the version id) and the suites
        (reuse is per suite). Transport settings (base_url, concurrency, engine, timeouts)
        are left out: the same model answers the same way wherever it is served."""
        data = self.model_dump(
            mode="json",
            exclude={
                "suites",
                "harness",
                "base_url",
                "model_id",
                "concurrency",
                "engine",
                "call_timeout_s",
                "item_timeout_s",
            },
        )
        for late in ("categories", "task_file", "task_file_harness", "judge_url", "judge_model"):
            if data.get(late) is None:
                data.pop(late, None)  # requests from before the field compare as before
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class RunStatus(StrEnum):
    CREATED = "created"
    RUNNING = "running"
    """In progress, or the process running it died (resume picks it up)."""
    DONE = "done"
    """Every planned item has a row (some may be failed items)."""
    STOPPED = "stopped"
    """The caller asked it to stop; resume continues."""
    FAILED = "failed"
    """It could not go on (no server, the server died after its one restart); `reason` says
    why; resume continues."""


@dataclass(frozen=True)
class EvalRun:
    """One evaluation run as stored (core/eval/store.py)."""

    id: str
    request: EvalRequest
    status: RunStatus
    harness: str
    """Harness name."""
    harness_version: str | None
    """Id of the stored harness version the run used."""
    model: str
    adapter: str | None
    fingerprint: str
    total: int = 0
    """Planned items (every suite, task, variant and sample)."""
    done: int = 0
    """Items with a stored row (ok or failed)."""
    passed: int = 0
    failed: int = 0
    """Rows with status failed (the model could not complete the item)."""
    errors: int = 0
    """Rows with status error (infrastructure: not scored; "retry failed items" reruns them)."""
    reason: str | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def suites(self) -> list[Suite]:
        return list(self.request.suites)

    @property
    def finished(self) -> bool:
        return self.status is RunStatus.DONE


ProgressCallback = Callable[[int, int, EvalResult | None], None]
"""on_progress(done, total, last result): after every stored row (and once at the start, with
None). Called on the thread that runs the evaluation."""


class StopFlag(Protocol):
    """Anything with `is_set()`: a threading.Event (the studio) or an asyncio.Event."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class EvalItem:
    """One planned item: a task (or an IFEval prompt) under one harness variant and sample."""

    suite: Suite
    task_id: str
    sample: int = 0
    variant_seed: int | None = None
    dimension: str | None = None
    category: str | None = None
    task: Task | OwnTask | None = None
    """Agent suites: the simulator task (faults and distractors included), or the task-file
    task of the `tasks` and `hv-tasks` suites."""
    prompt: dict[str, Any] | None = None
    """IFEval: the prompt record (`key`, `prompt`, `instruction_id_list`, `kwargs`)."""

    @property
    def key(self) -> tuple[str, str, int | None, int]:
        """Same as `EvalResult.key`."""
        return (self.suite.value, self.task_id, self.variant_seed, self.sample)


ClientFactory = Callable[[EvalItem, "Harness", "HarnessSurface"], "ChatClient"]
"""Builds the model client for one item: (item, the harness it runs under, its surface).
Injected instead of a served model for baselines and deterministic tests (e.g. the oracle:
core/eval/oracle_model.py `oracle_clients`). IFEval items get (item, the harness, its surface) too
and must answer the plain prompt."""


# ----------------------------------------------------------------------------- impact


@dataclass(frozen=True)
class ComponentChange:
    """One changed component between two harness versions (from the store diff)."""

    component: str
    """manifest | prompt | skill | tool | hook"""
    name: str
    change: str
    """added | removed | modified | renamed"""
    path: str
    old_name: str | None = None
    """renamed: the name under the `from` version (a tool with the same binding, a skill with
    the same role or body)."""

    @property
    def label(self) -> str:
        if self.old_name is not None:
            return f"{self.component} {self.old_name} -> {self.name} ({self.change})"
        return f"{self.component} {self.name} ({self.change})"

    def names(self) -> tuple[str, ...]:
        return (self.name,) if self.old_name is None else (self.old_name, self.name)


@dataclass(frozen=True)
class Flip:
    """An item whose pass flipped between the two versions."""

    key: tuple[str, str, int | None, int]
    direction: Literal["broke", "fixed"]
    """broke: passed under `from`, not under `to`; fixed: the reverse."""
    before: EvalResult
    after: EvalResult
    components: tuple[str, ...]
    """Labels of the changed components this item touched (empty: none it touched)."""


@dataclass
class ComponentGroup:
    change: ComponentChange | None
    """None: the flips that touched no changed component."""
    flips: list[Flip] = field(default_factory=list)

    @property
    def broke(self) -> int:
        return sum(f.direction == "broke" for f in self.flips)

    @property
    def fixed(self) -> int:
        return sum(f.direction == "fixed" for f in self.flips)


@dataclass
class ImpactReport:
    """What moving from one harness version to another does to one model."""

    model: str
    adapter: str | None
    from_version: str
    to_version: str
    suites: list[Suite]
    from_run: str
    to_run: str
    reused: list[str]
    """Run ids that were already stored and reused (not re-run)."""
    changes: list[ComponentChange]
    groups: list[ComponentGroup]
    flips: list[Flip]
    paired: int
    """Items present in both runs (the ones compared)."""
    score_from: float
    """Mean score over the paired items (failed items count 0)."""
    score_to: float
    pass_from: float
    pass_to: float
    delta: float
    """score_to - score_from."""
    delta_ci: tuple[float, float]
    """95 % paired bootstrap interval of `delta`."""
    pass_delta: float
    pass_delta_ci: tuple[float, float]
    errors: int = 0
    """Items in both runs left unpaired: an infrastructure error (status error) on a side."""

    @property
    def broke(self) -> int:
        return sum(f.direction == "broke" for f in self.flips)

    @property
    def fixed(self) -> int:
        return sum(f.direction == "fixed" for f in self.flips)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary (the CLI's --json and the studio)."""
        return report_dict(self)


class EvalError(ValueError):
    """A request that cannot run (unknown model, harness, suite data); the message says why."""


def _result_dict(result: EvalResult) -> dict[str, Any]:
    return {
        "score": result.score,
        "passed": result.passed,
        "status": result.status.value,
        "reason": result.reason,
        "trace_id": result.trace_id,
    }


def report_dict(report: ImpactReport) -> dict[str, Any]:
    """JSON-able form of an ImpactReport."""

    def flip(f: Flip) -> dict[str, Any]:
        return {
            "suite": f.key[0],
            "task_id": f.key[1],
            "variant_seed": f.key[2],
            "sample": f.key[3],
            "direction": f.direction,
            "components": list(f.components),
            "before": _result_dict(f.before),
            "after": _result_dict(f.after),
        }

    return {
        "model": report.model,
        "adapter": report.adapter,
        "from_version": report.from_version,
        "to_version": report.to_version,
        "suites": [s.value for s in report.suites],
        "from_run": report.from_run,
        "to_run": report.to_run,
        "reused": list(report.reused),
        "paired": report.paired,
        "errors": report.errors,
        "score_from": report.score_from,
        "score_to": report.score_to,
        "delta": report.delta,
        "delta_ci": list(report.delta_ci),
        "pass_from": report.pass_from,
        "pass_to": report.pass_to,
        "pass_delta": report.pass_delta,
        "pass_delta_ci": list(report.pass_delta_ci),
        "broke": report.broke,
        "fixed": report.fixed,
        "changes": [
            {
                "component": c.component,
                "name": c.name,
                "old_name": c.old_name,
                "change": c.change,
                "path": c.path,
            }
            for c in report.changes
        ],
        "groups": [
            {
                "component": g.change.label if g.change is not None else None,
                "broke": g.broke,
                "fixed": g.fixed,
                "flips": [flip(f) for f in g.flips],
            }
            for g in report.groups
        ],
    }
