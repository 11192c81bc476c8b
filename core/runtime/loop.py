"""The agent loop: the one code path from a viewer message to a final reply.

Chat, evaluation, teacher data generation and RL rewards all call `AgentLoop.run`, so what is
trained is exactly what is served. One request:

1. Messages: the rendered system prompt, the caller's `history`, the viewer message (user).
2. on_input hooks. A block ends the request with status `blocked_input`; no model call is made.
3. Up to `settings.max_turns` model calls. Each output is parsed (`prompt` protocol: the
   `<tool_call>{json}</tool_call>` blocks in the text; `native`: the reply's tool calls).
   - Tool calls run in order. The skill loader (`settings.load_skill_tool`) returns the skill's
     body (with its file list when the skill has files; `"file": <path>` reads one of them),
     or an error listing the available skills. A harness tool: unknown -> error; arguments
     checked against its schema -> error, not run (a wrong or missing name: the error also
     says what the tool takes, core/harness/schema.py `invalid_arguments_message`);
     before_tool hooks (a block: not run, the reminder is the tool's error); the binding
     (ToolError -> its kind; any other exception -> kind `error`); after_tool hooks on a
     successful result (a block replaces the result with the reminder). Tool hooks do not run
     on the built-in skill loader.
   - `prompt` protocol: an output with any unparseable `<tool_call>` block runs none of its
     calls (all or nothing, so a half-run output never leaves the model unsure what happened);
     the parse errors go back as a user message asking for the calls again, and the turn counts.
   - An output with no tool calls is a candidate reply: before_reply hooks run in harness order
     and the first block stops the check. A block appends the wrapped reminder
     (`settings.reminder_format`, role `settings.reminder_role`) and asks again.
4. Retry budget: every hook block in the request (before_tool, after_tool, before_reply) spends
   one unit of `settings.retry_budget`; the block that overdraws it ends the request with status
   `retry_budget_exhausted` and no final reply (the last candidate stays in the trace).
   Hooks fail open: a hook error is recorded and treated as allow (see hooks.py).
5. Out of turns -> `max_turns`; the client raised -> `model_error`. The loop never raises for
   model, tool or hook misbehaviour: it records it in the Trace.

Message rendering of tool results:

- `native`: the assistant message carries OpenAI `tool_calls` (ids generated as
  `call_<turn>_<index>` when the model gave none); each result is a `{"role": "tool",
  "tool_call_id": ..., "content": ...}` message, as every OpenAI-compatible server expects.
- `prompt`: the assistant message is the model's raw text (tool-call blocks included, exactly
  what it wrote), and all results of one output go back in ONE user message of
  `<tool_result name="...">...</tool_result>` blocks in call order. A user message because
  models on the prompt protocol often have chat templates with no tool role (SmolLM2's has
  none) and several require strict user/assistant alternation, which one message per output
  keeps; tags mirroring `<tool_call>` so the model can pair each result with its call; the name
  on each block because prompt-protocol calls carry no ids.

Content of a result: JSON (`ensure_ascii=False`) of the binding's data, or
`{"error": {"kind", "message"}}`; a loaded skill is its Markdown body as plain text.
A `tool`-role reminder is passed as `{"role": "tool", "content": ...}` with no call id: use
`user` or `system` with servers that insist on call ids.
"""

from __future__ import annotations

import copy
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from string import Template
from typing import Any

from core.harness.models import Harness, Hook, HookEvent, ToolProtocol
from core.harness.render import SKILL_FILE_ARGUMENT, render_system_prompt, tool_specs
from core.harness.schema import argument_errors, invalid_arguments_message
from core.harness.tool_calls import parse_tool_calls
from core.runtime.bindings import Bindings, ToolContext, ToolError, ToolErrorKind
from core.runtime.client import ChatClient, DeltaCallback, Message, ModelError, ModelReply
from core.runtime.hooks import HookInput, render_reminder, run_hook
from core.runtime.trace import (
    Decision,
    HookStep,
    ModelCallStep,
    ModelTiming,
    ReplyStep,
    SkillLoadStep,
    Step,
    ToolCallStep,
    Trace,
    TraceStatus,
)
from core.runtime.trajectory import AssistantTurn, ToolCall, Trajectory

log = logging.getLogger(__name__)

EventCallback = Callable[[Step], None]


