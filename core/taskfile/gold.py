"""The gold run of a task-file task: what a perfect agent writes, replayed through the loop.

A task file states the gold tool calls, the skills to load and the answer (the reference, or
the facts); the gold client writes the skill loads and tool calls, then the reply, and the
real agent loop runs them against the harness's real bindings, so the trace holds real tool
results. The calls go in as few turns as their data allows: a call whose argument the
customer never wrote but an earlier call's result holds (the tracking number `lookup_order`
returns, passed to `track_parcel`) waits for the turn after that result (`call_layers`). A
gold that made both calls in one turn trained a student on rows that write a tracking number
before any tool has returned it (the order desk's until 2026-12-08: docs/results/README.md).

The trace is the task's gold trajectory for HSA (variants are built and verified from it, as
the oracle's run is for live-room tasks) and the ceiling of the `tasks` suite (`hat eval run
--oracle --suite tasks`).

The gold is only as good as the file: a gold call with arguments its tool rejects shows up as
a tool error in the trace and a grade below full marks, which `hat eval run --oracle` reports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
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


def _squashed(value: Any) -> str:
    """A value as letters and digits only, casefolded: `PT-1055` and `pt1055` are one."""
    return re.sub(r"[^0-9a-z]", "", str(value).casefold())


def _values(arguments: Any) -> list[str]:
    """Every scalar in a call's arguments (nested too), squashed; bools and short ones left
    out (a `true` or a `2` matches anything)."""
    if isinstance(arguments, dict):
        return [v for item in arguments.values() for v in _values(item)]
    if isinstance(arguments, list):
        return [v for item in arguments for v in _values(item)]
    if isinstance(arguments, bool) or arguments is None:
        return []
    squashed = _squashed(arguments)
    return [squashed] if len(squashed) >= 3 else []


def call_layers(task: OwnTask, results: Sequence[Any]) -> list[int]:
    """The turn (0, 1, ...) each gold call belongs in, from the results of a run that made
    them all at once (`results[i]`: gold_calls[i]'s answer): a call waits for the turn after
    any earlier call whose result holds one of its argument values the customer did not
    write (the message and the history). A value the customer wrote, or one no result holds
    (a policy topic the agent picks), asks for no wait."""
    said = _squashed(" ".join([task.message, *(str(t.content) for t in task.history)]))
    found = [_squashed(json.dumps(r, default=str)) if r is not None else "" for r in results]
    layers: list[int] = []
    for j, call in enumerate(task.gold_calls):
        unsaid = [v for v in _values(call.arguments) if v not in said]
        earlier = range(min(j, len(found)))
        after = [layers[i] + 1 for i in earlier if any(v in found[i] for v in unsaid)]
        layers.append(max(after, default=0))
    return layers


def gold_turns(
    task: OwnTask, harness: Harness, layers: Sequence[int] | None = None
) -> list[AssistantTurn]:
    """The gold's turns in the names of `harness` (the harness the file was written for): the
    skill loads with the first calls, each later layer of calls (`call_layers`; None: all in
    one turn) a turn of its own, then the reply."""
    loader = harness.settings.load_skill_tool
    first = [
        ToolCall(name=loader, arguments={"name": s}, id=f"gold-skill-{i}")
        for i, s in enumerate(task.skills)
    ]
    by_layer: dict[int, list[ToolCall]] = {0: first}
    for i, c in enumerate(task.gold_calls):
        layer = layers[i] if layers is not None and i < len(layers) else 0
        call = ToolCall(name=c.tool, arguments=dict(c.arguments), id=f"gold-call-{i}")
        by_layer.setdefault(layer, []).append(call)
    turns = [AssistantTurn(tool_calls=by_layer[k]) for k in sorted(by_layer) if by_layer[k]]
    return [*turns, AssistantTurn(content=gold_reply(task))]


def gold_client(
    task: OwnTask, harness: Harness, layers: Sequence[int] | None = None
) -> ScriptedClient:
    native = harness.settings.tool_protocol is ToolProtocol.NATIVE
    return ScriptedClient(gold_turns(task, harness, layers), native=native)
