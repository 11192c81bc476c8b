"""The studio's Data page: tasks by split and category with the oracle's graded gold play,
teacher generation as a background job (real generator, real oracle teacher, real files) with
progress, cancel and resume, and the generated rows read back with grades and provenance.
Plus the Qt-free logic behind it (dataset reading, filters, readable turns, form checks).

GUI tests run offscreen with the real store in the test's HAT_HOME; waits spin a real
QEventLoop (tests/studio_helpers.py) so the worker threads run at full speed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studio.context import StoreChange
from studio.logic.data_generate import GenerationRequest, RequestError
from studio.logic.data_rows import (
    RowFilter,
    RowSummary,
    filter_rows,
    list_datasets,
    load_dataset,
    row_detail,
)
from studio.logic.data_turns import turns_from_messages
from tests.studio_helpers import idle, open_studio, shut, spin, wait_until


@pytest.fixture
def studio(qapp, hat_home: Path):  # type: ignore[no-untyped-def]
    win = open_studio(hat_home, busy_timeout=0.3)
    yield win
    shut(win)


def data_page(win):  # type: ignore[no-untyped-def]
    win.show_page("data")
    page = win.page("data")
    idle()
    return page


# ----------------------------------------------------------------------------- GUI


def test_tasks_by_split_and_category_with_graded_gold_play(studio) -> None:  # type: ignore[no-untyped-def]
    page = data_page(studio)
    page.show_tab("tasks")
    tasks = page.tasks
    tasks.source.setCurrentIndex(tasks.source.findData("dev"))
    idle()
    assert len(tasks.tasks) == 20 * 12  # the dev split: 20 per category
    assert {t.split.value for t in tasks.tasks} == {"dev"}
    assert tasks.count.text() == "240 tasks"
    tasks.category.setCurrentIndex(tasks.category.findData("coupon"))
    idle()
    shown = tasks.table.records()
    assert len(shown) == 20 and {r["task"].category.value for r in shown} == {"coupon"}
    assert tasks.count.text() == "20 of 240 tasks"
    tasks.search.setText(shown[3]["id"])
    spin(200)
    idle()
    assert [r["id"] for r in tasks.table.records()] == [shown[3]["id"]]
    # the selected task is described and played by the oracle under the edited harness
    assert tasks.facts.values["Category"] == "coupon"
    kinds = tasks.conversation.kinds()
    assert kinds[0] == "viewer" and kinds[-1] == "reply" and "tool" in kinds
    assert tasks.grades.scores == {
        "accuracy": 1.0,
        "effectiveness": 1.0,
        "tool_rationality": 1.0,
        "skill_selection": 1.0,
    }
    # the robustness suite lists its injected faults
    tasks.search.clear()
    tasks.source.setCurrentIndex(tasks.source.findData("robustness"))
    idle()
    assert len(tasks.tasks) == 300 and all(t.faults for t in tasks.tasks)
    assert all(r["conditions"] for r in tasks.table.records())


def test_oracle_generation_job_with_progress_then_rows_with_grades_and_provenance(
    studio, hat_home: Path
) -> None:  # type: ignore[no-untyped-def]
    page = data_page(studio)
    out = hat_home / "datasets" / "gui-oracle.jsonl"
    rows = page.trajectories
    page.show_tab("trajectories")  # listed before the run: the new file is not there yet
    idle()
    assert rows.file.findData(str(out.resolve())) < 0
    announced: list[StoreChange] = []
    studio.ctx.storeChanged.connect(announced.append)
    page.generate_button.click()
    gen = page.generate
    assert page.tabs.currentWidget() is gen
    gen.source.setCurrentIndex(gen.source.findData("train"))
    gen.per_category.setValue(1)
    gen.variants.setValue(1)
    gen.sampler.setCurrentIndex(gen.sampler.findData("hsa"))
    gen.out_name.setText("gui-oracle")
    assert "--variants 1 --sampler hsa" in gen.command.text()
    seen: list[int] = []
    gen.progressed.connect(lambda p: seen.append(p.done))
    gen.start_button.click()
    wait_until(lambda: gen.result is not None, timeout=120)
    idle()
    result = gen.result
    assert not result.cancelled
    assert result.progress.total == 24 and result.progress.done == 24
    assert seen[-1] == 24 and seen == sorted(seen) and len(seen) >= 24
    assert gen.bar.value() == gen.bar.maximum() == 24
    assert announced == [StoreChange.ROWS]  # the job said what it wrote, once
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == result.progress.written == 24
    assert gen.stat_labels["written"].text() == "24"
    # a finished job has nothing left; its sub-second run reads in seconds, not 0:00:00
    assert gen.stat_labels["left"].text() == "–"
    assert gen.stat_labels["elapsed"].text().endswith(" s")

    # the rows tab lists the new file when shown again (nobody told it but the announcement)
    page.show_tab("trajectories")
    wait_until(lambda: rows.file.findData(str(out.resolve())) >= 0)
    page.show_tab("generate")
    # open the rows: table, filters and the detail of a row made under an HSA variant
    gen.open_button.click()
    wait_until(lambda: rows.dataset is not None and rows.dataset.file.path == out.resolve())
    idle()
    assert len(rows.table.records()) == 24
    rows.variant.set_value("variants", emit=True)
    idle()
    variant_rows = rows.table.records()
    assert len(variant_rows) == 12 and all(r.variant_index == 1 for r in variant_rows)
    rows.table.select_row(0)
    idle()
    detail = rows.detail
    assert detail is not None and detail.summary.key == rows.table.current().key
    kinds = rows.conversation.kinds()
    assert kinds[0] == "viewer" and kinds[-1] == "reply"
    facts = rows.provenance.values
    assert facts["Variant"].startswith("#1 · hsa · seed ")
    assert facts["Teacher"] == "oracle"
    assert facts["Harness"].startswith("live-host @ ")
    assert rows.grades.scores["accuracy"] == 1.0
    first = json.loads(lines[0])
    assert first["provenance"]["harness_version"] == gen.version.currentData()


def test_generation_cancel_keeps_rows_and_a_rerun_resumes(studio, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    page = data_page(studio)
    page.show_tab("generate")
    gen = page.generate
    gen.per_category.setValue(10)
    gen.variants.setValue(2)
    gen.concurrency.setValue(1)
    gen.out_name.setText("cancelled")
    gen.progressed.connect(lambda p: p.done >= 3 and gen.cancel())
    gen.start()
    assert gen.cancel_button.isVisible()
    wait_until(lambda: gen.result is not None, timeout=120)
    idle()
    result = gen.result
    assert result.cancelled and 3 <= result.progress.done < result.progress.total == 360
    out = hat_home / "datasets" / "cancelled.jsonl"
    written = len(out.read_text(encoding="utf-8").splitlines())
    assert written == result.progress.written
    assert gen.progress_pane.title.text().startswith("Cancelled")
    assert not gen.cancel_button.isVisible() and gen.start_button.isEnabled()
    # the same request again skips what is done
    gen.limit.setValue(2)
    gen.start()
    wait_until(lambda: gen.result is not result, timeout=60)
    idle()
    assert gen.result.progress.skipped == written and gen.result.progress.done == 2
    assert len(out.read_text(encoding="utf-8").splitlines()) == written + 2


def test_closing_the_window_stops_a_running_generation(studio, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    """Quitting must not wait for a long job: the window's close stops it between two jobs,
    and the rows it wrote stay (a rerun resumes)."""
    page = data_page(studio)
    page.show_tab("generate")
    gen = page.generate
    gen.per_category.setValue(100)
    gen.variants.setValue(2)
    gen.concurrency.setValue(1)
    gen.out_name.setText("interrupted")
    gen.start()
    wait_until(lambda: gen.last is not None and gen.last.done >= 2, timeout=60)
    studio._closing_ok = True
    studio.close()
    wait_until(lambda: gen.result is not None, timeout=60)
    result = gen.result
    assert result.cancelled and result.progress.done < result.progress.total == 3600
    out = hat_home / "datasets" / "interrupted.jsonl"
    assert len(out.read_text(encoding="utf-8").splitlines()) == result.progress.written


def test_bad_teacher_input_is_shown_on_the_field_and_nothing_runs(studio) -> None:  # type: ignore[no-untyped-def]
    page = data_page(studio)
    page.show_tab("generate")
    gen = page.generate
    gen.teacher.set_value("openai", emit=True)
    assert gen.remote.isVisibleTo(gen) and not gen.oracle_note.isVisibleTo(gen)
    gen.url.setText("localhost:8000")
    gen.model.setText("m")
    gen.start()
    idle()
    assert gen.result is None and gen.run is None
    assert gen.url_field.error.isVisibleTo(gen) and "http(s) URL" in gen.url_field.error.text()
    gen.url.setText("http://127.0.0.1:8000/v1")
    assert not gen.url_field.error.isVisibleTo(gen)
    gen.out_name.setText("../outside")
    gen.start()
    assert gen.out_field.error.isVisibleTo(gen) and gen.run is None


@pytest.mark.slow
def test_unreachable_teacher_gives_rejected_rows_with_the_reason(studio, hat_home: Path) -> None:  # type: ignore[no-untyped-def]
    """A remote teacher whose server is not there: every job is a rejected row that says so."""
    page = data_page(studio)
    page.show_tab("generate")
    gen = page.generate
    gen.teacher.set_value("openai", emit=True)
    gen.url.setText("http://127.0.0.1:9/v1")  # the discard port: nothing listens
    gen.model.setText("nobody")
    gen.variants.setValue(0)
    gen.limit.setValue(2)
    gen.out_name.setText("unreachable")
    gen.start()
    wait_until(lambda: gen.result is not None, timeout=90)
    idle()
    p = gen.result.progress
    assert p.done == 2 and p.rejected == 2 and p.written == 0
    assert p.reasons == {"model_error": 2}
    assert "cannot reach" in p.last_reason
    rejects = hat_home / "datasets" / "unreachable.jsonl.rejects.jsonl"
    rows = [json.loads(line) for line in rejects.read_text(encoding="utf-8").splitlines()]
    assert [r["rejected"] for r in rows] == ["model_error", "model_error"]
    page.trajectories.refresh(select=hat_home / "datasets" / "unreachable.jsonl")
    page.show_tab("trajectories")
    wait_until(lambda: page.trajectories.dataset is not None)
    idle()
    shown = page.trajectories.table.records()
    assert len(shown) == 2 and not any(r.kept for r in shown)
    assert page.trajectories.conversation.kinds()[-1] == "status"


# ----------------------------------------------------------------------------- logic


def _write_dataset(home: Path) -> Path:
    """Two real oracle rows (the generator), then a garbage line and a torn last line."""
    import asyncio

    from core.datagen import GenerateConfig, Teacher, generate
    from core.harness.demo import load_demo_harness
    from core.sim.catalog import load_catalog
    from studio.logic.data_tasks import load_tasks

    out = home / "datasets" / "mini.jsonl"
    catalog = load_catalog()
    tasks = list(load_tasks("train", 0, 1))[:2]
    asyncio.run(
        generate(
            tasks, load_demo_harness(), catalog, Teacher.oracle(catalog), GenerateConfig(out=out)
        )
    )
    with out.open("a", encoding="utf-8") as handle:
        handle.write("not json\n")
        handle.write('{"key": "torn')
    return out


def test_dataset_reading_reports_bad_lines_and_reads_rows_back(hat_home: Path) -> None:
    out = _write_dataset(hat_home)
    assert [d.path for d in list_datasets(hat_home)] == [out.resolve()]
    data = load_dataset(out)
    assert [r.key for r in data.rows] == ["train.price.0000#v0", "train.spec.0000#v0"]
    assert data.problems == [f"{out.name}:3: not JSON (Expecting value: line 1 column 1 (char 0))"]
    detail = row_detail(data.rows[1])
    assert [g[2] for g in detail.grades] == [1.0, 1.0, 1.0, 1.0]
    assert detail.turns[0].body == data.rows[1].viewer_message
    assert detail.system_prompt.startswith("##")
    # the file changed under the list: a clear error, not a wrong row
    out.write_text("", encoding="utf-8")
    with pytest.raises((ValueError, json.JSONDecodeError)):
        row_detail(data.rows[1])


def test_facts_line_up_after_a_shorter_list(qapp) -> None:  # type: ignore[no-untyped-def]
    """A task's facts after a row's shorter ones: the blank stretch stays below the last
    fact (it stretched the row where the shorter list ended, whose value then floated
    under its name)."""
    from studio.pages.data.widgets import FactsGrid

    grid = FactsGrid()
    grid.resize(320, 600)
    grid.show()
    grid.set_facts([("Split", "dev"), ("Category", "coupon")])
    long = [(f"Fact {i}", "a value " * (i + 1)) for i in range(6)]
    grid.set_facts(long)
    spin(50)
    layout = grid.grid
    assert [layout.rowStretch(r) for r in range(len(long) + 1)] == [0] * len(long) + [1]
    for row in range(len(long)):
        key = layout.itemAtPosition(row, 0).widget()
        value = layout.itemAtPosition(row, 1).widget()
        assert key.geometry().top() == value.geometry().top()
        assert value.geometry().height() <= value.heightForWidth(value.width()) + 2
    grid.close()


def test_every_turn_card_fits_a_narrow_trace_pane(qapp) -> None:  # type: ignore[no-untyped-def]
    """A hook's name and event, a skill's description and a tool's error give way (wrap or
    elide) in the Evaluate page's trace pane: a head as wide as its texts made the cards wider
    than the pane, their right side (the turn number) cut off."""
    from studio import theme
    from studio.logic.data_turns import TurnItem
    from studio.pages.data.conversation import ConversationView

    theme.apply(qapp, "light")
    items = [
        TurnItem("viewer", "Viewer", "will #54 cure my acne?"),
        TurnItem("skill", "after-sales", "Returns, exchanges and warranty questions " * 3, turn=1),
        TurnItem(
            "tool",
            "load_skill",
            'name="safety-refusal"',
            result="unknown tool 'load_skill'; available tools: " + ", ".join(["get_x"] * 12),
            ok=False,
            turn=1,
        ),
        TurnItem(
            "hook",
            "require-reply-skill-before-any-answer · block",
            "Load a skill first.",
            ok=False,
            turn=2,
            meta="before_reply",
        ),
        TurnItem("reply", "Reply", "It is not a medicine; see a dermatologist.", turn=3),
    ]
    view = ConversationView()
    view.resize(260, 700)
    view.show()
    view.set_items(items)
    spin(50)
    room = view.viewport().width()
    assert view.body.minimumSizeHint().width() <= room
    for card in view.cards:
        assert card.geometry().right() < room, card.item.kind
    view.close()


def test_turns_from_native_messages_pair_calls_with_results() -> None:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "price of link 3?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "function": {"name": "load_skill", "arguments": '{"name": "qa"}'}},
                {"id": "b", "function": {"name": "get_price", "arguments": '{"link_no": 3}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": '{"error": {"kind": "timeout"}}'},
        {"role": "tool", "tool_call_id": "a", "content": "# QA skill"},
        {"role": "assistant", "content": "It is 9 USD, guaranteed lowest ever!"},
        {"role": "user", "content": "Reminder: no price promises."},
        {"role": "assistant", "content": "It is 9 USD."},
    ]
    items = turns_from_messages(messages, viewer_message="price of link 3?", native=True)
    assert [i.kind for i in items] == ["viewer", "skill", "tool", "blocked", "reminder", "reply"]
    assert items[1].title == "qa" and items[1].ok
    assert items[2].body == "link_no=3" and not items[2].ok and items[2].result == "timeout"
    assert items[-1].body == "It is 9 USD."


def test_generation_request_names_the_bad_field() -> None:
    ok = GenerationRequest(out_name="sft")
    ok.validate()
    assert ok.command().startswith("hat data generate --out datasets/sft.jsonl --tasks train")
    cases = {
        "out_name": GenerationRequest(out_name="a/b"),
        "url": GenerationRequest(out_name="x", teacher="openai", url="ftp://h", model="m"),
        "model": GenerationRequest(out_name="x", teacher="openai", url="http://h/v1", model=" "),
        "sampler": GenerationRequest(out_name="x", variants=2, sampler="nope"),
        "source": GenerationRequest(out_name="x", source="everything"),
    }
    for field, request in cases.items():
        with pytest.raises(RequestError) as err:
            request.validate()
        assert err.value.field == field


def _summary(i: int, kept: bool, category: str, variant: int, acc: float) -> RowSummary:
    return RowSummary(
        path=Path("x.jsonl"),
        offset=i,
        line=i + 1,
        key=f"t{i}#v{variant}",
        task_id=f"t{i}",
        split="train",
        category=category,
        kept=kept,
        variant_index=variant,
        variant_seed=None,
        sampler="hsa",
        teacher="oracle",
        scores={"accuracy": acc},
        viewer_message=f"message {i}",
    )


rows_strategy = st.lists(
    st.builds(
        _summary,
        st.integers(0, 50),
        st.booleans(),
        st.sampled_from(["price", "coupon", "stock"]),
        st.integers(0, 2),
        st.sampled_from([0.0, 0.5, 1.0]),
    ),
    max_size=30,
)
filters_strategy = st.builds(
    RowFilter,
    outcome=st.sampled_from(["all", "kept", "rejected"]),
    category=st.sampled_from(["", "price", "stock"]),
    variant=st.sampled_from(["all", "original", "variants"]),
    failing=st.sampled_from(["", "accuracy"]),
    text=st.sampled_from(["", "message 1", "T2"]),
)


def _matches(r: RowSummary, f: RowFilter) -> bool:
    return (
        (f.outcome == "all" or (f.outcome == "kept") == r.kept)
        and (not f.category or r.category == f.category)
        and (f.variant == "all" or (f.variant == "original") == (r.variant_index == 0))
        and (not f.failing or r.scores.get(f.failing, 0.0) < 1.0)
        and (
            not f.text
            or f.text.lower() in r.key.lower()
            or f.text.lower() in r.viewer_message.lower()
        )
    )


@given(rows_strategy, filters_strategy)
def test_row_filter_keeps_exactly_the_matching_rows_in_order(
    rows: list[RowSummary], f: RowFilter
) -> None:
    assert filter_rows(rows, f) == [r for r in rows if _matches(r, f)]


def test_drafts_from_a_chat_log_are_reviewed_into_a_task_file(studio, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The Drafts tab in a real window: a logged conversation log (the desk's real tools
    answered it, tests/test_drafts.py) imports as drafts with the e-mail masked; one is
    accepted into the test split with its facts fixed, one dropped; a broken log line is
    named in the banner."""
    from core.taskfile.drafts import load_drafts
    from core.taskfile.models import load_task_file
    from tests.test_drafts import _log

    log, _tasks = _log(tmp_path, 3)
    log.write_text(log.read_text() + "{broken\n")
    page = data_page(studio)
    page.show_tab("drafts")
    view = page.drafts
    mine = tmp_path / "mine.jsonl"
    view.import_log(log)  # no task file chosen yet: said, nothing written
    assert view.banner.isVisibleTo(view) and not mine.exists()
    view.set_task_file(mine)
    view.import_log(log)
    idle()
    assert len(view.table.records()) == 3 and view.count.text() == "3 to review"
    assert "Skipped" in view.banner.text.text() and ":4: not JSON" in view.banner.text.text()
    assert "[email]" in view.detail.toPlainText() and "example.com" not in view.detail.toPlainText()
    first = view.table.current()
    view.facts.setText("delivered; PT-1")
    view.split_choice.setCurrentIndex(view.split_choice.findData("test"))
    view.accept_button.click()
    idle()
    accepted = load_task_file(mine)
    assert [t.id for t in accepted] == [first["id"]] and accepted[0].split.value == "test"
    assert accepted[0].facts == ["delivered", "PT-1"]
    view.drop_button.click()
    idle()
    assert len(load_drafts(mine)) == 1 and view.count.text() == "1 to review"
    assert len(view.table.records()) == 1
