"""Dataset rows from traces, and pruning of hook-retry trajectories.

A trace whose request saw a hook block, an unparseable tool call or a loop-side tool error
(unknown tool, invalid arguments, unknown skill) is a *hook-retry* trajectory: the model
failed, was told why, and recovered. The HAT recipe trains mostly on the final correct
behaviour, so `prune` drops every **failed turn**, i.e. an assistant message together with the
feedback the loop appended to it, when

- it was a candidate reply a before_reply hook blocked (the reply + the reminder), or
- its tool calls could not be parsed (the output + the "write the calls again" message), or
- every call in it failed on the loop's side (`unknown_tool`, `invalid_arguments`, `blocked`,
  `unknown_skill`): the output + its error results.

Turns with simulated faults (timeouts, rate limits, ...) are NOT failed turns: retrying or
telling the viewer is the behaviour to learn. A turn mixing good and failed calls is kept
whole (the results must stay paired with their calls). A configurable fraction of hook-retry
rows is kept whole (`keep_whole`), so the student also sees fail -> reminder -> recover.
A recovery row's mistaken turn (recovery.py) is never pruned: `prune` and `whole` keep it,
its assistant message marked `"train": false`.

Message k after the viewer message is matched to its turn through the trace: the loop appends
exactly one assistant message per successful model call, in order, and every step carries the
1-based `turn` of the model call it belongs to.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from core.runtime.trace import (
    ModelCallStep,
    ReplyStep,
    SkillLoadStep,
    Step,
    ToolCallStep,
    Trace,
)
from core.runtime.trajectory import AssistantTurn

LOOP_ERRORS = frozenset({"unknown_tool", "invalid_arguments", "blocked", "unknown_skill"})


def is_hook_retry(trace: Trace) -> bool:
    return bool(failed_turns(trace))


def failed_turns(steps: Trace | Iterable[Step]) -> set[int]:
    """The 1-based turn numbers of failed turns (see the module doc) among a trace's steps,
    or among some of them (the RL scorer asks about the steps of one turn)."""
    failed: set[int] = set()
    calls: dict[int, list[str | None]] = {}
    for step in steps.steps if isinstance(steps, Trace) else steps:
        unparsed = isinstance(step, ModelCallStep) and step.error is None and step.parse_errors
        if unparsed or (isinstance(step, ReplyStep) and not step.accepted):
            failed.add(step.turn)
        elif isinstance(step, ToolCallStep):
            calls.setdefault(step.turn, []).append(step.error_kind)
        elif isinstance(step, SkillLoadStep):
            calls.setdefault(step.turn, []).append(None if step.ok else "unknown_skill")
    for turn, kinds in calls.items():
        if kinds and all(k in LOOP_ERRORS for k in kinds):
            failed.add(turn)
    return failed


@dataclass
class Pruned:
    messages: list[dict[str, Any]]
    turns: list[AssistantTurn]
    removed: int
    """How many failed turns were dropped."""


def prune(trace: Trace, *, untrained: Collection[int] = ()) -> Pruned:
    """The trace's conversation and trajectory without its failed turns. Turns in
    `untrained` (a recovery row's mistaken turn) are never dropped: their assistant message is
    kept with `"train": false` (see `whole`)."""
    keep = set(untrained)
    return _rebuild(trace, failed_turns(trace) - keep, keep)


def whole(trace: Trace, *, untrained: Collection[int] = ()) -> Pruned:
    """The trace's whole conversation and trajectory, the assistant message of each turn in
    `untrained` marked `"train": false` (SFT does not train on it, training/sft.py)."""
    return _rebuild(trace, set(), set(untrained))


def _rebuild(trace: Trace, drop: set[int], untrained: set[int]) -> Pruned:
    messages = trace.messages
    start = trace.request_start + 1
    turns = [s.turn for s in trace.steps_of(ModelCallStep) if s.error is None]
    kept_messages = [dict(m) for m in messages[:start]]
    kept_turns: list[AssistantTurn] = []
    index = -1
    skip = False
    for message in messages[start:]:
        out = dict(message)
        if message.get("role") == "assistant":
            index += 1
            turn = turns[index] if index < len(turns) else None
            skip = turn in drop
            if not skip and index < len(trace.trajectory.turns):
                kept_turns.append(trace.trajectory.turns[index])
            if turn in untrained:
                out["train"] = False
        if not skip:
            kept_messages.append(out)
    removed = len([t for t in turns if t in drop])
    return Pruned(kept_messages, kept_turns, removed)


def keep_whole(job_seed: int, key: str, fraction: float) -> bool:
    """Seeded per-row coin: whether a hook-retry row is kept whole (stable across resumes)."""
    if fraction <= 0:
        return False
    if fraction >= 1:
        return True
    digest = hashlib.sha256(f"keep-whole:{job_seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction
