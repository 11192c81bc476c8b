"""The gold run of a task-file task: what a perfect agent writes, replayed through the loop.

A task file states the gold tool calls, the skills to load and the answer (the reference, or
the facts); the gold client writes them in two turns — the skill loads and tool calls, then
the reply — and the real agent loop runs them against the harness's real bindings, so the
trace holds real tool results. That trace is the task's gold trajectory for HSA (variants are
built and verified from it, as the oracle's run is for live-room tasks) and the ceiling of the
`tasks` suite (`hat eval run --oracle --suite tasks`).

The gold is only as good as the file: a gold call with arguments its tool rejects shows up as
a tool error in the trace and a grade below full marks, which `hat eval run --oracle` reports.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from core.harness.models import Harness, ToolProtocol
from core.runtime.client import ScriptedClient
from core.runtime.trajectory import AssistantTurn, ToolCall
from core.taskfile.models import OwnTask

if TYPE_CHECKING:
    pass


ERROR_TEXT_RE = re.compile(r"^\s*(error|exception|traceback)\b", re.IGNORECASE)


def returned_error(result: Any) -> str | None:
    """The error a tool *returned* as its answer instead of raising one (an `{"error": ...}`
    object, or text that opens with "Error"), as many published tools do; None otherwise.
    A gold call that meets one has not done its job (tau-bench-style tools answer
    "Error: user not found" rather than raising)."""
    if isinstance(result, dict) and result.get("error") not in (None, "", False):
        return str(result["error"])[:200]
    if isinstance(result, str) and ERROR_TEXT_RE.match(result):
        return result.strip()[:200]
    return None


def gold_reply(task: OwnTask) -> str:
    """The reference answer, or the facts (each one's first phrasing) in one reply."""
    if task.reference and task.reference.strip():
        return task.reference.strip()
    return "; ".join(options[0] for options in task.fact_options) + "."


def gold_turns(task: OwnTask, harness: Harness) -> list[AssistantTurn]:
    """The gold's two turns in the names of `harness` (the harness the file was written for)."""
    loader = harness.settings.load_skill_tool
    calls = [
        ToolCall(name=loader, arguments={"name": s}, id=f"gold-skill-{i}")
        for i, s in enumerate(task.skills)
    ]
    calls += [
        ToolCall(name=c.tool, arguments=dict(c.arguments), id=f"gold-call-{i}")
        for i, c in enumerate(task.gold_calls)
    ]
    turns = [AssistantTurn(tool_calls=calls)] if calls else []
    return [*turns, AssistantTurn(content=gold_reply(task))]


def gold_client(task: OwnTask, harness: Harness) -> ScriptedClient:
    native = harness.settings.tool_protocol is ToolProtocol.NATIVE
    return ScriptedClient(gold_turns(task, harness), native=native)
