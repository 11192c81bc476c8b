"""The Tasks tab: the simulator's tasks of a split or suite, filtered by category and text, and
for the selected task its facts and the oracle's gold play under the harness being edited,
graded (computed in a worker; a newer selection makes an older result stale)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QLineEdit,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio.context import StudioContext
from studio.logic.data_tasks import SOURCES, category_label
from studio.pages.data.conversation import ConversationView
from studio.pages.data.widgets import FactsGrid, GradesPanel, Pane, bar_row, fill_combo, list_frame
from studio.widgets.common import Banner, label
from studio.widgets.tables import Column, RecordTable


class TasksView(QWidget):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.tasks: tuple[Any, ...] = ()
        self.shown: list[Any] = []
        self.gold: Any = None
        self._token = 0
        self._loaded_source = ""
        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 12, 24, 16)
        lay.setSpacing(10)

        bar, row = bar_row()
        row.addWidget(label("Tasks", "FieldLabel"))
        self.source = QComboBox()
        for key, text in SOURCES:
            self.source.addItem(text, key)
        self.source.setCurrentIndex(self.source.findData("test"))
        self.source.setMinimumWidth(150)
        row.addWidget(self.source)
        row.addWidget(label("Category", "FieldLabel"))
        self.category = QComboBox()
        self.category.setMinimumWidth(170)
        self.category.addItem("All categories", "")
        row.addWidget(self.category)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter by id, message or template…")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(160)
        row.addWidget(self.search, 1)
        self.faults = QToolButton()
        self.faults.setObjectName("Toggle")
        self.faults.setText("Faults && distractors")
        self.faults.setCheckable(True)
        self.faults.setToolTip("Only tasks that inject faults or add distractor tools")
        self.faults.setCursor(Qt.CursorShape.PointingHandCursor)
        row.addWidget(self.faults)
        self.count = label("", "Faint")
        row.addWidget(self.count)
        lay.addWidget(bar)
        self.banner = Banner()
        lay.addWidget(self.banner)

        split = QSplitter(Qt.Orientation.Vertical)
        self.table = RecordTable(
            [
                Column("id", "Task", 250, kind="mono"),
                Column("category", "Category", 120),
                Column("message", "Viewer message", None),
                Column("intents", "Intents", 270, tone=lambda r: "text-muted"),
                Column(
                    "conditions",
                    "Faults / distractors",
                    210,
                    fmt=lambda v: v or "—",
                    tone=lambda r: "warning" if r["conditions"] else "text-faint",
                ),
            ],
            key=lambda r: r["id"],
        )
        split.addWidget(list_frame(self.table))

        detail = QSplitter(Qt.Orientation.Horizontal)
        self.facts_pane = Pane("Task")
        self.facts = FactsGrid()
        self.facts_pane.body.addWidget(self.facts)
        self.facts_pane.setMinimumWidth(300)
        detail.addWidget(self.facts_pane)
        self.gold_pane = Pane("Gold behaviour")
        self.gold_pane.aside.setText("the oracle's play under the harness being edited")
        self.conversation = ConversationView()
        self.gold_pane.body.addWidget(self.conversation)
        detail.addWidget(self.gold_pane)
        self.grades_pane = Pane("Grades")
        self.grades = GradesPanel()
        self.grades_pane.body.addWidget(self.grades)
        self.grades_pane.setMinimumWidth(230)
        detail.addWidget(self.grades_pane)
        detail.setSizes([330, 620, 270])
        detail.setStretchFactor(1, 1)
        split.addWidget(detail)
        split.setSizes([300, 460])
        lay.addWidget(split, 1)

        self._filter_timer = QTimer(self)
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(120)
        self._filter_timer.timeout.connect(self.apply_filter)
        self.source.currentIndexChanged.connect(lambda _i: self.load())
        self.category.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.search.textChanged.connect(lambda _t: self._filter_timer.start())
        self.faults.toggled.connect(lambda _on: self.apply_filter())
        self.table.rowSelected.connect(self._selected)
        ctx.harnessChanged.connect(lambda _n: self._replay())

    # ------------------------------------------------------------------ loading

    def showEvent(self, event: Any) -> None:
        if not self._loaded_source:
            self.load()
        super().showEvent(event)

    def load(self) -> None:
        source = self.source.currentData()
        self._loaded_source = source
        self.count.setText("loading…")

        def work() -> Any:
            from studio.logic.data_tasks import load_tasks

            return load_tasks(source)

        def done(tasks: Any) -> None:
            if source != self.source.currentData():
                return
            self.tasks = tasks
            from studio.logic.data_tasks import category_counts

            items = [("", f"All categories · {len(tasks)}")] + [
                (c, f"{category_label(c)} · {n}") for c, n in category_counts(tasks)
            ]
            fill_combo(self.category, items)
            self.apply_filter()

        self.ctx.jobs.run(
            work,
            on_done=done,
            on_error=lambda e: self.banner.show_message("error", f"Cannot list tasks: {e}"),
            label="Loading tasks",
        )

    def apply_filter(self) -> None:
        from studio.logic.data_tasks import TaskFilter, filter_tasks, task_row

        f = TaskFilter(
            category=self.category.currentData() or "",
            text=self.search.text(),
            faults_only=self.faults.isChecked(),
        )
        self.shown = filter_tasks(self.tasks, f)
        self.table.set_rows([task_row(t) for t in self.shown])
        total = len(self.tasks)
        self.count.setText(
            f"{len(self.shown)} of {total} tasks" if len(self.shown) != total else f"{total} tasks"
        )
        if self.table.current() is None and self.shown:
            self.table.select_row(0)

    def select_task(self, task_id: str) -> bool:
        return self.table.select_where(lambda r: r["id"] == task_id)

    # ------------------------------------------------------------------ detail

    def _selected(self, record: Any) -> None:
        if record is None:
            self.facts.set_facts([])
            self.conversation.set_items(
                [], "Pick a task to see what it asks and how the oracle plays it."
            )
            self.grades.set_grades([])
            self.facts_pane.title.setText("Task")
            return
        from studio.logic.data_tasks import task_facts

        task = record["task"]
        self.facts_pane.title.setText(task.id)
        self.facts_pane.aside.setText("")
        self.facts.set_facts([("Viewer", task.viewer_message), *task_facts(task)[1:]])
        self._play(task)

    def _replay(self) -> None:
        record = self.table.current()
        if record is not None:
            self._play(record["task"])

    def _play(self, task: Any) -> None:
        doc = self.ctx.session.doc
        if doc is None:
            self.conversation.set_items([], "The harness is still loading.")
            return
        from studio.logic.data_tasks import gold_view

        self._token += 1
        token = self._token
        self.gold_pane.aside.setText("playing…")

        def done(view: Any) -> None:
            if token != self._token:
                return
            self.gold = view
            if view.problem:
                self.gold_pane.aside.setText("")
                self.conversation.set_items(
                    [], f"The oracle cannot play this task on this harness: {view.problem}"
                )
                self.grades.set_grades([])
                return
            self.gold_pane.aside.setText(
                f"oracle under {doc.harness.name} · {len(view.turns) - 1} steps · "
                f"{view.e2e_ms:.0f} ms"
            )
            self.conversation.set_items(view.turns)
            from studio.logic.data_rows import GRADERS

            self.grades.set_grades(
                [(k, t, view.scores.get(k), view.reasons.get(k, [])) for k, t in GRADERS]
            )

        self.ctx.jobs.run(
            gold_view,
            task,
            doc.harness,
            on_done=done,
            on_error=lambda e: self.banner.show_message("error", str(e)),
            label="Playing the gold trajectory",
        )
