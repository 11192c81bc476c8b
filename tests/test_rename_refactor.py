"""Renaming a tool, parameter or skill carries to every place that names it (#35 item 3), what a
rename by hand leaves behind is reported (stale references), and strict tools are checked
against OpenAI's structured-outputs rules (#35 item 7). Real harness folders, no doubles."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.harness import Harness, import_folder
from core.harness.checks import harness_warnings, stale_references, strict_warnings
from core.harness.models import Hook, HookEvent, HookKind, matcher_matches
from core.harness.strict_schema import strict_schema_problems
from core.hsa.refactor import RenameRefused, plan_rename

ROOT = Path(__file__).resolve().parents[1]
DESK = ROOT / "resources" / "examples" / "order_desk" / "harness"


@cache
def desk() -> Harness:
    """The order desk with two hooks that name tools and a parameter, as an operator writes
    them: a guard on order lookups and tracking, and a schema on the order number."""
    harness = import_folder(DESK, trust_python_hooks=True)
    guard = Hook(
        name="order-guard",
        event=HookEvent.BEFORE_TOOL,
        kind=HookKind.VALIDATE_TOOL_ARGS,
        matcher="lookup_order|track_parcel",
        params={"schema": {"properties": {"order_id": {"pattern": "^PT-"}}}},
        reminder="Call lookup_order with the PT- number the customer gave.",
    )
    return harness.model_copy(update={"hooks": [*harness.hooks, guard]})


def _param_of(harness: Harness, tool: str) -> str:
    return next(iter(_tool(harness, tool).parameters["properties"]))


def _tool(harness: Harness, name: str) -> Any:
    return next(t for t in harness.tools if t.name == name)


NAMES = st.from_regex(r"[a-z][a-z0-9]{0,9}_[a-z0-9_]{1,10}", fullmatch=True)
"""Identifier-like names: prose follows those everywhere (a plain word such as `search` is
renamed in prose only inside backticks or quotes, so its rename does not round-trip)."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool=st.sampled_from(["lookup_order", "track_parcel", "get_policy"]), new=NAMES)
def test_a_tool_rename_carries_to_every_place_and_back(tool: str, new: str) -> None:
    harness = desk()
    taken = {t.name for t in harness.tools} | {harness.settings.load_skill_tool}
    if new in taken:
        with pytest.raises(RenameRefused, match=r"already exists|skill loader"):
            plan_rename(harness, "tool", tool, new)
        return
    plan = plan_rename(harness, "tool", tool, new)
    after = plan.after
    names = [t.name for t in after.tools]
    assert new in names and tool not in names
    # the binding is the same code: the renamed tool still runs
    assert _tool(after, new).binding == _tool(harness, tool).binding
    # every hook covers the tools it covered, under their new names
    for a, b in zip(harness.hooks, after.hooks, strict=True):
        assert (a.matcher == "*") == (b.matcher == "*")
        for t in harness.tools if a.matcher != "*" else ():
            renamed = new if t.name == tool else t.name
            assert matcher_matches(a.matcher, t.name) == matcher_matches(b.matcher, renamed)
    # nothing left pointing at the old name, nothing new to warn about
    assert stale_references(after) == []
    assert all(p.before != p.after for p in plan.places)
    assert any(p.part == "tools" and p.field == "name" for p in plan.places)
    # a rename and its inverse give the harness back
    back = plan_rename(after, "tool", new, tool).after
    assert back == harness


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(new=NAMES)
def test_a_parameter_rename_follows_into_hook_schemas_and_keeps_the_binding(new: str) -> None:
    harness = desk()
    having = [t.name for t in harness.tools if "order_id" in t.parameters["properties"]]
    clash = any(new in _tool(harness, n).parameters["properties"] for n in having)
    if clash:
        with pytest.raises(RenameRefused, match="already has a parameter"):
            plan_rename(harness, "parameter", "order_id", new)
        return
    plan = plan_rename(harness, "parameter", "order_id", new)
    for name in having:
        tool = _tool(plan.after, name)
        assert new in tool.parameters["properties"]
        assert "order_id" not in tool.parameters["properties"]
        assert tool.binding_args.get(new) == "order_id"  # the Python function's argument
    guard = next(h for h in plan.after.hooks if h.name == "order-guard")
    assert set(guard.params["schema"]["properties"]) == {new}
    assert stale_references(plan.after) == []


def test_the_places_are_listed_and_prose_can_be_kept_as_written() -> None:
    harness = desk()
    plan = plan_rename(harness, "tool", "lookup_order", "find_order")
    where = {(p.where, p.field) for p in plan.places}
    assert ("tools/lookup_order.json", "name") in where
    assert ("hooks/order-guard.yaml", "matcher") in where
    assert ("hooks/order-guard.yaml", "reminder") in where
    assert ("skills/order-help/SKILL.md", "body") in where
    body = next(p for p in plan.places if p.field == "body")
    assert "`lookup_order`" in body.before and "`find_order`" in body.after
    assert plan.title == "Rename tool lookup_order → find_order"
    kept = plan.apply([body])
    assert (
        next(s for s in kept.skills if s.name == "order-help").body
        == next(s for s in harness.skills if s.name == "order-help").body
    )
    assert "find_order" in {t.name for t in kept.tools}
    matcher = next(p for p in plan.places if p.field == "matcher")
    with pytest.raises(RenameRefused, match="must follow"):
        plan.apply([matcher])


