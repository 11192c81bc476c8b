"""The studio's Evaluate page: a tiny suite run against a real `transformers serve` with the
demo model and its results table; oracle runs (the simulator's oracle is a client the
evaluation API takes by injection: deterministic and instant, so the statistics, the variant
plot, stop/resume and the impact gate can be checked exactly); the harness-change impact view
between two stored versions with click-through to the traces. Plus the Qt-free logic.

GUI tests run offscreen with the real store in the test's HAT_HOME; waits spin a real
QEventLoop (tests/studio_helpers.py) so the worker threads run at full speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QLabel

from core.eval.results import EvalResult, ResultStatus, Suite
from studio.context import StoreChange
from studio.logic.eval_view import (
    ImpactLaunch,
    LaunchRequest,
    RequestError,
    fixed_name,
    item_rows,
)
from tests.studio_helpers import idle, open_studio, shut, wait_until


@pytest.fixture
def studio(qapp, hat_home: Path):  # type: ignore[no-untyped-def]
    # the product's lock wait: items are written from worker threads while the page reads
    win = open_studio(hat_home, size=(1440, 900))
    yield win
    shut(win, timeout=300)


def evaluate_page(win):  # type: ignore[no-untyped-def]
    win.show_page("evaluate")
    page = win.page("evaluate")
    idle()
    return page


def commit_rename(store: Any) -> tuple[str, str]:
    """A realistic harness edit: a tool renamed (its skills updated to the new name)."""
    base = store.load("head", "live-host")
    before = store.info("head", "live-host").id
    tools = [
        t.model_copy(update={"name": "product_details"}) if t.name == "get_product_by_link" else t
        for t in base.tools
    ]
    skills = [
        s.model_copy(update={"body": s.body.replace("get_product_by_link", "product_details")})
        for s in base.skills
    ]
    after = store.commit(
        base.model_copy(update={"tools": tools, "skills": skills}), "Rename a tool"
    ).id
    return before, after


# ----------------------------------------------------------------------------- GUI


@pytest.mark.slow
def test_tiny_eval_of_the_served_demo_model_shows_the_table(
    studio, transformers_server, demo_model_folder: Path
) -> None:  # type: ignore[no-untyped-def]
    from core.models.registry import add_folder

    add_folder(studio.ctx.store, "smollm2-demo", demo_model_folder)
    page = evaluate_page(studio)
    page.new_button.click()
    run = page.run
    run.load_choices()
    idle()
    run.picker.select("smollm2-demo")
    run.server.set_value("url", emit=True)
    run.base_url.setText(transformers_server.base_url)
    for key, b in run.suite_buttons.items():
        b.setChecked(key == "ls-qa")
    run.limit.setValue(2)
    run.max_tokens.setValue(32)
    # CPU prefill of the full harness prompt on shared cores (CI runs the GUI modules beside
    # the rest): a call that outlives the default would be an infrastructure error, unscored
    run.call_timeout.setValue(600)
    run.item_timeout.setValue(1800)
    assert "--base-url" in run.command.text() and "-s ls-qa --limit 2" in run.command.text()
    assert "--call-timeout 600" in run.command.text()
    run.start_button.click()
    wait_until(lambda: run.result is not None, timeout=600)
    idle()
    stored = run.result
    assert stored.model == "smollm2-demo" and stored.total == 2 and stored.done == 2
    assert run.bar.value() == 2 and run.stat_labels["done"].text() == "2 / 2"
    results = page.results
    wait_until(lambda: results.view is not None and results.view.run.id == stored.id)
    idle()
    rows = results.scores.records()
    assert [r.suite for r in rows] == ["LS-QA"] and rows[0].items == 2
    mean, low, high = rows[0].score
    assert 0.0 <= low <= mean <= high <= 1.0
    items = results.items.records()
    assert len(items) == 2 and {i.suite for i in items} == {"LS-QA"}
    results.items.select_row(1)
    wait_until(lambda: results.trace_key == items[1].key)
    idle()
    kinds = results.conversation.kinds()
    assert kinds[0] == "viewer"  # the real model's request as readable turns


def test_oracle_run_scores_dimensions_distribution_and_traces(studio) -> None:  # type: ignore[no-untyped-def]
    page = evaluate_page(studio)
    page.show_tab("run")
    run = page.run
    run.picker.select("oracle")
    assert not run.server_box.isVisibleTo(run)
    for key, b in run.suite_buttons.items():
        b.setChecked(key in ("ls-qa", "hv-qa"))
    run.limit.setValue(3)
    run.variants.setValue(2)
    progress: list[int] = []
    run.progressed.connect(lambda p: progress.append(p.done))
    run.start()
    wait_until(lambda: run.result is not None, timeout=120)
    idle()
    stored = run.result
    assert stored.status.value == "done" and stored.total == 3 + 3 * 2 and stored.passed == 9
    assert progress[-1] == 9 and progress == sorted(progress)
    run.results_button.click()
    results = page.results
    wait_until(lambda: results.view is not None and results.view.run.id == stored.id)
    idle()
    rows = {r.suite: r for r in results.scores.records()}
    assert set(rows) == {"LS-QA", "HV-QA"}
    assert rows["LS-QA"].score == (1.0, 1.0, 1.0) and rows["HV-QA"].items == 6
    assert results.dims.records() and all(d.cost == (0.0, 0.0, 0.0) for d in results.dims.records())
    assert results.plot.series_counts() == [6]  # one dot per HV-QA variant of the one model
    assert [r.id for r in results.runs_table.records()] == [stored.id]
    kinds = results.conversation.kinds()
    assert kinds[0] == "viewer" and kinds[-1] == "reply"


def test_your_tasks_run_a_task_file_on_its_own_harness(studio) -> None:  # type: ignore[no-untyped-def]
    """The order desk (Python and MCP tools) stored as a version; the oracle plays its task
    file's test split from the Evaluate page: every gold passes through the real tools."""
    from core.harness.folder import import_folder
    from core.taskfile.models import load_task_file

    desk = Path(__file__).parents[1] / "resources/examples/order_desk"
    info = studio.ctx.store.commit(
        import_folder(desk / "harness", trust_python_hooks=True), "the order desk"
    )
    page = evaluate_page(studio)
    page.show_tab("run")
    run = page.run
    studio.ctx.harness_name = "order-desk"  # what opening it on the Harness page does
    run.load_choices()  # its versions in the picker
    wait_until(lambda: run.version.findData(info.id) >= 0)
    run.picker.select("oracle")
    for key, b in run.suite_buttons.items():
        b.setChecked(key == "tasks")
    assert run.task_file_field.isVisibleTo(run)
    run.start()  # no file yet: named at its field, nothing runs
    assert run.job is None and "task file" in run.task_file_field.error.text()
    run.task_file.setText(str(desk / "tasks.jsonl"))
    run.version.setCurrentIndex(run.version.findData(info.id))
    run.limit.setValue(0)
    run.start()
    assert run.job is not None, run.banner.text.text()
    wait_until(lambda: run.result is not None or run.banner.isVisibleTo(run), timeout=120)
    assert run.result is not None, run.banner.text.text()
    stored = run.result
    tests = [t for t in load_task_file(desk / "tasks.jsonl") if t.split.value == "test"]
    assert stored.status.value == "done", stored.reason
    assert stored.total == len(tests) and stored.passed == len(tests)


