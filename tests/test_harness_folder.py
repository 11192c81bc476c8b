"""The harness folder format: the demo harness, byte-identical round trips, and bad input.

Every bad-input case must raise HarnessError (never another exception) whose problems name the
file and the field at fault.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from core.harness import HarnessError, Problem, export_folder, folder_files, import_folder
from core.harness.demo import demo_harness_path, load_demo_harness
from core.harness.folder import harness_from_files, read_files
from core.harness.models import (
    Harness,
    Hook,
    HookKind,
    PromptSection,
    SectionKind,
    Skill,
    SkillKind,
    ToolProtocol,
)

DEMO = demo_harness_path()


# ----------------------------------------------------------------------------- helpers


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    target = tmp_path / "live-host"
    shutil.copytree(DEMO, target)
    return target


def problems_of(path: Path, **kwargs: bool) -> list[Problem]:
    with pytest.raises(HarnessError) as info:
        import_folder(path, **kwargs)
    problems = info.value.problems
    assert problems, "a HarnessError must carry at least one problem"
    for problem in problems:
        assert problem.file, problem
        assert problem.message, problem
    return problems


def find(problems: list[Problem], file: str, field: str = "", text: str = "") -> Problem:
    """The problem on `file` whose field starts with `field` and message contains `text`."""
    for problem in problems:
        if problem.file == file and problem.field.startswith(field) and text in problem.message:
            return problem
    raise AssertionError(
        f"no problem on {file!r} field {field!r} with {text!r} in:\n"
        + "\n".join(str(p) for p in problems)
    )


def edit(path: Path, change: Callable[[str], str]) -> None:
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def edit_json(path: Path, change: Callable[[dict[str, object]], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


# ----------------------------------------------------------------------------- the demo harness


def test_demo_harness_validates_and_meets_the_minimums() -> None:
    harness = import_folder(DEMO)
    assert harness == load_demo_harness()
    kinds = {s.name: s.kind for s in harness.skills}
    for name in ("product-qa", "chit-chat", "after-sales"):
        assert kinds[name] is SkillKind.REPLY
    for name in ("coupon-push", "size-advice", "product-compare"):
        assert kinds[name] is SkillKind.STRATEGY
    assert len(harness.skills) >= 6
    for skill in harness.skills:
        lines = skill.body.strip().splitlines()
        assert 10 <= len(lines) <= 40, (skill.name, len(lines))
    assert len(harness.tools) >= 8
    for tool in harness.tools:
        assert tool.binding == f"sim.{tool.name}"
        assert tool.description
        for prop, schema in tool.parameters["properties"].items():
            assert "type" in schema and "description" in schema, (tool.name, prop)
    link = harness.tool("get_product_by_link")
    assert link is not None
    assert link.parameters["properties"]["link_no"]["maximum"] == 999
    assert len(harness.hooks) >= 4
    assert {h.kind for h in harness.hooks} >= {
        HookKind.REQUIRE_REPLY_SKILL,
        HookKind.VALIDATE_TOOL_ARGS,
        HookKind.FORBIDDEN_CLAIMS,
        HookKind.FACT_CHECK,
        HookKind.REPLY_FORMAT,
    }
    assert any(not h.task_critical for h in harness.hooks)
    assert all("${reason}" in h.reminder for h in harness.hooks)
    assert len(harness.prompt.sections) >= 5
    section_kinds = [s.kind for s in harness.prompt.sections]
    assert SectionKind.SKILL_INDEX in section_kinds and SectionKind.TOOL_BLOCK in section_kinds
    assert set(harness.prompt.variables) >= {"host_name", "room_name", "brand", "currency"}
    assert harness.settings.tool_protocol is ToolProtocol.PROMPT


def test_demo_folder_is_canonical(tmp_path: Path) -> None:
    harness = import_folder(DEMO)
    on_disk = read_files(DEMO)
    assert {rel: text.encode() for rel, text in folder_files(harness).items()} == on_disk
    export_folder(harness, tmp_path / "out")
    assert read_files(tmp_path / "out") == on_disk


def test_export_import_export_is_byte_identical(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    export_folder(load_demo_harness(), first)
    again = import_folder(first)
    assert again == load_demo_harness()  # the name comes from harness.yaml, not the folder
    export_folder(again, second)
    assert read_files(first) == read_files(second)


def test_export_removes_stale_component_files(demo_copy: Path, tmp_path: Path) -> None:
    harness = import_folder(demo_copy)
    out = tmp_path / "exported"
    export_folder(harness, out)
    slim = harness.model_copy(update={"tools": harness.tools[:-1]})
    export_folder(slim, out)
    assert not (out / "tools" / f"{harness.tools[-1].name}.json").exists()
    assert import_folder(out) == slim
    # a folder no export of ours wrote (no manifest): its stale file is not deleted
    with pytest.raises(HarnessError) as info:
        export_folder(slim, demo_copy)
    assert "did not write it" in str(info.value)
    assert (demo_copy / "tools" / f"{harness.tools[-1].name}.json").exists()


def test_in_memory_files_round_trip() -> None:
    harness = load_demo_harness()
    files = {rel: text.encode() for rel, text in folder_files(harness).items()}
    assert harness_from_files(files, name="other") == harness


# ----------------------------------------------------------------------------- malformed files


def test_malformed_harness_yaml(demo_copy: Path) -> None:
    edit(demo_copy / "harness.yaml", lambda t: t.replace("settings:\n", "settings: [\n", 1))
    problem = find(problems_of(demo_copy), "harness.yaml", "line ", "malformed YAML")
    assert "column" in problem.field


def test_harness_yaml_must_be_a_mapping(demo_copy: Path) -> None:
    (demo_copy / "harness.yaml").write_text("- just\n- a list\n")
    find(problems_of(demo_copy), "harness.yaml", "", "mapping")


def test_duplicate_yaml_keys_are_reported(demo_copy: Path) -> None:
    edit(demo_copy / "harness.yaml", lambda t: t + "name: again\n")
    find(problems_of(demo_copy), "harness.yaml", "line ", "duplicate key 'name'")


def test_malformed_hook_yaml(demo_copy: Path) -> None:
    (demo_copy / "hooks" / "reply-length.yaml").write_text("event: before_reply\nkind: {\n")
    find(problems_of(demo_copy), "hooks/reply-length.yaml", "line ", "malformed YAML")


def test_malformed_skill_front_matter(demo_copy: Path) -> None:
    skill = demo_copy / "skills" / "chit-chat" / "SKILL.md"
    replace_in(skill, "name: chit-chat\n", "name: chit: chat\n")
    problem = find(problems_of(demo_copy), "skills/chit-chat/SKILL.md", "front matter, line 2")
    assert "malformed YAML" in problem.message


@pytest.mark.parametrize(
    "text",
    [
        "# Chit-chat\n\nNo front matter at all.\n",
        "---\nname: chit-chat\ndescription: never closed\n",
        "\n---\nname: chit-chat\n---\nbody\n",
        "",
    ],
    ids=["none", "unclosed", "not-first-line", "empty"],
)
def test_missing_front_matter(demo_copy: Path, text: str) -> None:
    (demo_copy / "skills" / "chit-chat" / "SKILL.md").write_text(text)
    find(problems_of(demo_copy), "skills/chit-chat/SKILL.md", "front matter", "missing")


def test_front_matter_fields_required(demo_copy: Path) -> None:
    (demo_copy / "skills" / "chit-chat" / "SKILL.md").write_text("---\nname: chit-chat\n---\nb\n")
    find(problems_of(demo_copy), "skills/chit-chat/SKILL.md", "description", "required")


def test_crlf_skill_file_is_read(demo_copy: Path) -> None:
    skill = demo_copy / "skills" / "chit-chat" / "SKILL.md"
    skill.write_bytes(skill.read_bytes().replace(b"\n", b"\r\n"))
    harness = import_folder(demo_copy)
    chit_chat = harness.skill("chit-chat")
    assert chit_chat is not None and chit_chat.kind is SkillKind.REPLY
    assert chit_chat.body.startswith("# Chit-chat\r\n")


def test_malformed_tool_json(demo_copy: Path) -> None:
    edit(demo_copy / "tools" / "check_stock.json", lambda t: t.replace('"type"', "type", 1))
    problem = find(problems_of(demo_copy), "tools/check_stock.json", "line 2", "malformed JSON")
    assert "column" in problem.field


@pytest.mark.parametrize(
    ("payload", "field", "text"),
    [
        ('{"type": "function", "function": {"name": "check_stock", "a": 1, "a": 2}}', "a", "dup"),
        ('{"type": "function", "function": {"name": "check_stock", "x": NaN}}', "", "NaN"),
        ('["check_stock"]', "", "JSON object"),
        ('{"type": "function", "function": "check_stock"}', "function", "object"),
        ('{"type": "function", "function": {"name": "check_\\ud800"}}', "function.name", "surr"),
        ("[" * 100_000, "", "malformed JSON"),
    ],
    ids=["duplicate-key", "nan", "not-object", "function-not-object", "surrogate", "deep"],
)
def test_bad_tool_json_values(demo_copy: Path, payload: str, field: str, text: str) -> None:
    (demo_copy / "tools" / "check_stock.json").write_text(payload)
    find(problems_of(demo_copy), "tools/check_stock.json", field, text)


def test_invalid_json_schema_type(demo_copy: Path) -> None:
    edit_json(
        demo_copy / "tools" / "check_stock.json",
        lambda d: d["function"]["parameters"].update(type="objekt"),  # type: ignore[index]
    )
    problem = find(problems_of(demo_copy), "tools/check_stock.json", "function.parameters")
    assert "objekt" in problem.message or "JSON Schema" in problem.message


def test_invalid_json_schema_in_a_property(demo_copy: Path) -> None:
    def change(data: dict[str, object]) -> None:
        props = data["function"]["parameters"]["properties"]  # type: ignore[index]
        props["size"]["minLength"] = "one"  # type: ignore[index]

    edit_json(demo_copy / "tools" / "check_stock.json", change)
    problem = find(problems_of(demo_copy), "tools/check_stock.json", "function.parameters")
    assert "properties/size/minLength" in problem.message


def test_required_parameter_must_exist(demo_copy: Path) -> None:
    edit_json(
        demo_copy / "tools" / "check_stock.json",
        lambda d: d["function"]["parameters"]["required"].append("sku"),  # type: ignore[index]
    )
    find(problems_of(demo_copy), "tools/check_stock.json", "function.parameters", "'sku'")


def test_parameters_must_be_an_object_schema(demo_copy: Path) -> None:
    edit_json(
        demo_copy / "tools" / "check_stock.json",
        lambda d: d["function"].update(parameters={"type": "string"}),  # type: ignore[attr-defined]
    )
    find(problems_of(demo_copy), "tools/check_stock.json", "function.parameters", '"object"')


def test_duplicate_tool_names(demo_copy: Path) -> None:
    shutil.copy(demo_copy / "tools" / "check_stock.json", demo_copy / "tools" / "stock_copy.json")
    problems = problems_of(demo_copy)
    find(problems, "tools/stock_copy.json", "function.name", "file is named stock_copy.json")
    find(problems, "tools/stock_copy.json", "function.name", "duplicate tool name 'check_stock'")


def test_tool_names_differing_only_in_case(demo_copy: Path) -> None:
    shutil.copy(demo_copy / "tools" / "check_stock.json", demo_copy / "tools" / "Check_Stock.json")
    replace_in(demo_copy / "tools" / "Check_Stock.json", '"check_stock"', '"Check_Stock"')
    find(problems_of(demo_copy), "harness.yaml", "tools", "differ only in case")


def test_tool_named_like_the_skill_loader(demo_copy: Path) -> None:
    (demo_copy / "tools" / "check_stock.json").rename(demo_copy / "tools" / "load_skill.json")
    replace_in(demo_copy / "tools" / "load_skill.json", '"check_stock"', '"load_skill"')
    find(problems_of(demo_copy), "tools/load_skill.json", "function.name", "skill loader")


def test_skill_folder_name_differs_from_front_matter(demo_copy: Path) -> None:
    (demo_copy / "skills" / "chit-chat").rename(demo_copy / "skills" / "small-talk")
    problems = problems_of(demo_copy)
    problem = find(problems, "skills/small-talk/SKILL.md", "name", "'chit-chat'")
    assert "small-talk" in problem.message
    assert len(problems) == 1, problems


def test_duplicate_skill_names(demo_copy: Path) -> None:
    shutil.copytree(demo_copy / "skills" / "chit-chat", demo_copy / "skills" / "chit-chat-2")
    problems = problems_of(demo_copy)
    find(problems, "skills/chit-chat-2/SKILL.md", "name", "folder is named 'chit-chat-2'")
    find(problems, "skills/chit-chat-2/SKILL.md", "name", "duplicate skill name 'chit-chat'")


def test_skill_folder_without_skill_md(demo_copy: Path) -> None:
    (demo_copy / "skills" / "empty").mkdir()
    (demo_copy / "skills" / "empty" / "README.md").write_text("notes")
    problems = problems_of(demo_copy)
    find(problems, "skills/empty", "", "no SKILL.md")


def test_invalid_skill_name_and_kind(demo_copy: Path) -> None:
    skill = demo_copy / "skills" / "chit-chat" / "SKILL.md"
    replace_in(skill, "kind: reply", "kind: answer")
    find(problems_of(demo_copy), "skills/chit-chat/SKILL.md", "metadata.kind", "reply")


def test_reserved_and_nested_skill_metadata(demo_copy: Path) -> None:
    skill = demo_copy / "skills" / "chit-chat" / "SKILL.md"
    replace_in(skill, "  kind: reply\n", "  kind: reply\n  enabled: maybe\n  tags: [a, b]\n")
    problems = problems_of(demo_copy)
    find(problems, "skills/chit-chat/SKILL.md", "metadata.enabled", "true or false")
    find(problems, "skills/chit-chat/SKILL.md", "metadata.tags", "string")


# ----------------------------------------------------------------------------- unknown fields


def test_unknown_fields_everywhere_are_all_reported(demo_copy: Path) -> None:
    replace_in(demo_copy / "harness.yaml", "settings:\n", "colour: red\nsettings:\n  max_turn: 3\n")
    replace_in(demo_copy / "harness.yaml", "  style: markdown\n", "  style: markdown\n  theme: x\n")
    replace_in(demo_copy / "harness.yaml", "    title: Who you are\n", "    title: Who\n    x: 1\n")
    replace_in(demo_copy / "harness.yaml", "order:\n", "order:\n  prompts: []\n")
    edit(demo_copy / "hooks" / "reply-length.yaml", lambda t: t + "severity: high\n")
    edit_json(
        demo_copy / "tools" / "check_stock.json",
        lambda d: d["x-hat"].update(owner="ops"),  # type: ignore[attr-defined]
    )
    edit_json(
        demo_copy / "tools" / "get_size_chart.json",
        lambda d: d["function"].update(strictness=True),  # type: ignore[attr-defined]
    )
    edit_json(demo_copy / "tools" / "list_coupons.json", lambda d: d.update(kind="tool"))
    replace_in(
        demo_copy / "skills" / "chit-chat" / "SKILL.md", "metadata:", "author: me\nmetadata:"
    )
    problems = problems_of(demo_copy)
    find(problems, "harness.yaml", "colour", "unknown field")
    find(problems, "harness.yaml", "settings.max_turn", "unknown field")
    find(problems, "harness.yaml", "prompt.theme", "unknown field")
    find(problems, "harness.yaml", "prompt.sections.0.x", "unknown field")
    find(problems, "harness.yaml", "order.prompts", "unknown field")
    find(problems, "hooks/reply-length.yaml", "severity", "unknown field")
    find(problems, "tools/check_stock.json", "x-hat.owner", "unknown field")
    find(problems, "tools/get_size_chart.json", "function.strictness", "unknown field")
    find(problems, "tools/list_coupons.json", "kind", "unknown field")
    find(problems, "skills/chit-chat/SKILL.md", "author", "unknown field")
    assert len(problems) == 10, "\n".join(map(str, problems))


def test_hook_yaml_may_not_rename_the_hook(demo_copy: Path) -> None:
    edit(demo_copy / "hooks" / "reply-length.yaml", lambda t: "name: other\n" + t)
    find(problems_of(demo_copy), "hooks/reply-length.yaml", "name", "named by its file")


def test_unexpected_files_are_reported(demo_copy: Path) -> None:
    # a skill's own files (references/, scripts/, …) are part of the skill since issue 20
    (demo_copy / "tools" / "notes.txt").write_text("x")
    (demo_copy / "hooks" / "old.yaml.bak").write_text("x")
    (demo_copy / "prompt" / "unused.md").write_text("x")
    (demo_copy / "NOTES.md").write_text("top-level files are fine")
    problems = problems_of(demo_copy)
    find(problems, "tools/notes.txt", "", "unexpected file")
    find(problems, "hooks/old.yaml.bak", "", "unexpected file")
    find(problems, "prompt/unused.md", "", "no prompt section uses")
    assert len(problems) == 3


# ----------------------------------------------------------------------------- prompt pipeline


def test_missing_prompt_template(demo_copy: Path) -> None:
    (demo_copy / "prompt" / "style.md").unlink()
    problem = find(problems_of(demo_copy), "prompt/style.md", "", "missing")
    assert "prompt.sections.2" in problem.message


def test_generated_sections_need_no_template(demo_copy: Path) -> None:
    (demo_copy / "prompt" / "skills.md").unlink()
    harness = import_folder(demo_copy)
    section = next(s for s in harness.prompt.sections if s.id == "skills")
    assert section.template == ""
    assert "prompt/skills.md" not in folder_files(harness)


def test_undefined_template_variable(demo_copy: Path) -> None:
    edit(demo_copy / "prompt" / "persona.md", lambda t: t + "Visit ${shop_url} now.\n")
    find(problems_of(demo_copy), "prompt/persona.md", "template", "${shop_url}")


def test_invalid_template_placeholder(demo_copy: Path) -> None:
    edit(demo_copy / "prompt" / "persona.md", lambda t: t + "Save $5 today.\n")
    problem = find(problems_of(demo_copy), "prompt/persona.md", "template", "$$")
    assert "line 4" in problem.message


def test_section_id_and_template_keys(demo_copy: Path) -> None:
    replace_in(demo_copy / "harness.yaml", "  - id: persona\n", "  - template: hi\n")
    replace_in(demo_copy / "harness.yaml", "  - id: rules\n", "  - id: 12\n")
    problems = problems_of(demo_copy)
    find(problems, "harness.yaml", "prompt.sections.0.template", "prompt/<id>.md")
    find(problems, "harness.yaml", "prompt.sections.1.id", "required")


def test_duplicate_section_ids(demo_copy: Path) -> None:
    replace_in(demo_copy / "harness.yaml", "  - id: rules\n", "  - id: persona\n")
    find(problems_of(demo_copy), "harness.yaml", "prompt.sections", "duplicate section id")


def test_tool_block_section_required_for_prompt_protocol(demo_copy: Path) -> None:
    replace_in(demo_copy / "harness.yaml", "    kind: tool_block\n", "    enabled: false\n")
    (demo_copy / "prompt" / "tools.md").write_text("")
    find(problems_of(demo_copy), "harness.yaml", "prompt.sections", "tool_block")


def test_bad_settings_values(demo_copy: Path) -> None:
    replace_in(demo_copy / "harness.yaml", "max_turns: 8", "max_turns: 0")
    replace_in(demo_copy / "harness.yaml", "tool_protocol: prompt", "tool_protocol: magic")
    problems = problems_of(demo_copy)
    find(problems, "harness.yaml", "settings.max_turns", "greater than or equal to 1")
    find(problems, "harness.yaml", "settings.tool_protocol", "native")


def test_order_names_a_missing_component(demo_copy: Path) -> None:
    replace_in(demo_copy / "harness.yaml", "  - check_stock\n", "  - check_stock\n  - ghost\n")
    find(problems_of(demo_copy), "harness.yaml", "order.tools", "'ghost' has no file")


# ----------------------------------------------------------------------------- hooks


def test_unknown_hook_param(demo_copy: Path) -> None:
    replace_in(demo_copy / "hooks" / "reply-length.yaml", "max_chars:", "max_char:")
    problem = find(problems_of(demo_copy), "hooks/reply-length.yaml", "params.max_char", "unknown")
    assert "max_chars" in problem.message  # lists the allowed parameters


def test_bad_hook_regex(demo_copy: Path) -> None:
    replace_in(
        demo_copy / "hooks" / "no-false-promises.yaml", "  - \\blifetime", "  - (\\blifetime"
    )
    problem = find(problems_of(demo_copy), "hooks/no-false-promises.yaml", "params.patterns")
    assert "not a valid regex" in problem.message


def test_bad_fact_check_pattern_and_reply_range(demo_copy: Path) -> None:
    edit(
        demo_copy / "hooks" / "price-fact-check.yaml",
        lambda t: t.replace("params:", "params:\n  number_pattern: '[0-9'"),
    )
    replace_in(demo_copy / "hooks" / "reply-length.yaml", "params:", "params:\n  min_chars: 500")
    problems = problems_of(demo_copy)
    find(problems, "hooks/price-fact-check.yaml", "params.number_pattern", "not a valid regex")
    find(problems, "hooks/reply-length.yaml", "params", "exceeds max_chars")


def test_hook_kind_on_the_wrong_event(demo_copy: Path) -> None:
    replace_in(demo_copy / "hooks" / "reply-length.yaml", "event: before_reply", "event: on_input")
    problem = find(problems_of(demo_copy), "hooks/reply-length.yaml", "event", "before_reply")
    assert "on_input" in problem.message


def test_hook_matcher_that_matches_no_tool(demo_copy: Path) -> None:
    edit(
        demo_copy / "hooks" / "link-number-range.yaml",
        lambda t: "\n".join(
            "matcher: get_product" if line.startswith("matcher:") else line
            for line in t.splitlines()
        ),
    )
    find(problems_of(demo_copy), "hooks/link-number-range.yaml", "matcher", "matches no tool")


def test_bad_hook_matcher_regex(demo_copy: Path) -> None:
    replace_in(demo_copy / "hooks" / "link-number-range.yaml", "matcher: ", "matcher: (")
    find(problems_of(demo_copy), "hooks/link-number-range.yaml", "matcher", "not a valid regex")


PY_HOOK = """\
EVENT = "before_reply"
REMINDER = "Say thanks (${reason})."
TIMEOUT = 2.0


