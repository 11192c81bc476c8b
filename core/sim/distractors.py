"""Distractor tools: plausible but irrelevant tools added to a harness to test tool selection.

Each distractor is an OpenAI-style tool with a binding `sim.distractor.<name>` and a handler
returning harmless, deterministic data, so a model that calls one gets an answer (and loses
tool-rationality marks), never a crash. None of them can answer a viewer's product question:
they are about the stream, the weather, currencies and the like.

    harness2 = with_distractors(harness, 3, random.Random(task.seed))

inserts 3 of them at seeded positions among the harness's tools. LiveRoom's bindings include
every distractor binding, so the loop can always run them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from core.harness.models import Harness, Tool

DistractorHandler = Callable[[dict[str, Any]], dict[str, Any]]

BINDING_PREFIX = "sim.distractor."


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_STR = {"type": "string", "minLength": 1, "maxLength": 64}

# name, description, parameters, handler
_BANK: list[tuple[str, str, dict[str, Any], DistractorHandler]] = [
    (
        "get_weather_forecast",
        "Weather forecast for a city for the next days: temperature range and conditions.",
        _obj({"city": {**_STR, "description": "City name."}}, ["city"]),
        lambda a: {"city": a.get("city"), "forecast": "mild, partly cloudy", "high_c": 24,
                   "low_c": 16},
    ),
    (
        "convert_currency",
        "Convert an amount between two currencies at today's reference rate.",
        _obj(
            {
                "amount": {"type": "number", "description": "Amount to convert."},
                "from_currency": {**_STR, "description": "ISO code, e.g. USD."},
                "to_currency": {**_STR, "description": "ISO code, e.g. EUR."},
            },
            ["amount", "from_currency", "to_currency"],
        ),
        lambda a: {"amount": a.get("amount"), "from": a.get("from_currency"),
                   "to": a.get("to_currency"), "rate": 1.0, "note": "reference rate only"},
    ),
    (
        "translate_text",
        "Translate a short text into another language.",
        _obj(
            {
                "text": {"type": "string", "minLength": 1, "maxLength": 500},
                "target_language": {**_STR, "description": "Language name or code."},
            },
            ["text", "target_language"],
        ),
        lambda a: {"translation": a.get("text"), "target_language": a.get("target_language")},
    ),
    (
        "get_stream_analytics",
        "Audience analytics of the current stream: viewers, likes and shares per minute.",
        _obj({"window_minutes": {"type": "integer", "minimum": 1, "maximum": 120}}, []),
        lambda a: {"viewers": 1840, "likes_per_minute": 312, "shares_per_minute": 14},
    ),
    (
        "schedule_social_post",
        "Schedule a post about the show on the brand's social media accounts.",
        _obj(
            {
                "message": {"type": "string", "minLength": 1, "maxLength": 280},
                "publish_at": {**_STR, "description": "ISO 8601 time."},
            },
            ["message"],
        ),
        lambda a: {"scheduled": True, "post_id": "draft-0001"},
    ),
    (
        "play_background_music",
        "Change the background music track of the stream.",
        _obj({"mood": {"type": "string", "enum": ["upbeat", "chill", "festive", "none"]}},
             ["mood"]),
        lambda a: {"now_playing": f"{a.get('mood', 'chill')} mix"},
    ),
    (
        "get_host_schedule",
        "Upcoming shows of the host team: dates, times and themes.",
        _obj({"days": {"type": "integer", "minimum": 1, "maximum": 14}}, []),
        lambda a: {"shows": [{"theme": "Summer essentials", "starts": "next Friday 7 pm"}]},
    ),
    (
        "set_stream_title",
        "Change the title shown above the live stream.",
        _obj({"title": {"type": "string", "minLength": 1, "maxLength": 80}}, ["title"]),
        lambda a: {"title": a.get("title"), "updated": True},
    ),
    (
        "lookup_public_holidays",
        "Public holidays of a country in a given month.",
        _obj(
            {
                "country": {**_STR},
                "month": {"type": "integer", "minimum": 1, "maximum": 12},
            },
            ["country"],
        ),
        lambda a: {"country": a.get("country"), "holidays": []},
    ),
    (
        "get_trending_hashtags",
        "Hashtags trending on the platform right now.",
        _obj({"limit": {"type": "integer", "minimum": 1, "maximum": 20}}, []),
        lambda a: {"hashtags": ["#weekendhaul", "#ootd", "#skincareroutine"]},
    ),
    (
        "send_gift_animation",
        "Play a thank-you gift animation on screen for a viewer.",
        _obj({"viewer": {**_STR}, "animation": {"type": "string", "enum": ["hearts", "confetti"]}},
             ["viewer"]),
        lambda a: {"played": True, "viewer": a.get("viewer")},
    ),
    (
        "estimate_carbon_footprint",
        "Rough carbon footprint of a parcel by weight and distance.",
        _obj(
            {
                "weight_kg": {"type": "number", "exclusiveMinimum": 0},
                "distance_km": {"type": "number", "exclusiveMinimum": 0},
            },
            ["weight_kg", "distance_km"],
        ),
        lambda a: {"kg_co2e": 0.5, "note": "estimate"},
    ),
]  # fmt: skip

DISTRACTOR_TOOLS: list[Tool] = [
    Tool(name=name, description=description, parameters=params, binding=BINDING_PREFIX + name)
    for name, description, params, _ in _BANK
]
"""The bank, in a fixed order."""

DISTRACTOR_HANDLERS: dict[str, DistractorHandler] = {
    BINDING_PREFIX + name: handler for name, _, _, handler in _BANK
}
"""Binding -> handler(args) for every distractor."""


def with_distractors(harness: Harness, n: int, rng: random.Random) -> Harness:
    """A copy of `harness` with `n` distractor tools inserted at seeded positions.

    Distractors whose name or binding the harness already has are skipped. Raises ValueError
    when fewer than `n` are available. `n == 0` returns an unchanged copy.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    names = {t.name.casefold() for t in harness.tools} | {harness.settings.load_skill_tool}
    bindings = {t.binding for t in harness.tools}
    pool = [
        t for t in DISTRACTOR_TOOLS if t.name.casefold() not in names and t.binding not in bindings
    ]
    if n > len(pool):
        raise ValueError(f"only {len(pool)} distractor tools available, {n} requested")
    chosen = rng.sample(pool, n)
    copy = harness.model_copy(deep=True)
    tools = list(copy.tools)
    for tool in chosen:
        tools.insert(rng.randint(0, len(tools)), tool.model_copy(deep=True))
    return copy.model_copy(update={"tools": tools})


HSA_BINDING_PREFIX = "hsa.distractor."
"""Bindings of the distractor tools HSA adds to harnesses outside the live room
(core/hsa/distractors.py registers their implementation)."""


def is_distractor(binding: str) -> bool:
    """Whether a tool bound to `binding` is a distractor (the live room's or HSA's): no task
    needs it, so graders count a call of one as irrelevant."""
    return binding.startswith((BINDING_PREFIX, HSA_BINDING_PREFIX))
