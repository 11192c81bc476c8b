"""Formats in and out: MCP tool lists, OpenAI tools, agentskills.io skill folders and Claude
Code hook settings, read into harness components and written back.

Every reader here either returns components or raises HarnessError naming the file, the field
(a dotted path such as ``tools.3.inputSchema``) and the cause; nothing is half-read. Adding the
components to a harness folder (`add_to_folder`) validates the whole resulting harness, with
the checks `hat harness validate` and the store make, before it writes a file.

Tool names: MCP (2025-11-25) allows 1-128 characters of ``A-Z a-z 0-9 _ - .``; OpenAI function
names are ``^[a-zA-Z0-9_-]{1,64}$``. A name the model sees must satisfy both, so the stricter
rule applies: a valid MCP name with a dot or over 64 characters is refused with that reason and
can be renamed on import (its implementation keeps the original name as its binding).
"""

from __future__ import annotations

import ast
import contextlib
import os
import pprint
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.harness.checks import cross_check
from core.harness.errors import HarnessError, Problem, problems_from_validation
from core.harness.folder import (
    _FAILED,
    _make_dirs,
    _read_regular,
    _read_skill,
    _Reader,
    _write_new,
    folder_blobs,
    import_folder,
    round_trip_problems,
    scan_folder,
)
from core.harness.models import (
    MCP_EXTRA_TOOL_KEYS,
    TOOL_NAME_RE,
    Harness,
    Hook,
    HookEvent,
    HookKind,
    McpServer,
    PromptPipeline,
    PromptSection,
    SectionKind,
    Skill,
    Tool,
)

MCP_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
MODEL_NAME_RULE = (
    "names the model sees must match ^[a-zA-Z0-9_-]{1,64}$: the stricter of MCP's rule "
    "(1-128 characters of A-Z a-z 0-9 _ - .) and OpenAI's function-name rule"
)
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
OPENAI_TOOL_KEYS = ("type", "function")
OPENAI_FUNCTION_KEYS = ("name", "description", "parameters", "strict")
OPENAI_FLAT_KEYS = ("type", *OPENAI_FUNCTION_KEYS)
MAX_INPUT_BYTES = 20 * 1024 * 1024
"""The largest tool list or settings file read (a list of hundreds of tools is ~1 MB)."""


def _allowed(keys: tuple[str, ...]) -> str:
    return f"unknown field (allowed: {', '.join(keys)})"


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


# ----------------------------------------------------------------------------- files


def read_json_file(path: Path) -> Any:
    """Parse a JSON file strictly (no duplicate keys, NaN, lone surrogates; nesting and size
    bounded like a harness file); HarnessError naming the file and place otherwise. A link,
    FIFO or device file is refused, as in a harness folder."""
    where = str(path)
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise HarnessError([Problem(where, "", f"cannot read: {exc.strerror or exc}")]) from None
    if stat.S_ISLNK(st.st_mode):
        raise HarnessError([Problem(where, "", "is a symbolic link; give the file itself")])
    if not stat.S_ISREG(st.st_mode):
        raise HarnessError([Problem(where, "", "is not a regular file")])
    if st.st_size > MAX_INPUT_BYTES:
        msg = f"is {st.st_size:,} bytes; the limit is {MAX_INPUT_BYTES:,}"
        raise HarnessError([Problem(where, "", msg)])
    try:
        data = _read_regular(str(path))
    except OSError as exc:
        raise HarnessError([Problem(where, "", f"cannot read: {exc.strerror or exc}")]) from None
    if data is None:
        raise HarnessError([Problem(where, "", "is not a regular file")])
    reader = _Reader({where: data})
    text = reader.text(where)
    if text is None:
        raise HarnessError(reader.problems)
    value = reader.json_value(where, text.removeprefix("\ufeff"))
    if value is _FAILED:
        raise HarnessError(reader.problems)
    return value