class AgentLoop:
    """Runs agent requests for one harness, model client and set of tool bindings.

    Stateless between requests: concurrent `run` calls on one AgentLoop are independent.
    """

    def __init__(
        self,
        harness: Harness,
        client: ChatClient,
        bindings: Bindings,
        *,
        tool_timeout_s: float = 30.0,
    ) -> None:
        if tool_timeout_s <= 0:
            raise ValueError("tool_timeout_s must be positive")
        self.harness = harness
        self.client = client
        self.bindings = bindings
        self.tool_timeout_s = tool_timeout_s

    @property
    def native(self) -> bool:
        return self.harness.settings.tool_protocol is ToolProtocol.NATIVE

    def missing_bindings(self) -> list[str]:
        """Binding names of enabled tools that nothing is registered for."""
        return self.bindings.missing(t.binding for t in self.harness.active_tools)

    async def run(
        self,
        viewer_message: str,
        *,
        history: Sequence[Message] | None = None,
        on_event: EventCallback | None = None,
        context: dict[str, Any] | None = None,
        on_delta: DeltaCallback | None = None,
        request_id: str | None = None,
    ) -> Trace:
        """Answer one viewer message; `history` is earlier conversation without system prompt.

        `context` reaches every binding as `ToolContext.context`; `on_delta` receives streamed
        model text; `on_event` receives each trace step as it is recorded.
        """
        request = _Request(
            self,
            viewer_message,
            history=list(history or []),
            on_event=on_event,
            context=context if context is not None else {},
            on_delta=on_delta,
            request_id=request_id or uuid.uuid4().hex,
        )
        return await request.execute()


class _Blocked:
    def __init__(self, hook: Hook, reason: str, reminder: str) -> None:
        self.hook = hook
        self.reason = reason
        self.reminder = reminder


