"""Reading tools from a JSON document that may mix MCP and OpenAI entries (a tools/list
result, a JSON-RPC response, an array or one tool), under the one name rule both formats
share.

Tool names: MCP (2025-11-25) allows 1-128 characters of ``A-Z a-z 0-9 _ - .``; OpenAI function
names are ``^[a-zA-Z0-9_-]{1,64}$``. A name the model sees must satisfy both, so the stricter
rule applies: a valid MCP name with a dot or over 64 characters is refused with that reason and
can be renamed on import (its implementation keeps the original name as its binding).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.harness.errors import HarnessError, Problem, problems_from_validation
from core.harness.folder.parse import unknown_field
from core.harness.interop.common import dotted, read_json_file
from core.harness.interop.mcp import MCP_LIST_KEYS, MCP_NAME_RE, MCP_TOOL_KEYS, mcp_tool_fields
from core.harness.interop.openai import (
    OPENAI_FLAT_KEYS,
    OPENAI_FUNCTION_KEYS,
    OPENAI_TOOL_KEYS,
    openai_tool_fields,
)
from core.harness.models import TOOL_NAME_RE, Tool

MODEL_NAME_RULE = (
    "names the model sees must match ^[a-zA-Z0-9_-]{1,64}$: the stricter of MCP's rule "
    "(1-128 characters of A-Z a-z 0-9 _ - .) and OpenAI's function-name rule"
)


def tool_name_problem(name: Any) -> str | None:
    """Why `name` cannot be a tool the model sees (None when it can), MCP's rule named."""
    if not isinstance(name, str):
        return f"a tool name is a string, got {type(name).__name__}"
    if TOOL_NAME_RE.match(name):
        return None
    if MCP_NAME_RE.match(name):
        return (
            f"{name!r} is a valid MCP tool name but not one a model can be given: "
            f"{MODEL_NAME_RULE}; rename it on import (--rename {name}=NEW_NAME)"
        )
    return f"{name!r} is not a valid tool name: {MODEL_NAME_RULE}"


def _tool_entries(data: Any, file: str) -> list[tuple[str, Any]]:
    """(dotted place, entry) of every tool a JSON document holds: an MCP `tools/list` result
    (or the whole JSON-RPC response), a JSON array of tools, or one tool."""
    base = ""
    if isinstance(data, dict) and "jsonrpc" in data:
        if "error" in data:
            raise HarnessError([Problem(file, "error", "is a JSON-RPC error response, no tools")])
        if not isinstance(data.get("result"), dict):
            raise HarnessError([Problem(file, "result", "a tools/list response has a result")])
        data, base = data["result"], "result"
    if isinstance(data, list):
        return [(dotted(base, str(i)), entry) for i, entry in enumerate(data)]
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        problems = [
            Problem(file, dotted(base, key), unknown_field(MCP_LIST_KEYS))
            for key in data
            if key not in MCP_LIST_KEYS
        ]
        if problems:
            raise HarnessError(problems)
        return [(dotted(base, "tools", str(i)), entry) for i, entry in enumerate(data["tools"])]
    if isinstance(data, dict):
        return [(base, data)]
    raise HarnessError(
        [
            Problem(
                file,
                base,
                f"expected a tool, a list of tools or an MCP tools/list result, "
                f"got {type(data).__name__}",
            )
        ]
    )


