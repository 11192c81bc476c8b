"""What in a harness runs only once trusted, and what it would run: Python hooks (their
source, run in a child process) and tools bound to a module's function, an MCP server's
command or an HTTP endpoint. A harness imported from elsewhere keeps these switched off until
the operator trusts them (`hat harness import --trust`, or the studio's Trust panel).

Trust is recorded in the store by what runs — a hook's source, a tool's binding with its MCP
server's command line — so every version holding that same code loads it trusted, and code
that changed since (a new source, another server command) asks again.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from core.harness.errors import Problem
from core.harness.models import Harness, HookKind, binding_needs_trust


@dataclass(frozen=True)
class TrustItem:
    """One hook or tool that runs only once trusted."""

    kind: Literal["hook", "tool"]
    name: str
    runs: str
    """What trusting it lets run, in the operator's words (the code, the command, the URL)."""
    trusted: bool
    task_critical: bool
    """A hook the task needs (HSA never switches it off); every tool counts as critical:
    an untrusted tool fails every call to it."""
    detail: str = ""
    """The full text to read before trusting: a hook's source, a server's command line."""

    @property
    def file(self) -> str:
        return f"hooks/{self.name}.py" if self.kind == "hook" else f"tools/{self.name}.json"


def trust_items(harness: Harness) -> list[TrustItem]:
    """Every hook and tool of `harness` that runs only once trusted, hooks first."""
    items: list[TrustItem] = []
    for hook in harness.hooks:
        if hook.kind is HookKind.PYTHON and hook.source is not None:
            lines = len(hook.source.splitlines())
            items.append(
                TrustItem(
                    "hook",
                    hook.name,
                    f"Python code ({lines} line{'s' if lines != 1 else ''}) in a child "
                    f"process, on {hook.event.value}",
                    hook.trusted,
                    hook.task_critical and hook.enabled,
                    hook.source,
                )
            )
    for tool in harness.tools:
        if not binding_needs_trust(tool.binding):
            continue
        runs, detail = _tool_runs(tool.binding, harness)
        items.append(TrustItem("tool", tool.name, runs, tool.trusted, tool.enabled, detail))
    return items


def _tool_runs(binding: str, harness: Harness) -> tuple[str, str]:
    if binding.startswith("python:"):
        module, _, function = binding[len("python:") :].partition(":")
        return f"the Python function {function} of module {module}", binding
    if binding.startswith("mcp:"):
        server_name = binding[len("mcp:") :].split("/", 1)[0]
        server = harness.mcp_servers.get(server_name)
        if server is None:
            return f"MCP server {server_name!r} (not declared in mcp.json)", binding
        command = shlex.join([server.command, *server.args])
        return f"the MCP server {server_name!r}: {command}", command
    return f"HTTP requests with the model's arguments to {binding}", binding


def trust_warnings(harness: Harness) -> list[Problem]:
    """What an untrusted item means for a run, one warning each: a task-critical hook whose
    check is skipped, a tool whose every call fails. A harness that has any is not ready to
    serve as its author meant, so the Problems panel and `hat harness validate` say so."""
    out: list[Problem] = []
    for item in trust_items(harness):
        if item.trusted or not item.task_critical:
            continue
        if item.kind == "hook":
            message = (
                "not trusted: its Python code does not run, so this task-critical check is "
                "skipped in every run (trust it on the Overview's Trust panel, or import with "
                "--trust)"
            )
        else:
            message = (
                f"not trusted: every call to it fails, as {item.runs} does not run (trust it "
                "on the Overview's Trust panel, or import with --trust)"
            )
        out.append(Problem(item.file, "", message))
    return out