def test_a_model_picked_under_another_harness_shows_the_cards_notice(studio) -> None:  # type: ignore[no-untyped-def]
    """Evaluate warns, as Chat does, when the chosen adapter was trained on another harness
    version than the one chosen for the run, naming the impact gate; under its own version,
    nothing."""
    import yaml

    from core.harness.folder import import_folder
    from core.store.serving import ModelRecord, add_model
    from core.store.training import RunRecord, add_run

    root = Path(__file__).parents[1] / "resources"
    store = studio.ctx.store
    one = store.commit(import_folder(root / "demo/live-host"), "trained on").id
    two = store.commit(import_folder(root / "experiment/live-host-edited"), "an edit").id
    config = yaml.safe_dump({"model": "smol"})
    record = RunRecord(
        id="sft-1", stage="sft", status="done", run_dir=str(root), config=config,
        harness_version=one,
    )  # fmt: skip
    add_run(store, record)
    add_model(store, ModelRecord(name="smol", kind="base", source="folder", location=str(root)))
    adapter = ModelRecord(
        name="smol-hat", kind="adapter", source="training", location=str(root), base="smol",
        meta={"run": "sft-1"},
    )  # fmt: skip
    add_model(store, adapter)
    page = evaluate_page(studio)
    page.show_tab("run")
    run = page.run
    studio.ctx.harness_name = "live-host"
    run.load_choices()
    wait_until(lambda: run.version.findData(two) >= 0 and run.picker.model.findData("smol") >= 0)

    def pick(version: str) -> bool:  # again until a late reload of the choices is over
        run.picker.select_model("smol-hat")
        run.version.setCurrentIndex(run.version.findData(version))
        return (
            run.picker.adapter.currentData() == "smol-hat" and run.version.currentData() == version
        )

    wait_until(lambda: pick(two) and run.trained_notice.isVisibleTo(run))
    assert f"smol-hat was trained on harness version {one[:10]}" in run.trained_notice.text()
    assert f"--to {two[:10]}" in run.trained_notice.text()
    wait_until(lambda: pick(one) and not run.trained_notice.isVisibleTo(run))


