"""Recovery rows: the gold first calls a renamed tool with the parameter names it had before.

A harness variant can rename a tool's parameters (HSA `tool_param_rename_*`: `link_no` ->
`pqz_12f`). A model trained mostly on the original names sends the old name under the
variant, the loop rejects the call ("invalid arguments for get_item: ... get_item takes:
pqz_12f (integer, required)", core/harness/schema.py `invalid_arguments_message`), and a model
that never saw a rejection repeats the same call until `max_turns`. A recovery row shows the
way out: for a seeded share of variant jobs (`GenerateConfig.recovery_fraction`) the oracle
teacher plays through `RecoveryClient`, which

1. asks the gold client for its turn as usual;
2. at the first turn that calls a tool with a renamed parameter (and whose call under the old
   names the tool's schema rejects), writes instead that one call with the ORIGINAL parameter
   names. The real agent loop runs it: the schema rejects it and the loop appends its own
   rejection message (nothing here writes that text);
3. next turn, writes the gold turn it held back (the corrected call), and from then on passes
   the gold client the conversation without the mistaken exchange, so the gold goes on
   exactly as it would have.

The mistaken assistant message is kept in the row marked `"train": false` (SFT never trains
on it: training/sft.py), the rejection and the corrected call are trained on. The row is
graded as played (the one rejected call costs tool rationality a useless call) and marked
`"recovery": true`; a job whose recovery play is not kept (e.g. the extra turn is one more
than `max_turns` allows) plays the plain gold instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.harness.models import Harness, Tool
from core.harness.schema import argument_errors
from core.harness.tool_calls import format_tool_call, parse_tool_calls
from core.runtime.client import CallTiming, ChatClient, DeltaCallback, Message, ModelReply
from core.runtime.trace import ModelCallStep, ToolCallStep, Trace
from core.runtime.trajectory import ToolCall

RenamedParams = dict[str, dict[str, str]]
"""Tool name (in the variant) -> {current parameter name: its name in the original harness}."""


def recovery_coin(job_seed: int, key: str, fraction: float) -> bool:
    """Seeded per-job coin: whether a job plays a recovery (stable across resumes)."""
    if fraction <= 0:
        return False
    if fraction >= 1:
        return True
    digest = hashlib.sha256(f"recovery:{job_seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def _props(tool: Tool) -> dict[str, Any]:
    props = tool.parameters.get("properties", {})
    return props if isinstance(props, dict) else {}


def renamed_params(harness: Harness, original: Harness) -> RenamedParams:
    """The parameters `harness` (a variant) names differently from `original`: tools matched
    by binding, parameters by the binding's argument name (`Tool.binding_args`), so a renamed
    tool and a renamed parameter are both followed."""
    by_binding: dict[str, list[Tool]] = {}
    for tool in original.tools:
        by_binding.setdefault(tool.binding, []).append(tool)
    out: RenamedParams = {}
    for tool in harness.tools:
        before_tools = by_binding.get(tool.binding, [])
        renamed: dict[str, str] = {}
        for name in _props(tool):
            canonical = tool.binding_args.get(name, name)
            before = next(
                (
                    old
                    for t in before_tools
                    for old in _props(t)
                    if t.binding_args.get(old, old) == canonical
                ),
                None,
            )
            if before is not None and before != name:
                renamed[name] = before
        if renamed:
            out[tool.name] = renamed
    return out


@dataclass(frozen=True)
class Mistake:
    """The call the recovery wrote with the original parameter names."""

    turn: int
    """The 1-based model call (the loop's turn) that wrote it."""
    message_index: int
    """Where the loop put its assistant message in the conversation."""
    call: ToolCall
    """The call as written (original names), rejected by the loop."""
    corrected: ToolCall
    """The gold's call (the variant's names), written the turn after."""


class RecoveryClient:
    """A gold client that makes one parameter-name mistake and recovers (module doc)."""

    def __init__(
        self, inner: ChatClient, harness: Harness, renamed: RenamedParams, *, native: bool
    ) -> None:
        self.inner = inner
        self.harness = harness
        self.renamed = renamed
        self.native = native
        self.mistake: Mistake | None = None
        self._held: ModelReply | None = None
        self._span: tuple[int, int] | None = None
        self._turn = 0

    def rewind(self) -> None:
        """Start again (an episode played once more): the inner client too."""
        self.mistake, self._held, self._span, self._turn = None, None, None, 0
        rewind = getattr(self.inner, "rewind", None)
        if rewind is not None:
            rewind()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        self._turn += 1
        if self._held is not None:  # the turn after the mistake: the gold's own turn
            assert self.mistake is not None
            self._span = (self.mistake.message_index, len(messages))
            reply, self._held = self._held, None
        else:
            seen = list(messages)
            if self._span is not None:
                start, end = self._span
                seen = seen[:start] + seen[end:]
            reply = await self.inner.complete(seen, tools=tools)
            if self.mistake is None:
                reply = self._maybe_mistake(reply, len(messages))
        if on_delta is not None and reply.content:
            on_delta(reply.content)
        return reply

    def _calls(self, reply: ModelReply) -> list[ToolCall]:
        if self.native:
            return list(reply.tool_calls)
        parsed = parse_tool_calls(reply.content or "")
        if parsed.errors:
            return []
        return [ToolCall(name=c.name, arguments=c.arguments) for c in parsed.calls]

    def _maybe_mistake(self, reply: ModelReply, index: int) -> ModelReply:
        for call in self._calls(reply):
            wrong = self.wrong_call(call)
            if wrong is None:
                continue
            self.mistake = Mistake(self._turn, index, wrong, call)
            self._held = reply
            if self.native:
                return ModelReply(content="", tool_calls=[wrong], timing=CallTiming(0.0, 0.0))
            text = format_tool_call(wrong.name, wrong.arguments)
            return ModelReply(content=text, timing=CallTiming(0.0, 0.0))
        return reply

    def wrong_call(self, call: ToolCall) -> ToolCall | None:
        """`call` with the original parameter names, when the variant renamed one of its
        arguments and the tool's schema rejects the old names; else None."""
        names = self.renamed.get(call.name, {})
        if not any(k in names for k in call.arguments):
            return None
        tool = self.harness.tool(call.name)
        if tool is None:
            return None
        wrong = {names.get(k, k): v for k, v in call.arguments.items()}
        if not argument_errors(tool.parameters, wrong):
            return None  # the schema takes the old names too: nothing to recover from
        return ToolCall(name=call.name, arguments=wrong, id=call.id)


def played_as_planned(trace: Trace, mistake: Mistake) -> bool:
    """Whether the trace holds the mistake as planned: its turn wrote exactly the wrong call,
    which the loop rejected as invalid arguments, and the next turn made the gold's call."""
    calls = {s.turn: s for s in trace.steps_of(ModelCallStep) if s.error is None}
    made = calls.get(mistake.turn)
    after = calls.get(mistake.turn + 1)
    if made is None or after is None:
        return False
    wrong = [(c.name, c.arguments) for c in made.tool_calls]
    if wrong != [(mistake.call.name, mistake.call.arguments)]:
        return False
    rejected = [s for s in trace.steps_of(ToolCallStep) if s.turn == mistake.turn]
    if [s.error_kind for s in rejected] != ["invalid_arguments"]:
        return False
    messages = trace.messages
    index = mistake.message_index
    if index >= len(messages) or messages[index].get("role") != "assistant":
        return False
    fixed = (mistake.corrected.name, mistake.corrected.arguments)
    return fixed in [(c.name, c.arguments) for c in after.tool_calls]
