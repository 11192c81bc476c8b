"""Issue 23, items 6-8 and the sidebar: versions named by label and message, the first version
compared with nothing, variants paired by identity and told which version they preview, one
change count for the header and the save dialog, messages that use a renamed component's new
name, banners that leave once their fields are fixed, parameter errors by parameter name, and
a workspace path that keeps its last folder.

Real windows offscreen (`tests/studio_helpers.py`), the demo harness, the real store.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core.store.harness_versions import VersionInfo
from studio import dialogs
from studio.logic.version_names import version_items, version_title, version_tooltip
from tests.studio_helpers import idle, open_studio, shut, spin, wait_until


@pytest.fixture
def studio(qapp, hat_home: Path):  # type: ignore[no-untyped-def]
    win = open_studio(hat_home, busy_timeout=0.3)
    yield win
    shut(win)


def info(
    vid: str = "a1b2c3d4e5f6" + "0" * 52,
    message: str = "Add refund skill",
    labels: tuple[str, ...] = ("production",),
    parent: str | None = None,
) -> VersionInfo:
    return VersionInfo(
        vid, parent, "live-host", message, datetime(2026, 12, 1, 9, 30, tzinfo=UTC), "t", labels
    )


# ----------------------------------------------------------------------------- item 6: names


def test_a_version_title_names_label_short_id_and_message() -> None:
    assert version_title(info()) == "production · a1b2c3d4 · Add refund skill"
    assert version_title(info(labels=())) == "a1b2c3d4 · Add refund skill"
    assert version_title(info(labels=("production", "staging")), head=True) == (
        "head · production, staging · a1b2c3d4 · Add refund skill"
    )
    assert version_title(info(), labels=("staging",)) == "staging · a1b2c3d4 · Add refund skill"
    long = "Rewrite the refund policy " * 6
    title = version_title(info(message=long.strip() + "\n\nand a body line"))
    assert title.endswith(long.strip())  # the whole first line, not cut at a count
    assert version_title(info(message="")) == "production · a1b2c3d4"
    tip = version_tooltip(info(message="Line one\nline two"))
    assert info().id in tip and "Line one\nline two" in tip and "production" in tip
    items = version_items([info(), info(vid="ff" * 32, labels=())])
    assert items[0][1].startswith("head · ") and not items[1][1].startswith("head")
    with pytest.raises(TypeError, match="needs a non-empty string `id`"):
        version_title(object())


def test_pickers_show_titles_history_whole_and_the_first_version_compares_with_nothing(
    studio: Any,
) -> None:
    page = studio.harness_page
    page.tree.select_name("skills", "coupon-push")
    page.skill_editor.description.setPlainText("Offer one coupon when a viewer hesitates.")
    page.skill_editor.flush()
    long = (
        "Coupon push: say when a coupon is offered, to whom and how often, so the host never "
        "stacks two offers in one reply nor offers one to a viewer who already bought"
    )
    assert page.save(long)
    idle()
    view = page.versions
    page.tabs.setCurrentIndex(1)
    idle()
    newest, first = view.versions[0], view.versions[-1]
    texts = [view.b_combo.itemText(i) for i in range(view.b_combo.count())]
    assert texts[0] == f"head · {newest.id[:8]} · {long}"
    assert texts[-1].startswith(f"production · {first.id[:8]} · ")
    # the history shows the message and labels whole
    row = view.list.itemWidget(view.list.item(0))
    assert row.message.text() == long and row.message.wordWrap()
    assert view.list.item(0).sizeHint().height() >= row.message.heightForWidth(
        view.list.viewport().width() - 22
    )
    old_row = view.list.itemWidget(view.list.item(view.list.count() - 1))
    assert [c.text() for c in old_row.chips] == ["production"]
    assert "first version" in old_row.meta.text()
    # selecting the newest compares it with its parent
    view.select_version(newest.id)
    idle()
    assert view.a_combo.currentData() == first.id
    assert [d.path for d in view.diffs] == ["skills/coupon-push/SKILL.md"]
    # the first version: compared with nothing, every file added (not "the same content")
    view.select_version(first.id)
    idle()
    assert view.a_combo.currentData() == ""
    assert "first version" in view.selected_title.text()
    assert view.diffs and {d.change for d in view.diffs} == {"added"}
    assert "harness.yaml" in [d.path for d in view.diffs]
    assert view.diff_stack.currentWidget() is view.diff


# ----------------------------------------------------------------------------- item 7: variants


def test_variant_skills_and_tools_pair_by_identity_after_rename_and_reorder() -> None:
    from core.harness.demo import load_demo_harness
    from core.hsa.mapping import MappingChain, SurfaceMapping
    from studio.logic.textdiff import side_by_side
    from studio.logic.variants import harness_views, paired_views

    original = load_demo_harness()
    skills = list(original.skills)
    assert len(skills) >= 3 and len(original.active_tools) >= 2
    first = skills[0].name
    renamed = [
        s.model_copy(update={"name": "catalog-answers"}) if s.name == first else s for s in skills
    ]
    tools = list(original.tools)
    tool = original.active_tools[0]
    param = next(iter(tool.parameters["properties"]))
    new_tool = tool.model_copy(
        update={
            "name": "stock_lookup",
            "parameters": {
                **tool.parameters,
                "properties": {
                    ("ref" if k == param else k): v
                    for k, v in tool.parameters["properties"].items()
                },
                "required": [
                    "ref" if k == param else k for k in tool.parameters.get("required", [])
                ],
            },
            "binding_args": {"ref": param},
        }
    )
    new_tools = [new_tool if t.name == tool.name else t for t in tools][::-1]
    variant = original.model_copy(update={"skills": renamed[::-1], "tools": new_tools})
    chain = MappingChain(
        steps=[
            SurfaceMapping(
                skills={first: "catalog-answers"},
                tools={tool.name: "stock_lookup"},
                params={tool.name: {param: "ref"}},
            )
        ],
        loaders=[original.settings.load_skill_tool],
    )
    views = paired_views(original, variant, chain)
    before = harness_views(original)
    # in position order the renamed skill would face another skill; by identity it faces itself
    rows = side_by_side(before["Skills"], views["Skills"])
    heading = next(r for r in rows if r.left and r.left.startswith(f"### {first} "))
    assert heading.right is not None and heading.right.startswith("### catalog-answers ")
    assert f"(was {first})" in heading.right
    others = [r for r in rows if r.left and r.left.startswith("### ") and r is not heading]
    assert all(r.tag == "equal" for r in others)
    # the variant's real order is still said
    assert views["Skills"].splitlines()[0] == "skill order: " + ", ".join(
        s.name for s in variant.skills
    )
    rows = side_by_side(before["Tools"], views["Tools"])
    head = next(r for r in rows if r.left and r.left == f"# {tool.name}")
    assert head.right is not None and head.right.startswith("# stock_lookup")
    assert f"was {tool.name}" in head.right and f"{param} → ref" in head.right


def test_the_remapped_gold_uses_the_variant_names_only() -> None:
    """What the model would have seen under the variant: every call names a variant tool and
    only that tool's parameters (a guard: this already held before issue 23)."""
    from core.harness.demo import load_demo_harness
    from studio.logic.variants import VariantRequest, compute_variant, task_choices

    harness = load_demo_harness()
    checked = 0
    for task in task_choices()[:4]:
        for seed in (1, 2):
            view = compute_variant(harness, VariantRequest(task.id, strength="heavy", seed=seed))
            if view.trajectory is None:
                continue
            loader = view.variant.settings.load_skill_tool
            for turn in view.trajectory.turns:
                for call in turn.tool_calls:
                    if call.name == loader:
                        assert view.variant.skill(call.arguments["name"]) is not None
                        continue
                    tool = view.variant.tool(call.name)
                    assert tool is not None, call.name
                    assert set(call.arguments) <= set(tool.parameters["properties"]), call
                    checked += 1
    assert checked