def check(event):
    reply = event.get("reply") or ""
    return {"decision": "allow" if "thank" in reply.lower() else "block", "reason": "no thanks"}
"""


def test_python_hook_from_a_py_file(demo_copy: Path, tmp_path: Path) -> None:
    (demo_copy / "hooks" / "say-thanks.py").write_text(PY_HOOK)
    harness = import_folder(demo_copy)
    hook = next(h for h in harness.hooks if h.name == "say-thanks")
    assert hook.kind is HookKind.PYTHON and hook.timeout == 2.0 and not hook.trusted
    assert import_folder(demo_copy, trust_python_hooks=True).hooks[-1].trusted
    export_folder(harness, tmp_path / "out")
    assert (tmp_path / "out" / "hooks" / "say-thanks.py").read_text() == PY_HOOK
    assert "kind: python" in (tmp_path / "out" / "hooks" / "say-thanks.yaml").read_text()
    assert import_folder(tmp_path / "out").model_copy(update={"name": harness.name}) == harness


@pytest.mark.parametrize(
    ("source", "field", "text"),
    [
        ("def check(event)\n    return None\n", "line 1", "syntax error"),
        ("EVENT = 'before_reply'\n", "check", "must define"),
        ("def check():\n    pass\n", "check", "one argument"),
        ("EVENT = some_call()\ndef check(e):\n    pass\n", "EVENT", "literal"),
        ("x = 1\0\n", "", "null bytes"),
    ],
    ids=["syntax", "no-check", "arity", "not-literal", "nul-byte"],
)
def test_bad_python_hook(demo_copy: Path, source: str, field: str, text: str) -> None:
    (demo_copy / "hooks" / "custom.py").write_text(source)
    find(problems_of(demo_copy), "hooks/custom.py", field, text)


def test_python_hook_with_yaml_is_still_syntax_checked(demo_copy: Path) -> None:
    (demo_copy / "hooks" / "custom.yaml").write_text("event: before_reply\nkind: python\n")
    (demo_copy / "hooks" / "custom.py").write_text("def check(event:\n")
    find(problems_of(demo_copy), "hooks/custom.py", "line 1", "syntax error")


def test_python_hook_kind_needs_its_py_file(demo_copy: Path) -> None:
    (demo_copy / "hooks" / "custom.yaml").write_text("event: before_reply\nkind: python\n")
    find(problems_of(demo_copy), "hooks/custom.yaml", "kind", "hooks/custom.py")


def test_py_file_beside_a_declarative_hook(demo_copy: Path) -> None:
    (demo_copy / "hooks" / "reply-length.py").write_text("def check(event):\n    pass\n")
    find(problems_of(demo_copy), "hooks/reply-length.py", "", "only python hooks")


def test_yaml_and_yml_for_one_hook(demo_copy: Path) -> None:
    shutil.copy(demo_copy / "hooks" / "reply-length.yaml", demo_copy / "hooks" / "reply-length.yml")
    find(problems_of(demo_copy), "hooks/reply-length.yml", "", "same hook")


def test_require_reply_skill_needs_a_reply_skill(demo_copy: Path) -> None:
    for skill in ("product-qa", "chit-chat", "after-sales", "purchase-guide", "safety-refusal"):
        shutil.rmtree(demo_copy / "skills" / skill)
        replace_in(demo_copy / "harness.yaml", f"  - {skill}\n", "")
    find(problems_of(demo_copy), "hooks/require-reply-skill.yaml", "kind", "reply skill")


# ----------------------------------------------------------------------------- everything at once


def test_several_problems_are_all_reported(demo_copy: Path) -> None:
    (demo_copy / "tools" / "check_stock.json").write_text("{")
    (demo_copy / "skills" / "chit-chat" / "SKILL.md").write_text("no front matter")
    replace_in(demo_copy / "hooks" / "reply-length.yaml", "max_chars:", "max_char:")
    (demo_copy / "prompt" / "style.md").unlink()
    edit(demo_copy / "prompt" / "persona.md", lambda t: t + "${nope}")
    replace_in(demo_copy / "harness.yaml", "max_turns: 8", "max_turns: many")
    problems = problems_of(demo_copy)
    find(problems, "tools/check_stock.json", "line 1", "malformed JSON")
    find(problems, "skills/chit-chat/SKILL.md", "front matter")
    find(problems, "hooks/reply-length.yaml", "params.max_char")
    find(problems, "prompt/style.md", "", "missing")
    find(problems, "harness.yaml", "settings.max_turns")
    # undefined variables are cross-component checks, run once the files themselves are sound
    assert len(problems) == 5, "\n".join(map(str, problems))
    message = str(HarnessError(problems))
    assert "tools/check_stock.json" in message and "settings.max_turns" in message


def test_not_utf8(demo_copy: Path) -> None:
    (demo_copy / "prompt" / "persona.md").write_bytes(b"caf\xe9\n")
    find(problems_of(demo_copy), "prompt/persona.md", "byte 3", "not UTF-8")


def test_missing_harness_yaml_and_not_a_folder(demo_copy: Path) -> None:
    (demo_copy / "harness.yaml").unlink()
    find(problems_of(demo_copy), "harness.yaml", "", "missing")
    find(problems_of(demo_copy / "nope"), str(demo_copy / "nope"), "", "not a folder")


@pytest.mark.parametrize(
    "text",
    [
        "a: !!python/object:os.system {}\n",
        "a: " + "[" * 1500 + "\n",
        "a: " + "9" * 6000 + "\n",
        "? [a, b]\n: 1\n",
        "1: x\n",
        'name: "\\ud800"\n',
        "\t\n",
    ],
    ids=["python-tag", "deep", "huge-int", "list-key", "int-key", "surrogate", "tab"],
)
def test_hostile_harness_yaml(demo_copy: Path, text: str) -> None:
    (demo_copy / "harness.yaml").write_text(text)
    find(problems_of(demo_copy), "harness.yaml")


# ----------------------------------------------------------------------------- model-level rules


def test_agentskills_optional_fields_round_trip() -> None:
    harness = load_demo_harness()
    skill = harness.skills[0].model_copy(
        update={"license": "Apache-2.0", "compatibility": "any", "allowed_tools": "check_stock"}
    )
    changed = harness.model_copy(update={"skills": [skill, *harness.skills[1:]]})
    files = folder_files(changed)
    assert "allowed-tools: check_stock\n" in files[f"skills/{skill.name}/SKILL.md"]
    back = harness_from_files({k: v.encode() for k, v in files.items()})
    assert back.skills[0] == skill


def test_skill_metadata_may_not_shadow_kind() -> None:
    with pytest.raises(ValueError, match="reserved"):
        Skill(name="x", description="d", metadata={"kind": "strategy"})


def test_hook_errors_name_the_field() -> None:
    from pydantic import ValidationError

    from core.harness.errors import problems_from_validation

    with pytest.raises(ValidationError) as info:
        Hook(name="h", event="on_input", kind="reply_format", params={"max_chars": 0})
    fields = [p.field for p in problems_from_validation(info.value, "hooks/h.yaml")]
    assert fields == ["event"]
    with pytest.raises(ValidationError) as info:
        Hook(name="h", event="before_reply", kind="reply_format", params={"max_chars": 0})
    fields = [p.field for p in problems_from_validation(info.value, "hooks/h.yaml")]
    assert fields == ["params.max_chars"]


def test_unencodable_text_fails_export_with_a_harness_error() -> None:
    harness = Harness(
        name="x",
        prompt={"sections": [PromptSection(id="a", title="A", template="bad \ud800")]},
    )
    with pytest.raises(HarnessError) as info:
        folder_files(harness)
    assert info.value.problems[0].file == "prompt/a.md"