def json_from_text(text: str, where: str) -> Any:
    """Parse JSON given as text (pasted into the studio) exactly as strictly as
    `read_json_file` parses a file; HarnessError naming `where` and the line and column."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
        raise HarnessError([Problem(where, "", f"is over {MAX_INPUT_BYTES:,} bytes")])
    reader = _Reader({where: text.encode("utf-8", "surrogatepass")})
    value = reader.json_value(where, text.removeprefix("\ufeff"))
    if value is _FAILED:
        raise HarnessError(reader.problems)
    return value


# ----------------------------------------------------------------------------- tools


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
        return [(_join(base, str(i)), entry) for i, entry in enumerate(data)]
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        problems = [
            Problem(file, _join(base, key), _allowed(MCP_LIST_KEYS))
            for key in data
            if key not in MCP_LIST_KEYS
        ]
        if problems:
            raise HarnessError(problems)
        return [(_join(base, "tools", str(i)), entry) for i, entry in enumerate(data["tools"])]
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
                problems.append(Problem(file, _join(at, str(key)), _allowed(allowed)))

    if "function" in entry:  # OpenAI Chat Completions: {"type": "function", "function": {...}}
        unknown(entry, OPENAI_TOOL_KEYS, where)
        if entry.get("type", "function") != "function":
            problems.append(Problem(file, _join(where, "type"), 'must be "function"'))
        fn = entry["function"]
        at = _join(where, "function")
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
            problems.append(Problem(file, _join(where, "type"), 'must be "function"'))
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
        problems.append(Problem(file, _join(at, "name"), "required field is missing"))
    if kind == "mcp":
        fields: dict[str, Any] = {
            "name": name,
            "description": entry.get("description", ""),
            "parameters": entry.get("inputSchema"),
            "title": entry.get("title"),
            "output_schema": entry.get("outputSchema"),
            "annotations": entry.get("annotations", {}),
            "mcp": {k: entry[k] for k in MCP_EXTRA_TOOL_KEYS if k in entry},
        }
        renames = {
            "parameters": "inputSchema",
            "output_schema": "outputSchema",
            "mcp": "",
        }
    else:
        fields = {
            "name": name,
            "description": fn.get("description", ""),
            "parameters": fn.get("parameters", {"type": "object", "properties": {}}),
            "strict": fn.get("strict"),
        }
        renames = {}
    renames = {k: _join(at, v) if v else at for k, v in renames.items()}
    renames.update({k: _join(at, k) for k in ("name", "description", "strict", "title")})
    if kind == "openai":
        renames["parameters"] = _join(at, "parameters")
    renames["annotations"] = _join(at, "annotations")
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
                place = renames.get(head, _join(where, head))
                problems.append(Problem(file, _join(place, rest), p.message))
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


# ----------------------------------------------------------------------------- skills


def read_skill_folder(path: Path) -> Skill:
    """A skill folder as published on agentskills.io: SKILL.md (a UTF-8 BOM and CRLF line
    ends accepted) and every other file (scripts/, references/, assets/, LICENSE.txt, ...)
    kept byte for byte. The folder's rules are a harness folder's: regular files only, no
    links, hidden entries skipped; the folder is named like the skill. `path` may also be
    the SKILL.md itself."""
    path = Path(path)
    if path.name == "SKILL.md" and not path.is_dir():
        path = path.parent
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise HarnessError(
            [Problem(str(path), "", f"cannot read: {exc.strerror or exc}")]
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise HarnessError([Problem(str(path), "", "is a symbolic link; give the folder itself")])
    if not stat.S_ISDIR(st.st_mode):
        raise HarnessError(
            [Problem(str(path), "", "not a folder (a skill is a folder with SKILL.md)")]
        )
    files, problems = scan_folder(path)
    if problems:
        raise HarnessError([Problem(str(path / p.file), p.field, p.message) for p in problems])
    name = path.resolve().name
    prefix = f"skills/{name}/"
    reader = _Reader({prefix + rel: data for rel, data in files.items()})
    skill = _read_skill(reader, name)
    if reader.problems or skill is None:
        shown = [
            Problem(
                str(path / p.file[len(prefix) :]) if p.file.startswith(prefix) else str(path),
                p.field,
                p.message,
            )
            for p in reader.problems
        ]
        raise HarnessError(shown or [Problem(str(path), "", "not a skill folder")])
    executable = sorted(rel for rel in skill.files if os.lstat(path / rel).st_mode & stat.S_IXUSR)
    return skill.model_copy(update={"executable": executable}) if executable else skill


# ----------------------------------------------------------------------------- hooks

CLAUDE_EVENTS: dict[str, HookEvent] = {
    "PreToolUse": HookEvent.BEFORE_TOOL,
    "PostToolUse": HookEvent.AFTER_TOOL,
    "UserPromptSubmit": HookEvent.ON_INPUT,
    "Stop": HookEvent.BEFORE_REPLY,
}
"""Claude Code events that have a counterpart in the agent loop."""
CLAUDE_UNMAPPED: dict[str, str] = {
    "Notification": "the agent loop sends no notifications (Claude Code sends one when it "
    "waits for permission or input)",
    "PermissionRequest": "the agent loop asks no permission: tools run as the harness binds them",
    "PostToolUseFailure": "the agent loop has no event for failed tool calls alone",
    "SubagentStart": "the agent loop starts no subagents",
    "SubagentStop": "the agent loop starts no subagents",
    "PreCompact": "the agent loop does not compact its context",
    "SessionStart": "the agent loop has no sessions: each request starts afresh",
    "SessionEnd": "the agent loop has no sessions: each request starts afresh",
}
CLAUDE_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})
CLAUDE_DEFAULT_TIMEOUT = 60.0
MAX_HOOK_TIMEOUT = 300.0

_COMMAND_HOOK_SOURCE = '''"""A Claude Code command hook, imported by `hat harness import-hooks`.

