"""Property tests of the outside-format parsers (core.harness.interop).

1. Tool names: any string is either accepted (and then satisfies both MCP's and OpenAI's
   rules) or refused with a HarnessError naming the rule; nothing else escapes.
2. MCP entries with random schemas, titles and annotations export back unchanged, through
   the harness folder too; OpenAI tools with `strict` likewise.
3. Arbitrary JSON given as a tool list or a Claude Code settings file gives components or a
   HarnessError, never another exception.
4. Random skill files (names, bytes) survive folder -> store form -> folder byte for byte.
"""

from __future__ import annotations

import re
import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.harness import HarnessError
from core.harness.folder import folder_blobs, folder_files, harness_from_files
from core.harness.interop import (
    claude_settings,
    hooks_from_claude_settings,
    mcp_tool,
    openai_tool,
    tools_from_data,
)
from core.harness.models import (
    Harness,
    PromptPipeline,
    PromptSection,
    SectionKind,
    Skill,
    skill_file_problem,
)

OPENAI_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MCP_RULE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")

name_chars = string.ascii_letters + string.digits + "_-./ :é"
any_names = st.one_of(
    st.text(name_chars, max_size=140),
    st.text(string.ascii_letters + "_-", min_size=60, max_size=70),
    st.text(max_size=10),
)
good_names = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=64)
prop_names = st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=12)
leaf_schemas = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer", "minimum": 0},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "string", "enum": ["a", "b"]},
        {"type": "array", "items": {"type": "string"}},
        {"type": ["string", "null"]},
        {"type": "string", "description": "Ünïcode — text"},
    ]
)


@st.composite
def object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    props = draw(st.dictionaries(prop_names, leaf_schemas, max_size=5))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if props and draw(st.booleans()):
        schema["required"] = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
tool_keys = st.sampled_from(
    ["name", "inputSchema", "function", "type", "parameters", "tools", "strict", "title"]
)
tool_like = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(tool_keys, inner, max_size=5)
    ),
    max_leaves=15,
)


@given(any_names)
@settings(max_examples=300, deadline=None)
def test_tool_names_follow_the_stricter_rule(name: str) -> None:
    entry = {"name": name, "inputSchema": {"type": "object"}}
    try:
        (tool,) = tools_from_data(entry, "t.json")
    except HarnessError as exc:
        assert not OPENAI_RULE.match(name)
        (problem,) = exc.problems
        assert problem.field == "name" and "^[a-zA-Z0-9_-]{1,64}$" in problem.message
        assert ("valid MCP tool name" in problem.message) == bool(MCP_RULE.match(name))
    else:
        assert tool.name == name and OPENAI_RULE.match(name) and MCP_RULE.match(name)


@st.composite
def mcp_entries(draw: st.DrawFn) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": draw(good_names)}
    if draw(st.booleans()):
        entry["title"] = draw(st.text(max_size=20))
    description = draw(st.text(max_size=40))
    if description:
        entry["description"] = description
    entry["inputSchema"] = draw(object_schemas())
    if draw(st.booleans()):
        entry["outputSchema"] = draw(object_schemas())
    hints = draw(
        st.dictionaries(
            st.sampled_from(["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]),
            st.booleans(),
            max_size=4,
        )
    )
    if hints:
        entry["annotations"] = hints
    if draw(st.booleans()):
        entry["_meta"] = draw(st.dictionaries(st.text(max_size=5), json_scalars, max_size=2))
    return entry


def _in_folder(harness: Harness) -> Harness:
    """`harness` written to the folder format's store form and read back."""
    files = {p: t.encode("utf-8") for p, t in folder_files(harness).items()}
    return harness_from_files(files, name=harness.name)


def _harness(**parts: Any) -> Harness:
    sections = [
        PromptSection(id="skills", title="Skills", kind=SectionKind.SKILL_INDEX),
        PromptSection(id="tools", title="Tools", kind=SectionKind.TOOL_BLOCK),
    ]
    return Harness(name="h", prompt=PromptPipeline(sections=sections), **parts)


@given(mcp_entries())
@settings(max_examples=150, deadline=None)
def test_mcp_entries_export_back_unchanged(entry: dict[str, Any]) -> None:
    (tool,) = tools_from_data({"tools": [entry]}, "list.json")
    assert mcp_tool(tool) == entry
    (back,) = _in_folder(_harness(tools=[tool])).tools
    assert back == tool and mcp_tool(back) == entry


@given(good_names, st.text(max_size=30), object_schemas(), st.sampled_from([True, False, None]))
@settings(max_examples=150, deadline=None)
def test_openai_tools_export_back_unchanged(
    name: str, description: str, schema: dict[str, Any], strict: bool | None
) -> None:
    function: dict[str, Any] = {"name": name, "description": description, "parameters": schema}
    if strict is not None:
        function["strict"] = strict
    spec = {"type": "function", "function": function}
    (tool,) = tools_from_data([spec], "tools.json")
    assert openai_tool(tool) == spec
    (back,) = _in_folder(_harness(tools=[tool])).tools
    assert openai_tool(back) == spec


@given(st.one_of(json_values, tool_like))
@settings(max_examples=300, deadline=None)
def test_any_json_is_tools_or_a_harness_error(data: Any) -> None:
    try:
        tools_from_data(data, "x.json")
    except HarnessError as exc:
        assert exc.problems and all(p.file == "x.json" for p in exc.problems)


hook_keys = st.sampled_from(
    ["hooks", "matcher", "type", "command", "timeout", "async", "PreToolUse", "Stop"]
)
settings_like = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(hook_keys, inner, max_size=4)
    ),
    max_leaves=15,
)


@given(st.one_of(json_values, settings_like))
@settings(max_examples=300, deadline=None)
def test_any_json_is_hooks_or_a_harness_error(data: Any) -> None:
    try:
        found = hooks_from_claude_settings(data, "settings.json", tool_names=["a", "b"])
    except HarnessError as exc:
        assert exc.problems and all(p.file == "settings.json" for p in exc.problems)
    else:
        assert len({h.name for h in found.hooks}) == len(found.hooks)
        claude_settings(_harness(hooks=found.hooks))  # exports back without raising


path_parts = st.text(string.ascii_letters + string.digits + "-_ ()é", min_size=1, max_size=10)
skill_paths = st.lists(path_parts, min_size=1, max_size=4).map("/".join)


@given(st.dictionaries(skill_paths, st.binary(max_size=64), max_size=6))
@settings(max_examples=150, deadline=None)
def test_skill_files_survive_store_form_and_folder_byte_for_byte(files: dict[str, bytes]) -> None:
    names = sorted(files)
    usable = {
        rel: data
        for rel, data in files.items()
        if skill_file_problem(rel) is None
        and not any(other.startswith(rel + "/") for other in names)
        and rel.casefold() not in {o.casefold() for o in names if o != rel}
    }
    skill = Skill(name="s", description="d", files=usable)
    harness = _harness(skills=[skill])
    assert _in_folder(harness).skills[0].files == usable
    blobs = folder_blobs(harness)
    prefix = "skills/s/"
    on_disk = {
        p[len(prefix) :]: b
        for p, b in blobs.items()
        if p.startswith(prefix) and p != f"{prefix}SKILL.md"
    }
    assert on_disk == usable
