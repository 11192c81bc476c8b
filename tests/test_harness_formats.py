"""Formats in and out (issue 20, item 1): MCP tool lists, OpenAI tools with `strict`,
agentskills.io skill folders as published, Claude Code hook settings.

Each fixture is written here in its own format; the tests show import -> harness folder ->
store -> export loses nothing, and that bad input is an error naming file and field, with
nothing written.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.harness import HarnessError, export_folder, folder_files, import_folder
from core.harness.folder import BINARY_DIR, read_files
from core.harness.interop import (
    add_to_folder,
    claude_settings,
    hooks_from_claude_settings,
    mcp_tool_list,
    openai_tools,
    read_claude_hooks,
    read_skill_folder,
    read_tools,
    tools_from_data,
)
from core.harness.models import Harness, HookEvent, HookKind
from core.store import Store

runner = CliRunner()

# ----------------------------------------------------------------------------- fixtures

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "units": {"type": "string", "enum": ["metric", "imperial"], "default": "metric"},
    },
    "required": ["city"],
}

MCP_LIST: dict[str, Any] = {
    "tools": [
        {
            "name": "get_weather",
            "title": "Weather Information Provider",
            "description": "Get current weather information for a location",
            "inputSchema": WEATHER_SCHEMA,
            "outputSchema": {
                "type": "object",
                "properties": {
                    "temperature": {"type": "number"},
                    "conditions": {"type": "string"},
                },
                "required": ["temperature", "conditions"],
            },
            "annotations": {
                "title": "Weather",
                "readOnlyHint": True,
                "openWorldHint": True,
            },
            "icons": [{"src": "https://example.com/sun.png", "mimeType": "image/png"}],
        },
        {
            "name": "search_docs",
            "description": "Full-text search over the product manuals.",
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["query"],
            },
            "annotations": {"readOnlyHint": True, "idempotentHint": True},
            "_meta": {"vendor/x": 1},
        },
        {
            "name": "delete_note",
            "description": "Delete a note by id.",
            "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
            "annotations": {"destructiveHint": True},
            "execution": {"taskSupport": "optional"},
        },
    ],
}

OPENAI_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "Look up an order by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "cancel_order",
            "description": "Cancel a pending order.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "reason": {"type": ["string", "null"]},
                },
                "required": ["order_id", "reason"],
                "additionalProperties": False,
            },
            "strict": False,
        },
    },
]

SKILL_FRONT = (
    "---\r\n"
    "name: pdf-tools\r\n"
    "description: Extract text and tables from PDF files. Use when the user gives a PDF.\r\n"
    "license: Complete terms in LICENSE.txt\r\n"
    "allowed-tools:\r\n"
    "  - Read\r\n"
    "  - Bash(python:*)\r\n"
    "---\r\n"
)
SKILL_BODY = (
    "# PDF tools\r\n\r\nRun `python scripts/extract.py file.pdf`.\r\nSee references/API.md.\r\n"
)
SKILL_EXTRA: dict[str, bytes] = {
    "scripts/extract.py": b"#!/usr/bin/env python3\r\nimport sys\r\nprint(sys.argv)\r\n",
    "references/API.md": "# API\n\nÜber `extract()` — returns text.\n".encode(),
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00\x01",
    "assets/fonts/Mono.ttf": bytes(range(256)) * 4,
    "LICENSE.txt": b"MIT License\n\nCopyright (c) 2026 Example\n",
    "notes.json": b'{"a": 1}',
}

CLAUDE_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm run lint)"]},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./guard-bash.sh"}],
            },
            {
                "matcher": "get_weather|search_docs",
                "hooks": [
                    {"type": "command", "command": "echo check >&2; exit 2", "timeout": 10},
                    {"type": "prompt", "prompt": "Is this call safe? $ARGUMENTS"},
                ],
            },
        ],
        "PostToolUse": [
            {
                "matcher": "*",
                "hooks": [
                    {"type": "command", "command": "jq . >> /tmp/tool-log.jsonl"},
                    {"type": "command", "command": "notify.sh", "async": True},
                ],
            }
        ],
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "python3 check_prompt.py", "timeout": 900}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "./check-reply.sh"}]}],
        "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "say hi"}]}],
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo start"}]}],
    },
}


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def published_skill(root: Path, *, bom: bool = True) -> Path:
    folder = root / "pdf-tools"
    folder.mkdir(parents=True)
    text = (SKILL_FRONT + SKILL_BODY).encode("utf-8")
    (folder / "SKILL.md").write_bytes((b"\xef\xbb\xbf" if bom else b"") + text)
    for rel, data in SKILL_EXTRA.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    (folder / ".DS_Store").write_bytes(b"\x00junk")  # hidden: not part of the skill
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def stored(harness: Harness, tmp_path: Path) -> Harness:
    """`harness` through the store: committed, then loaded back."""
    with Store.open(tmp_path / "hat.db") as store:
        info = store.commit(harness, "formats")
        return store.load(info.id)


# ----------------------------------------------------------------------------- MCP / OpenAI


def test_mcp_list_imports_and_exports_back_unchanged(tmp_path: Path) -> None:
    source = write_json(tmp_path / "tools-list.json", MCP_LIST)
    tools = read_tools(source)
    assert [t.name for t in tools] == ["get_weather", "search_docs", "delete_note"]
    weather = tools[0]
    assert weather.title == "Weather Information Provider"
    assert weather.output_schema is not None and weather.annotations["readOnlyHint"] is True
    folder = tmp_path / "h"
    add_to_folder(folder, tools=tools)
    loaded = stored(import_folder(folder), tmp_path)
    assert mcp_tool_list(loaded) == MCP_LIST
    again = tmp_path / "again"
    export_folder(loaded, again)
    assert read_files(again) == read_files(folder)


def test_a_jsonrpc_response_and_a_single_mcp_tool_are_accepted() -> None:
    response = {"jsonrpc": "2.0", "id": 1, "result": {**MCP_LIST, "nextCursor": "abc"}}
    assert len(tools_from_data(response, "r.json")) == 3
    (one,) = tools_from_data(MCP_LIST["tools"][1], "one.json")
    assert one.name == "search_docs" and one.mcp == {"_meta": {"vendor/x": 1}}


def test_openai_tools_keep_strict_through_folder_and_store(tmp_path: Path) -> None:
    source = write_json(tmp_path / "openai.json", OPENAI_TOOLS)
    tools = read_tools(source)
    assert [t.strict for t in tools] == [True, False]
    folder = tmp_path / "h"
    add_to_folder(folder, tools=tools)
    on_disk = json.loads((folder / "tools" / "get_order.json").read_text())
    assert on_disk["function"]["strict"] is True
    loaded = stored(import_folder(folder), tmp_path)
    assert openai_tools(loaded) == OPENAI_TOOLS


def test_responses_api_shape_and_mixed_lists(tmp_path: Path) -> None:
    flat = {
        "type": "function",
        "name": "ping",
        "description": "Ping.",
        "parameters": {"type": "object", "properties": {}},
        "strict": True,
    }
    tools = tools_from_data([flat, MCP_LIST["tools"][2]], "mixed.json")
    assert [(t.name, t.strict) for t in tools] == [("ping", True), ("delete_note", None)]


def test_a_dotted_mcp_name_is_refused_with_both_rules_and_can_be_renamed() -> None:
    entry = {"name": "notes.delete", "inputSchema": {"type": "object"}}
    with pytest.raises(HarnessError) as info:
        tools_from_data({"tools": [entry]}, "list.json")
    (problem,) = info.value.problems
    assert (problem.file, problem.field) == ("list.json", "tools.0.name")
    assert "valid MCP tool name" in problem.message and "^[a-zA-Z0-9_-]{1,64}$" in problem.message
    assert "OpenAI" in problem.message
    (tool,) = tools_from_data({"tools": [entry]}, "list.json", rename={"notes.delete": "delete"})
    assert tool.name == "delete" and tool.binding == "notes.delete"
    long_name = "a" * 65
    with pytest.raises(HarnessError, match="valid MCP tool name"):
        tools_from_data({"name": long_name, "inputSchema": {"type": "object"}}, "x.json")


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        (
            {"tools": [{"name": "x", "inputSchema": {"type": "string"}}]},
            "tools.0.inputSchema",
            "object",
        ),
        (
            {"tools": [{"name": "x", "inputSchema": {"type": "object"}, "extra": 1}]},
            "tools.0.extra",
            "unknown field",
        ),
        ({"tools": [{"name": "x"}]}, "tools.0", "neither an MCP tool"),
        (
            {
                "tools": [
                    {
                        "name": "x",
                        "inputSchema": {"type": "object"},
                        "outputSchema": {"type": "array"},
                    }
                ]
            },
            "tools.0.outputSchema",
            "object",
        ),
        (
            [{"type": "function", "function": {"name": "f", "strict": "yes"}}],
            "0.function.strict",
            "bool",
        ),
        ({"tools": [], "model": "gpt"}, "model", "unknown field"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -1}}, "error", "error response"),
    ],
)
def test_bad_tool_files_name_file_and_field(data: Any, field: str, words: str) -> None:
    with pytest.raises(HarnessError) as info:
        tools_from_data(data, "bad.json")
    assert any(
        p.file == "bad.json" and p.field == field and words in p.message
        for p in info.value.problems
    ), info.value.problems


def test_malformed_json_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"tools": [\n  {"name": "a",}\n]}')
    with pytest.raises(HarnessError) as info:
        read_tools(bad)
    assert info.value.problems[0].file == str(bad)
    assert "line 2" in info.value.problems[0].field


# ----------------------------------------------------------------------------- skills


def test_published_skill_folder_round_trips_byte_for_byte(tmp_path: Path) -> None:
    source = published_skill(tmp_path / "download")
    skill = read_skill_folder(source)
    assert skill.name == "pdf-tools" and skill.body == SKILL_BODY  # BOM gone, CRLF kept
    assert skill.allowed_tools == "Read Bash(python:*)" and skill.allowed_tools_list
    assert skill.license == "Complete terms in LICENSE.txt"
    assert skill.files == SKILL_EXTRA  # every file, hidden ones skipped
    folder = tmp_path / "h"
    add_to_folder(folder, skills=[skill])
    loaded = stored(import_folder(folder), tmp_path)
    assert loaded.skills[0] == skill
    out = tmp_path / "out"
    export_folder(loaded, out)
    exported = snapshot(out / "skills" / "pdf-tools")
    original = snapshot(source)
    del original[".DS_Store"]
    assert {k: v for k, v in exported.items() if k != "SKILL.md"} == {
        k: v for k, v in original.items() if k != "SKILL.md"
    }
    again = read_skill_folder(out / "skills" / "pdf-tools")
    assert again == skill
    assert (
        "allowed-tools:\n- Read\n- Bash(python:*)\n"
        in (out / "skills/pdf-tools/SKILL.md").read_text()
    )


def test_binary_skill_files_are_in_the_version_hash_and_listed_in_diffs(tmp_path: Path) -> None:
    skill = read_skill_folder(published_skill(tmp_path / "dl"))
    folder = tmp_path / "h"
    add_to_folder(folder, skills=[skill])
    harness = import_folder(folder)
    texts = folder_files(harness)
    assert f"skills/pdf-tools/{BINARY_DIR}/assets/logo.png" in texts
    assert texts["skills/pdf-tools/references/API.md"] == SKILL_EXTRA["references/API.md"].decode()
    with Store.open(tmp_path / "hat.db") as store:
        v1 = store.commit(harness, "v1")
        harness.skills[0].files = {**skill.files, "assets/logo.png": b"\x89PNG changed \xff"}
        v2 = store.commit(harness, "v2")
        assert v1.tree_hash != v2.tree_hash
        changes = store.diff(v1.id, v2.id)
        assert [(c.component, c.name, c.change) for c in changes] == [
            ("skill", "pdf-tools", "modified")
        ]
        assert "logo.png" in changes[0].path
        assert store.load(v2.id).skills[0].files["assets/logo.png"] == b"\x89PNG changed \xff"


def test_allowed_tools_as_a_string_is_kept_as_a_string(tmp_path: Path) -> None:
    folder = tmp_path / "one-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: one-skill\ndescription: d\nallowed-tools: Read Grep\n---\nbody\n"
    )
    skill = read_skill_folder(folder)
    assert skill.allowed_tools == "Read Grep"
    add_to_folder(tmp_path / "h", skills=[skill])
    text = (tmp_path / "h" / "skills" / "one-skill" / "SKILL.md").read_text()
    assert "allowed-tools: Read Grep\n" in text
    assert import_folder(tmp_path / "h").skills[0].allowed_tools == "Read Grep"


def test_an_allowed_tools_list_entry_with_a_space_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "git-skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: git-skill\ndescription: d\nallowed-tools:\n  - Read\n"
        "  - Bash(git add:*)\n---\nbody\n"
    )
    with pytest.raises(HarnessError) as info:
        read_skill_folder(folder)
    (problem,) = info.value.problems
    assert problem.field == "allowed-tools.1" and "'Bash(git add:*)'" in problem.message


def test_a_bom_and_crlf_skill_imports_inside_a_harness_folder_too(tmp_path: Path) -> None:
    folder = tmp_path / "h"
    add_to_folder(folder, skills=[read_skill_folder(published_skill(tmp_path / "dl"))])
    skill_md = folder / "skills" / "pdf-tools" / "SKILL.md"
    skill_md.write_bytes(b"\xef\xbb\xbf" + skill_md.read_bytes().replace(b"\n", b"\r\n"))
    assert import_folder(folder).skills[0].description.startswith("Extract text")


def test_skill_md_problems_are_named_exactly(tmp_path: Path) -> None:
    utf16 = tmp_path / "a" / "wide"
    utf16.mkdir(parents=True)
    (utf16 / "SKILL.md").write_bytes("---\nname: wide\n---\n".encode("utf-16"))
    with pytest.raises(HarnessError, match=r"UTF-16 text .*save it as UTF-8"):
        read_skill_folder(utf16)
    plain = tmp_path / "b" / "plain"
    plain.mkdir(parents=True)
    (plain / "SKILL.md").write_text("# Plain\n\nNo front matter.\n")
    with pytest.raises(HarnessError) as info:
        read_skill_folder(plain)
    assert "first line is '# Plain'" in str(info.value)
    assert info.value.problems[0].file == str(plain / "SKILL.md")


def test_skill_folders_keep_the_import_security_rules(tmp_path: Path) -> None:
    source = published_skill(tmp_path / "dl")
    outside = tmp_path / "secret.txt"
    outside.write_text("not yours")
    (source / "scripts" / "link.py").symlink_to(outside)
    with pytest.raises(HarnessError) as info:
        read_skill_folder(source)
    assert any("link.py" in p.file and "symbolic link" in p.message for p in info.value.problems)
    (source / "scripts" / "link.py").unlink()
    deep = source / "/".join("d" * 1 for _ in range(10))
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("x")
    with pytest.raises(HarnessError, match="nested more than 8 folders deep"):
        read_skill_folder(source)


def test_a_skill_file_over_the_size_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.harness.folder.components as components

    monkeypatch.setattr(components, "MAX_SKILL_FILE_BYTES", 100)
    source = published_skill(tmp_path / "dl")
    with pytest.raises(HarnessError) as info:
        read_skill_folder(source)
    assert any(p.file.endswith("Mono.ttf") and "bytes" in p.message for p in info.value.problems)


def test_export_removes_files_a_skill_no_longer_has(tmp_path: Path) -> None:
    skill = read_skill_folder(published_skill(tmp_path / "dl"))
    folder = tmp_path / "h"
    add_to_folder(folder, skills=[skill])
    harness = import_folder(folder)
    harness.skills[0].files = {"LICENSE.txt": SKILL_EXTRA["LICENSE.txt"]}
    export_folder(harness, folder)
    assert sorted(snapshot(folder / "skills" / "pdf-tools")) == ["LICENSE.txt", "SKILL.md"]
    assert import_folder(folder) == harness


# ----------------------------------------------------------------------------- Claude Code hooks


def test_claude_code_hooks_map_onto_the_loop_and_list_the_rest(tmp_path: Path) -> None:
    settings = write_json(tmp_path / "settings.json", CLAUDE_SETTINGS)
    found = read_claude_hooks(settings, tool_names=["get_weather", "search_docs"])
    got = [(h.name, h.event, h.matcher, h.timeout) for h in found.hooks]
    assert got == [
        ("claude-pre-tool-use-1", HookEvent.BEFORE_TOOL, "get_weather|search_docs", 10.0),
        ("claude-post-tool-use-1", HookEvent.AFTER_TOOL, "*", 60.0),
        ("claude-user-prompt-submit-1", HookEvent.ON_INPUT, "*", 300.0),
        ("claude-stop-1", HookEvent.BEFORE_REPLY, "*", 60.0),
    ]
    assert all(h.kind is HookKind.PYTHON and not h.trusted for h in found.hooks)
    skipped = {s.where: s.reason for s in found.skipped}
    assert "matches no tool of this harness" in skipped["hooks.PreToolUse.0.hooks.0"]
    assert "'prompt'" in skipped["hooks.PreToolUse.1.hooks.1"]
    assert "async" in skipped["hooks.PostToolUse.0.hooks.1"]
    assert "notifications" in skipped["hooks.Notification"]
    assert "sessions" in skipped["hooks.SessionStart"]
    assert any("900" in n and "300" in n for n in found.notes)


def test_claude_hooks_round_trip_through_folder_and_store(tmp_path: Path) -> None:
    folder = tmp_path / "h"
    tools = tools_from_data(MCP_LIST, "list.json")
    add_to_folder(folder, tools=tools)
    found = hooks_from_claude_settings(
        CLAUDE_SETTINGS, "settings.json", tool_names=[t.name for t in tools]
    )
    add_to_folder(folder, hooks=found.hooks)
    assert import_folder(folder).hooks[0].trusted is False  # needs --trust
    loaded = stored(import_folder(folder, trust_python_hooks=True), tmp_path)
    expected = copy.deepcopy(CLAUDE_SETTINGS["hooks"])
    expected["PreToolUse"] = [
        {
            "matcher": "get_weather|search_docs",
            "hooks": [expected["PreToolUse"][1]["hooks"][0]],
        }
    ]
    expected["PostToolUse"][0]["hooks"] = expected["PostToolUse"][0]["hooks"][:1]
    del expected["Notification"], expected["SessionStart"]
    assert claude_settings(loaded) == {"hooks": expected}


def test_an_imported_command_hook_blocks_like_claude_code(tmp_path: Path) -> None:
    from core.runtime.hooks import HookInput, run_hook

    script = tmp_path / "guard.py"
    script.write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "if event['tool_input'].get('city') == 'Atlantis':\n"
        "    print(f\"{event['hook_event_name']}: no such city\", file=sys.stderr)\n"
        "    sys.exit(2)\n"
    )
    command = f"python3 {script}"
    settings = {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}}
    (hook,) = hooks_from_claude_settings(settings, "s.json").hooks
    hook.trusted = True
    harness = Harness(name="h")

    def run(city: str) -> Any:
        data = HookInput(
            event=HookEvent.BEFORE_TOOL,
            request_id="r1",
            viewer_message="weather?",
            tool="get_weather",
            arguments={"city": city},
        )
        return asyncio.run(run_hook(hook, data, harness))

    blocked = run("Atlantis")
    assert blocked.blocks and blocked.reason == "PreToolUse: no such city"
    assert run("Paris").decision.value == "allow"


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"hooks": []}, "hooks"),
        ({}, "hooks"),
        ({"hooks": {"Stop": {"hooks": []}}}, "hooks.Stop"),
        ({"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}, "hooks.Stop.0.hooks.0.command"),
        (
            {
                "hooks": {
                    "PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]
                }
            },
            "hooks.PreToolUse.0.matcher",
        ),
        (
            {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}},
            "hooks.Stop.0.hooks.0.timeout",
        ),
        ({"hooks": {"Stop": [{"matchers": "*", "hooks": []}]}}, "hooks.Stop.0.matchers"),
    ],
)
def test_bad_claude_settings_name_the_field(settings: Any, field: str) -> None:
    with pytest.raises(HarnessError) as info:
        hooks_from_claude_settings(settings, "settings.json")
    assert any(p.file == "settings.json" and p.field == field for p in info.value.problems), (
        info.value.problems
    )


# ----------------------------------------------------------------------------- adding to a folder


def test_nothing_is_written_when_the_result_would_not_validate(tmp_path: Path) -> None:
    folder = tmp_path / "h"
    add_to_folder(folder, tools=tools_from_data(MCP_LIST, "list.json"))
    before = snapshot(folder)
    with pytest.raises(HarnessError, match="already has a tool named 'get_weather'"):
        add_to_folder(folder, tools=tools_from_data(MCP_LIST, "list.json"))
    # a harness whose prompt has no skill index cannot take a skill
    manifest = folder / "harness.yaml"
    manifest.write_text(manifest.read_text().replace("kind: skill_index", "kind: text"))
    (folder / "prompt").mkdir(exist_ok=True)
    (folder / "prompt" / "skills.md").write_text("")
    before = snapshot(folder)
    skill = read_skill_folder(published_skill(tmp_path / "dl"))
    with pytest.raises(HarnessError, match="skill_index"):
        add_to_folder(folder, skills=[skill])
    assert snapshot(folder) == before


def test_replace_rewrites_a_component_and_keeps_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "h"
    add_to_folder(folder, tools=tools_from_data(MCP_LIST, "list.json"))
    manifest = (folder / "harness.yaml").read_bytes()
    changed = copy.deepcopy(MCP_LIST)
    changed["tools"][1]["description"] = "Search the manuals (v2)."
    add_to_folder(folder, tools=tools_from_data(changed, "list.json"), replace=True)
    assert (folder / "harness.yaml").read_bytes() == manifest
    assert mcp_tool_list(import_folder(folder)) == changed


# ----------------------------------------------------------------------------- CLI


def hat(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_cli_imports_all_four_formats_and_exports_them(tmp_path: Path) -> None:
    into = tmp_path / "my-harness"
    mcp = write_json(tmp_path / "mcp.json", MCP_LIST)
    oa = write_json(tmp_path / "openai.json", OPENAI_TOOLS)
    code, out = hat("harness", "import-tools", str(mcp), str(oa), "--into", str(into))
    assert code == 0, out
    assert "added 5 tool(s)" in out
    code, out = hat(
        "harness", "import-skill", str(published_skill(tmp_path / "dl")), "--into", str(into)
    )
    assert code == 0, out
    settings = write_json(tmp_path / "settings.json", CLAUDE_SETTINGS)
    code, out = hat("harness", "import-hooks", str(settings), "--into", str(into))
    assert code == 0, out
    assert "not imported" in out and "Notification" in out and "--trust" in out
    code, out = hat("harness", "validate", str(into))  # the tools are not bound to anything
    assert code == 1 and "5 tools, 4 hooks" in out
    assert out.count("has no implementation") == 5
    code, out = hat("harness", "import", str(into), "--trust", "-m", "mine")
    assert code == 0, out
    exported = tmp_path / "mcp-out.json"
    code, out = hat("harness", "export-tools", "head", "--format", "mcp", "-o", str(exported))
    assert code == 0, out
    assert json.loads(exported.read_text())["tools"][:3] == MCP_LIST["tools"]
    result = runner.invoke(app, ["harness", "export-tools", str(into), "--format", "openai"])
    assert result.exit_code == 0
    # stdout is the array alone (pipeable); what it cannot hold is said on stderr
    listed = json.loads(result.stdout)
    assert [t for t in listed if t["function"].get("strict") is not None] == OPENAI_TOOLS
    assert "left out" in result.stderr and "annotations" in result.stderr
    code, out = hat("harness", "export-hooks", str(into))
    assert code == 0 and set(json.loads(out)["hooks"]) == {
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "Stop",
    }


def test_cli_bad_input_names_the_file_and_writes_nothing(tmp_path: Path) -> None:
    into = tmp_path / "h"
    good = write_json(tmp_path / "good.json", MCP_LIST)
    assert hat("harness", "import-tools", str(good), "--into", str(into))[0] == 0
    before = snapshot(into)
    bad = write_json(
        tmp_path / "bad.json", {"tools": [{"name": "a.b", "inputSchema": {"type": "object"}}]}
    )
    code, out = hat("harness", "import-tools", str(bad), "--into", str(into))
    assert code == 1
    assert "bad.json: tools.0.name" in out and "nothing was added" in out
    code, out = hat("harness", "import-tools", str(good), "--into", str(into), "--rename", "nope=x")
    assert code == 1 and "'nope'" in out
    assert snapshot(into) == before
    code, out = hat("harness", "import-tools", str(bad), "--into", str(into), "--rename", "a.b=a_b")
    assert code == 0, out
    assert os.path.exists(into / "tools" / "a_b.json")
