"""OpenAI function tools (Chat Completions' `{"type": "function", "function": {...}}` and the
Responses API's flat shape): read into a tool's fields and written back, with what the format
cannot hold of a tool said rather than dropped."""

from __future__ import annotations

from typing import Any

from core.harness.models import Harness, Tool

OPENAI_TOOL_KEYS = ("type", "function")
OPENAI_FUNCTION_KEYS = ("name", "description", "parameters", "strict")
OPENAI_FLAT_KEYS = ("type", *OPENAI_FUNCTION_KEYS)


def openai_tool_fields(fn: dict[str, Any], name: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Tool model fields of one OpenAI function object (the inverse of `openai_tool`), and
    where each field sits in it."""
    fields = {
        "name": name,
        "description": fn.get("description", ""),
        "parameters": fn.get("parameters", {"type": "object", "properties": {}}),
        "strict": fn.get("strict"),
    }
    return fields, {"parameters": "parameters"}


def openai_tool(tool: Tool) -> dict[str, Any]:
    """One OpenAI function tool, `strict` included when the tool has it."""
    spec = tool.to_openai()
    if tool.strict is not None:
        spec["function"]["strict"] = tool.strict
    return spec


def openai_tools(harness: Harness) -> list[dict[str, Any]]:
    """The harness's enabled tools as an OpenAI `tools` array, in harness order."""
    return [openai_tool(t) for t in harness.active_tools]


def openai_losses(harness: Harness) -> list[str]:
    """What an OpenAI `tools` array cannot hold of each enabled tool (one line per tool that
    loses something): MCP's `title`, `annotations`, `outputSchema` and other MCP fields have no
    place in a function tool, so an export says so instead of dropping them quietly."""
    lines = []
    for tool in harness.active_tools:
        lost = []
        if tool.title is not None:
            lost.append("title")
        if tool.annotations:
            lost.append(f"annotations ({', '.join(sorted(tool.annotations))})")
        if tool.output_schema is not None:
            lost.append("outputSchema")
        lost += sorted(tool.mcp)
        if lost:
            lines.append(f"tool {tool.name!r}: {', '.join(lost)}")
    return lines
