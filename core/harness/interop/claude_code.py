"""Claude Code hooks (a settings.json `hooks` object): the events that have a counterpart in
the agent loop become Python hooks that run the command as Claude Code would, everything else is
listed as skipped with the reason, and the imported entry is kept in the hook's source so it
can be written back."""

from __future__ import annotations

import ast
import contextlib
import pprint
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.harness.errors import HarnessError, Problem, problems_from_validation
from core.harness.folder.parse import unknown_field
from core.harness.interop.common import read_json_file
from core.harness.models import Harness, Hook, HookEvent, HookKind

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
                    problems.append(
                        Problem(file, f"{gat}.{key}", unknown_field(("matcher", "hooks")))
                    )
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
