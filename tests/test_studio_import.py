"""The studio's import/export boxes: the Qt-free preview (studio.logic.harness_import, read by
core.harness.interop as the CLI reads) and the real dialogs in a real window."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.harness import Harness, import_folder
from core.harness.demo import demo_harness_path
from core.store import Store
from studio import dialogs
from studio.logic import harness_import as hi
from studio.logic.document import HarnessDocument

SHOTS = Path(os.environ.get("HAT_SCREENSHOTS", "/tmp"))


@pytest.fixture(scope="module")
def demo() -> Harness:
    return import_folder(demo_harness_path())


NAMES = st.lists(
    st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True).map(lambda s: "imp_" + s),
    min_size=1,
    max_size=6,
    unique_by=str.casefold,
)


@settings(max_examples=25, deadline=None)
@given(names=NAMES, kind=st.sampled_from(["mcp", "openai"]), strict=st.booleans())
def test_any_valid_list_previews_with_the_same_names(demo, names, kind, strict) -> None:  # type: ignore[no-untyped-def]
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    if kind == "mcp":
        data: object = {"tools": [{"name": n, "inputSchema": schema} for n in names]}
    else:
        data = [
            {"type": "function", "function": {"name": n, "parameters": schema, "strict": strict}}
            for n in names
        ]
    preview = hi.preview_tools(json.dumps(data, indent=2), demo)
    assert preview.ok, [r.problems for r in preview.rows]
    assert preview.names == names
    doc = HarnessDocument(demo)
    snap = hi.tools_snapshot(doc, preview)
    doc.apply(snap)
    assert [t.name for t in doc.harness.tools][-len(names) :] == names
    if kind == "openai":
        assert all(t.strict is strict for t in doc.harness.tools[-len(names) :])
    # and back out the same way
    back = json.loads(hi.export_tools_text(doc.harness, "mcp"))
    assert [t["name"] for t in back["tools"]][-len(names) :] == names


@settings(max_examples=25, deadline=None)
@given(text=st.text(min_size=1, max_size=40), line_breaks=st.integers(0, 3))
def test_bad_json_names_line_and_column(demo, text, line_breaks) -> None:  # type: ignore[no-untyped-def]
    body = "\n" * line_breaks + '{"tools": [' + json.dumps(text) + ",,]}"
    preview = hi.preview_tools(body, demo)
    assert preview.error is not None and not preview.ok
    assert preview.error.line == line_breaks + 1
    assert preview.error.column is not None
    assert f"line {line_breaks + 1}, column {preview.error.column}" in preview.error.message


def test_problems_name_the_field_and_nothing_is_added(demo) -> None:  # type: ignore[no-untyped-def]
    existing = demo.tools[0].name
    data = {
        "tools": [
            {"name": "fine_tool", "inputSchema": {"type": "object"}},
            {"name": "notes.delete", "inputSchema": {"type": "object"}},
            {"name": existing, "inputSchema": {"type": "object"}},
            {"name": "odd", "inputSchema": {"type": "object"}, "colour": "red"},
        ]
    }
    preview = hi.preview_tools(json.dumps(data), demo)
    assert not preview.ok
    problems = {r.name: r.problems for r in preview.rows}
    assert problems["fine_tool"] == []
    assert problems["notes.delete"][0].startswith("tools.1.name:")
    assert "not one a model can be given" in problems["notes.delete"][0]
    assert problems[existing] == [
        f"tools.2.name: the harness already has a tool named {existing!r}"
    ]
    assert problems["odd"][0].startswith("tools.3.colour: unknown field")
    with pytest.raises(ValueError):
        hi.tools_snapshot(HarnessDocument(demo), preview)


def test_skill_folder_and_claude_hooks_preview(demo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "pdf-tools"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: pdf-tools\ndescription: Fill PDF forms.\n---\n# PDF\n", encoding="utf-8"
    )
    (folder / "scripts" / "fill.py").write_text("print(1)\n", encoding="utf-8")
    (folder / "LICENSE.txt").write_text("MIT\n", encoding="utf-8")
    skill = hi.preview_skill(folder, demo)
    assert skill.ok and skill.skill is not None
    assert (skill.skill.name, skill.file_count) == ("pdf-tools", 3)
    doc = HarnessDocument(demo)
    doc.apply(hi.skill_snapshot(doc, skill))
    assert doc.harness.skill("pdf-tools") is not None
    again = hi.preview_skill(folder, doc.harness)
    assert not again.ok and "already has a skill" in again.problems[0]

    settings_json = {
        "permissions": {"allow": []},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "y"}]}],
        },
    }
    hooks = hi.preview_hooks(json.dumps(settings_json), demo)
    assert hooks.ok
    assert [(r.event, r.command) for r in hooks.rows] == [("Stop", "echo done")]
    assert all(not h.trusted for h in hooks.hooks)
    reasons = {s.where: s.reason for s in hooks.skipped}
    assert "matches no tool" in reasons["hooks.PreToolUse.0.hooks.0"]
    assert reasons["hooks.Notification"].startswith("Notification:")
    assert hi.preview_hooks("{", demo).error.line == 1  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- in a window

MCP_LIST = {
    "tools": [
        {
            "name": "lookup_order",
            "title": "Look up an order",
            "description": "Find an order by its number.",
            "inputSchema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
            "annotations": {"readOnlyHint": True},
        },
        {
            "name": "refund_order",
            "description": "Refund an order.",
            "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    ]
}


def test_paste_an_mcp_list_add_it_and_save_a_version(
    qapp, hat_home: Path, monkeypatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from studio.pages.harness import import_dialogs
    from tests.studio_helpers import idle, open_studio, shut

    win = open_studio(hat_home, busy_timeout=0.3)
    try:
        page = win.harness_page
        shots: dict[str, object] = {}

        def answer(dialog):  # type: ignore[no-untyped-def]
            if isinstance(dialog, import_dialogs.ImportToolsDialog):
                dialog.paste.setPlainText('{"tools": [\n  {"name" 1}]}')
                assert dialog.preview.error is not None
                assert "line 2, column" in dialog.status.text()
                assert not dialog.add.isEnabled()
                dialog.paste.setPlainText(json.dumps(MCP_LIST, indent=2))
                assert dialog.preview.ok and dialog.add.isEnabled()
                assert dialog.table.item(0, 0).text() == "lookup_order"
                dialog.show()
                qapp.processEvents()
                dialog.grab().save(str(SHOTS / "import-tools.png"))
                shots["tools"] = True
                return True
            if isinstance(dialog, import_dialogs.ImportHooksDialog):
                dialog.paste.setPlainText(
                    json.dumps(
                        {
                            "hooks": {
                                "PreToolUse": [
                                    {
                                        "matcher": "lookup_order",
                                        "hooks": [{"type": "command", "command": "./audit.sh"}],
                                    },
                                    {
                                        "matcher": "Bash",
                                        "hooks": [{"type": "command", "command": "./lint.sh"}],
                                    },
                                ],
                                "Stop": [{"hooks": [{"type": "prompt", "prompt": "Done?"}]}],
                                "SessionStart": [
                                    {"hooks": [{"type": "command", "command": "echo hi"}]}
                                ],
                            }
                        },
                        indent=2,
                    )
                )
                assert dialog.preview.ok
                assert [r.matcher for r in dialog.preview.rows] == ["lookup_order"]
                assert dialog.skipped.rowCount() == 3
                dialog.show()
                qapp.processEvents()
                dialog.grab().save(str(SHOTS / "import-hooks.png"))
                return False  # cancelled: nothing is added
            if isinstance(dialog, import_dialogs.ImportSkillDialog):
                folder = tmp_path / "order-help"
                (folder / "references").mkdir(parents=True)
                (folder / "SKILL.md").write_text(
                    "---\nname: order-help\ndescription: Answer questions about an order."
                    "\n---\n# Orders\n",
                    encoding="utf-8",
                )
                (folder / "references" / "policy.md").write_text("# Policy\n", encoding="utf-8")
                dialog.load(str(folder))
                assert dialog.preview.ok and "2 files" in dialog.details.text()
                dialog.show()
                qapp.processEvents()
                dialog.grab().save(str(SHOTS / "import-skill.png"))
                return True
            if isinstance(dialog, import_dialogs.ExportToolsDialog):
                out = json.loads(dialog.text.toPlainText())
                assert [t["name"] for t in out["tools"]][-2:] == ["lookup_order", "refund_order"]
                dialog.show()
                qapp.processEvents()
                dialog.grab().save(str(SHOTS / "export-tools.png"))
                return False
            return False

        monkeypatch.setattr(import_dialogs, "run", answer)
        before = len(win.ctx.session.harness.tools)
        page.tree.import_actions["Import tools…"].trigger()
        assert shots.get("tools")
        tools = win.ctx.session.harness.tools
        assert [t.name for t in tools[before:]] == ["lookup_order", "refund_order"]
        page.undo()
        assert len(win.ctx.session.harness.tools) == before
        page.redo()
        page.tree.import_actions["Import Claude Code hooks…"].trigger()
        assert not any(h.name.startswith("claude-") for h in win.ctx.session.harness.hooks)
        page.tree.import_actions["Export tools…"].trigger()
        page.tree.import_actions["Import skill folder…"].trigger()
        assert win.ctx.session.harness.skill("order-help") is not None

        monkeypatch.setattr(dialogs, "ask_save", lambda *a, **k: ("Import order tools", ""))
        win.save_action.trigger()
        idle()
        assert not win.ctx.session.dirty
        with Store.open(hat_home / "hat.db") as store:
            stored = store.load("head", win.ctx.harness_name)
        order = stored.tool("lookup_order")
        assert order is not None and order.title == "Look up an order"
        assert order.annotations == {"readOnlyHint": True}
        assert stored.tool("refund_order") is not None
        skill = stored.skill("order-help")
        assert skill is not None and skill.files == {"references/policy.md": b"# Policy\n"}
    finally:
        shut(win)


def test_the_dialog_words_cores_command_line_hint_for_what_it_can_do() -> None:
    from studio.logic.harness_import import studio_wording

    core = "must match ^[a-zA-Z0-9_-]{1,64}$; rename it on import (--rename notes.delete=NEW_NAME)"
    said = studio_wording(core)
    assert "rename it in the pasted text" in said and "hat harness import-tools --rename" in said
    assert studio_wording("unrelated") == "unrelated"
