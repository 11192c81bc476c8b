"""An operator's harness and task file as a World.

Tools run against the harness's own bindings (Python callables, MCP servers, HTTP endpoints)
through the run's `ToolRuntime` (one per run: MCP servers start once and are shared by the
episodes in flight), with HSA's distractors bound beside them. A task is graded by
core/taskfile/grading.py in the names of `original`, the harness the task file was written
for, so a variant that renames a tool or a skill grades like the original (tools by binding,
skills by role); tasks that give only a reference answer are graded by `judge`.

**State.** A world with state (a shop's orders, a user's staging database) starts every
episode from a fresh copy: each `python:` tool module may define `world_state()`, and every
episode's tools receive a new copy of what it returns as `ctx.context["state"]` (tools that
write change that copy; tools that do not take `ctx` never see it). Such a task is graded on
its end state as well: the state after the agent's run must equal the state after the gold run
on a fresh copy (tau-bench compares the two data hashes), or tool rationality is 0 with the
reason. MCP and HTTP tools keep their state where they run; resetting it is theirs to do.

**The gold under a variant.** A task file states the gold in the original harness's names
(core/taskfile/gold.py). Its gold run under the original plays once per task, through the
real tools; it must get full marks, or the task cannot be a teacher row, an RL group or an HV-QA
variant (`GoldUnavailable` says which grade failed, or which tool raised). Under an HSA variant
the gold is that run's trajectory remapped through the variant's own chain and verified by
core/hsa/augment.py (same decisions on every output, exact inverse), drawn again with the
variant's policy and seed; a transform the gold cannot survive (a parameter the gold names
by a value the variant changed) is left out and recorded in the row's mapping as `dropped`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from core.episode.play import play
from core.episode.world import GoldRun, GoldUnavailable, Request, TaskInfo, World, surface_of
from core.harness.models import Harness, ToolProtocol
from core.hsa.augment import AugmentError, augment_prepared, prepare
from core.hsa.distractors import register_distractors
from core.runtime.bindings import Bindings
from core.runtime.client import ScriptedClient
from core.runtime.trace import ToolCallStep
from core.sim.graders import GraderResult
from core.sim.surface import HarnessSurface
from core.taskfile.gold import call_layers, gold_client, returned_error
from core.taskfile.grading import grade_own
from core.taskfile.models import OwnTask

if TYPE_CHECKING:
    from core.episode.variant import HarnessVariant
    from core.hsa.augment import Augmented, _Requirements
    from core.runtime.tool_runtime import ToolRuntime
    from core.runtime.trace import Trace
    from core.sim.graders import Grades
    from core.sim.judge import LLMJudge


class TaskFileWorld(World[OwnTask]):
    """A harness's own tools and a task file's graders (module doc)."""

    kind: ClassVar[str] = "task-file"

    def __init__(
        self,
        original: Harness,
        tools: ToolRuntime | None = None,
        *,
        judge: LLMJudge | None = None,
    ) -> None:
        self.original = original
        self.tools = tools
        self.judge = judge
        self._golds: dict[str, tuple[Trace, _Requirements | None]] = {}
        self._augmented: dict[tuple[str, int, str], Augmented] = {}
        """Variants already drawn for a task (RL scores many completions of each group)."""
        self._factories: dict[str, Callable[[], Any]] | None = None
        self._end_states: dict[str, str | None] = {}
        self._layers: dict[str, list[int]] = {}
        self._lock = asyncio.Lock()

    def task_info(self, task: OwnTask) -> TaskInfo:
        return TaskInfo(task.id, task.split.value, task.category)

    def bindings(self, task: OwnTask | None, harness: Harness, surface: HarnessSurface) -> Bindings:
        bindings = Bindings()
        if self.tools is not None:
            self.tools.register(bindings)
        register_distractors(bindings, harness)
        return bindings

    def request(self, task: OwnTask) -> Request:
        context: dict[str, Any] = {"task": dict(task.context), "task_id": task.id}
        state = self.fresh_state()
        if state is not None:
            context["state"] = state
        return Request(task.message, [turn.model_dump() for turn in task.history], context)

    def fresh_state(self) -> Any:
        """A new copy of the world's initial state (None: the tools keep no state): each
        `python:` tool module's `world_state()`, called again for every episode so no
        episode sees another's writes; one module's state as it is, several by module."""
        if self._factories is None:
            self._factories = self.tools.state_factories() if self.tools is not None else {}
        if not self._factories:
            return None
        states = {module: copy.deepcopy(fn()) for module, fn in self._factories.items()}
        return next(iter(states.values())) if len(states) == 1 else states

    async def gold_end_state(self, task: OwnTask) -> str | None:
        """The world's state after the task's gold run on a fresh copy, as canonical JSON
        (None: no state); once per task."""
        if task.id not in self._end_states:
            episode = await play(
                task, self.original, await self.gold_client(task, self.original), self,
                request_id=f"gold-state-{task.id}", graded=False,
            )  # fmt: skip
            state = episode.request.context.get("state") if episode.request else None
            self._end_states[task.id] = _canonical(state)
        return self._end_states[task.id]

    async def grade(
        self,
        task: OwnTask,
        trace: Trace,
        harness: Harness,
        surface: HarnessSurface,
        request: Request | None = None,
    ) -> Grades:
        grades = await self._grade_reply(task, trace, harness)
        state = request.context.get("state") if request is not None else None
        if state is None:
            return grades
        wanted = await self.gold_end_state(task)
        if _canonical(state) == wanted:
            return grades
        reason = "the end state differs from the gold run's (writes the gold does not make)"
        return grades.model_copy(
            update={
                "tool_rationality": GraderResult(
                    score=0.0, reasons=[reason, *grades.tool_rationality.reasons]
                )
            }
        )

    async def _grade_reply(self, task: OwnTask, trace: Trace, harness: Harness) -> Grades:
        from core.taskfile.judge import judge_reference  # heavy: httpx, rich

        judged = None
        reply = (trace.final_reply or "").strip()
        if task.needs_judge and trace.ok:
            if _same_words(reply, task.reference or ""):
                judged = GraderResult(score=1.0, reasons=["the reply is the reference answer"])
            elif self.judge is not None:
                judged = await judge_reference(self.judge, task, reply)
        return grade_own(task, trace, harness, written_for=self.original, judged=judged)

    async def gold_trace(self, task: OwnTask, harness: Harness) -> Trace:
        episode = await play(
            task, harness, await self.gold_client(task, harness), self,
            request_id=f"gold-{task.id}", graded=False,
        )  # fmt: skip
        return episode.trace

    async def gold_client(self, task: OwnTask, harness: Harness) -> ScriptedClient:
        """The task's gold under `harness`, each call in the first turn its data allows
        (core.taskfile.gold.call_layers), worked out once per task from a run under the
        original harness that makes every call in one turn."""
        layers = self._layers.get(task.id)
        if layers is None:
            layers = [0] * len(task.gold_calls)
            if len(task.gold_calls) > 1:
                episode = await play(
                    task, self.original, gold_client(task, self.original), self,
                    request_id=f"gold-layers-{task.id}", graded=False,
                )  # fmt: skip
                steps = episode.trace.steps_of(ToolCallStep)  # skill loads are not among them
                layers = call_layers(task, [s.result for s in steps])
            self._layers[task.id] = layers
        return gold_client(task, harness, layers)

    async def checked_gold(self, task: OwnTask) -> Trace:
        """The gold run under the original harness, once per task; GoldUnavailable when a
        tool failed in it or it does not get full marks (module doc)."""
        trace, _ = await self._gold(task, need_requirements=False)
        return trace

    async def _gold(
        self, task: OwnTask, *, need_requirements: bool
    ) -> tuple[Trace, _Requirements | None]:
        async with self._lock:
            cached = self._golds.get(task.id)
            if cached is None:
                cached = (await self._checked(task), None)
                self._golds[task.id] = cached
            if need_requirements and cached[1] is None:
                try:
                    cached = (cached[0], prepare(self.original, cached[0]))
                except AugmentError as exc:
                    raise GoldUnavailable(f"task {task.id}: {exc}") from None
                self._golds[task.id] = cached
            return cached

    async def _checked(self, task: OwnTask) -> Trace:
        trace = await self.gold_trace(task, self.original)
        calls = trace.steps_of(ToolCallStep)
        layers = self._layers.get(task.id) or [0] * len(task.gold_calls)
        # The trace makes the calls turn by turn (gold_client): the file's order, by layer.
        ordered = sorted(enumerate(task.gold_calls), key=lambda ic: layers[ic[0]])
        for (i, call), step in zip(ordered, calls, strict=False):
            problem = _gold_call_problem(step, call.expect_error)
            if problem is not None:
                raise GoldUnavailable(
                    f"task {task.id}: gold_calls[{i}] ({step.name}) {problem} in the gold run"
                )
        if not trace.ok:
            raise GoldUnavailable(
                f"task {task.id}: the gold run ended {trace.status.value}: {trace.reason or ''}"
            )
        grades = await self._grade_reply(task, trace, self.original)
        if not grades.full_marks:
            results = {
                "accuracy": grades.accuracy,
                "effectiveness": grades.effectiveness,
                "tool_rationality": grades.tool_rationality,
                "skill_selection": grades.skill_selection,
            }
            below = [
                f"{name}: {'; '.join(result.reasons) or result.score}"
                for name, result in results.items()
                if result.score < 1
            ]
            raise GoldUnavailable(
                f"task {task.id}: the gold run scores below full marks ({' | '.join(below)})"
            )
        return trace

    async def gold(self, task: OwnTask, variant: HarnessVariant) -> GoldRun:
        if variant.policy is None or variant.seed is None:
            # The file's own gold, written out as the loop sees it (a gold the tools reject
            # shows as a grade below full marks, which `hat eval run --oracle` reports).
            client = await self.gold_client(task, variant.harness)
            return GoldRun(variant.harness, surface_of(variant), client, variant)

        _, req = await self._gold(task, need_requirements=True)
        assert req is not None
        key = (task.id, variant.seed, repr(variant.policy))
        augmented = self._augmented.get(key)
        if augmented is None:
            try:
                augmented = augment_prepared(req, variant.policy, variant.seed)
            except Exception as exc:  # a transform's bug: this variant only
                raise GoldUnavailable(
                    f"task {task.id}: variant {variant.index} could not be built "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            if len(self._augmented) > 4096:
                self._augmented.clear()
            self._augmented[key] = augmented
        harness = augmented.harness
        native = harness.settings.tool_protocol is ToolProtocol.NATIVE
        played = replace(variant, harness=harness, mapping=augmented.record())
        client = ScriptedClient(list(augmented.trajectory.turns), native=native)
        return GoldRun(harness, HarnessSurface(harness, {}, {}, {}), client, played)

    async def unplayable_golds(self, tasks: list[OwnTask]) -> dict[str, str]:
        found: dict[str, str] = {}
        for task in tasks:
            try:
                await self.checked_gold(task)
            except GoldUnavailable as exc:
                found[task.id] = str(exc)
        return found


ANSWER_ERROR_KINDS = frozenset({"error"})
"""Tool error kinds a gold call marked `expect_error` may meet as its answer (an order that
does not exist, a return outside its window: the tool's own ToolError), unless the tool
crashed. Anything else in a
gold run (a timeout, a malformed result, an unknown tool, invalid arguments, a hook block)
means the gold cannot be played as the file states it."""


def _canonical(state: Any) -> str | None:
    """A state as canonical JSON (the comparison tau-bench makes with data hashes)."""
    if state is None:
        return None
    return json.dumps(state, sort_keys=True, default=str, separators=(",", ":"))


def _same_words(a: str, b: str) -> bool:
    """The reference, word for word (case, spacing and punctuation aside): gradable without a
    judge, so the gold of a reference-only task needs none."""

    def words(text: str) -> list[str]:
        return re.findall(r"\w+", text.casefold())

    return bool(b.strip()) and words(a) == words(b)


def _gold_call_problem(step: ToolCallStep, expect_error: bool) -> str | None:
    """Why one call of a gold run breaks the gold, or None: a crash, a call the loop
    rejected, or a tool error (raised, or returned as the answer) the file does not mark
    `expect_error`; and an expected refusal that did not come."""
    if step.crashed or (step.error_kind is not None and step.error_kind not in ANSWER_ERROR_KINDS):
        return f"failed ({step.error_kind}: {step.error})"
    refusal = step.error if step.error_kind is not None else returned_error(step.result)
    if refusal is not None and not expect_error:
        how = "raised" if step.error_kind is not None else "returned"
        return (
            f"{how} an error ({refusal}); mark the call expect_error if the refusal is the answer"
        )
    if refusal is None and expect_error:
        return "answered, but the file marks it expect_error (a refusal was expected)"
    return None
