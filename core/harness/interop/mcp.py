"""MCP tool lists (the `tools/list` result, 2025-11-25): the shape of an entry, read into a
tool's fields and written back, so a harness's tools can be served to or taken from an MCP
client or server without loss."""

from __future__ import annotations

import re
from typing import Any

from core.harness.models import MCP_EXTRA_TOOL_KEYS, Harness, Tool

MCP_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


MCP_TOOL_KEYS = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    *MCP_EXTRA_TOOL_KEYS,
)
MCP_LIST_KEYS = ("tools", "nextCursor", "_meta")


def mcp_tool_fields(entry: dict[str, Any], name: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Tool model fields of one MCP tools/list entry (the inverse of `mcp_tool`), and where
    each field that is named otherwise sits in the entry ("" for the entry itself)."""
    fields: dict[str, Any] = {
        "name": name,
        "description": entry.get("description", ""),
        "parameters": entry.get("inputSchema"),
        "title": entry.get("title"),
        "output_schema": entry.get("outputSchema"),
        "annotations": entry.get("annotations", {}),
        "mcp": {k: entry[k] for k in MCP_EXTRA_TOOL_KEYS if k in entry},
    }
    places = {
        "parameters": "inputSchema",
        "output_schema": "outputSchema",
        "mcp": "",
    }
    return fields, places


def mcp_tool(tool: Tool) -> dict[str, Any]:
    """One entry of an MCP tools/list result."""
    out: dict[str, Any] = {"name": tool.name}
    if tool.title is not None:
        out["title"] = tool.title
    if tool.description:
        out["description"] = tool.description
    out["inputSchema"] = tool.parameters
    if tool.output_schema is not None:
        out["outputSchema"] = tool.output_schema
    if tool.annotations:
        out["annotations"] = tool.annotations
    out.update(tool.mcp)
    return out


def mcp_tool_list(harness: Harness) -> dict[str, Any]:
    """The harness's enabled tools as an MCP tools/list result, in harness order."""
    return {"tools": [mcp_tool(t) for t in harness.active_tools]}