@pytest.mark.parametrize(
    ("kind", "old", "new", "tool", "message"),
    [
        ("tool", "lookup_order", "track_parcel", None, "a tool named 'track_parcel' already"),
        ("tool", "nothing", "x_y", None, "no tool 'nothing'"),
        ("tool", "lookup_order", "bad name", None, "must match"),
        ("skill", "order-help", "book-finder", None, "a skill named 'book-finder' already"),
        ("parameter", "order_id", "x_y", "search_catalog", "has no parameter 'order_id'"),
        ("tool", "lookup_order", "lookup_order", None, "already the name"),
    ],
)
def test_a_rename_that_cannot_be_done_is_refused_with_the_cause(
    kind: Any, old: str, new: str, tool: str | None, message: str
) -> None:
    with pytest.raises(RenameRefused, match=message):
        plan_rename(desk(), kind, old, new, tool=tool)


def test_a_skill_rename_follows_into_text_without_an_hsa_role_stamp() -> None:
    plan = plan_rename(desk(), "skill", "order-help", "orders")
    skill = next(s for s in plan.after.skills if s.name == "orders")
    assert "role" not in skill.metadata


def test_a_rename_by_hand_leaves_stale_references_that_validate_reports() -> None:
    harness = desk()
    tools = [
        t.model_copy(update={"name": "find_order"}) if t.name == "lookup_order" else t
        for t in harness.tools
    ]
    by_hand = harness.model_copy(update={"tools": tools})
    found = [str(p) for p in stale_references(by_hand)]
    assert any("order-guard" in f and "'lookup_order'" in f and "matcher" in f for f in found)
    # the schema names a parameter no tool it matches has once lookup_order lost it
    props = dict(_tool(harness, "lookup_order").parameters)
    params = {**props, "properties": {"order": props["properties"]["order_id"]}}
    params["required"] = ["order"]
    tools2 = [t.model_copy(update={"parameters": params}) if t.name == "lookup_order" else t
              for t in harness.tools]  # fmt: skip
    gone = harness.model_copy(update={"tools": tools2})
    found = [str(p) for p in stale_references(gone)]
    assert any("params.schema" in f and "'order_id'" in f for f in found), found
    assert stale_references(harness) == []


def test_validate_prints_the_stale_reference(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from core.cli.main import app
    from core.harness.folder import export_folder

    harness = desk()
    tools = [
        t.model_copy(update={"name": "find_order"}) if t.name == "lookup_order" else t
        for t in harness.tools
    ]
    folder = tmp_path / "desk"
    export_folder(harness.model_copy(update={"tools": tools}), folder)
    result = CliRunner().invoke(app, ["harness", "validate", str(folder)])
    assert result.exit_code == 0, result.output
    assert "warning" in result.output and "'lookup_order'" in result.output


# ----------------------------------------------------------------------------- strict schemas

OPENAI_EXAMPLE = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City and country"},
        "units": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", None]},
        "days": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"day": {"type": "string"}},
                "required": ["day"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["location", "units", "days"],
    "additionalProperties": False,
}


def test_openais_own_strict_example_passes() -> None:
    assert strict_schema_problems(OPENAI_EXAMPLE) == []


@given(
    props=st.lists(NAMES, min_size=1, max_size=6, unique=True),
    data=st.data(),
    closed=st.booleans(),
)
def test_a_strict_schema_is_refused_exactly_when_a_rule_is_broken(
    props: list[str], data: st.DataObject, closed: bool
) -> None:
    required = data.draw(st.lists(st.sampled_from(props), unique=True))
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p: {"type": "string"} for p in props},
        "required": required,
    }
    if closed:
        schema["additionalProperties"] = False
    problems = strict_schema_problems(schema)
    optional = [p for p in props if p not in required]
    assert bool(problems) == (bool(optional) or not closed)
    for name in optional:
        assert any(repr(name) in line for line in problems)
    if not closed:
        assert any("additionalProperties" in line for line in problems)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"type": "array"}, 'root must be "type": "object"'),
        ({"allOf": [{"type": "object"}]}, "'allOf' is not supported"),
        ({"patternProperties": {"^x": {}}}, "'patternProperties' is not supported"),
    ],
)
def test_strict_rules_name_the_place(change: dict[str, Any], expected: str) -> None:
    assert any(expected in line for line in strict_schema_problems({**OPENAI_EXAMPLE, **change}))
    nested = {**OPENAI_EXAMPLE, "properties": {**OPENAI_EXAMPLE["properties"]}}
    items = {"type": "object", "properties": {"d": {}}}
    nested["properties"]["days"] = {"type": "array", "items": items}
    found = strict_schema_problems(nested)
    assert any(line.startswith("/properties/days/items:") and "additionalProperties" in line
               for line in found)  # fmt: skip


def test_only_strict_tools_are_checked_and_validate_reports_them() -> None:
    harness = desk()
    loose = strict_warnings(harness)
    assert loose == []
    tools = [t.model_copy(update={"strict": True}) if t.name in ("lookup_order", "search_catalog")
             else t for t in harness.tools]  # fmt: skip
    strict = harness.model_copy(update={"tools": tools})
    found = [str(p) for p in harness_warnings(strict)]  # lookup_order's schema is strict-ready
    assert found == [
        "tools/search_catalog.json: parameters: strict: /: every property must be required "
        "('max_results' optional: make it required and allow null instead)"
    ]
