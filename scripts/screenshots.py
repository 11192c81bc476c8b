"""Capture PNGs of the studio's screens into docs/screenshots/ (offscreen, no display needed).

    python scripts/screenshots.py [--out docs/screenshots] [--width 1440 --height 900]

Runs the real application on a fresh temporary workspace (the demo harness), drives it the way
a user would (edits, saves, label moves, a hook test, a variant, an oracle data generation,
oracle evaluations and an impact gate), and grabs the window with `QWidget.grab()`. The
editing screens are captured in both themes. Train, Chat and Runs need training runs and a
served model: their GUI tests capture them (HAT_SCREENSHOTS, HAT_CHAT_SCREENSHOTS).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--width", type=int, default=1440)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="hat-shots-"))
    os.environ["HAT_HOME"] = str(home)

    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from studio import theme
    from studio.app import create_app, create_window
    from studio.workspace import InstanceGuard

    def spin(ms: int = 60) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    def wait(pred, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
        end = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > end:
                raise SystemExit("timed out waiting for the studio")
            spin(20)

    app = create_app([])
    guard = InstanceGuard(home)
    guard.acquire()
    win = create_window(home, theme_name="light", guard=guard)
    win.resize(args.width, args.height)
    win.show()
    wait(lambda: win.ctx.session.doc is not None)
    spin(300)
    win.toast.hide()
    page = win.harness_page
    session = win.ctx.session
    shots: list[str] = []

    def idle() -> None:
        from studio.jobs import jobs

        for _ in range(2):  # queued timers may start more jobs
            wait(lambda: jobs().running == 0)
            spin(100)
        win.toast.hide()

    def grab(name: str) -> None:
        idle()
        path = out / f"{name}.png"
        win.grab().save(str(path))
        shots.append(path.name)
        print(path)

    def both(name: str, setup) -> None:  # type: ignore[no-untyped-def]
        for theme_name in ("light", "dark"):
            theme.apply(app, theme_name)
            setup()
            grab(f"{name}-{theme_name}")
        theme.apply(app, "light")

    # ---- history: two saved edits and a label move, so Versions has something to show
    doc = session.doc
    assert doc is not None
    page.tree.select_name("skills", "coupon-push")
    spin(100)
    ed = page.skill_editor
    ed.markdown.setPlainText(
        ed.markdown.toPlainText().replace("Offer it once", "Offer it once, warmly")
        + "\n## Tone\nKeep it light: one sentence about the saving, then back to the product.\n"
    )
    ed.flush()
    page.save("Coupon push: warmer offer, tone section")
    idle()
    page.tree.select_name("tools", "check_stock")
    spin(100)
    te = page.tool_editor
    te.description.setPlainText(
        "Live stock of a product per size and colour. Leave size or color out to get every variant."
    )
    te.flush()
    page.save("check_stock: clearer description", label_name="staging")
    idle()

    # ---- harness screens
    def overview() -> None:
        win.show_page("harness")
        page.tabs.setCurrentIndex(0)
        page.tree.select("overview", None)

    both("harness-overview", overview)

    def skill() -> None:
        win.show_page("harness")
        page.tabs.setCurrentIndex(0)
        page.tree.select_name("skills", "coupon-push")
        page.skill_editor.tabs.setCurrentIndex(0)

    both("harness-skill", skill)

    def tool() -> None:
        win.show_page("harness")
        page.tabs.setCurrentIndex(0)
        page.tree.select_name("tools", "check_stock")
        page.tool_editor.tabs.setCurrentIndex(0)

    both("harness-tool", tool)

    def hook() -> None:
        win.show_page("harness")
        page.tabs.setCurrentIndex(0)
        page.tree.select_name("hooks", "no-false-promises")
        spin(50)
        page.hook_editor.run_test()
        idle()

    both("harness-hook", hook)

    def prompt() -> None:
        win.show_page("harness")
        page.tabs.setCurrentIndex(0)
        page.tree.select("prompt", "rules")

    both("harness-prompt", prompt)

    # validation errors shown inline (not saved; discarded afterwards)
    tool()
    cards = page.tool_editor.param_cards
    cards[0].default.setText("first")
    cards[0].changed.emit()
    cards[1].enum.setText("S, M, L")
    cards[1].type.setCurrentText("integer")
    page.tool_editor.flush()
    grab("harness-tool-errors-light")
    skill()
    page.skill_editor.tabs.setCurrentIndex(1)
    raw = page.skill_editor.raw
    raw.setPlainText(raw.toPlainText().replace("name: coupon-push", "name: [coupon-push", 1))
    page.skill_editor.flush()
    grab("harness-skill-broken-front-matter-light")
    session.discard()
    spin(100)

    # ---- versions
    def versions() -> None:
        win.show_page("harness")
        page.tabs.setCurrentIndex(1)
        wait(lambda: len(page.versions.versions) >= 3)
        idle()
        page.versions.select_version(page.versions.versions[1].id)
        idle()
        page.versions.changes.setCurrentRow(0)

    both("versions", versions)

    # ---- variants
    vp = win.variants_page

    def variants() -> None:
        win.show_page("variants")
        wait(lambda: vp._ready)
        idx = vp.task.findData("test.coupon.0000")
        if idx >= 0 and vp.task.currentIndex() != idx:
            vp.task.setCurrentIndex(idx)
        vp.strength.set_value("heavy")
        vp.seed.setValue(7)
        vp.compute()
        wait(
            lambda: (
                vp.view is not None
                and vp.view.request.seed == 7
                and vp.view.request.strength == "heavy"
            )
        )
        vp.view_picker.set_value("Tools")
        vp._show_view()

    both("variants", variants)

    # ---- data: the tasks with the oracle's graded play, an oracle generation under HSA
    # variants, and a row it wrote
    data_screens(win, wait, idle, grab)

    # ---- evaluate: runs of the simulator's oracle (instant and deterministic), and the oracle
    # fixed on the deployed version's names — the stand-in for a fine-tune on that harness —
    # against a tool rename, so the impact gate and the results have something to show
    evaluate_screens(win, wait, idle, grab)

    # ---- import with errors (the problems dialog)
    from core.harness import HarnessError, import_folder
    from studio.dialogs import ProblemsDialog

    bad = home / "broken-harness"
    (bad / "skills" / "faq").mkdir(parents=True)
    (bad / "tools").mkdir()
    (bad / "harness.yaml").write_text(
        "name: broken\nprompt:\n  sections: []\n  colour: blue\n", encoding="utf-8"
    )
    (bad / "skills" / "faq" / "SKILL.md").write_text(
        "---\nname: faq\ndescription: [unclosed\n---\nbody\n", encoding="utf-8"
    )
    (bad / "tools" / "lookup.json").write_text(
        json.dumps(
            {
                "type": "function",
                "function": {
                    "name": "lookup",
                    "parameters": {"type": "object", "properties": {"q": {"type": "strin"}}},
                },
            }
        ),
        encoding="utf-8",
    )
    try:
        import_folder(bad)
    except HarnessError as exc:
        dlg = ProblemsDialog(
            win,
            "Import failed",
            f"{bad.name} has {len(exc.problems)} problem(s); nothing was imported.",
            exc.problems,
        )
        dlg.resize(820, 360)
        dlg.show()
        spin(200)
        dlg.grab().save(str(out / "import-errors-light.png"))
        shots.append("import-errors-light.png")
        dlg.close()

    win._closing_ok = True
    win.close()
    QApplication.processEvents()
    print(f"{len(shots)} screenshots in {out}")
    return 0


def data_screens(win, wait, idle, grab) -> None:  # type: ignore[no-untyped-def]
    """Data's three tabs with the oracle as the teacher (instant and deterministic)."""
    win.show_page("data")
    page = win.page("data")
    idle()
    page.generate_button.click()
    gen = page.generate
    gen.source.setCurrentIndex(gen.source.findData("train"))
    gen.per_category.setValue(2)
    gen.variants.setValue(2)
    gen.sampler.setCurrentIndex(gen.sampler.findData("hsa"))
    gen.out_name.setText("sft-oracle")
    gen.start_button.click()
    wait(lambda: gen.result is not None, timeout=300)
    grab("data-generate")

    gen.open_button.click()
    rows = page.trajectories
    wait(lambda: rows.dataset is not None)
    idle()
    rows.variant.set_value("variants", emit=True)
    idle()
    rows.table.select_where(lambda r: r.category == "coupon")
    idle()
    grab("data-trajectory")

    page.show_tab("tasks")
    tasks = page.tasks
    tasks.source.setCurrentIndex(tasks.source.findData("dev"))
    idle()
    tasks.category.setCurrentIndex(tasks.category.findData("multi_intent"))
    idle()
    tasks.table.select_row(1)
    idle()
    grab("data-tasks")


