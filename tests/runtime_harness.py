"""A compact live-room harness and real bindings for agent-loop tests.

Three skills (two reply, one strategy), three tools bound to small Python functions (sync and
async), one hook of every kind plus an on_input forbidden-claims hook, and a prompt pipeline with
a skill index and a tool block. `make_loop` wires it to a ScriptedClient.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from core.harness.models import (
    Harness,
    Hook,
    PromptPipeline,
    PromptSection,
    Settings,
    Skill,
    Tool,
)
from core.runtime import AgentLoop, AssistantTurn, Bindings, ScriptedClient, ToolCall, ToolContext

CATALOG: dict[int, dict[str, Any]] = {
    3: {"link": 3, "name": "Linen shirt", "price": 1299, "stock": {"S": 0, "M": 12, "L": 4}},
    7: {"link": 7, "name": "Silk scarf", "price": 199.5, "stock": {"S": 30, "M": 30, "L": 30}},
}

PYTHON_COUPON_HOOK = """
def check(event):
    viewer = event["arguments"].get("viewer")
    if viewer in event["params"]["banned"]:
        return {"decision": "block", "reason": "viewer " + viewer + " is banned"}
    return {"decision": "allow", "reason": ""}
"""


def skills() -> list[Skill]:
    return [
        Skill(
            name="product-qa",
            description="Answer questions about a product on the current link.",
            body="Look the product up by link number, then state price and stock exactly.",
            kind="reply",
        ),
        Skill(
            name="chit-chat",
            description="Small talk with viewers that is not about products.",
            body="Be warm and brief. Never quote prices.",
            kind="reply",
        ),
        Skill(
            name="coupon-push",
            description="Offer a coupon when a viewer hesitates about the price.",
            body="Call send_coupon with an amount up to 20 for the hesitating viewer.",
            kind="strategy",
        ),
    ]


def tools() -> list[Tool]:
    return [
        Tool(
            name="get_product",
            description="Product on a live-room link: name, price (yuan), stock per size.",
            parameters={
                "type": "object",
                "properties": {"link": {"type": "integer", "minimum": 1}},
                "required": ["link"],
                "additionalProperties": False,
            },
            binding="catalog.get_product",
        ),
        Tool(
            name="check_stock",
            description="Units in stock for one size of a product.",
            parameters={
                "type": "object",
                "properties": {
                    "link": {"type": "integer", "minimum": 1},
                    "size": {"type": "string", "enum": ["S", "M", "L"]},
                },
                "required": ["link", "size"],
                "additionalProperties": False,
            },
            binding="catalog.check_stock",
        ),
        Tool(
            name="send_coupon",
            description="Send a coupon (yuan off) to a viewer.",
            parameters={
                "type": "object",
                "properties": {
                    "viewer": {"type": "string"},
                    "amount": {"type": "integer", "minimum": 1, "maximum": 50},
                },
                "required": ["viewer", "amount"],
                "additionalProperties": False,
            },
            binding="coupons.send",
        ),
    ]


def hooks() -> list[Hook]:
    return [
        Hook(
            name="injection_guard",
            event="on_input",
            kind="forbidden_claims",
            params={"patterns": [r"ignore (all )?previous instructions"]},
        ),
        Hook(
            name="coupon_cap",
            event="before_tool",
            kind="validate_tool_args",
            matcher="send_coupon",
            params={"schema": {"properties": {"amount": {"maximum": 20}}}},
            reminder="Coupon rejected: ${reason}. Offer at most 20.",
        ),
        Hook(
            name="banned_viewers",
            event="before_tool",
            kind="python",
            matcher="send_coupon",
            params={"banned": ["spammer"]},
            source=PYTHON_COUPON_HOOK,
            timeout=5.0,
        ),
        Hook(
            name="reply_skill_loaded",
            event="before_reply",
            kind="require_reply_skill",
            reminder="Load a reply skill first: ${reason}",
        ),
        Hook(
            name="no_overclaims",
            event="before_reply",
            kind="forbidden_claims",
            params={"patterns": [r"guaranteed", r"lowest price ever"]},
            reminder="Do not overclaim (${reason}).",
        ),
        Hook(
            name="numbers_match",
            event="before_reply",
            kind="fact_check",
            params={"ignore_below": 2},
            reminder="Check your numbers against the tool results: ${reason}",
        ),
        Hook(
            name="plain_short",
            event="before_reply",
            kind="reply_format",
            params={"max_chars": 160, "forbid_markdown": True, "forbid_patterns": ["as an ai"]},
            reminder="Fix the format: ${reason}",
        ),
    ]


def prompt() -> PromptPipeline:
    return PromptPipeline(
        style="markdown",
        variables={"host": "Mia"},
        sections=[
            PromptSection(id="persona", title="Persona", template="You are ${host}, the host."),
            PromptSection(id="rules", title="Rules", template="Only state facts from tools."),
            PromptSection(
                id="skills",
                title="Skills",
                kind="skill_index",
                template="Load a skill with ${load_skill_tool} before replying.",
            ),
            PromptSection(id="tools", title="Tools", kind="tool_block"),
            PromptSection(id="format", title="Output", template="Plain text, one short reply."),
        ],
    )


def build_harness(protocol: str = "prompt", **settings: Any) -> Harness:
    values: dict[str, Any] = {"max_turns": 6, "retry_budget": 2, "tool_protocol": protocol}
    values.update(settings)
    return Harness(
        name="test-live-room",
        description="Compact live-room harness for runtime tests.",
        settings=Settings(**values),
        prompt=prompt(),
        skills=skills(),
        tools=tools(),
        hooks=hooks(),
    )


def without_hooks(harness: Harness, *keep: str) -> Harness:
    """A copy of `harness` keeping only the named hooks."""
    return harness.model_copy(update={"hooks": [h for h in harness.hooks if h.name in keep]})


def with_hooks(harness: Harness, *extra: Hook) -> Harness:
    return harness.model_copy(update={"hooks": [*harness.hooks, *extra]})


class CallLog:
    """Records each binding call: (tool, args, ctx)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], ToolContext]] = []

    @property
    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]