class _Request:
    """State of one `run`: the trace under construction and the retry budget spent."""

    def __init__(
        self,
        loop: AgentLoop,
        viewer_message: str,
        *,
        history: list[Message],
        on_event: EventCallback | None,
        context: dict[str, Any],
        on_delta: DeltaCallback | None,
        request_id: str,
    ) -> None:
        self.loop = loop
        self.harness = loop.harness
        self.settings = loop.harness.settings
        self.native = loop.native
        self.history = history
        self.on_event = on_event
        self.context = context
        self.on_delta = on_delta
        self.started = time.monotonic()
        self.turn = 0
        self.blocks = 0
        self.tool_results: list[dict[str, Any]] = []
        self.trace = Trace(
            request_id=request_id,
            harness=loop.harness.name,
            viewer_message=viewer_message,
            tool_protocol=self.settings.tool_protocol.value,
            trajectory=Trajectory(viewer_message=viewer_message),
            started_at=datetime.now(UTC),
        )

    # ------------------------------------------------------------------ driver

    async def execute(self) -> Trace:
        trace = self.trace
        system = render_system_prompt(self.harness)
        if system:
            trace.messages.append({"role": "system", "content": system})
        trace.messages.extend(dict(m) for m in self.history)
        trace.request_start = len(trace.messages)
        trace.messages.append({"role": "user", "content": trace.viewer_message})
        try:
            await self._turns()
        finally:
            trace.finished_at = datetime.now(UTC)
            trace.e2e_s = time.monotonic() - self.started
        return trace

    async def _turns(self) -> None:
        trace = self.trace
        blocked = await self._hooks(HookEvent.ON_INPUT, self._hook_input(HookEvent.ON_INPUT))
        if blocked is not None:
            self._finish(TraceStatus.BLOCKED_INPUT, f"{blocked.hook.name}: {blocked.reason}")
            return
        specs = (tool_specs(self.harness) or None) if self.native else None
        for turn in range(1, self.settings.max_turns + 1):
            self.turn = turn
            output = await self._call_model(specs)
            if output is None:
                return
            content, calls, errors = output
            trace.trajectory.turns.append(
                AssistantTurn(content=content, tool_calls=calls, parse_errors=errors)
            )
            if errors:
                self._malformed(errors)
                continue
            if calls:
                if await self._run_calls(calls):
                    return
                continue
            if await self._reply(content):
                return
        self._finish(
            TraceStatus.MAX_TURNS,
            f"no accepted reply within max_turns={self.settings.max_turns} model calls",
        )

    def _finish(self, status: TraceStatus, reason: str | None = None) -> None:
        self.trace.status = status
        self.trace.reason = reason

    def _emit(self, step: Step) -> None:
        step.turn = self.turn
        step.t_s = time.monotonic() - self.started
        self.trace.steps.append(step)
        if self.on_event is not None:
            try:
                self.on_event(step)
            except Exception:  # a viewer's bug must not end the request
                log.exception("on_event callback failed")

    # ------------------------------------------------------------------ model

    async def _call_model(
        self, specs: list[dict[str, Any]] | None
    ) -> tuple[str, list[ToolCall], list[str]] | None:
        messages = self.trace.messages
        sent = len(messages)
        started = time.monotonic()
        error: str | None = None
        reply: ModelReply | None = None
        try:
            reply = await self.loop.client.complete(
                list(messages), tools=specs, on_delta=self.on_delta
            )
        except ModelError as exc:
            error = str(exc) or type(exc).__name__
        except Exception as exc:  # a client bug or an unwrapped transport error
            error = f"{type(exc).__name__}: {exc}"
        wall = time.monotonic() - started
        self.trace.counts.model_calls += 1
        if reply is None:
            self._emit(ModelCallStep(messages_sent=sent, wall_s=wall, error=error))
            self._finish(TraceStatus.MODEL_ERROR, error)
            return None
        raw = reply.content or ""
        if self.native:
            content = raw
            calls = [c.model_copy(deep=True) for c in reply.tool_calls]
            errors: list[str] = []
        else:
            parsed = parse_tool_calls(raw)
            errors = list(parsed.errors)
            if errors:  # all or nothing: a malformed output runs no call (see _malformed)
                content, calls = raw, []
            else:
                content = parsed.text
                calls = [ToolCall(name=c.name, arguments=c.arguments) for c in parsed.calls]
        message: Message = {"role": "assistant", "content": raw}
        if self.native and calls:
            message["tool_calls"] = [
                {
                    "id": self._call_id(i, c),
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": json.dumps(c.arguments, ensure_ascii=False),
                    },
                }
                for i, c in enumerate(calls)
            ]
        messages.append(message)
        timing = reply.timing
        if errors:
            self.trace.counts.parse_errors += 1
        self._emit(
            ModelCallStep(
                messages_sent=sent,
                raw_output=raw,
                content=content,
                tool_calls=calls,
                parse_errors=errors,
                finish_reason=reply.finish_reason,
                model=reply.model,
                timing=ModelTiming(
                    ttft_s=timing.ttft_s,
                    e2e_s=timing.e2e_s,
                    tpot_s=timing.tpot_s,
                    prompt_tokens=timing.prompt_tokens,
                    output_tokens=timing.output_tokens,
                ),
                wall_s=wall,
            )
        )
        return content, calls, errors

    def _call_id(self, index: int, call: ToolCall) -> str:
        return call.id or f"call_{self.turn}_{index}"

    # ------------------------------------------------------------------ tool calls

    def _malformed(self, errors: list[str]) -> None:
        """Tell the model its output's tool calls could not be parsed; nothing was run."""
        lines = [f"Tool call error: {error}" for error in errors]
        lines.append(
            "No tool was run. Write every call again as "
            '<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>'
        )
        self.trace.messages.append({"role": "user", "content": "\n".join(lines)})

    async def _run_calls(self, calls: list[ToolCall]) -> bool:
        """Run one output's calls and append their results; True when the request is over."""
        results: list[tuple[str, str, str]] = []  # (name, call id, content)
        over = False
        for index, call in enumerate(calls):
            call_id = self._call_id(index, call)
            if call.name == self.settings.load_skill_tool:
                content = self._load_skill(call, call_id)
            else:
                content, over = await self._tool(call, call_id)
            results.append((call.name, call_id, content))
            if over:
                break
        if self.native:
            for _name, call_id, content in results:
                self.trace.messages.append(
                    {"role": "tool", "tool_call_id": call_id, "content": content}
                )
        else:
            blocks = [
                f'<tool_result name="{name}">{content}</tool_result>'
                for name, _, content in results
            ]
            self.trace.messages.append({"role": "user", "content": "\n".join(blocks)})
        return over

    def _load_skill(self, call: ToolCall, call_id: str) -> str:
        name = call.arguments.get("name")
        available = ", ".join(s.name for s in self.harness.active_skills) or "(none)"
        skill = self.harness.skill(name) if isinstance(name, str) else None
        if skill is None:
            if isinstance(name, str):
                message = f"unknown skill {name!r}; available skills: {available}"
            else:
                message = f'{call.name} needs {{"name": <skill>}}; available skills: {available}'
            self._emit(SkillLoadStep(name=str(name), call_id=call_id, ok=False, error=message))
            return _dump(ToolError(ToolErrorKind.UNKNOWN_SKILL, message).to_result())
        wanted = call.arguments.get(SKILL_FILE_ARGUMENT)
        if wanted is not None and (not isinstance(wanted, str) or wanted not in skill.files):
            listed = ", ".join(sorted(skill.files)) or "(none)"
            message = f"skill {skill.name!r} has no file {wanted!r}; its files: {listed}"
            self._emit(SkillLoadStep(name=skill.name, call_id=call_id, ok=False, error=message))
            return _dump(ToolError(ToolErrorKind.ERROR, message).to_result())
        if skill.name not in self.trace.loaded_skills:
            self.trace.loaded_skills.append(skill.name)
        self.trace.counts.skill_loads += 1
        self._emit(SkillLoadStep(name=skill.name, call_id=call_id, ok=True, kind=skill.kind.value))
        if isinstance(wanted, str):
            return skill_file_text(wanted, skill.files[wanted])
        return skill_with_files(skill.body, skill.files)

    async def _tool(self, call: ToolCall, call_id: str) -> tuple[str, bool]:
        """Run one harness tool call: (content for the model, request over?)."""
        self.trace.counts.tool_calls += 1
        tool = self.harness.tool(call.name)
        if tool is None:
            names = [self.settings.load_skill_tool] if self.harness.active_skills else []
            names += [t.name for t in self.harness.active_tools]
            message = f"unknown tool {call.name!r}; available tools: {', '.join(names)}"
            return self._tool_failed(call, call_id, ToolErrorKind.UNKNOWN_TOOL, message), False
        problems = argument_errors(tool.parameters, call.arguments)
        if problems:
            message = invalid_arguments_message(
                call.name, tool.parameters, call.arguments, problems
            )
            return self._tool_failed(call, call_id, ToolErrorKind.INVALID_ARGUMENTS, message), False

        before = self._hook_input(HookEvent.BEFORE_TOOL, tool=call.name, arguments=call.arguments)
        blocked = await self._hooks(HookEvent.BEFORE_TOOL, before, tool=call.name)
        if blocked is not None:
            content = self._tool_failed(call, call_id, ToolErrorKind.BLOCKED, blocked.reminder)
            return content, self._spend(blocked)

        ctx = ToolContext(
            tool=call.name,
            call_id=call_id,
            request_id=self.trace.request_id,
            harness=self.harness,
            turn=self.turn,
            context=self.context,
        )
        started = time.monotonic()
        try:
            result = await self.loop.bindings.call(
                tool.binding,
                tool.binding_arguments(copy.deepcopy(call.arguments)),
                ctx,
                timeout_s=self.loop.tool_timeout_s,
            )
        except ToolError as exc:
            duration = time.monotonic() - started
            failed = self._tool_failed(
                call, call_id, exc.kind, exc.message, duration, crashed=exc.crashed
            )
            return failed, False
        self._emit(
            ToolCallStep(
                name=call.name,
                call_id=call_id,
                arguments=call.arguments,
                result=result,
                duration_s=time.monotonic() - started,
            )
        )

        after = self._hook_input(
            HookEvent.AFTER_TOOL, tool=call.name, arguments=call.arguments, result=result
        )
        blocked = await self._hooks(HookEvent.AFTER_TOOL, after, tool=call.name)
        if blocked is not None:
            error = ToolError(ToolErrorKind.BLOCKED, blocked.reminder).to_result()
            return _dump(error), self._spend(blocked)
        self.tool_results.append({"name": call.name, "arguments": call.arguments, "result": result})
        return _dump(result), False

    def _tool_failed(
        self,
        call: ToolCall,
        call_id: str,
        kind: ToolErrorKind,
        message: str,
        duration: float = 0.0,
        *,
        crashed: bool = False,
    ) -> str:
        self.trace.counts.tool_errors += 1
        self._emit(
            ToolCallStep(
                name=call.name,
                call_id=call_id,
                arguments=call.arguments,
                error_kind=kind.value,
                error=message,
                crashed=crashed,
                duration_s=duration,
            )
        )
        return _dump(ToolError(kind, message).to_result())

    # ------------------------------------------------------------------ replies and hooks

    async def _reply(self, content: str) -> bool:
        """Check a candidate reply; True when the request is over."""
        self.trace.last_candidate = content
        data = self._hook_input(HookEvent.BEFORE_REPLY, reply=content)
        blocked = await self._hooks(HookEvent.BEFORE_REPLY, data)
        if blocked is None:
            self._emit(ReplyStep(content=content, accepted=True))
            self.trace.final_reply = content
            self._finish(TraceStatus.OK)
            return True
        self._emit(ReplyStep(content=content, accepted=False, blocked_by=blocked.hook.name))
        if self._spend(blocked):
            return True
        self.trace.counts.retries += 1
        wrapped = Template(self.settings.reminder_format).safe_substitute(reminder=blocked.reminder)
        self.trace.messages.append({"role": self.settings.reminder_role.value, "content": wrapped})
        return False

    def _spend(self, blocked: _Blocked) -> bool:
        """Spend one unit of retry budget; True (and the status set) when it is overdrawn."""
        self.blocks += 1
        if self.blocks <= self.settings.retry_budget:
            return False
        self._finish(
            TraceStatus.RETRY_BUDGET_EXHAUSTED,
            f"retry budget of {self.settings.retry_budget} exhausted; "
            f"{blocked.hook.name} blocked: {blocked.reason}",
        )
        return True

    def _hook_input(
        self,
        event: HookEvent,
        *,
        tool: str | None = None,
        arguments: dict[str, Any] | None = None,
        result: Any = None,
        reply: str | None = None,
    ) -> HookInput:
        return HookInput(
            event=event,
            request_id=self.trace.request_id,
            viewer_message=self.trace.viewer_message,
            turn=self.turn,
            tool=tool,
            arguments=arguments,
            result=result,
            reply=reply,
            loaded_skills=list(self.trace.loaded_skills),
            tool_results=list(self.tool_results),
        )

    async def _hooks(
        self, event: HookEvent, data: HookInput, *, tool: str | None = None
    ) -> _Blocked | None:
        """Run the matching hooks in order; the first block stops and is returned."""
        counts = self.trace.counts
        for hook in self.harness.active_hooks:
            if hook.event is not event or not hook.matches(tool):
                continue
            started = time.monotonic()
            result = await run_hook(hook, data, self.harness)
            counts.hook_runs += 1
            reminder = None
            if result.decision is Decision.BLOCK:
                counts.hook_blocks += 1
                reminder = render_reminder(hook, result.reason, tool)
            elif result.decision is Decision.ERROR:
                counts.hook_errors += 1
            self._emit(
                HookStep(
                    hook=hook.name,
                    kind=hook.kind.value,
                    event=event.value,
                    tool=tool,
                    decision=result.decision,
                    reason=result.reason,
                    reminder=reminder,
                    duration_s=time.monotonic() - started,
                )
            )
            if reminder is not None:
                return _Blocked(hook, result.reason, reminder)
        return None


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False)


SKILL_FILE_SHOWN = 20_000
"""Characters of one skill file the loader returns (the rest is cut with a note)."""


def skill_with_files(body: str, files: Mapping[str, bytes]) -> str:
    """A skill's instructions and, when it has files, their list and how to read one."""
    if not files:
        return body
    listed = "\n".join(f"- {path} ({len(data):,} bytes)" for path, data in sorted(files.items()))
    return (
        f"{body.rstrip()}\n\nFiles of this skill (read one by loading the skill again with "
        f'"{SKILL_FILE_ARGUMENT}": "<path>"):\n{listed}'
    )


def skill_file_text(path: str, data: bytes) -> str:
    """One skill file as the model reads it: UTF-8 text (cut past SKILL_FILE_SHOWN
    characters), or a note for bytes that are not text."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"{path} is a binary file ({len(data):,} bytes): it cannot be shown as text"
    if len(text) > SKILL_FILE_SHOWN:
        return text[:SKILL_FILE_SHOWN] + f"\n[... {path} is cut here: {len(text):,} characters]"
    return text
