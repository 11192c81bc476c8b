"""Rendering the system prompt and tool block, and parsing `<tool_call>` blocks back."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.harness import HarnessError
from core.harness.demo import load_demo_harness
from core.harness.models import (
    Harness,
    PromptPipeline,
    PromptSection,
    PromptStyle,
    SectionKind,
    Settings,
    Skill,
    Tool,
    ToolProtocol,
)
from core.harness.render import render_system_prompt, skill_index, tool_block, tool_specs
from core.harness.tool_calls import format_tool_call, parse_tool_calls


def small_harness(style: PromptStyle = PromptStyle.MARKDOWN) -> Harness:
    return Harness(
        name="t",
        settings=Settings(load_skill_tool="read_skill"),
        prompt=PromptPipeline(
            style=style,
            variables={"host_name": "Mia", "brand": "Luma"},
            sections=[
                PromptSection(id="persona", title="Who you are", template="You are ${host_name}."),
                PromptSection(id="hidden", title="Hidden part", template="SECRET", enabled=False),
                PromptSection(
                    id="skills",
                    title="Skills",
                    kind=SectionKind.SKILL_INDEX,
                    template="Use ${read_skill_hint}${load_skill_tool}.",
                ),
                PromptSection(id="tools", title="Tools", kind=SectionKind.TOOL_BLOCK),
                PromptSection(id="live", title="Live room", template="Brand: ${brand}.\n"),
            ],
        ),
        skills=[
            Skill(name="product-qa", description="Answer product questions.", body="Q&A"),
            Skill(name="old-skill", description="Retired.", enabled=False),
            Skill(name="coupon-push", description="Offer coupons.", kind="strategy"),
        ],
        tools=[
            Tool(name="check_stock", description="Stock per size.", binding="sim.check_stock"),
            Tool(name="old_tool", description="Retired.", binding="x", enabled=False),
            Tool(name="list_coupons", description="Coupons.", binding="sim.list_coupons"),
        ],
    )


def with_variable(harness: Harness) -> Harness:
    variables = {**harness.prompt.variables, "read_skill_hint": "the tool "}
    return harness.model_copy(
        update={"prompt": harness.prompt.model_copy(update={"variables": variables})}
    )


EXPECTED_TITLES = ["Who you are", "Skills", "Tools", "Live room"]


def positions(text: str, needles: list[str]) -> list[int]:
    found = [text.find(n) for n in needles]
    assert all(i >= 0 for i in found), (needles, found)
    return found


@pytest.mark.parametrize("style", list(PromptStyle))
def test_every_style_renders_enabled_sections_in_order(style: PromptStyle) -> None:
    harness = with_variable(small_harness(style))
    prompt = render_system_prompt(harness)
    assert "SECRET" not in prompt
    assert "hidden" not in prompt.lower()
    bodies = ["You are Mia.", "Use the tool read_skill.", "check_stock", "Brand: Luma."]
    assert positions(prompt, bodies) == sorted(positions(prompt, bodies))
    if style is PromptStyle.MARKDOWN:
        heads = [f"## {t}\n" for t in EXPECTED_TITLES]
        assert re.findall(r"^## (.+)$", prompt, re.MULTILINE) == EXPECTED_TITLES
    elif style is PromptStyle.XML:
        heads = ["<who_you_are>", "<skills>", "<tools>", "<live_room>"]
        for tag in ("who_you_are", "skills", "tools", "live_room"):
            assert f"</{tag}>" in prompt
    elif style is PromptStyle.PLAIN:
        heads = [f"{t.upper()}:\n" for t in EXPECTED_TITLES]
    else:
        data = json.loads(prompt)
        assert list(data) == EXPECTED_TITLES
        assert data["Who you are"] == "You are Mia."
        assert data["Live room"] == "Brand: Luma."
        heads = [json.dumps(t) for t in EXPECTED_TITLES]
    assert positions(prompt, heads) == sorted(positions(prompt, heads))


def test_disabling_a_section_removes_it() -> None:
    harness = with_variable(small_harness())
    sections = [s.model_copy(update={"enabled": s.id != "live"}) for s in harness.prompt.sections]
    prompt = harness.prompt.model_copy(update={"sections": sections})
    prompt = render_system_prompt(harness.model_copy(update={"prompt": prompt}))
    assert "Live room" not in prompt and "Brand: Luma." not in prompt


def test_skill_index_lists_active_skills_with_kind() -> None:
    index = skill_index(small_harness())
    assert index.splitlines() == [
        "- product-qa (reply): Answer product questions.",
        "- coupon-push (strategy): Offer coupons.",
    ]


def test_tool_block_lists_every_active_tool_and_the_loader() -> None:
    harness = small_harness()
    block = tool_block(harness)
    lines = [json.loads(line) for line in block.split("\n\n", 1)[0].splitlines()]
    assert [f["name"] for f in lines] == ["read_skill", "check_stock", "list_coupons"]
    assert lines[0]["parameters"]["properties"]["name"]["enum"] == ["product-qa", "coupon-push"]
    assert "<tool_call>" in block and "old_tool" not in block
    assert [s["function"]["name"] for s in tool_specs(harness)] == [
        "read_skill",
        "check_stock",
        "list_coupons",
    ]


def test_no_loader_without_skills() -> None:
    harness = small_harness().model_copy(update={"skills": []})
    assert [s["function"]["name"] for s in tool_specs(harness)] == ["check_stock", "list_coupons"]


def test_native_protocol_leaves_out_an_empty_tool_section() -> None:
    harness = with_variable(small_harness())
    native = harness.model_copy(
        update={
            "settings": harness.settings.model_copy(update={"tool_protocol": ToolProtocol.NATIVE})
        }
    )
    prompt = render_system_prompt(native)
    assert "check_stock" not in prompt and "<tool_call>" not in prompt
    tools = next(s for s in harness.prompt.sections if s.kind is SectionKind.TOOL_BLOCK)
    assert (f"## {tools.title}" in prompt) == bool(tools.template.strip())


def test_demo_prompt_renders_every_tool_and_skill() -> None:
    harness = load_demo_harness()
    prompt = render_system_prompt(harness)
    for tool in harness.tools:
        assert f'"name": "{tool.name}"' in prompt
    for skill in harness.skills:
        assert f"- {skill.name} ({skill.kind.value}): " in prompt
    assert "${" not in prompt
    for value in harness.prompt.variables.values():
        assert value in prompt


def test_undefined_variable_at_render_time_is_a_harness_error() -> None:
    with pytest.raises(HarnessError) as info:
        render_system_prompt(small_harness())  # ${read_skill_hint} is not defined
    problem = info.value.problems[0]
    assert (problem.file, problem.field) == ("prompt/skills.md", "template")
    assert "read_skill_hint" in problem.message


def test_json_style_keeps_sections_with_the_same_title() -> None:
    harness = Harness(
        name="t",
        prompt=PromptPipeline(
            style=PromptStyle.JSON,
            sections=[
                PromptSection(id="a", title="Notes", template="one"),
                PromptSection(id="b", title="Notes", template="two"),
            ],
        ),
    )
    assert json.loads(render_system_prompt(harness)) == {"Notes": "one", "Notes (2)": "two"}


def test_xml_tags_are_valid_names() -> None:
    harness = Harness(
        name="t",
        prompt=PromptPipeline(
            style=PromptStyle.XML,
            sections=[PromptSection(id="a", title="2. Rules!", template="x")],
        ),
    )
    assert render_system_prompt(harness) == "<section_2_rules>\nx\n</section_2_rules>"


# ----------------------------------------------------------------------------- tool-call parsing

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=20), json_values, max_size=4)
names = st.one_of(
    st.from_regex(r"[a-zA-Z0-9_-]{1,64}", fullmatch=True),
    st.text(min_size=1),
    st.sampled_from(["</tool_call>", "<tool_call>", '"}', "\\", "a</tool_call>b"]),
)


@given(names, arguments)
def test_format_then_parse_gives_the_call_back(name: str, args: dict[str, Any]) -> None:
    parsed = parse_tool_calls(format_tool_call(name, args))
    assert parsed.errors == []
    assert parsed.text == ""
    assert len(parsed.calls) == 1
    assert parsed.calls[0].name == name
    assert parsed.calls[0].arguments == args


@given(
    st.lists(st.tuples(names, arguments), min_size=1, max_size=3),
    st.text().filter(lambda t: "<tool_call>" not in t and "</tool_call>" not in t),
)
def test_several_calls_and_surrounding_text(
    calls: list[tuple[str, dict[str, Any]]], text: str
) -> None:
    output = text + "\n" + "\n".join(format_tool_call(n, a) for n, a in calls)
    parsed = parse_tool_calls(output)
    assert parsed.errors == []
    assert [(c.name, c.arguments) for c in parsed.calls] == calls
    assert parsed.text == text.strip()


def test_arguments_given_as_a_json_string() -> None:
    parsed = parse_tool_calls(
        '<tool_call>{"name": "check_stock", "arguments": "{\\"link_no\\": 3}"}</tool_call>'
    )
    assert parsed.errors == [] and parsed.calls[0].arguments == {"link_no": 3}
    empty = parse_tool_calls('<tool_call>{"name": "get_live_room_status"}</tool_call>')
    assert empty.errors == [] and empty.calls[0].arguments == {}


@pytest.mark.parametrize(
    ("output", "error"),
    [
        ("<tool_call>{not json}</tool_call>", "not valid JSON"),
        ("<tool_call>[1, 2]</tool_call>", '"name"'),
        ('<tool_call>{"arguments": {}}</tool_call>', '"name"'),
        ('<tool_call>{"name": 3}</tool_call>', '"name"'),
        ('<tool_call>{"name": "a", "arguments": [1]}</tool_call>', "JSON object"),
        ('<tool_call>{"name": "a", "arguments": null}</tool_call>', "JSON object"),
        ('<tool_call>{"name": "a", "arguments": "{oops"}</tool_call>', "not valid JSON"),
        ('Sure! <tool_call>{"name": "a", "arguments": {}}', "unclosed"),
        ("<tool_call>" + "[" * 100_000 + "</tool_call>", "JSON"),
        ('<tool_call>{"name": "a", "arguments": {"n": ' + "9" * 5000 + "}}</tool_call>", "JSON"),
    ],
    ids=[
        "bad-json",
        "not-object",
        "no-name",
        "name-not-string",
        "args-list",
        "args-null",
        "args-bad-string",
        "unclosed",
        "deep",
        "huge-int",
    ],
)
def test_malformed_blocks_give_errors_not_exceptions(output: str, error: str) -> None:
    parsed = parse_tool_calls(output)
    assert parsed.calls == []
    assert len(parsed.errors) == 1 and error in parsed.errors[0]


def test_good_calls_survive_a_bad_neighbour() -> None:
    output = "Let me check.\n<tool_call>{broken</tool_call>\n" + format_tool_call(
        "check_stock", {"link_no": 3}
    )
    parsed = parse_tool_calls(output)
    assert [c.name for c in parsed.calls] == ["check_stock"]
    assert len(parsed.errors) == 1
    assert parsed.text == "Let me check."


@given(st.text())
def test_parse_never_raises(output: str) -> None:
    parsed = parse_tool_calls(output)
    assert isinstance(parsed.text, str)
    assert "<tool_call>" not in parsed.text


def test_the_tool_block_names_the_audience_the_harness_gives_and_no_other() -> None:
    """No live-room word reaches a harness that has no viewers (#34 A3): the demo says
    "viewer" through its own `audience` variable, any other harness reads "user"."""
    from pathlib import Path

    from core.harness.folder import import_folder

    demo = load_demo_harness()
    assert demo.prompt.variables["audience"] == "viewer"
    assert "Write the final reply to the viewer as plain text" in render_system_prompt(demo)
    desk = import_folder(Path(__file__).parent / "fixtures" / "support_desk")
    prompt = render_system_prompt(desk)
    assert "Write the final reply to the user as plain text" in prompt
    assert "viewer" not in prompt.lower()
    customer = desk.model_copy(
        update={
            "prompt": desk.prompt.model_copy(
                update={"variables": {**desk.prompt.variables, "audience": "customer"}}
            )
        }
    )
    assert "reply to the customer as plain" in render_system_prompt(customer)