def build_bindings(log: CallLog | None = None) -> Bindings:
    log = log if log is not None else CallLog()

    def get_product(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        log.calls.append(("get_product", args, ctx))
        item = CATALOG.get(args["link"])
        if item is None:
            return {"found": False}
        return {"link": item["link"], "name": item["name"], "price": item["price"]}

    def check_stock(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        log.calls.append(("check_stock", args, ctx))
        item = CATALOG[args["link"]]
        return {"link": args["link"], "size": args["size"], "units": item["stock"][args["size"]]}

    async def send_coupon(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        log.calls.append(("send_coupon", args, ctx))
        await asyncio.sleep(0)
        return {"sent": True, "viewer": args["viewer"], "amount": args["amount"]}

    bindings = Bindings()
    bindings.register_many(
        {
            "catalog.get_product": get_product,
            "catalog.check_stock": check_stock,
            "coupons.send": send_coupon,
        }
    )
    return bindings


def call(tool: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(name=tool, arguments=arguments)


def turn(content: str = "", *calls: ToolCall) -> AssistantTurn:
    return AssistantTurn(content=content, tool_calls=list(calls))


def load(skill: str) -> AssistantTurn:
    return turn("", call("load_skill", name=skill))


def make_loop(
    turns: Sequence[AssistantTurn],
    *,
    protocol: str = "prompt",
    harness: Harness | None = None,
    bindings: Bindings | None = None,
    log: CallLog | None = None,
    tool_timeout_s: float = 5.0,
) -> tuple[AgentLoop, ScriptedClient]:
    harness = harness if harness is not None else build_harness(protocol)
    native = harness.settings.tool_protocol.value == "native"
    client = ScriptedClient(turns, native=native)
    bindings = bindings if bindings is not None else build_bindings(log)
    return AgentLoop(harness, client, bindings, tool_timeout_s=tool_timeout_s), client