def _tool_fields(
    entry: dict[str, Any], file: str, where: str
) -> tuple[dict[str, Any], dict[str, str], list[Problem]]:
    """Tool model fields of one entry, the model-field -> file-field renames, problems."""
    problems: list[Problem] = []

    def unknown(keys: dict[str, Any], allowed: tuple[str, ...], at: str) -> None:
        for key in keys:
            if key not in allowed:
                problems.append(Problem(file, dotted(at, str(key)), unknown_field(allowed)))

    if "function" in entry:  # OpenAI Chat Completions: {"type": "function", "function": {...}}
        unknown(entry, OPENAI_TOOL_KEYS, where)
        if entry.get("type", "function") != "function":
            problems.append(Problem(file, dotted(where, "type"), 'must be "function"'))
        fn = entry["function"]
        at = dotted(where, "function")
        if not isinstance(fn, dict):
            problems.append(Problem(file, at, "must be an object (name, description, ...)"))
            return {}, {}, problems
        unknown(fn, OPENAI_FUNCTION_KEYS, at)
        kind = "openai"
    elif "inputSchema" in entry:  # MCP tools/list entry
        unknown(entry, MCP_TOOL_KEYS, where)
        fn, at, kind = entry, where, "mcp"
    elif "parameters" in entry or entry.get("type") == "function":  # OpenAI Responses shape
        unknown(entry, OPENAI_FLAT_KEYS, where)
        if entry.get("type", "function") != "function":
            problems.append(Problem(file, dotted(where, "type"), 'must be "function"'))
        fn, at, kind = entry, where, "openai"
    else:
        problems.append(
            Problem(
                file,
                where,
                "neither an MCP tool (it has no inputSchema) nor an OpenAI tool (no function "
                "or parameters)",
            )
        )
        return {}, {}, problems
    name = fn.get("name")
    if name is None:
        problems.append(Problem(file, dotted(at, "name"), "required field is missing"))
    fields, places = mcp_tool_fields(entry, name) if kind == "mcp" else openai_tool_fields(fn, name)
    renames = {k: dotted(at, v) if v else at for k, v in places.items()}
    renames.update({k: dotted(at, k) for k in ("name", "description", "strict", "title")})
    renames["annotations"] = dotted(at, "annotations")
    return fields, renames, problems


def tool_entries(data: Any, file: str) -> list[tuple[str, Any]]:
    """(dotted place, entry) of every tool in `data`, as `tools_from_data` reads them (a
    preview lists them one by one); HarnessError when `data` holds no tools at all."""
    return _tool_entries(data, file)


def tools_from_data(
    data: Any, file: str, *, rename: dict[str, str] | None = None, all_renames_used: bool = True
) -> list[Tool]:
    """Tools of an MCP tools/list result, an MCP tool, an OpenAI tool or a JSON array of tools
    (the two kinds may mix). `rename` maps a name in the file to the name the model will see;
    the tool's binding keeps the name in the file; a rename naming no tool is a problem
    unless `all_renames_used` is False (one rename list over several files). HarnessError
    lists every problem."""
    rename = dict(rename or {})
    problems: list[Problem] = []
    tools: list[Tool] = []
    seen: dict[str, str] = {}
    used: set[str] = set()
    for where, entry in _tool_entries(data, file):
        if not isinstance(entry, dict):
            problems.append(
                Problem(file, where, f"a tool is a JSON object, got {type(entry).__name__}")
            )
            continue
        fields, renames, found = _tool_fields(entry, file, where)
        problems.extend(found)
        if found:
            continue
        original = fields["name"]
        if isinstance(original, str) and original in rename:
            used.add(original)
            fields["name"] = rename[original]
        name_problem = tool_name_problem(fields["name"])
        if name_problem is not None:
            problems.append(Problem(file, renames["name"], name_problem))
            continue
        fields["binding"] = original
        try:
            tool = Tool.model_validate(fields)
        except ValidationError as exc:
            for p in problems_from_validation(exc, file):
                head, _, rest = p.field.partition(".")
                place = renames.get(head, dotted(where, head))
                problems.append(Problem(file, dotted(place, rest), p.message))
            continue
        other = seen.get(tool.name.casefold())
        if other is not None:
            problems.append(
                Problem(file, renames["name"], f"{tool.name!r}: {other} names the same tool")
            )
            continue
        seen[tool.name.casefold()] = f"{where or 'the file'}"
        tools.append(tool)
    for old in sorted(set(rename) - used) if all_renames_used else []:
        problems.append(Problem(file, "", f"--rename {old}=...: no tool is named {old!r}"))
    if problems:
        raise HarnessError(problems)
    return tools


def read_tools(
    path: Path, *, rename: dict[str, str] | None = None, all_renames_used: bool = True
) -> list[Tool]:
    """The tools of a JSON file (see `tools_from_data`)."""
    return tools_from_data(
        read_json_file(path), str(path), rename=rename, all_renames_used=all_renames_used
    )
