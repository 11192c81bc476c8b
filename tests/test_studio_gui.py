"""GUI tests of the studio (offscreen): each screen driven as a user would, with the real store
in the test's HAT_HOME, the real demo harness and the real validation.

Waits use `studio_helpers.wait_until` (a real QEventLoop), never QTest.qWait, which holds the
GIL and starves the worker threads the studio runs store and HSA work in.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from core.harness import export_folder, import_folder
from core.harness.demo import demo_harness_path
from core.store import Store
from studio import dialogs, theme
from studio.context import StoreChange
from studio.jobs import jobs, reset_jobs
from studio.workspace import AnotherInstance, InstanceGuard
from tests.studio_helpers import idle, open_studio, shut, spin, wait_until


@pytest.fixture
def studio(qapp, hat_home: Path):  # type: ignore[no-untyped-def]
    win = open_studio(hat_home, busy_timeout=0.3)
    yield win
    shut(win)


def store_log(home: Path) -> list:  # type: ignore[type-arg]
    with Store.open(home / "hat.db") as store:
        return store.log("live-host")


# ----------------------------------------------------------------------------- shell


def test_first_launch_opens_demo_and_restores_state(qapp, hat_home: Path) -> None:
    win = open_studio(hat_home)
    log = store_log(hat_home)
    assert len(log) == 1 and log[0].labels == ("production",)
    assert win.ctx.session.harness.name == "live-host"
    page = win.harness_page
    assert page.tree.select_name("skills", "coupon-push")
    spin(20)
    win.show_page("variants")
    win.toggle_theme()
    assert theme.current() == "dark"
    win.resize(1300, 840)
    shut(win)

    win = open_studio(hat_home, size=None, theme_name=None)
    try:
        assert len(store_log(hat_home)) == 1  # the demo is imported once
        assert win.current_page() == "variants"
        assert theme.current() == "dark"
        assert (win.width(), win.height()) == (1300, 840)
        assert win.harness_page.stack.currentWidget() is win.harness_page.skill_editor
        assert win.harness_page.skill_editor.name.text() == "coupon-push"
        # A saved selection of the overview (or a stale one) restores without an error.
        assert win.harness_page.tree.select_name("overview", "")
        assert not win.harness_page.tree.select_name("no-such-group", "x")
    finally:
        theme.apply(qapp, "light")
        shut(win)


def test_shortcuts_switch_pages_and_focus_filter(studio) -> None:  # type: ignore[no-untyped-def]
    studio.activateWindow()
    wait_until(studio.isActiveWindow)
    QTest.keyClick(studio, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert studio.current_page() == "variants"
    QTest.keyClick(studio, Qt.Key.Key_6, Qt.KeyboardModifier.ControlModifier)
    assert studio.current_page() == "chat"
    QTest.keyClick(studio, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert studio.current_page() == "harness"
    tree = studio.harness_page.tree
    assert tree.filter.hasFocus()
    QTest.keyClicks(tree.filter, "coupon")
    visible = [
        tree.tree.topLevelItem(i).child(j).text(0)
        for i in range(tree.tree.topLevelItemCount())
        for j in range(tree.tree.topLevelItem(i).childCount())
        if not tree.tree.topLevelItem(i).child(j).isHidden()
    ]
    assert "coupon-push" in visible and "product-qa" not in visible
    labels = {b.toolTip() for b in studio.nav_buttons.values()}
    assert "Harness  (Ctrl+1)" in labels and "Runs  (Ctrl+7)" in labels
    idle()
    assert "No model server" in studio.status_server.text()
    assert "0 jobs running" in studio.status_jobs.text()


def test_second_instance_on_same_home_is_refused(studio, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(AnotherInstance) as err:
        InstanceGuard(hat_home).acquire()
    assert "already open on this workspace" in str(err.value)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run(
        [sys.executable, "-m", "studio", "--home", str(hat_home)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 2
    assert "already open on this workspace" in out.stderr
    assert len(store_log(hat_home)) == 1  # nothing written by the refused instance


# ----------------------------------------------------------------------------- skills


def test_edit_skill_undo_redo_and_save_version(studio, hat_home: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    assert page.tree.select_name("skills", "coupon-push")
    ed = page.skill_editor
    ed.markdown.setFocus()
    ed.markdown.moveCursor(ed.markdown.textCursor().MoveOperation.End)
    QTest.keyClick(ed.markdown, Qt.Key.Key_Return)
    QTest.keyClicks(ed.markdown, "Never offer a second coupon.")
    ed.flush()
    wait_until(lambda: "Never offer a second coupon." in ed.preview.toPlainText())
    assert studio.ctx.session.dirty
    assert "unsaved" in page.dirty.text()
    ed.description.setPlainText("Offer the best coupon when a viewer hesitates about price.")
    ed.flush()
    page.undo()
    assert studio.ctx.session.harness.skill("coupon-push").description.startswith("When a viewer")
    assert ed.description.toPlainText().startswith("When a viewer")
    page.redo()
    assert ed.description.toPlainText().startswith("Offer the best coupon")

    monkeypatch.setattr(dialogs, "ask_save", lambda *a, **k: ("Coupon push: shorter", "staging"))
    studio.save_action.trigger()
    idle()
    assert not studio.ctx.session.dirty
    log = store_log(hat_home)
    assert [v.message for v in log] == ["Coupon push: shorter", log[1].message]
    assert log[0].labels == ("staging",)
    with Store.open(hat_home / "hat.db") as store:
        skill = store.load("staging", "live-host").skill("coupon-push")
    assert skill is not None and skill.body.endswith("Never offer a second coupon.")

    # Ctrl+S with nothing changed offers no identical version (#35 item 9)
    asked: list[object] = []
    monkeypatch.setattr(dialogs, "ask_save", lambda *a, **k: asked.append(a) or None)
    studio.save_action.trigger()
    idle()
    assert asked == [] and len(store_log(hat_home)) == len(log)
    assert "No changes since version" in studio.toast.text.text()


def test_skill_field_errors_are_inline_and_block_saving(studio, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select_name("skills", "chit-chat")
    ed = page.skill_editor
    ed.name.setText("Chit Chat!")
    ed.edited("name")
    ed.flush()
    assert ed.fields["name"].error.isVisible()
    assert "lowercase" in ed.fields["name"].error.text()
    ed.name.setText("product-qa")
    ed.edited("name")
    ed.flush()
    assert "duplicate skill name" in ed.fields["name"].error.text()
    assert page.save("should not happen") is False
    assert "Cannot save yet" in page.banner.text.text()
    assert len(store_log(hat_home)) == 1
    # broken input survives switching away and back
    page.tree.select_name("tools", "check_stock")
    page.tree.select_name("skills", "chit-chat")
    assert ed.name.text() == "product-qa"
    assert "duplicate skill name" in ed.fields["name"].error.text()
    ed.name.setText("small-talk")
    ed.edited("name")
    ed.flush()
    assert not ed.fields["name"].error.isVisible()
    assert studio.ctx.session.doc.drafts == {}
    assert studio.ctx.session.harness.skill("small-talk") is not None


def test_broken_front_matter_keeps_text_and_names_file_and_field(studio) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select_name("skills", "coupon-push")
    ed = page.skill_editor
    ed.tabs.setCurrentIndex(1)
    broken = ed.raw.toPlainText().replace("name: coupon-push", "name: [coupon-push", 1)
    ed.raw.setPlainText(broken)
    ed.flush()
    assert ed.raw_banner.isVisible()
    message = ed.raw_banner.text.text()
    assert "skills/coupon-push/SKILL.md" in message and "front matter, line" in message
    assert ed.raw.extraSelections()  # the error line is marked
    assert studio.ctx.session.harness.skill("coupon-push") is not None  # last valid kept
    page.tree.select_name("skills", "product-qa")
    page.tree.select_name("skills", "coupon-push")
    assert ed.raw.toPlainText() == broken
    fixed = broken.replace("name: [coupon-push", "name: coupon-push").replace(
        "# Coupon push", "# Coupon push (edited raw)"
    )
    ed.raw.setPlainText(fixed)
    ed.flush()
    assert not ed.raw_banner.isVisible()
    assert "# Coupon push (edited raw)" in ed.markdown.toPlainText()
    assert studio.ctx.session.harness.skill("coupon-push").body.startswith(
        "# Coupon push (edited raw)"
    )


# ----------------------------------------------------------------------------- tools


def test_tool_form_validates_as_you_type_and_saves(studio, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select_name("tools", "check_stock")
    ed = page.tool_editor
    assert [c.name.text() for c in ed.param_cards] == ["link_no", "size", "color"]
    link = ed.param_cards[0]
    link.default.setText("first")
    link.changed.emit()
    ed.flush()
    spin(10)  # child widgets added to a shown parent appear on the next event loop pass
    assert link.error.isVisible() and "not an integer" in link.error.text()
    assert link.default.property("invalid")
    assert "1 field to fix" in page.dirty.text()
    size = ed.param_cards[1]  # a second broken field of the same tool counts too
    size.enum.setText("S, M, L")
    size.type.setCurrentText("integer")
    ed.flush()
    assert "2 fields to fix" in page.dirty.text()
    size.enum.setText("")
    size.type.setCurrentText("string")
    link.default.setText("")
    link.changed.emit()
    ed.flush()
    assert not link.error.isVisible()
    ed.add_param.click()
    card = ed.param_cards[-1]
    card.name.setText("in_stock_only")
    card.type.setCurrentText("boolean")
    card.description.setText("Only sizes with stock left.")
    card.default.setText("false")
    card.changed.emit()
    ed.flush()
    spin(10)
    assert card.isVisible() and not card.error.isVisible()
    assert page.save("check_stock: in_stock_only") is True
    idle()
    with Store.open(hat_home / "hat.db") as store:
        tool = store.load("head", "live-host").tool("check_stock")
    assert tool is not None
    assert tool.parameters["properties"]["in_stock_only"] == {
        "type": "boolean",
        "description": "Only sizes with stock left.",
        "default": False,
    }


def test_pasting_invalid_json_schema_shows_errors_and_keeps_input(studio) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select_name("tools", "check_stock")
    ed = page.tool_editor
    ed.tabs.setCurrentIndex(1)
    data = json.loads(ed.raw.toPlainText())
    data["function"]["parameters"]["properties"]["size"]["type"] = "strin"
    pasted = json.dumps(data, indent=2)
    ed.raw.setPlainText(pasted)
    ed.flush()
    assert ed.raw_banner.isVisible()
    text = ed.raw_banner.text.text()
    assert "tools/check_stock.json" in text and "properties/size" in text
    assert ed.raw.toPlainText() == pasted
    assert (
        studio.ctx.session.harness.tool("check_stock").parameters["properties"]["size"]["type"]
        == "string"
    )
    ed.raw.setPlainText('{"type": "function",\n  "function": {"name": "check_stock",')
    ed.flush()
    assert "line 2" in ed.raw_banner.text.text() or "line 3" in ed.raw_banner.text.text()
    data["function"]["parameters"]["properties"]["size"]["type"] = "string"
    data["function"]["description"] = "Stock per size and colour (pasted)."
    ed.raw.setPlainText(json.dumps(data, indent=2))
    ed.flush()
    assert not ed.raw_banner.isVisible()
    assert ed.description.toPlainText() == "Stock per size and colour (pasted)."


# ----------------------------------------------------------------------------- hooks and prompt


def test_hook_test_box_runs_the_hook_under_qasync(studio, qapp) -> None:  # type: ignore[no-untyped-def]
    import qasync

    page = studio.harness_page
    page.tree.select_name("hooks", "no-false-promises")
    ed = page.hook_editor
    assert ed.sample_fields["reply"].isVisible()
    assert not ed.matcher.isEnabled()  # a reply hook: no tool to filter
    assert "Not used" in ed.fields["matcher"].hint.text()
    page.tree.select_name("hooks", "link-number-range")  # before tool call
    assert ed.matcher.isEnabled() and "Which tools" in ed.fields["matcher"].hint.text()
    page.tree.select_name("hooks", "no-false-promises")
    loop = qasync.QEventLoop(qapp, already_running=False)
    asyncio.set_event_loop(loop)
    try:

        async def run_and_wait() -> None:
            ed.run_test()  # a running asyncio loop: the hook runs as a task on it
            assert jobs().running == 1
            while jobs().running:
                await asyncio.sleep(0.01)

        loop.run_until_complete(asyncio.wait_for(run_and_wait(), 20))
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert ed.last_outcome.decision == "block"
    assert ed.decision.text() == "BLOCK"
    assert "forbidden claim" in ed.reason.text()
    assert ed.reminder_out.text().startswith("Model is told:")
    ed.t_reply.setPlainText("Link 3 is 9.99 USD right now.")
    ed.run_test()  # no running loop: a worker thread with asyncio.run
    idle()
    assert ed.decision.text() == "ALLOW"
    # edit params through the kind-specific form: a new pattern blocks the calm reply
    ed.p_patterns.setPlainText(ed.p_patterns.toPlainText() + "\n\\bright now\\b")
    ed.flush()
    ed.run_test()
    idle()
    assert ed.decision.text() == "BLOCK"
    ed.p_patterns.setPlainText("(unclosed")
    ed.flush()
    assert "not a valid regex" in ed.fields["params"].error.text()


def test_prompt_reorder_style_and_template_errors(studio) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select("prompt", "persona")
    ed = page.prompt_editor
    before = ed.rendered.toPlainText()
    assert before.startswith("## Who you are")
    ed.move_section(0, 2)
    assert [s.id for s in studio.ctx.session.harness.prompt.sections][:3] == [
        "rules",
        "style",
        "persona",
    ]
    assert ed.rendered.toPlainText().startswith("## Ground rules")
    ed.style_picker.set_value("xml", emit=True)
    ed.flush()
    assert ed.rendered.toPlainText().startswith("<ground_rules>")
    ed.select_section("persona")
    ed.s_template.setPlainText("You are ${host_name} of ${unknown_var}.")
    ed.flush()
    assert "unknown_var" in ed.f_template.error.text()
    assert page.save("nope") is False
    ed.s_template.setPlainText("You are ${host_name}.")
    ed.flush()
    assert not ed.f_template.error.isVisible()
    page.undo()
    assert studio.ctx.session.harness.prompt.sections[2].template.startswith(
        "You are ${host_name}, the digital"
    )
    assert studio.ctx.session.harness.prompt.style.value == "xml"
    page.undo()
    assert studio.ctx.session.harness.prompt.style.value == "markdown"


# ----------------------------------------------------------------------------- versions


def test_versions_diff_label_move_and_rollback(studio, hat_home: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    announced: list[StoreChange] = []
    studio.ctx.storeChanged.connect(announced.append)
    page.tree.select_name("skills", "coupon-push")
    page.skill_editor.description.setPlainText("Offer one coupon when a viewer hesitates.")
    page.skill_editor.flush()
    assert page.save("v2: coupon description")
    idle()
    page.tree.select_name("tools", "check_stock")
    page.tool_editor.description.setPlainText("Stock by size and colour.")
    page.tool_editor.flush()
    assert page.save("v3: check_stock description")
    idle()
    view = page.versions
    page.tabs.setCurrentIndex(1)
    idle()
    assert [v.message for v in view.versions][:2] == [
        "v3: check_stock description",
        "v2: coupon description",
    ]
    view.select_version(view.versions[0].id)
    idle()
    assert [d.path for d in view.diffs] == ["tools/check_stock.json"]
    assert any(r.tag == "replace" for r in view.diff.rows)
    # any two versions: oldest -> newest shows both components
    view.compare(view.versions[2].id, view.versions[0].id)
    idle()
    assert [d.path for d in view.diffs] == ["skills/coupon-push/SKILL.md", "tools/check_stock.json"]
    # labels: by menu action and by a dropped chip
    view.select_version(view.versions[1].id)
    idle()
    view._fill_label_menu()
    action = next(a for a in view.label_menu.actions() if a.text() == "Move 'production' here")
    action.trigger()
    idle()
    assert view.labels_of(view.versions[1].id) == ("production",)
    rows = [view.list.itemWidget(view.list.item(i)) for i in range(view.list.count())]
    rows[0].label_dropped.emit("production", rows[0].info.id)
    idle()
    assert view.labels_of(view.versions[0].id) == ("production",)
    # rollback to the first version: a new version with its content
    monkeypatch.setattr(dialogs, "confirm", lambda *a, **k: True)
    view.select_version(view.versions[2].id)
    view._rollback_selected()
    idle()
    wait_until(lambda: studio.ctx.session.doc.version_id == view.versions[0].id)
    log = store_log(hat_home)
    assert len(log) == 4 and log[0].message.startswith("Roll back to")
    assert log[0].tree_hash == log[3].tree_hash
    assert studio.ctx.session.harness.tool("check_stock").description.startswith("Current stock")
    # two saves, two label moves, one rollback: each job announced what it wrote, once
    assert announced == [StoreChange.VERSIONS] * 5


def test_import_folder_with_errors_lists_them_and_stores_nothing(
    studio, hat_home: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    shown: list = []  # type: ignore[type-arg]
    monkeypatch.setattr(
        dialogs, "show_problems", lambda parent, title, text, problems: shown.append(list(problems))
    )
    bad = tmp_path / "bad-host"
    export_folder(import_folder(demo_harness_path()), bad)
    skill = bad / "skills" / "coupon-push" / "SKILL.md"
    skill.write_text(skill.read_text().replace("name: coupon-push", "name: [coupon-push", 1))
    tool = bad / "tools" / "check_stock.json"
    data = json.loads(tool.read_text())
    data["function"]["parameters"]["properties"]["size"]["type"] = "strin"
    tool.write_text(json.dumps(data))
    view = studio.harness_page.versions
    announced: list[StoreChange] = []
    studio.ctx.storeChanged.connect(announced.append)
    view.import_folder(bad)
    idle()
    assert len(shown) == 1
    files = {(p.file, p.field.split(",")[0]) for p in shown[0]}
    assert ("skills/coupon-push/SKILL.md", "front matter") in files
    assert any(f == "tools/check_stock.json" for f, _ in files)
    assert "not imported" in view.banner.text.text()
    assert len(store_log(hat_home)) == 1
    good = tmp_path / "live-host"
    export_folder(import_folder(demo_harness_path()), good)
    (good / "prompt" / "persona.md").write_text("You are ${host_name}, imported.\n")
    view.import_folder(good)
    idle()
    log = store_log(hat_home)
    assert len(log) == 2 and log[0].message.startswith("Imported from")
    # the refused import rolled back (a reload finds nothing); a known name is no new harness
    assert announced == [StoreChange.VERSIONS, StoreChange.VERSIONS]
    other = tmp_path / "other-host"
    export_folder(
        import_folder(demo_harness_path()).model_copy(update={"name": "other-host"}), other
    )
    view.import_folder(other)
    idle()
    assert announced[-1] == StoreChange.VERSIONS | StoreChange.HARNESSES
    assert "other-host" in studio.ctx.harness_names
    out = tmp_path / "exported"
    view.export_version(log[0].id, out)
    idle()
    assert import_folder(out).prompt.sections[0].template == "You are ${host_name}, imported.\n"


def test_locked_database_keeps_edits_and_saves_later(studio, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select_name("skills", "after-sales")
    page.skill_editor.description.setPlainText("Returns, exchanges and warranty questions.")
    page.skill_editor.flush()
    other = sqlite3.connect(hat_home / "hat.db", isolation_level=None, timeout=0.1)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        assert page.save("while locked") is True
        idle()
        assert "locked by another process" in page.banner.text.text()
        assert "edits are kept" in page.banner.text.text()
        assert studio.ctx.session.dirty
        assert (
            page.skill_editor.description.toPlainText()
            == "Returns, exchanges and warranty questions."
        )
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert len(store_log(hat_home)) == 1
    assert page.save("after the lock") is True
    idle()
    assert not studio.ctx.session.dirty
    log = store_log(hat_home)
    assert log[0].message == "after the lock"


def test_unsaved_edits_survive_a_crash(qapp, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    win = open_studio(hat_home)
    page = win.harness_page
    page.tree.select_name("skills", "chit-chat")
    page.skill_editor.description.setPlainText("Small talk between questions.")
    page.skill_editor.flush()
    page.autosave_now()
    idle()
    assert (hat_home / "studio-unsaved.json").exists()
    # the process dies: no close event, no save; its lock and its database connections go
    # with it (released here by hand, since this process lives on)
    win.guard.release()
    reset_jobs()
    store = win.ctx.store
    win.deleteLater()
    spin(5)
    store.close()
    win = open_studio(hat_home)
    try:
        session = win.ctx.session
        assert session.harness.skill("chit-chat").description == "Small talk between questions."
        assert session.dirty
        assert "Recovered unsaved edits" in win.harness_page.banner.text.text()
        win.harness_page.undo()
        assert session.harness.skill("chit-chat").description.startswith("Reply to greetings")
    finally:
        shut(win)


def test_close_with_unsaved_edits_asks(studio, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    page = studio.harness_page
    page.tree.select_name("skills", "size-advice")
    page.skill_editor.description.setPlainText("Sizing help.")
    page.skill_editor.flush()
    asked: list[str] = []
    monkeypatch.setattr(
        dialogs, "ask_unsaved", lambda parent, what: asked.append(what) or dialogs.CANCEL
    )
    assert studio.close() is False
    assert asked == ["closing"] and studio.isVisible()
    assert studio.ctx.session.harness.skill("size-advice").description == "Sizing help."
    monkeypatch.setattr(dialogs, "ask_unsaved", lambda parent, what: dialogs.DISCARD)
    assert studio.close() is True


# ------------------------------------------------------------------ variants and workspace


def test_variants_screen_and_another_seed(studio, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    studio.show_page("variants")
    vp = studio.variants_page
    wait_until(lambda: vp.view is not None)
    first = vp.view
    assert first.applied and first.gold_before and first.gold_after
    assert vp.gold_diff.rows and vp.harness_diff.rows
    vp.seed.setValue(first.request.seed + 41)
    wait_until(lambda: vp.view is not first and vp.view.request.seed == first.request.seed + 41)
    assert vp.view.after != first.after or vp.view.applied != first.applied
    seed = vp.seed.value()
    vp.another.click()
    assert vp.seed.value() != seed
    wait_until(lambda: vp.view.request.seed == vp.seed.value())
    vp.bank.set_value("heldout", emit=True)
    for key in ("skill_ids", "skill_content", "tool_schemas", "hooks"):
        vp.dimension_buttons[key].setChecked(False)
    wait_until(
        lambda: vp.view.request.dimensions == ("prompt",) and vp.view.request.bank == "heldout"
    )
    assert all(name.startswith("prompt.") for name in vp.view.applied)
    vp.dimension_buttons["prompt"].setChecked(False)  # the last dimension stays on
    assert vp.dimension_buttons["prompt"].isChecked()
    folder = tmp_path / "variant"
    vp.export(folder)
    idle()
    assert import_folder(folder) == vp.view.variant
    assert (tmp_path / "variant.variant.json").exists()


def test_switch_workspace_opens_another_home(studio, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    other = tmp_path / "second-home"
    assert studio.switch_workspace(other)
    wait_until(lambda: studio.ctx.session.doc is not None and studio.ctx.home == other)
    idle()
    assert (other / "hat.db").exists() and (other / "studio.lock").exists()
    assert str(other) in studio.workspace_button.toolTip()
    with pytest.raises(AnotherInstance):
        InstanceGuard(other).acquire()


@pytest.mark.parametrize("size", [(1080, 680), (1320, 720)], ids=["minimum", "full-sidebar"])
def test_every_screen_fits_a_small_window(qapp, hat_home: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    """At the window's minimum size, and at the narrowest width that keeps the sidebar's
    names, nothing is cut through, drawn over something else or scrolled sideways, and the
    prompt template (what the user edits there) keeps a usable width."""
    from tests.studio_helpers import layout_problems

    win = open_studio(hat_home, size=size)
    try:
        assert (win.width(), win.height()) == size
        assert win.compact_sidebar == (size[0] < 1320)
        for key, b in win.nav_buttons.items():  # icons only or not, each still says its page
            assert b.accessibleName() and b.accessibleName() in b.toolTip(), key
            assert b.toolButtonStyle() == (
                Qt.ToolButtonStyle.ToolButtonIconOnly
                if win.compact_sidebar
                else Qt.ToolButtonStyle.ToolButtonTextBesideIcon
            )
        page = win.harness_page
        panes = [("overview", ""), ("prompt", "rules"), ("skills", "coupon-push")]
        panes += [("tools", "check_stock"), ("hooks", "no-false-promises")]
        found: dict[str, list[str]] = {}
        for kind, item in panes:
            assert page.tree.select_name(kind, item)
            spin(50)
            found[kind] = layout_problems(page)
            if kind == "prompt" and (width := page.prompt_editor.s_template.width()) < 300:
                found[kind].append(f"the template editor is {width} px wide")
        page.tabs.setCurrentIndex(1)
        idle()
        found["versions"] = layout_problems(page)
        win.show_page("variants")
        wait_until(lambda: win.variants_page.view is not None)
        spin(50)
        found["variants"] = layout_problems(win.variants_page)
        for key in ("data", "train", "evaluate", "chat", "runs"):
            win.show_page(key)
            idle()
            shown = win.pages.currentWidget()
            tabs = getattr(shown, "tabs", None)
            for index in range(tabs.count() if tabs is not None else 1):
                if tabs is not None:
                    tabs.setCurrentIndex(index)
                    idle()
                found[f"{key} {index}"] = layout_problems(shown)
        lines = [f"{where}: {problem}" for where, problems in found.items() for problem in problems]
        assert not lines, "\n".join(lines)
    finally:
        shut(win)


def test_a_toast_stays_centred_when_the_window_is_resized(studio) -> None:  # type: ignore[no-untyped-def]
    toast = studio.toast
    toast.show_text("Saved version abc123")
    studio.resize(1100, 700)
    spin(30)
    parent = toast.parentWidget()
    assert abs(toast.geometry().center().x() - parent.width() // 2) <= 2
    assert toast.geometry().bottom() < parent.height()
    studio.show_page("data")  # the stack raises the page it shows; the toast stays on top
    spin(30)
    assert parent.children().index(toast) > parent.children().index(parent.currentWidget())
    under = parent.childAt(toast.geometry().center())
    assert under is not None and (under is toast or toast.isAncestorOf(under))


def test_a_long_harness_name_is_elided_in_the_header(qapp, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    """A long name ends in "…" (whole in the tooltip) instead of pushing the header's
    actions out of the window or being cut mid-letter."""
    from PySide6.QtWidgets import QLabel

    name = "luma-weekend-live-shopping-host-production-eu-west-variant-b"
    harness = import_folder(demo_harness_path()).model_copy(update={"name": name})
    hat_home.mkdir(parents=True, exist_ok=True)
    with Store.open(hat_home / "hat.db") as store:
        store.commit(harness, "a harness with a long name")
    win = open_studio(hat_home, size=(1080, 680))
    try:
        assert win.ctx.harness_name == name
        header = win.harness_page.header
        assert header.title.text() == f"Harness · {name}"
        shown = QLabel.text(header.title)
        assert shown.endswith("…") and shown[:-1] in header.title.text()
        assert name in header.title.toolTip()
        save = win.harness_page.save_button
        right = save.mapTo(win, save.rect().topRight()).x()
        assert right < win.width()
        assert header.title.fontMetrics().horizontalAdvance(shown) <= header.title.width()
        assert name in win.harness_page.harness_picker.toolTip()
        tree = win.harness_page.tree
        assert tree.select_name("tools", "check_stock")
        assert tree.tree.currentItem().toolTip(0).startswith("check_stock\n\nCurrent stock")
    finally:
        shut(win)


def test_a_job_column_says_what_its_empty_list_will_hold(qapp) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QPushButton, QWidget

    from studio.pages.job_view import JobColumn

    host = QWidget()
    column = JobColumn("Idle", (("done", "Items"),), QPushButton(), QPushButton(), "Latest")
    host.setLayout(column)
    host.show()
    assert column.log_hint.isVisible()
    column.add_item("test.price.0001  ok", True)
    assert not column.log_hint.isVisible()
    column.log.clear()  # a new run starts with an empty list
    assert column.log_hint.isVisible()
    host.close()


def test_the_rendered_prompt_steps_aside_in_a_narrow_editor(qapp, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    """At the minimum size the rendered prompt is hidden (and not re-rendered per edit); the
    Rendered toggle brings it back up to date, and the user's choice outlives a resize."""
    win = open_studio(hat_home, size=(1080, 680))
    try:
        page = win.harness_page
        assert page.tree.select_name("prompt", "rules")
        idle()
        ed = page.prompt_editor
        assert not ed.show_rendered.isChecked() and not ed.rendered_pane.isVisible()
        ed.move_section(0, 2)  # an edit while hidden
        idle()
        ed.show_rendered.click()
        assert ed.rendered_pane.isVisible()
        assert ed.rendered.toPlainText().startswith("## Ground rules")
        win.resize(1090, 690)
        spin(30)
        assert ed.show_rendered.isChecked()  # chosen by the user: the width no longer decides
    finally:
        shut(win)


