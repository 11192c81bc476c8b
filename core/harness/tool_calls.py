"""Tool calls in the `prompt` protocol: `<tool_call>{json}</tool_call>` blocks read out of
model output and written into it.

The tool block core/harness/render.py puts in the system prompt asks for exactly this syntax;
`parse_tool_calls` reads it and `format_tool_call` writes it (gold replies, recovery rows), so
the agent loop, data generation and the studio's trajectory view read and write one format.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]


@dataclass
class ParsedOutput:
    text: str
    calls: list[ParsedCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def parse_tool_calls(output: str) -> ParsedOutput:
    """Split model output into visible text and `<tool_call>` blocks, recording bad blocks."""
    calls: list[ParsedCall] = []
    errors: list[str] = []
    for match in TOOL_CALL_RE.finditer(output):
        raw = match.group(1).strip()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"tool call is not valid JSON ({exc.msg}): {raw[:200]}")
            continue
        except (ValueError, RecursionError) as exc:  # huge integers, absurd nesting
            errors.append(f"tool call is not usable JSON ({type(exc).__name__}): {raw[:200]}")
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            errors.append(f'tool call must be an object with a "name": {raw[:200]}')
            continue
        args = data.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):
                errors.append(f"arguments of {data['name']!r} are not valid JSON")
                continue
        if not isinstance(args, dict):
            errors.append(f"arguments of {data['name']!r} must be a JSON object")
            continue
        calls.append(ParsedCall(data["name"], args))
    text = TOOL_CALL_RE.sub("", output)
    if "<tool_call>" in text:
        errors.append("unclosed <tool_call> tag")
        text = text.split("<tool_call>", 1)[0]
    return ParsedOutput(text.strip(), calls, errors)


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """The `<tool_call>` block for one call; `parse_tool_calls` reads it back exactly.

    "</" inside strings is written as "<\\/" (a legal JSON escape), so an argument holding
    "</tool_call>" cannot end the block early.
    """
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    payload = payload.replace("</", "<\\/")
    return f"<tool_call>{payload}</tool_call>"