def test_hv_of_your_tasks_runs_a_task_file_under_heldout_variants(studio) -> None:  # type: ignore[no-untyped-def]
    """Harness-Variant QA of a user's own task file from the Evaluate page: the support desk
    fixture (Python tools, a refund that writes) stored as a version; the oracle plays each
    test task under K held-out variants, every one graded full marks by binding and role."""
    from core.eval.api import load_results
    from core.harness.folder import import_folder
    from core.taskfile.models import load_task_file

    fixtures = Path(__file__).parent / "fixtures"
    info = studio.ctx.store.commit(
        import_folder(fixtures / "support_desk", trust_python_hooks=True), "the user's desk"
    )
    page = evaluate_page(studio)
    page.show_tab("run")
    run = page.run
    studio.ctx.harness_name = "support-desk"
    run.load_choices()
    wait_until(lambda: run.version.findData(info.id) >= 0)
    run.picker.select("oracle")
    for key, b in run.suite_buttons.items():
        b.setChecked(key == "hv-tasks")
    assert "task file" in run.suite_buttons["hv-tasks"].toolTip()
    assert run.task_file_field.isVisibleTo(run) and run.variants.isEnabled()
    run.task_file.setText(str(fixtures / "support_desk_tasks.jsonl"))
    run.version.setCurrentIndex(run.version.findData(info.id))
    run.limit.setValue(0)
    run.variants.setValue(2)
    run.start()
    assert run.job is not None, run.banner.text.text()
    wait_until(lambda: run.result is not None or run.banner.isVisibleTo(run), timeout=120)
    assert run.result is not None, run.banner.text.text()
    stored = run.result
    tests = [t for t in load_task_file(fixtures / "support_desk_tasks.jsonl")
             if t.split.value == "test"]  # fmt: skip
    assert stored.status.value == "done", stored.reason
    assert stored.total == 2 * len(tests) and stored.passed == stored.total
    rows = load_results(studio.ctx.store, stored.id)
    assert {r.suite.value for r in rows} == {"hv-tasks"} and all(r.dimension for r in rows)


def _oracle_ls_qa_form(studio, limit: int):  # type: ignore[no-untyped-def]
    """The Evaluate page's Run form set to the oracle on `limit` LS-QA items: (page, form)."""
    page = evaluate_page(studio)
    page.show_tab("run")
    run = page.run
    run.picker.select("oracle")
    for key, b in run.suite_buttons.items():
        b.setChecked(key == "ls-qa")
    run.limit.setValue(limit)
    return page, run


def test_stop_keeps_items_and_resume_finishes_the_run(studio) -> None:  # type: ignore[no-untyped-def]
    page, run = _oracle_ls_qa_form(studio, 30)
    run.progressed.connect(lambda p: p.done >= 2 and run.stop())
    run.start()
    wait_until(lambda: run.result is not None, timeout=120)
    idle()
    stopped = run.result
    assert stopped.status.value == "stopped" and 2 <= stopped.done < stopped.total == 30
    assert run.banner.isVisibleTo(run) and "Resume" in run.banner.text.text()
    results = page.results
    results.refresh(select=stopped.id)
    wait_until(lambda: results.view is not None and results.view.run.id == stopped.id)
    idle()
    assert results.resume_button.isVisibleTo(results)
    run.progressed.disconnect()
    run.progressed.connect(run._show_progress)
    results.resume_button.click()
    wait_until(lambda: run.result is not None and run.result.status.value == "done", timeout=120)
    idle()
    assert run.result.id == stopped.id and run.result.done == 30 and run.result.passed == 30