def test_the_ui_font_is_the_bundled_inter_in_every_weight(qapp) -> None:  # type: ignore[no-untyped-def]
    """The layout is drawn for Inter's widths; it ships with the studio, so a machine without
    it (a bare Linux falls back to the wider DejaVu Sans) draws the same layout, and the
    weights the stylesheet asks for (400 to 700) come from real faces, not synthesised bold."""
    from PySide6.QtGui import QFont, QFontDatabase, QFontInfo

    theme.apply(qapp, "light")
    assert QFontInfo(qapp.font()).family() == "Inter"
    styles = set(QFontDatabase.styles("Inter"))
    assert {"Regular", "Medium", "Semi Bold", "Bold"} <= styles, styles
    bold = theme.ui_font()
    bold.setWeight(QFont.Weight.Bold)
    assert QFontInfo(bold).bold() and QFontInfo(bold).family() == "Inter"


def test_renaming_a_tool_carries_to_hooks_and_skills_as_one_undo_step(studio) -> None:  # type: ignore[no-untyped-def]
    """#35 item 3 in a real window: Rename… on a tool lists the places that name it, a prose
    place can be kept as written, the hook matcher and the other skills follow, and one undo
    takes it all back. A clash is refused in the dialog with the clash named; a rename typed
    into the name field by hand leaves the matcher behind, and Problems says so."""
    from PySide6.QtCore import QTimer

    page = studio.harness_page
    assert page.tree.select_name("tools", "check_stock")
    ed = page.tool_editor
    assert ed.rename_button.isVisible()
    seen: dict[str, object] = {}

    def act() -> None:
        dialog = ed.open_rename
        if dialog is None:
            QTimer.singleShot(20, act)
            return
        dialog.name.setText("get_product_by_link")
        seen["clash"] = dialog.status.text()
        seen["clash_ok"] = dialog.ok.isEnabled()
        dialog.name.setText("stock_level")
        texts = [dialog.places.item(i).text() for i in range(dialog.places.count())]
        seen["places"] = texts
        keep = texts.index("skills/size-advice/SKILL.md\nbody")
        dialog.places.item(keep).setCheckState(Qt.CheckState.Unchecked)
        matcher = texts.index("hooks/link-number-range.yaml\nmatcher")
        seen["matcher_checkable"] = bool(
            dialog.places.item(matcher).flags() & Qt.ItemFlag.ItemIsUserCheckable
        )
        dialog.ok.click()

    QTimer.singleShot(0, act)
    ed.rename_button.click()
    assert "a tool named 'get_product_by_link' already exists" in str(seen["clash"])
    assert seen["clash_ok"] is False and seen["matcher_checkable"] is False
    assert "tools/check_stock.json\nname" in seen["places"]  # type: ignore[operator]
    harness = studio.ctx.session.harness
    assert harness.tool("stock_level") is not None and harness.tool("check_stock") is None
    hook = next(h for h in harness.hooks if h.name == "link-number-range")
    assert "stock_level" in hook.matcher.split("|")
    assert "check_stock" in harness.skill("size-advice").body  # kept as written
    assert "check_stock" not in harness.skill("product-qa").body
    page.undo()
    harness = studio.ctx.session.harness
    assert harness.tool("check_stock") is not None
    assert "check_stock" in next(h for h in harness.hooks if h.name == "link-number-range").matcher
    assert "check_stock" in harness.skill("product-qa").body

    # by hand: the name field alone; the Problems panel flags the matcher left behind
    ed.name.setText("stock_level")
    ed.edited("name")
    ed.flush()
    page._select("overview", None)
    overview = page.overview
    wait_until(overview.isVisible)
    overview.refresh_problems()
    items = [overview.problems.item(i).text() for i in range(overview.problems.count())]
    assert any("link-number-range" in t and "'check_stock'" in t for t in items), items

    # saved, the Versions view shows the tool as renamed (not removed + added), diffed
    # against its old file
    assert page.save("rename check_stock by hand")
    idle()
    page.tabs.setCurrentIndex(1)
    idle()
    view = page.versions
    view.select_version(view.versions[0].id)
    idle()
    texts = [view.changes.item(i).text() for i in range(view.changes.count())]
    assert "check_stock → stock_level\ntool · renamed" in texts, texts
    assert not any("removed" in t or "added" in t for t in texts), texts
    row = texts.index("check_stock → stock_level\ntool · renamed")
    view.changes.setCurrentRow(row)
    idle()
    assert any(r.tag == "replace" for r in view.diff.rows)
