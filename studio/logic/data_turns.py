"""An agent request as readable turns: what the viewer asked, each skill load and tool call with
what came back, hook reminders, and the reply.

Three sources give the same list of `TurnItem`s, so the Data page (dataset rows), the task
preview (the oracle's gold trace) and the Evaluate page (stored traces) draw them alike:

- `turns_from_messages`: the OpenAI chat messages a dataset row stores. Tool calls are read
  from `<tool_call>` blocks (prompt protocol) or `tool_calls` (native); results from the
  `<tool_result name=…>` user message or the `tool` messages that follow. A user message after
  a reply candidate is a hook reminder (the candidate was blocked).
- `turns_from_trace`: a `Trace`'s steps (exact: hooks, skill loads, errors are recorded).
- `turns_from_trajectory`: the assistant turns alone (rejected rows keep only those), without
  results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.harness.tool_calls import parse_tool_calls

RESULT_RE = re.compile(r'<tool_result name="([^"]*)">(.*?)</tool_result>', re.DOTALL)
MAX_BODY = 4000


@dataclass(frozen=True)
class TurnItem:
    """One thing that happened in the request, in order.

    kind: viewer | say (text written next to tool calls) | skill | tool | hook | reminder |
    reply | blocked (a reply candidate a hook refused) | error (a failed model call or an
    unparseable output) | status (why the request ended early).
    """

    kind: str
    title: str
    body: str = ""
    result: str = ""
    ok: bool = True
    turn: int = 0
    meta: str = ""


def clip(text: str, limit: int = MAX_BODY) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more chars)"


def pretty(value: Any) -> str:
    """JSON text a person can read: indented objects, compact short ones, strings as they are."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return clip(value)
    if value is None:
        return ""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= 90:
        return text
    return clip(json.dumps(value, ensure_ascii=False, indent=2))


def args_text(arguments: dict[str, Any]) -> str:
    if not arguments:
        return "no arguments"
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())


def _error_of(result_text: str) -> str | None:
    """The error message when a tool result is the loop's/simulator's error object."""
    try:
        data = json.loads(result_text)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict) and set(data) == {"error"}:
        err = data["error"]
        if isinstance(err, dict):
            kind = str(err.get("kind", "error"))
            return f"{kind}: {err.get('message', '')}".strip(": ")
        return str(err)
    return None


def _call_item(
    name: str, arguments: dict[str, Any], result: str | None, loader: str, turn: int
) -> TurnItem:
    error = _error_of(result) if result is not None else None
    if name == loader:
        skill = str(arguments.get("name", "?"))
        body = "" if result is None else (error or f"{len(result)} chars of instructions")
        return TurnItem("skill", skill, body=body, ok=error is None, turn=turn, meta=name)
    shown = "" if result is None else (error if error else pretty(result))
    return TurnItem(
        "tool", name, body=args_text(arguments), result=shown, ok=error is None, turn=turn
    )


def _request_start(messages: Sequence[dict[str, Any]], viewer_message: str | None) -> int:
    for i, m in enumerate(messages):
        if m.get("role") == "user" and (
            viewer_message is None or str(m.get("content", "")) == viewer_message
        ):
            return i
    return 0


def turns_from_messages(
    messages: Sequence[dict[str, Any]],
    *,
    viewer_message: str | None = None,
    native: bool = False,
    loader: str = "load_skill",
) -> list[TurnItem]:
    """Readable turns of one request's chat messages (see the module doc)."""
    start = _request_start(messages, viewer_message)
    items: list[TurnItem] = []
    if start < len(messages):
        items.append(TurnItem("viewer", "Viewer", body=str(messages[start].get("content", ""))))
    i, turn = start + 1, 0
    while i < len(messages):
        message = messages[i]
        i += 1
        role = message.get("role")
        if role != "assistant":
            items.append(
                TurnItem("reminder", "Message to the model", body=str(message.get("content", "")))
            )
            continue
        turn += 1
        content = str(message.get("content") or "")
        calls: list[tuple[str, dict[str, Any], str]] = []
        errors: list[str] = []
        if native:
            text = content.strip()
            for raw in message.get("tool_calls") or []:
                function = raw.get("function", {}) if isinstance(raw, dict) else {}
                try:
                    args = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    args = {"_unparsed_arguments": function.get("arguments")}
                if not isinstance(args, dict):
                    args = {"_unparsed_arguments": args}
                calls.append((str(function.get("name", "")), args, str(raw.get("id", ""))))
        else:
            parsed = parse_tool_calls(content)
            text = parsed.text
            calls = [(c.name, c.arguments, "") for c in parsed.calls]
            errors = parsed.errors
        if errors:
            items.append(
                TurnItem(
                    "error", "Unparseable tool call", body="\n".join(errors), ok=False, turn=turn
                )
            )
            if i < len(messages) and messages[i].get("role") == "user":
                items.append(
                    TurnItem(
                        "reminder",
                        "Loop feedback",
                        body=str(messages[i].get("content", "")),
                        turn=turn,
                    )
                )
                i += 1
            continue
        if not calls:
            blocked = i < len(messages) and messages[i].get("role") == "user"
            if blocked:
                items.append(TurnItem("blocked", "Reply blocked", body=text, ok=False, turn=turn))
                items.append(
                    TurnItem(
                        "reminder",
                        "Hook reminder",
                        body=str(messages[i].get("content", "")),
                        turn=turn,
                    )
                )
                i += 1
            else:
                items.append(TurnItem("reply", "Reply", body=text, turn=turn))
            continue
        if text:
            items.append(TurnItem("say", "Model", body=text, turn=turn))
        results: list[str | None] = [None] * len(calls)
        if native:
            by_id: dict[str, str] = {}
            while i < len(messages) and messages[i].get("role") == "tool":
                by_id[str(messages[i].get("tool_call_id", ""))] = str(
                    messages[i].get("content", "")
                )
                i += 1
            results = [by_id.get(cid) for _, _, cid in calls]
        elif i < len(messages) and messages[i].get("role") == "user":
            blocks = RESULT_RE.findall(str(messages[i].get("content", "")))
            if blocks:
                i += 1
                for k, (_name, body) in enumerate(blocks[: len(calls)]):
                    results[k] = body
        for (name, args, _), result in zip(calls, results, strict=True):
            items.append(_call_item(name, args, result, loader, turn))
    return items


def turns_from_trajectory(trajectory: dict[str, Any], loader: str = "load_skill") -> list[TurnItem]:
    """Readable turns of a stored Trajectory (JSON), without tool results."""
    items = [TurnItem("viewer", "Viewer", body=str(trajectory.get("viewer_message", "")))]
    for turn, raw in enumerate(trajectory.get("turns") or [], start=1):
        content = str(raw.get("content") or "")
        calls = raw.get("tool_calls") or []
        if raw.get("parse_errors"):
            items.append(
                TurnItem(
                    "error",
                    "Unparseable tool call",
                    body="\n".join(raw["parse_errors"]),
                    ok=False,
                    turn=turn,
                )
            )
            continue
        if not calls:
            items.append(TurnItem("reply", "Reply", body=content, turn=turn))
            continue
        if content:
            items.append(TurnItem("say", "Model", body=content, turn=turn))
        for call in calls:
            items.append(
                _call_item(
                    str(call.get("name", "")), dict(call.get("arguments") or {}), None, loader, turn
                )
            )
    return items


def turns_from_trace(trace: Any) -> list[TurnItem]:
    """Readable turns of a `core.runtime.trace.Trace` (its steps, in order)."""
    from core.runtime.trace import (
        HookStep,
        ModelCallStep,
        ReplyStep,
        SkillLoadStep,
        ToolCallStep,
    )

    items = [TurnItem("viewer", "Viewer", body=trace.viewer_message)]
    for step in trace.steps:
        if isinstance(step, ModelCallStep):
            if step.error:
                items.append(
                    TurnItem(
                        "error", "Model call failed", body=step.error, ok=False, turn=step.turn
                    )
                )
            elif step.parse_errors:
                items.append(
                    TurnItem(
                        "error",
                        "Unparseable tool call",
                        body="\n".join(step.parse_errors),
                        ok=False,
                        turn=step.turn,
                    )
                )
            elif step.tool_calls and step.content.strip():
                items.append(TurnItem("say", "Model", body=step.content.strip(), turn=step.turn))
        elif isinstance(step, SkillLoadStep):
            items.append(
                TurnItem(
                    "skill",
                    step.name,
                    body=step.error or (f"{step.kind} skill" if step.kind else ""),
                    ok=step.ok,
                    turn=step.turn,
                )
            )
        elif isinstance(step, ToolCallStep):
            failed = step.error_kind is not None
            result = (
                f"{step.error_kind}: {step.error or ''}".strip(": ")
                if failed
                else pretty(step.result)
            )
            items.append(
                TurnItem(
                    "tool",
                    step.name,
                    body=args_text(step.arguments),
                    result=result,
                    ok=not failed,
                    turn=step.turn,
                    meta=f"{step.duration_s * 1000:.0f} ms" if step.duration_s >= 0.001 else "",
                )
            )
        elif isinstance(step, HookStep):
            if step.decision.value == "allow":
                continue
            body = step.reminder or step.reason
            items.append(
                TurnItem(
                    "hook",
                    f"{step.hook} · {step.decision.value}",
                    body=body,
                    ok=False,
                    turn=step.turn,
                    meta=step.event,
                )
            )
        elif isinstance(step, ReplyStep):
            if step.accepted:
                items.append(TurnItem("reply", "Reply", body=step.content, turn=step.turn))
            else:
                by = f" by {step.blocked_by}" if step.blocked_by else ""
                items.append(
                    TurnItem(
                        "blocked", f"Reply blocked{by}", body=step.content, ok=False, turn=step.turn
                    )
                )
    status = getattr(trace.status, "value", str(trace.status))
    if status != "ok":
        items.append(
            TurnItem("status", status.replace("_", " "), body=trace.reason or "", ok=False)
        )
    return items