def test_variants_page_says_which_version_it_previews(studio) -> None:  # type: ignore[no-untyped-def]
    studio.show_page("variants")
    vp = studio.variants_page
    wait_until(lambda: vp.view is not None)
    idle()
    doc = studio.ctx.session.doc
    assert vp.view.request.version_id == doc.version_id
    assert vp.view.record["harness"] == {
        "name": "live-host",
        "version": doc.version_id,
        "unsaved_edits": False,
    }
    text = vp.source.text()
    assert text.startswith(f"Previewing live-host · production · {doc.version_id[:8]}")
    assert "unsaved" not in text
    # an edit in the editor: the next preview says it includes unsaved edits
    studio.show_page("harness")
    page = studio.harness_page
    page.tree.select_name("skills", "coupon-push")
    page.skill_editor.description.setPlainText("Offer one coupon when a viewer hesitates.")
    page.skill_editor.flush()
    studio.show_page("variants")
    wait_until(lambda: vp.view.request.unsaved)
    assert vp.source.text().endswith("+ unsaved edits from the editor")


# ----------------------------------------------------------------------------- item 8: counts


def test_header_and_save_dialog_count_alike_and_the_message_uses_the_new_name(
    studio: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = studio.harness_page
    page.tree.select_name("hooks", "no-false-promises")
    ed = page.hook_editor
    ed.reminder.setPlainText("Take back the promise (${reason}).")
    ed.flush()
    assert page.dirty.text().endswith("1 unsaved change")
    ed.name.setText("no-broken-promises")
    ed.edited("name")
    ed.flush()
    assert "no-broken-promises" in [h.name for h in studio.ctx.session.harness.hooks]
    assert page.dirty.text().endswith("2 unsaved changes")
    asked: list[tuple[str, str]] = []

    def ask(parent: Any, suggestion: str, summary: str, labels: Any) -> None:
        asked.append((suggestion, summary))
        return None

    monkeypatch.setattr(dialogs, "ask_save", ask)
    assert page.save() is False
    ((suggestion, summary),) = asked
    assert summary.startswith("2 changes since version")
    assert "no-false-promises" not in suggestion
    assert suggestion == "Edit hook no-broken-promises"
    # undo one: both say one change
    page.undo()
    spin(10)
    assert page.dirty.text().endswith("1 unsaved change")
    assert studio.ctx.session.change_count() == 1
    assert studio.ctx.session.change_texts() == ["Edit hook no-false-promises"]


def test_the_save_blocked_banner_leaves_once_the_field_is_fixed(studio) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select_name("skills", "coupon-push")
    ed = page.skill_editor
    ed.name.setText("coupon push!")
    ed.edited("name")
    ed.flush()
    assert page.save("never") is False
    assert page.banner.isVisible() and "Cannot save yet" in page.banner.text.text()
    ed.name.setText("coupon-push")
    ed.edited("name")
    ed.flush()
    assert not page.banner.isVisible()


def test_parameter_errors_name_the_parameter_not_its_position(studio) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select_name("tools", "check_stock")
    ed = page.tool_editor
    size = ed.param_cards[1]
    assert size.name.text() == "size"
    size.default.setText("[not json")
    size.type.setCurrentText("array")
    ed.flush()
    spin(10)
    assert size.error.isVisible() and "default" in size.error.text()
    blockers = page.save_blockers()
    assert any("parameters.size: default" in line for line in blockers), blockers
    assert not any("parameters[" in line for line in blockers)


def test_param_field_names_rows_by_name_and_unnamed_or_repeated_rows_by_number() -> None:
    from studio.logic.components import ParamRow, param_field, param_row_of_field

    rows = [ParamRow(name="order_id"), ParamRow(name=""), ParamRow(name="order_id")]
    assert [param_field(i, rows) for i in range(3)] == [
        "parameters.order_id",
        "parameters (row 2, no name)",
        "parameters.order_id (row 3)",
    ]
    assert [param_row_of_field(param_field(i, rows), rows) for i in range(3)] == [0, 1, 2]
    assert param_row_of_field("parameters.other", rows) is None
    with pytest.raises(IndexError, match="no parameter row 3"):
        param_field(3, rows)


# ----------------------------------------------------------------------------- sidebar


def test_the_workspace_path_keeps_its_last_folder(studio, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home = tmp_path / ("a-rather-long-parent-folder-" * 2) / "demo-hat-studio"
    assert studio.switch_workspace(home)
    wait_until(lambda: studio.ctx.session.doc is not None and studio.ctx.home == home)
    idle()
    text = studio.workspace_button.text()
    assert text.startswith("…") and text.endswith("/demo-hat-studio"), text
    assert str(home) in studio.workspace_button.toolTip()


def test_a_new_workspace_says_what_the_pages_are_for(qapp: Any, hat_home: Path) -> None:
    """Issue 23: on the first start of a workspace, the loop and its order, once."""
    from studio.main_window import FIRST_LAUNCH_HINT
    from tests.studio_helpers import open_studio, shut

    win = open_studio(hat_home)
    try:
        banner = win.harness_page.banner
        assert banner.isVisibleTo(win) and banner.text.text() == FIRST_LAUNCH_HINT
        assert "Data" in FIRST_LAUNCH_HINT and FIRST_LAUNCH_HINT.index(
            "Train"
        ) < FIRST_LAUNCH_HINT.index("Chat")
    finally:
        shut(win)
    win = open_studio(hat_home)
    try:
        assert win.harness_page.banner.text.text() != FIRST_LAUNCH_HINT
    finally:
        shut(win)


def test_file_dialogs_open_roomy_with_the_workspace_among_their_places(studio) -> None:  # type: ignore[no-untyped-def]
    """#35 item 9: Browse on the Train form opens Qt's file dialog at a size for reading
    names and dates (it used to open at Qt's cramped default), in the detail view, at the
    workspace's datasets folder, with the workspace's folders in its places."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QFileDialog

    (studio.ctx.home / "datasets").mkdir(exist_ok=True)  # as the Data page's first run leaves it
    studio.show_page("train")
    page = studio.page("train")
    idle()
    editor = page.forms["sft"].editors["data"]
    seen: dict[str, Any] = {}

    def look() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QFileDialog):
            QTimer.singleShot(20, look)
            return
        seen["size"] = (dialog.width(), dialog.height())
        seen["view"] = dialog.viewMode()
        seen["places"] = [u.toLocalFile().rstrip("/") for u in dialog.sidebarUrls()]
        seen["at"] = dialog.directory().absolutePath()
        dialog.reject()

    QTimer.singleShot(0, look)
    editor.browse.click()
    home = studio.ctx.home
    assert seen["size"][0] >= dialogs.FILE_DIALOG_MIN[0]
    assert seen["size"][1] >= dialogs.FILE_DIALOG_MIN[1]
    assert seen["view"] == QFileDialog.ViewMode.Detail
    assert str(home / "datasets") in seen["places"] and str(home) in seen["places"]
    assert Path(seen["at"]) == (home / "datasets").resolve()
    assert str(page.forms["sft"].value("data")) != ""  # a rejected dialog changes nothing


def test_a_banner_shown_again_with_the_same_message_is_left_alone(qapp, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """#35 item 9: pages re-render their banner on every model change (a run's monitor on each
    event); an unchanged message must not re-polish the strip (the flicker and jump)."""
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from studio.widgets import common

    polished: list[Any] = []
    real = common.repolish
    monkeypatch.setattr(common, "repolish", lambda w: (polished.append(w), real(w)))
    host = QWidget()
    QVBoxLayout(host).addWidget(banner := common.Banner())
    host.show()
    banner.show_message("error", "Failed: the child crashed.")
    first = len(polished)
    assert first > 0 and banner.isVisible()
    for _ in range(5):
        banner.show_message("error", "Failed: the child crashed.")
    assert len(polished) == first
    banner.show_message("warning", "Failed: the child crashed.")  # a new kind is shown
    assert len(polished) > first and banner.property("kind") == "warning"
    banner.dismiss()
    banner.show_message("warning", "Failed: the child crashed.")  # dismissed: shown again
    assert banner.isVisible()
    host.close()