def test_infrastructure_errors_show_apart_and_retry_reruns_only_them(studio) -> None:  # type: ignore[no-untyped-def]
    """A row that timed out (stored as the runner stores a timeout: the oracle cannot time
    out) is counted under Errors, not Failed; "Retry 1 failed item" reruns only it."""
    from core.eval.api import load_results
    from core.eval.store import add_result

    page, run = _oracle_ls_qa_form(studio, 3)
    run.call_timeout.setValue(30)
    run.item_timeout.setValue(45)
    assert "--call-timeout 30 --item-timeout 45" in run.launch().command()
    run.start()
    wait_until(lambda: run.result is not None, timeout=120)
    idle()
    first = run.result
    assert first.request.call_timeout_s == 30 and first.request.item_timeout_s == 45
    store = studio.ctx.store
    victim = load_results(store, first.id)[0]
    add_result(
        store,
        first.id,
        victim.model_copy(
            update={
                "status": ResultStatus.ERROR,
                "score": 0.0,
                "passed": False,
                "reason": "timeout: the item took longer than 45 s",
            }
        ),
    )
    results = page.results
    results.refresh(select=first.id)
    wait_until(lambda: results.view is not None and results.view.run.errors == 1)
    idle()
    row = results.view.suites[0]
    assert (row.items, row.failed, row.errors) == (3, 0, 1)
    assert row.score is not None and row.score[0] == 1.0  # the two answered items only
    assert not results.resume_button.isVisibleTo(results)
    assert results.retry_button.isVisibleTo(results)
    assert results.retry_button.text() == "Retry 1 failed item"
    assert "infrastructure error" in results.banner.text.text()
    statuses = sorted(r.status for r in results.view.items)
    assert statuses == ["error", "pass", "pass"]
    results.retry_button.click()
    wait_until(lambda: run.result is not None and run.result.id == first.id, timeout=60)
    wait_until(lambda: run.result.status.value == "done" and run.result.errors == 0, timeout=120)
    idle()
    assert run.result.passed == 3 and run.result.done == 3


def test_impact_view_lists_flips_by_changed_component_with_traces(studio) -> None:  # type: ignore[no-untyped-def]
    """The model is the oracle fixed on the deployed version's names (the evaluation API's
    injected client): a stand-in for a fine-tune on that harness, so the rename breaks the
    tasks that need the renamed tool, deterministically."""
    before, after = commit_rename(studio.ctx.store)
    studio.ctx.announce(StoreChange.VERSIONS)  # what a commit from the studio announces
    page = evaluate_page(studio)
    page.impact_button.click()
    view = page.impact
    assert page.tabs.currentWidget() is view
    idle()
    assert view.picker.kind == "oracle-fixed"
    assert (view.from_version.currentData(), view.to_version.currentData()) == (before, after)
    view.limit.setValue(12)
    view.start()
    wait_until(lambda: view.report is not None, timeout=120)
    idle()
    report = view.report
    assert report.model == fixed_name(before) and report.paired == 12
    assert report.broke > 0 and report.fixed == 0 and report.delta < 0
    first = view.groups[0]
    assert first.component == "tool" and first.change == "renamed" and first.broke == report.broke
    assert first.name == "get_product_by_link → product_details"
    assert view.group_list.count() == len(view.groups) >= len(report.changes)
    flips = view.flips.records()
    assert len(flips) == report.broke and all(f.direction == "broke" for f in flips)
    view.flips.select_row(0)
    wait_until(lambda: view.after.cards and view.before.cards)
    idle()
    after_tools = [c.item for c in view.after.cards if c.item.kind == "tool"]
    assert any(not t.ok and t.title == "get_product_by_link" for t in after_tools)
    assert all(t.ok for t in (c.item for c in view.before.cards if c.item.kind == "tool"))
    assert view.stat_flips.value.text() == f"{report.broke} broke · 0 fixed"
    # both sides' runs are stored, announced, and listed when the results tab is shown
    # (a hidden list is only marked stale); a second gate reuses them
    page.show_tab("results")
    wait_until(lambda: len(page.results.runs) == 2)
    page.show_tab("impact")
    view.start()
    wait_until(lambda: view.report is not report, timeout=60)
    idle()
    assert set(view.report.reused) == {report.from_run, report.to_run}


