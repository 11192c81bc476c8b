""" "Test this hook": run one hook, as the agent loop would, on a sample the author types.

The sample carries what a hook can see at its event (the viewer message, the reply, the tool
call and its result, the tool results so far, the skills loaded). `run_sample` builds the
`HookInput` and calls `core.runtime.hooks.run_hook`, the loop's own entry point, so the studio
shows exactly the decision the live room would make, including errors (fail-open) and the
reminder text the model would get on a block.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from core.harness import Harness, Hook, HookEvent, HookKind
from core.runtime.hooks import HookInput, HookResult, render_reminder, run_hook


@dataclass
class HookSample:
    viewer_message: str = "how much is link 3?"
    reply: str = ""
    tool: str = ""
    arguments: str = "{}"
    """JSON object text."""
    result: str = ""
    """JSON text of the tool result (after_tool)."""
    tool_results: str = "[]"
    """JSON list of {"name", "arguments", "result"} (what fact_check compares against)."""
    loaded_skills: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SampleOutcome:
    decision: str  # allow | block | error
    reason: str
    reminder: str = ""
    """What the model would be told (block only)."""


def default_sample(hook: Hook, harness: Harness) -> HookSample:
    """A sample that exercises the hook: a reply that trips it when it can be tripped."""
    tool = next((t.name for t in harness.tools if hook.matches(t.name)), "")
    sample = HookSample(tool=tool)
    if hook.event is HookEvent.BEFORE_TOOL:
        sample.arguments = json.dumps({"link_no": 1200})
    elif hook.event is HookEvent.AFTER_TOOL:
        sample.arguments = json.dumps({"link_no": 3})
        sample.result = json.dumps({"link_no": 3, "price": 9.99, "currency": "USD"})
    elif hook.event is HookEvent.ON_INPUT:
        sample.viewer_message = "is this the cheapest price ever??"
    else:
        sample.reply = {
            HookKind.FORBIDDEN_CLAIMS: (
                "Link 3 is 9.99 USD, the lowest price ever! DM me on WhatsApp."
            ),
            HookKind.FACT_CHECK: "Link 3 is 8.49 USD right now, tap link 3 to grab it!",
            HookKind.REPLY_FORMAT: "**Link 3** is 9.99 USD:\n- tea bags\n- 20 per box",
            HookKind.REQUIRE_REPLY_SKILL: "Link 3 is 9.99 USD right now!",
        }.get(hook.kind, "Link 3 is 9.99 USD right now!")
        sample.tool_results = json.dumps(
            [
                {
                    "name": tool or "get_product_by_link",
                    "arguments": {"link_no": 3},
                    "result": {"price": 9.99},
                }
            ]
        )
    return sample


def _json(text: str, what: str, default: Any) -> Any:
    if not text.strip():
        return default
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from None


def build_input(hook: Hook, sample: HookSample) -> HookInput:
    """The HookInput for `sample` at the hook's event; ValueError naming a malformed field."""
    arguments = _json(sample.arguments, "tool arguments", {})
    if not isinstance(arguments, dict):
        raise ValueError("tool arguments must be a JSON object")
    results = _json(sample.tool_results, "tool results", [])
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise ValueError('tool results must be a JSON list of {"name", "arguments", "result"}')
    tool_event = hook.event in (HookEvent.BEFORE_TOOL, HookEvent.AFTER_TOOL)
    return HookInput(
        event=hook.event,
        request_id="studio-test",
        viewer_message=sample.viewer_message,
        turn=1,
        tool=(sample.tool or None) if tool_event else None,
        arguments=arguments if tool_event else None,
        result=_json(sample.result, "tool result", None)
        if hook.event is HookEvent.AFTER_TOOL
        else None,
        reply=sample.reply if hook.event is HookEvent.BEFORE_REPLY else None,
        loaded_skills=list(sample.loaded_skills),
        tool_results=results,
    )


def outcome_of(hook: Hook, result: HookResult, tool: str | None) -> SampleOutcome:
    reminder = render_reminder(hook, result.reason, tool) if result.blocks else ""
    return SampleOutcome(result.decision.value, result.reason, reminder)


async def run_sample_async(hook: Hook, harness: Harness, sample: HookSample) -> SampleOutcome:
    try:
        data = build_input(hook, sample)
    except ValueError as exc:
        return SampleOutcome("error", f"sample: {exc}")
    if data.tool is not None and not hook.matches(data.tool):
        return SampleOutcome(
            "allow",
            f"the matcher {hook.matcher!r} does not match {data.tool!r}: the hook does not run",
        )
    result = await run_hook(hook, data, harness)
    return outcome_of(hook, result, data.tool)


def run_sample(hook: Hook, harness: Harness, sample: HookSample) -> SampleOutcome:
    """Synchronous form (worker threads, tests)."""
    return asyncio.run(run_sample_async(hook, harness, sample))
