"""The oracle's reading of a conversation: what the loop appended so far (tool results by
binding, in canonical names, with their outcome; skill loads; hook reminders), from the
messages in either tool protocol. The policy (core/sim/oracle.py) decides the next turn from
it, and the reply composer (core/sim/reply.py) takes its facts from it, never from the
catalog."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.harness.tool_calls import parse_tool_calls
from core.runtime.client import Message
from core.sim.surface import (
    HarnessSurface,
)

_RESULT_BLOCK = '<tool_result name="{name}">'


@dataclass
class Outcome:
    """One tool call the conversation shows and what came back."""

    binding: str | None
    tool: str
    args: dict[str, Any]
    """Canonical argument names and values."""
    result: Any = None
    error_kind: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_kind is None


@dataclass
class Conversation:
    """What the oracle reads from the messages of the current request."""

    viewer_message: str
    loaded: list[str] = field(default_factory=list)
    skill_attempts: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
    reminders: int = 0


def _split_results(content: str, names: Sequence[str]) -> list[str] | None:
    """The `<tool_result>` bodies of one prompt-protocol result message, in call order."""
    out: list[str] = []
    pos = 0
    for i, name in enumerate(names):
        head = _RESULT_BLOCK.format(name=name)
        if not content.startswith(head, pos):
            return None
        start = pos + len(head)
        if i + 1 < len(names):
            tail = "</tool_result>\n" + _RESULT_BLOCK.format(name=names[i + 1])
            end = content.find(tail, start)
            if end < 0:
                return None
            out.append(content[start:end])
            pos = end + len("</tool_result>\n")
        else:
            if not content.endswith("</tool_result>"):
                return None
            out.append(content[start : len(content) - len("</tool_result>")])
    return out


def _decode(content: str) -> tuple[Any, str | None, str | None]:
    """(result, error kind, error message) of one tool result's text."""
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return content, None, None
    if isinstance(data, dict) and set(data) == {"error"} and isinstance(data["error"], dict):
        error = data["error"]
        return None, str(error.get("kind", "error")), str(error.get("message", ""))
    return data, None, None


def read_conversation(
    messages: Sequence[Message], viewer_message: str, surface: HarnessSurface, native: bool
) -> Conversation:
    """Parse this request's part of `messages` into skill loads, tool outcomes and reminders."""
    start = 0
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "user" and m.get("content") == viewer_message:
            start = i + 1
            break
    conv = Conversation(viewer_message=viewer_message)
    loader = surface.load_skill_tool
    i = start
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.get("role") != "assistant":
            continue
        calls: list[tuple[str, dict[str, Any], str]] = []  # name, arguments, call id
        if native:
            for raw in message.get("tool_calls") or []:
                function = raw.get("function", {})
                try:
                    args = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    args = {}
                calls.append((str(function.get("name", "")), args, str(raw.get("id", ""))))
        else:
            parsed = parse_tool_calls(str(message.get("content") or ""))
            calls = [(c.name, c.arguments, "") for c in parsed.calls]
        if not calls:
            if i < len(messages) and messages[i].get("role") != "assistant":
                conv.reminders += 1
                i += 1
            continue
        bodies: list[str | None]
        if native:
            by_id: dict[str, str] = {}
            while i < len(messages) and messages[i].get("role") == "tool":
                by_id[str(messages[i].get("tool_call_id", ""))] = str(messages[i].get("content"))
                i += 1
            bodies = [by_id.get(cid) for _, _, cid in calls]
        else:
            split = None
            if i < len(messages) and messages[i].get("role") == "user":
                split = _split_results(str(messages[i].get("content") or ""), [c[0] for c in calls])
                i += 1
            bodies = list(split) if split is not None else [None] * len(calls)
        for (name, args, _), body in zip(calls, bodies, strict=True):
            if body is None:
                continue
            if name == loader:
                conv.skill_attempts += 1
                _, kind, _ = _decode(body) if body.startswith("{") else (None, None, None)
                skill = args.get("name")
                if kind is None and isinstance(skill, str) and skill not in conv.loaded:
                    conv.loaded.append(skill)
                continue
            binding = surface.binding_of(name)
            canonical = surface.to_canonical(binding, args) if binding else dict(args)
            result, kind, error = _decode(body)
            conv.outcomes.append(Outcome(binding, name, canonical, result, kind, error))
    return conv