def test_bad_launch_input_is_named_and_nothing_runs(studio) -> None:  # type: ignore[no-untyped-def]
    page = evaluate_page(studio)
    page.show_tab("run")
    run = page.run
    run.picker.select("oracle")
    for b in run.suite_buttons.values():
        b.setChecked(False)
    run.start()
    assert run.job is None and run.suites_error.isVisibleTo(run)
    run.suite_buttons["ifeval"].setChecked(True)
    run.start()
    assert run.job is None and "IFEval" in run.suites_error.text()
    view = page.impact
    view.set_versions(view.to_version.currentData(), view.to_version.currentData())
    view.start()
    assert view.job is None and view.banner.isVisibleTo(view)


def test_the_run_forms_numbers_follow_core(studio, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every numeric field's lower bound and help come from `EvalRequest`, its start from
    `hat eval run`'s defaults: the form can offer no value core would refuse, and a default
    changed in core changes the form."""
    from core.eval.api import EvalRequest
    from core.eval.command import RUN_DEFAULTS
    from studio.pages.evaluate.run_view import RunView

    run = evaluate_page(studio).run
    run.picker.select("oracle")
    boxes = {
        "variants": run.variants,
        "samples": run.samples,
        "concurrency": run.concurrency,
        "max_tokens": run.max_tokens,
        "call_timeout_s": run.call_timeout,
        "item_timeout_s": run.item_timeout,
    }
    for name, box in boxes.items():
        field = EvalRequest.model_fields[name]
        low = next(getattr(r, "ge", None) or getattr(r, "gt", 0) + 1 for r in field.metadata)
        assert box.minimum() == low, name
        assert box.value() == RUN_DEFAULTS[name], name
        assert str(field.description).rstrip(".") in box.toolTip(), name
        box.setValue(box.minimum())
        assert run.launch().eval_request() is not None  # core takes the lowest
    monkeypatch.setitem(RUN_DEFAULTS, "concurrency", 3)
    assert RunView(studio.ctx).concurrency.value() == 3


# ----------------------------------------------------------------------------- logic


def test_launch_request_checks_and_command() -> None:
    ok = LaunchRequest(model="demo", suites=("ls-qa", "hv-qa"), limit=5, variants=4)
    request = ok.eval_request()
    assert request.suites == [Suite.LS_QA, Suite.HV_QA] and request.base_url is None
    assert ok.command() == (
        "hat eval run --model demo -s ls-qa -s hv-qa --limit 5 --variants 4 --engine transformers"
    )
    url = LaunchRequest(model="demo", server="url", base_url=" http://h:1/v1 ")
    assert url.eval_request().base_url == "http://h:1/v1"
    fixed = LaunchRequest(model="oracle-fixed", kind="oracle-fixed", fixed_on="abcdef123456789")
    assert fixed.model_name == "oracle-fixed@abcdef1234"
    cases = {
        "suites": LaunchRequest(model="demo", suites=()),
        "base_url": LaunchRequest(model="demo", server="url", base_url="localhost:8000"),
        "fixed_on": LaunchRequest(model="oracle-fixed", kind="oracle-fixed"),
    }
    for field, launch in cases.items():
        with pytest.raises(RequestError) as err:
            launch.validate()
        assert err.value.field == field
    with pytest.raises(RequestError, match="IFEval"):
        LaunchRequest(model="oracle", kind="oracle", suites=("ifeval",)).validate()
    with pytest.raises(RequestError, match="two different"):
        ImpactLaunch(model="oracle", kind="oracle", from_version="a", to_version="a").validate()


def test_item_rows_explain_what_went_wrong() -> None:
    grades = {
        "accuracy": {"score": 1.0, "reasons": ["ok"]},
        "effectiveness": {"score": 0.5, "reasons": ["price: did not state the price 9.99"]},
    }
    rows = item_rows(
        [
            EvalResult(suite=Suite.LS_QA, task_id="t1", score=1.0, passed=True),
            EvalResult(
                suite=Suite.HV_QA,
                task_id="t2",
                variant_seed=7,
                dimension="tool_schemas",
                score=0.75,
                passed=False,
                grades=grades,
            ),
            EvalResult(
                suite=Suite.LS_QA,
                task_id="t3",
                score=0.5,
                passed=False,
                status=ResultStatus.ERROR,
                reason="model_error: cannot reach the server",
            ),
        ]
    )
    assert [r.status for r in rows] == ["pass", "fail", "error"]
    assert rows[1].variant == "Tool schemas"
    assert rows[1].reason == "effectiveness: price: did not state the price 9.99"
    assert rows[2].score == 0.0
    assert rows[2].reason == "not scored (infrastructure): model_error: cannot reach the server"


def test_resume_is_offered_for_ended_runs_and_for_running_ones_whose_process_is_gone() -> None:
    from types import SimpleNamespace

    from core.eval.api import RunStatus
    from studio.logic.eval_view import RunView

    def view(status: RunStatus, active: bool = False) -> RunView:
        return RunView(SimpleNamespace(status=status), [], None, active=active)

    assert view(RunStatus.STOPPED).resumable and view(RunStatus.FAILED).resumable
    assert not view(RunStatus.DONE).resumable
    assert view(RunStatus.RUNNING).resumable  # stored as running, its process died
    assert not view(RunStatus.RUNNING, active=True).resumable


def test_variant_plot_labels_fit_under_their_clusters(qapp) -> None:  # type: ignore[no-untyped-def]
    """Model names are shortened to the room the plot has now, and get it back when it
    widens (long names used to run into each other in a narrow panel)."""
    from types import SimpleNamespace

    from PySide6.QtGui import QFont, QFontMetrics

    from studio import theme
    from studio.pages.evaluate.plots import VariantPlot

    def model(label: str) -> SimpleNamespace:
        dist = SimpleNamespace(scores=[1.0, 0.5], mean=0.75, p5=0.5, worst=0.5)
        return SimpleNamespace(label=label, distribution=dist)

    plot = VariantPlot()
    names = ["oracle", "smollm2-135m-instruct", "oracle fixed @ a101b18"]
    plot.set_models([model(n) for n in names])
    metrics = QFontMetrics(QFont(theme.ui_font(11)))

    def shown() -> list[str]:
        return [text for _, text in plot.getPlotItem().getAxis("bottom")._tickLevels[0]]

    try:
        for width in (260, 300, 340, 900):
            plot.resize(width, 240)
            plot.show()
            idle()
            room = plot.getPlotItem().vb.width() / len(names)
            # each label leaves its neighbours a gap of 8 px or more
            assert all(metrics.horizontalAdvance(t) <= room - 8 for t in shown()), (width, shown())
            # a cut label says so; a fixed-harness oracle keeps its whole version or the "…"
            cut = [t for t, n in zip(shown(), names, strict=True) if t != n]
            assert all(t.endswith("…") or t == "fixed a101b18" for t in cut), shown()
        assert shown() == names  # wide enough again: the whole names
    finally:
        plot.close()


def test_a_long_run_name_is_elided_in_the_run_list(qapp) -> None:  # type: ignore[no-untyped-def]
    """A model name wider than the list ends in "…" with the whole name in its tooltip (it
    was cut mid-letter by the pass-rate chip, so two runs of different versions could read
    alike)."""
    from types import SimpleNamespace

    from studio.pages.evaluate.results_view import RunItem
    from studio.widgets.common import ElidedLabel

    name = "oracle fixed @ a101b18 with a long adapter name"
    run = SimpleNamespace(done=72, total=72, reason="")
    row = SimpleNamespace(
        model=name, status="done", pass_rate=0.71, suites="ls-qa,hv-qa,robustness",
        version="aea45f2 staging", created="07:18", id="eval-1", run=run,
    )  # fmt: skip
    item = RunItem(row)
    item.resize(220, item.sizeHint().height())
    item.show()
    idle()
    try:
        title = next(w for w in item.findChildren(ElidedLabel) if w.full == name)
        shown = title.fontMetrics().horizontalAdvance(QLabel.text(title))
        assert QLabel.text(title).endswith("…") and shown <= title.width()
        assert title.toolTip() == name
    finally:
        item.close()