def evaluate_screens(win, wait, idle, grab) -> None:  # type: ignore[no-untyped-def]
    """Evaluate's three tabs: a finished oracle run, the impact gate of a tool rename with its
    first broken task open, and the results of the fixed oracle on all three suites."""
    from core.hsa.renames import Renames, apply_renames

    store = win.ctx.store
    name = win.ctx.session.doc.harness.name
    deployed = store.labels(name).get("production") or store.info("head", name).id
    # the rename HSA applies: references in skills, hooks and the prompt follow
    renamed = apply_renames(
        store.load("head", name), Renames(tools={"get_product_by_link": "product_details"})
    )
    store.commit(renamed, "Rename get_product_by_link to product_details")
    from studio.context import StoreChange

    win.ctx.announce(StoreChange.VERSIONS)  # as a commit from the studio announces it
    win.show_page("evaluate")
    page = win.page("evaluate")
    idle()
    run = page.run

    def evaluate(kind: str, suites: tuple[str, ...], limit: int) -> None:
        page.show_tab("run")
        run.picker.select(kind)
        if kind == "oracle-fixed":
            run.fixed_on.setCurrentIndex(run.fixed_on.findData(deployed))
        for key, b in run.suite_buttons.items():
            b.setChecked(key in suites)
        run.limit.setValue(limit)
        run.variants.setValue(4)
        run.result = None
        run.start()
        wait(lambda: run.result is not None, timeout=300)
        idle()

    evaluate("oracle-fixed", ("ls-qa", "hv-qa", "robustness"), 12)
    fixed_run = run.result.id
    evaluate("oracle", ("ls-qa", "robustness"), 12)
    grab("evaluate-run")

    view = page.impact
    page.impact_button.click()
    idle()
    view.picker.select("oracle-fixed")
    view.set_versions(deployed, store.info("head", name).id)
    view.limit.setValue(24)
    view.start()
    wait(lambda: view.report is not None, timeout=300)
    idle()
    view.flips.select_row(0)
    wait(lambda: bool(view.after.cards and view.before.cards))
    grab("evaluate-impact")

    results = page.results
    page.show_tab("results")
    results.refresh(select=fixed_run)
    wait(lambda: results.view is not None and results.view.run.id == fixed_run)
    idle()
    results.items.select_where(lambda r: r.score < 1)
    idle()
    grab("evaluate-results")


if __name__ == "__main__":
    raise SystemExit(main())