Runs the command below through the shell with Claude Code's hook input (JSON) on stdin. Exit
code 2, a JSON {"decision": "block"} or a PreToolUse "permissionDecision": "deny" on stdout
blocks, with the reason shown to the model; exit code 0 allows; any other exit code is an
error, recorded in the trace, and the loop goes on (as in Claude Code).
"""

CLAUDE_CODE = %s


def check(event):
    import json
    import os
    import shutil
    import subprocess

    name = CLAUDE_CODE["event"]
    data = {
        "session_id": event.get("request_id") or "",
        "transcript_path": "",
        "cwd": os.getcwd(),
        "hook_event_name": name,
    }
    if name in ("PreToolUse", "PostToolUse"):
        data["tool_name"] = event.get("tool")
        data["tool_input"] = event.get("arguments") or {}
        if name == "PostToolUse":
            data["tool_response"] = event.get("result")
    elif name == "UserPromptSubmit":
        data["prompt"] = event.get("viewer_message") or ""
    elif name == "Stop":
        data["stop_hook_active"] = False
        data["last_assistant_message"] = event.get("reply") or ""
    shell = shutil.which("bash") or "/bin/sh"
    env = dict(os.environ, CLAUDE_PROJECT_DIR=os.getcwd())
    done = subprocess.run(
        [shell, "-c", CLAUDE_CODE["hook"]["command"]],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        env=env,
    )
    out, err = done.stdout.strip(), done.stderr.strip()
    if done.returncode == 2:
        return {"decision": "block", "reason": err or "blocked by the hook command (exit 2)"}
    if done.returncode != 0:
        raise RuntimeError(f"hook command exited with code {done.returncode}: {err[:500]}")
    try:
        reply = json.loads(out) if out.startswith("{") else None
    except ValueError:
        reply = None
    if isinstance(reply, dict):
        specific = reply.get("hookSpecificOutput")
        if reply.get("decision") == "block":
            return {"decision": "block", "reason": str(reply.get("reason") or "blocked")}
        if isinstance(specific, dict) and specific.get("permissionDecision") == "deny":
            reason = specific.get("permissionDecisionReason") or "denied"
            return {"decision": "block", "reason": str(reason)}
    return {"decision": "allow", "reason": ""}
'''


@dataclass(frozen=True)
class Skipped:
    """A part of an imported file that was deliberately not imported, and why."""

    where: str
    reason: str


@dataclass
class HookImport:
    hooks: list[Hook] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def _claude_matcher(raw: Any) -> str:
    return "*" if raw in (None, "", "*") else str(raw)


def _command_hook_count(hooks_data: dict[str, Any]) -> int:
    """An upper bound of the hooks one event can import (for names that sort in order)."""
    most = 1
    for groups in hooks_data.values():
        if isinstance(groups, list):
            count = sum(
                len(g["hooks"])
                for g in groups
                if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            )
            most = max(most, count)
    return most


def hooks_from_claude_settings(
    data: Any, file: str, *, tool_names: list[str] | None = None, prefix: str = "claude"
) -> HookImport:
    """Hooks of a Claude Code settings.json (`{"hooks": {Event: [{matcher, hooks: [...]}]}}`).

    PreToolUse/PostToolUse/UserPromptSubmit/Stop command hooks become python hooks (untrusted
    until imported with --trust) that run the command as Claude Code would; the rest is listed
    in `skipped` with the reason. A tool matcher that matches none of `tool_names` (Claude
    Code's own Bash, Edit, Write, ...) is skipped too. Malformed input raises HarnessError.
    """
    if not isinstance(data, dict):
        raise HarnessError([Problem(file, "", "a settings.json is a JSON object")])
    hooks_data = data.get("hooks")
    if hooks_data is None:
        raise HarnessError([Problem(file, "hooks", "missing: this settings file has no hooks")])
    if not isinstance(hooks_data, dict):
        raise HarnessError([Problem(file, "hooks", "must be an object of event -> matcher groups")])
    out = HookImport()
    problems: list[Problem] = []
    names = list(tool_names or [])
    counters: dict[str, int] = {}
    width = len(str(_command_hook_count(hooks_data)))
    for event_name, groups in hooks_data.items():
        at = f"hooks.{event_name}"
        if not isinstance(groups, list):
            problems.append(Problem(file, at, "must be a list of matcher groups"))
            continue
        event = CLAUDE_EVENTS.get(event_name)
        if event is None:
            reason = CLAUDE_UNMAPPED.get(event_name, "not an event of the agent loop")
            out.skipped.append(Skipped(at, f"{event_name}: {reason}"))
            continue
        for gi, group in enumerate(groups):
            gat = f"{at}.{gi}"
            if not isinstance(group, dict):
                problems.append(Problem(file, gat, "must be an object (matcher, hooks)"))
                continue
            for key in group:
                if key not in ("matcher", "hooks"):
                    problems.append(Problem(file, f"{gat}.{key}", _allowed(("matcher", "hooks"))))
            raw_matcher = group.get("matcher")
            if raw_matcher is not None and not isinstance(raw_matcher, str):
                problems.append(Problem(file, f"{gat}.matcher", "must be a string"))
                continue
            entries = group.get("hooks")
            if not isinstance(entries, list):
                problems.append(Problem(file, f"{gat}.hooks", "must be a list of hooks"))
                continue
            matcher = _claude_matcher(raw_matcher) if event_name in CLAUDE_TOOL_EVENTS else "*"
            for hi, entry in enumerate(entries):
                hat = f"{gat}.hooks.{hi}"
                if not isinstance(entry, dict):
                    problems.append(Problem(file, hat, "must be an object (type, command, ...)"))
                    continue
                kind = entry.get("type")
                if kind != "command":
                    what = (
                        "ask a model or an agent to decide, and no hook kind here runs a model"
                        if kind in ("prompt", "agent")
                        else "are not a kind the agent loop runs"
                    )
                    if kind == "http":
                        what = "post to a URL, and hooks here run local checks only"
                    out.skipped.append(Skipped(hat, f"hooks of type {kind!r} {what}"))
                    continue
                command = entry.get("command")
                if not isinstance(command, str) or not command.strip():
                    problems.append(Problem(file, f"{hat}.command", "required: the shell command"))
                    continue
                if entry.get("async") is True:
                    out.skipped.append(
                        Skipped(
                            hat,
                            "an async hook runs in the background and cannot block; the "
                            "loop's hooks are checks it waits for",
                        )
                    )
                    continue
                timeout = entry.get("timeout", CLAUDE_DEFAULT_TIMEOUT)
                if (
                    isinstance(timeout, bool)
                    or not isinstance(timeout, int | float)
                    or timeout <= 0
                ):
                    problems.append(
                        Problem(file, f"{hat}.timeout", "must be a positive number of seconds")
                    )
                    continue
                if matcher != "*":
                    probe = Hook(
                        name="probe", event=event, kind=HookKind.PYTHON, source="x", matcher="*"
                    )
                    try:
                        probe.matcher = matcher
                    except ValidationError as exc:
                        msg = exc.errors()[0]["msg"].removeprefix("Value error, ")
                        problems.append(Problem(file, f"{gat}.matcher", msg))
                        continue
                    if not any(probe.matches(n) for n in names):
                        out.skipped.append(
                            Skipped(
                                hat,
                                f"matcher {raw_matcher!r} matches no tool of this harness "
                                "(Claude Code's own tools, such as Bash, Edit and Write, are "
                                "not tools of a harness)",
                            )
                        )
                        continue
                if timeout > MAX_HOOK_TIMEOUT:
                    out.notes.append(
                        f"{hat}: timeout {timeout} s lowered to the limit of {MAX_HOOK_TIMEOUT:g} s"
                    )
                literal = {"event": event_name, "group": gi, "matcher": raw_matcher, "hook": entry}
                counters[event_name] = counters.get(event_name, 0) + 1
                name = f"{prefix}-{_kebab(event_name)}-{counters[event_name]:0{width}d}"
                try:
                    hook = Hook(
                        name=name,
                        event=event,
                        kind=HookKind.PYTHON,
                        matcher=matcher,
                        timeout=float(min(timeout, MAX_HOOK_TIMEOUT)),
                        source=_COMMAND_HOOK_SOURCE
                        % pprint.pformat(literal, sort_dicts=False, width=88),
                        trusted=False,
                    )
                except ValidationError as exc:
                    problems.extend(problems_from_validation(exc, file, hat))
                    continue
                out.hooks.append(hook)
    if problems:
        raise HarnessError(problems)
    return out


def read_claude_hooks(path: Path, *, tool_names: list[str] | None = None) -> HookImport:
    return hooks_from_claude_settings(read_json_file(path), str(path), tool_names=tool_names)


def claude_origin(hook: Hook) -> dict[str, Any] | None:
    """The Claude Code entry a hook was imported from (its source's CLAUDE_CODE literal)."""
    if hook.kind is not HookKind.PYTHON or not hook.source or "CLAUDE_CODE" not in hook.source:
        return None
    try:
        module = ast.parse(hook.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in module.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "CLAUDE_CODE"
        ):
            with contextlib.suppress(
                ValueError, TypeError, SyntaxError, MemoryError, RecursionError
            ):
                value = ast.literal_eval(node.value)
                if isinstance(value, dict) and isinstance(value.get("hook"), dict):
                    return value
    return None


def claude_settings(harness: Harness) -> dict[str, Any]:
    """The harness's hooks that came from Claude Code, back as a settings.json `hooks` object
    (events, matcher groups and hook entries as they were imported; a matcher edited since
    is written as it is now)."""
    events: dict[str, list[dict[str, Any]]] = {}
    groups: dict[tuple[str, int], dict[str, Any]] = {}
    for hook in harness.hooks:
        origin = claude_origin(hook)
        if origin is None:
            continue
        event_name, gi, raw = origin["event"], origin.get("group", 0), origin.get("matcher")
        key = (event_name, gi)
        group = groups.get(key)
        if group is None:
            group = {}
            if event_name in CLAUDE_TOOL_EVENTS and hook.matcher != _claude_matcher(raw):
                group["matcher"] = hook.matcher
            elif raw is not None:
                group["matcher"] = raw
            group["hooks"] = []
            groups[key] = group
            events.setdefault(event_name, []).append(group)
        group["hooks"].append(origin["hook"])
    return {"hooks": events}


# ----------------------------------------------------------------------------- into a folder


@dataclass
class Added:
    harness: Harness
    written: list[str]
    removed: list[str]


def _new_harness(name: str) -> Harness:
    sections = [
        PromptSection(id="skills", title="Skills", kind=SectionKind.SKILL_INDEX),
        PromptSection(id="tools", title="Tools", kind=SectionKind.TOOL_BLOCK),
    ]
    return Harness(name=name, prompt=PromptPipeline(sections=sections))


def _folder_state(folder: Path) -> str:
    """'missing', 'empty' or 'harness' (anything else raises HarnessError)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        raise HarnessError(
            [Problem(str(folder), "", f"cannot read: {exc.strerror or exc}")]
        ) from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise HarnessError([Problem(str(folder), "", "is not a real folder")])
    if not [e for e in os.listdir(folder) if not e.startswith(".")]:
        return "empty"
    return "harness"


def _component_paths(harness: Harness, kind: str, name: str) -> set[str]:
    blobs = folder_blobs(harness)
    if kind == "skill":
        return {p for p in blobs if p.startswith(f"skills/{name}/")}
    if kind == "tool":
        return {f"tools/{name}.json"}
    return {p for p in (f"hooks/{name}.yaml", f"hooks/{name}.py") if p in blobs}


def _on_disk(folder: Path, kind: str, name: str) -> list[str]:
    """Files the folder holds now for one component (what a replacement must remove)."""
    if kind == "skill":
        files, _ = (
            scan_folder(folder / "skills" / name)
            if (folder / "skills" / name).is_dir()
            else ({}, [])
        )
        return [f"skills/{name}/{rel}" for rel in files]
    if kind == "tool":
        candidates = [f"tools/{name}.json"]
    else:
        candidates = [f"hooks/{name}.yaml", f"hooks/{name}.yml", f"hooks/{name}.py"]
    return [c for c in candidates if os.path.lexists(folder / c)]


def _check_target(folder: Path, rel: str) -> Problem | None:
    """A problem when writing `rel` would go through a link or over a non-file."""
    current = folder
    parts = rel.split("/")
    for i, part in enumerate(parts):
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None
        last = i == len(parts) - 1
        if stat.S_ISLNK(st.st_mode):
            return Problem(str(current), "", "is a symbolic link; nothing is written through one")
        if not last and not stat.S_ISDIR(st.st_mode):
            return Problem(str(current), "", "is not a folder, and a file goes inside it")
        if last and not stat.S_ISREG(st.st_mode):
            return Problem(str(current), "", "is not a regular file; it will not be replaced")
    return None


def add_to_folder(
    folder: Path,
    *,
    tools: list[Tool] | None = None,
    skills: list[Skill] | None = None,
    hooks: list[Hook] | None = None,
    mcp_servers: dict[str, McpServer] | None = None,
    replace: bool = False,
) -> Added:
    """Add components to the harness folder `folder` (created when missing or empty).

    The whole resulting harness is validated first (the checks of `hat harness validate` and
    the store); on any problem HarnessError is raised and nothing is written. Then only the
    added components' files and harness.yaml (its order lists now naming the new components
    after the others, in the order given) are written, each through a temporary file; for a
    replaced component, its old files that the new one lacks are removed.
    """
    folder = Path(folder)
    tools, skills, hooks = list(tools or []), list(skills or []), list(hooks or [])
    state = _folder_state(folder)
    base = (
        _new_harness(folder.name)
        if state != "harness"
        else import_folder(folder, trust_python_hooks=True)
    )
    problems: list[Problem] = []
    replaced: list[tuple[str, str]] = []
    servers = dict(base.mcp_servers)
    for server_name, server in (mcp_servers or {}).items():
        old_server = servers.get(server_name)
        if old_server is not None and old_server != server and not replace:
            problems.append(
                Problem(
                    "mcp.json",
                    f"mcpServers.{server_name}",
                    f"the harness already has an MCP server named {server_name!r} with another "
                    "command (--replace to replace it)",
                )
            )
        servers[server_name] = server

    def merge(kind: str, old: list[Any], new: list[Any]) -> list[Any]:
        """`old` with same-named items replaced in place (or a problem), then the rest."""
        by_name = {x.name: x for x in new}
        out = []
        for item in old:
            if item.name not in by_name:
                out.append(item)
            elif replace:
                replaced.append((kind, item.name))
                out.append(by_name.pop(item.name))
            else:
                problems.append(
                    Problem(
                        f"{kind}s/{item.name}",
                        "",
                        f"the harness already has a {kind} named {item.name!r} "
                        "(--replace to replace it)",
                    )
                )
                out.append(item)
        return out + list(by_name.values())

    merged_skills = merge("skill", base.skills, skills)
    merged_tools = merge("tool", base.tools, tools)
    merged_hooks = merge("hook", base.hooks, hooks)
    if problems:
        raise HarnessError(problems)
    try:
        harness = Harness(
            name=base.name,
            description=base.description,
            settings=base.settings,
            prompt=base.prompt,
            skills=merged_skills,
            tools=merged_tools,
            hooks=merged_hooks,
            mcp_servers=servers,
        )
    except ValidationError as exc:
        raise HarnessError(problems_from_validation(exc, "harness.yaml")) from None
    problems = cross_check(harness) + round_trip_problems(harness)
    if problems:
        raise HarnessError(problems)
    if state != "harness":
        from core.harness.folder import export_folder

        export_folder(harness, folder)
        return Added(harness, sorted(folder_blobs(harness)), [])
    blobs = folder_blobs(harness)
    wanted: set[str] = {"harness.yaml"}
    if mcp_servers:
        wanted.add("mcp.json")
    for kind, items in (("skill", skills), ("tool", tools), ("hook", hooks)):
        for item in items:
            wanted |= _component_paths(harness, kind, item.name)
    stale = sorted({p for kind, name in replaced for p in _on_disk(folder, kind, name)} - wanted)
    for rel in sorted(wanted) + stale:
        found = _check_target(folder, rel)
        if found is not None:
            problems.append(found)
    for rel in sorted(wanted):
        if (
            not replace
            and rel not in ("harness.yaml", "mcp.json")
            and os.path.lexists(folder / rel)
        ):
            problems.append(
                Problem(str(folder / rel), "", "exists already (--replace to replace it)")
            )
    if problems:
        raise HarnessError(problems)
    from core.harness.folder import executable_paths, update_export_manifest

    executable = executable_paths(harness)
    try:
        for rel in sorted(wanted):
            if "/" in rel:
                _make_dirs(folder, rel.rsplit("/", 1)[0])
            _write_new(folder / rel, blobs[rel])
            if rel in executable:
                os.chmod(folder / rel, 0o755)
        for rel in stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / rel)
        update_export_manifest(folder, {rel: blobs[rel] for rel in wanted}, stale)
    except OSError as exc:
        where = str(exc.filename) if exc.filename else str(folder)
        raise HarnessError([Problem(where, "", f"cannot write: {exc.strerror or exc}")]) from None
    return Added(harness, sorted(wanted), stale)
