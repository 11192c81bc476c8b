"""The oracle: a perfect model that plays a task inside the real agent loop (the policy).

`OracleClient(task, harness, catalog)` is a `ChatClient`. Each `complete` call reads the
conversation so far (the tool results, skill loads and hook reminders the loop appended) and
writes the next turn, exactly as a model would, in the harness's tool protocol (`prompt`:
`<tool_call>` blocks in the text; `native`: OpenAI tool calls). The reading is
core/sim/conversation.py, the reply core/sim/reply.py; this module is the policy:

1. load the reply skill(s) the task needs (one per kind of ask) and the strategy skill
   (coupon -> coupon-push, size advice -> size-advice, comparison -> product-compare), through
   `settings.load_skill_tool`, by role (see core/sim/surface.py);
2. the tool calls of `plan_task` (core/sim/expect.py), all independent ones in one turn, then
   the ones that needed a result (the pinned link from the room status, the recommended size
   from the size chart); tools are found by binding, arguments translated to the harness's
   parameter names;
3. the final reply (`core.sim.reply.Composer`), built only from the tool results in the
   conversation: short spoken plain text under the harness's reply-length limit, no forbidden
   claims, every number it states taken from a tool result (or the viewer's message).
   Adversarial asks get an honest refusal.

Tool errors: a `timeout` or `rate_limit` is retried once; any other failure (or a failed
retry) makes the reply say honestly that the fact cannot be checked right now, without
inventing it. A handler's own error (kind `error`: a link with no product, a size the product
does not come in, a region the shop does not serve) is an answer and is told as such.

`core.episode.gold.gold_trajectory(task, harness, catalog)` plays the task with the oracle
through the loop against a `LiveRoom` (faults included; distractor tools added when the task
asks for them) and returns the Trace. It is deterministic: the same task and harness give the
same trajectory.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from core.harness.models import Harness, ToolProtocol
from core.harness.tool_calls import format_tool_call
from core.runtime.client import CallTiming, DeltaCallback, Message, ModelReply
from core.runtime.trajectory import ToolCall
from core.sim.conversation import Conversation, read_conversation
from core.sim.distractors import with_distractors
from core.sim.expect import ROOM_SPEC, CallSpec, plan_task
from core.sim.faults import RETRYABLE
from core.sim.models import Catalog, Task
from core.sim.reply import Composer, reply_limits
from core.sim.room import (
    room_bindings as room_bindings,
)  # defined there; older callers import it here
from core.sim.surface import (
    B_ROOM,
    HarnessSurface,
    ParamNames,
    ParamValues,
)


class OracleClient:
    """A deterministic perfect model for one task under one harness (see the module doc).

    `skill_roles` (role -> skill name), `param_names` (binding -> canonical -> current
    parameter) and `param_values` (binding -> parameter -> canonical -> current value) describe
    a renamed harness; see core/sim/surface.py. Pass `surface` instead to share one.
    """

    def __init__(
        self,
        task: Task,
        harness: Harness,
        catalog: Catalog,
        *,
        skill_roles: Mapping[str, str] | None = None,
        param_names: ParamNames | None = None,
        param_values: ParamValues | None = None,
        surface: HarnessSurface | None = None,
    ) -> None:
        self.task = task
        self.harness = harness
        self.catalog = catalog
        self.surface = surface or HarnessSurface(
            harness, skill_roles or {}, param_names or {}, param_values or {}
        )
        self.plan = plan_task(task, catalog)
        self.native = harness.settings.tool_protocol is ToolProtocol.NATIVE
        self.limits = reply_limits(harness)
        self.calls = 0

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        self.calls += 1
        conv = read_conversation(messages, self.task.viewer_message, self.surface, self.native)
        content, calls = self.next_turn(conv)
        if not self.native and calls:
            blocks = [format_tool_call(c.name, c.arguments) for c in calls]
            content, calls = "\n".join(blocks), []
        if on_delta is not None and content:
            on_delta(content)
        return ModelReply(content=content, tool_calls=calls, timing=CallTiming(0.0, 0.0))

    # ------------------------------------------------------------------ decisions

    def next_turn(self, conv: Conversation) -> tuple[str, list[ToolCall]]:
        """(reply text, tool calls) for the conversation so far."""
        if conv.skill_attempts == 0:
            loads = self._skill_loads()
            if loads:
                return "", loads
        pending = self.pending_calls(conv)
        if pending:
            return "", [self._tool_call(spec) for spec in pending]
        composer = Composer(conv, self.catalog, self.plan, self.limits, self.surface)
        return composer.reply(compact=conv.reminders > 0), []

    def skill_names(self) -> list[str]:
        """The skills the oracle loads, in order: reply skills, then strategy skills."""
        names: list[str] = []
        for role in [*self.plan.gold_reply_roles(), *self.plan.strategy_roles()]:
            name = self.surface.skill_name(role)
            if name is not None and name not in names:
                names.append(name)
        return names

    def _skill_loads(self) -> list[ToolCall]:
        loader = self.surface.load_skill_tool
        return [ToolCall(name=loader, arguments={"name": n}) for n in self.skill_names()]

    def _tool_call(self, spec: CallSpec) -> ToolCall:
        name = self.surface.tool_name(spec.binding)
        assert name is not None
        arguments = self.surface.to_current(spec.binding, spec.gold_args())
        return ToolCall(name=name, arguments=arguments)

    def pending_calls(self, conv: Conversation) -> list[CallSpec]:
        """Required calls not yet made (or due for their one retry) whose inputs are known."""
        out: list[CallSpec] = []
        for spec in self.plan.required():
            if self.surface.tool(spec.binding) is None:
                continue  # the harness has no tool for it: the reply says it cannot check
            if spec.after is not None and not _succeeded(conv, self._prerequisite(spec)):
                continue
            attempts = [o for o in conv.outcomes if spec.matches(o.binding, o.args, self.catalog)]
            retry = len(attempts) == 1 and attempts[0].error_kind in RETRYABLE
            if not attempts or retry:
                out.append(spec)
        return out

    def _prerequisite(self, spec: CallSpec) -> CallSpec:
        if spec.after == B_ROOM:
            return ROOM_SPEC
        return next((s for s in self.plan.required() if s.binding == spec.after), ROOM_SPEC)


def _succeeded(conv: Conversation, spec: CallSpec) -> bool:
    return any(o.ok and spec.matches(o.binding, o.args) for o in conv.outcomes)


def task_harness(task: Task, harness: Harness) -> Harness:
    """The harness a task runs under: `harness` plus the task's distractor tools (seeded)."""
    if task.distractor_tools <= 0:
        return harness
    return with_distractors(harness, task.distractor_tools, random.Random(task.seed))
