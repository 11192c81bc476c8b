"""The Trajectories tab: a generated dataset's rows (kept and rejected) with filters, and the
selected row as readable turns beside its grades (with reasons) and provenance: the harness
version, the variant it was made under (sampler, seed, transforms applied) and the teacher.

Files are read in workers; only row summaries stay in memory, a row is read back from its file
when opened (studio.logic.data_rows)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from studio.context import StoreChange, StudioContext
from studio.logic.data_rows import GRADERS
from studio.logic.data_tasks import category_label
from studio.pages.data.conversation import ConversationView
from studio.pages.data.widgets import (
    FactsGrid,
    GradesPanel,
    Pane,
    elastic_combo,
    fill_combo,
    list_frame,
)
from studio.widgets.common import Banner, Segmented, chip, clear_layout, label, tool_button
from studio.widgets.tables import Column, RecordTable

SHORT = {
    "accuracy": "Acc",
    "effectiveness": "Eff",
    "tool_rationality": "Tools",
    "skill_selection": "Skills",
}


def _score_column(key: str, title: str) -> Column:
    return Column(
        key,
        SHORT[key],
        62,
        kind="score",
        get=lambda r, k=key: r.scores.get(k),
        fmt=lambda v: "–" if v is None else (f"{v:.0f}" if v in (0.0, 1.0) else f"{v:.1f}"),
        tooltip=lambda r, t=title: t,
    )


def choose_dataset(parent: QWidget | None, start: str) -> str | None:
    """Ask for a JSONL file (a module function so tests can answer it)."""
    from studio import dialogs

    return dialogs.choose_file(parent, "Open a dataset", "Datasets (*.jsonl)", start)


class TrajectoriesView(QWidget):
    loaded = Signal()

    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.dataset: Any = None
        self.extra: list[Path] = []
        self.detail: Any = None
        self._token = 0
        self._listed = False
        self._reopen = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 12, 24, 16)
        lay.setSpacing(10)

        bar = QFrame()
        bar.setObjectName("Card")
        col = QVBoxLayout(bar)
        col.setContentsMargins(14, 10, 14, 10)
        col.setSpacing(8)
        top = QHBoxLayout()
        top.setSpacing(10)
        top.addWidget(label("Dataset", "FieldLabel"))
        self.file = elastic_combo(30)
        self.file.setMinimumWidth(330)
        top.addWidget(self.file, 1)
        self.reload = tool_button("history", "Reload the dataset list and the file")
        top.addWidget(self.reload)
        top.addSpacing(8)
        self.outcome = Segmented([("all", "All"), ("kept", "Kept"), ("rejected", "Rejected")])
        top.addWidget(self.outcome)
        self.variant = Segmented(
            [("all", "Any harness"), ("original", "Original"), ("variants", "Variants")]
        )
        top.addWidget(self.variant)
        col.addLayout(top)
        second = QHBoxLayout()
        second.setSpacing(10)
        second.addWidget(label("Category", "FieldLabel"))
        self.category = QComboBox()
        self.category.setMinimumWidth(170)
        self.category.addItem("All categories", "")
        second.addWidget(self.category)
        second.addWidget(label("Split", "FieldLabel"))
        self.split = QComboBox()
        self.split.addItem("All splits", "")
        self.split.setMinimumWidth(110)
        second.addWidget(self.split)
        second.addWidget(label("Below full marks on", "FieldLabel"))
        self.failing = QComboBox()
        self.failing.addItem("any grader or none", "")
        for key, title in GRADERS:
            self.failing.addItem(title, key)
        self.failing.setMinimumWidth(150)
        second.addWidget(self.failing)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Filter by key, message or teacher…")
        self.search.setClearButtonEnabled(True)
        second.addWidget(self.search, 1)
        col.addLayout(second)
        lay.addWidget(bar)

        self.banner = Banner()
        lay.addWidget(self.banner)
        self.summary = QHBoxLayout()
        self.summary.setSpacing(6)
        lay.addLayout(self.summary)

        split = QSplitter(Qt.Orientation.Vertical)
        self.table = RecordTable(
            [
                Column("key", "Row", 200, kind="mono"),
                Column("category", "Category", 110, fmt=lambda v: category_label(v or "")),
                Column("viewer_message", "Viewer message", None),
                Column(
                    "variant",
                    "Harness",
                    150,
                    get=lambda r: r.variant_text,
                    tone=lambda r: "text-muted" if r.variant_index == 0 else "accent-text",
                ),
                Column("teacher", "Teacher", 100, tone=lambda r: "text-muted"),
                *[_score_column(k, t) for k, t in GRADERS],
                Column(
                    "kept",
                    "Outcome",
                    96,
                    kind="chip",
                    get=lambda r: "kept" if r.kept else r.rejected or "rejected",
                    tone=lambda r: "success" if r.kept else "danger",
                    tooltip=lambda r: (
                        "Kept in the dataset" if r.kept else f"Rejected ({r.rejected})"
                    ),
                ),
            ],
            key=lambda r: (str(r.path), r.key, r.kept),
        )
        split.addWidget(list_frame(self.table))

        detail = QSplitter(Qt.Orientation.Horizontal)
        self.conv_pane = Pane("Trajectory")
        self.row_chips = QHBoxLayout()
        self.row_chips.setSpacing(6)
        self.conv_pane.head.insertLayout(1, self.row_chips)
        self.conversation = ConversationView()
        self.conv_pane.body.addWidget(self.conversation)
        detail.addWidget(self.conv_pane)
        side = QScrollArea()
        side.setWidgetResizable(True)
        side.setFrameShape(QFrame.Shape.NoFrame)
        side_body = QWidget()
        side_body.setObjectName("PageBody")
        sl = QVBoxLayout(side_body)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.setSpacing(10)
        self.grades_pane = Pane("Grades")
        self.grades = GradesPanel()
        self.grades_pane.body.addWidget(self.grades)
        sl.addWidget(self.grades_pane)
        self.prov_pane = Pane("Provenance")
        self.provenance = FactsGrid(label_width=72)
        self.prov_pane.body.addWidget(self.provenance)
        self.applied = label("", "Faint", wrap=True)
        self.prov_pane.body.addWidget(self.applied)
        sl.addWidget(self.prov_pane)
        sl.addStretch(1)
        side.setWidget(side_body)
        side.setMinimumWidth(320)
        detail.addWidget(side)
        detail.setSizes([760, 380])
        detail.setStretchFactor(0, 1)
        split.addWidget(detail)
        split.setSizes([262, 500])
        lay.addWidget(split, 1)

        self._filter_timer = QTimer(self)
        self._filter_timer.setSingleShot(True)
        self._filter_timer.setInterval(120)
        self._filter_timer.timeout.connect(self.apply_filter)
        self.file.activated.connect(lambda _i: self.open_current())
        self.reload.clicked.connect(lambda: self.refresh(reopen=True))
        for seg in (self.outcome, self.variant):
            seg.changed.connect(lambda _v: self.apply_filter())
        for combo in (self.category, self.split, self.failing):
            combo.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.search.textChanged.connect(lambda _t: self._filter_timer.start())
        self.table.rowSelected.connect(self._selected)
        ctx.storeChanged.connect(self._store_changed)
        self._selected(None)

    # ------------------------------------------------------------------ files

    def showEvent(self, event: Any) -> None:
        if not self._listed:
            self.refresh(reopen=self._reopen)
        super().showEvent(event)

    def _store_changed(self, changes: StoreChange) -> None:
        """Rows were written (a generation run): re-list now if shown, else when next shown;
        the open file is read again (it may be the one that grew)."""
        if changes & StoreChange.ROWS:
            self._listed, self._reopen = False, True
            if self.isVisible():
                self.refresh(reopen=True)

    def refresh(self, select: Path | None = None, reopen: bool = False) -> None:
        """Re-list the datasets; open `select` (or keep the current one)."""
        self._listed, self._reopen = True, False
        home, extra = self.ctx.home, list(self.extra)
        wanted = str(Path(select).resolve()) if select is not None else self.file.currentData()

        def work() -> Any:
            from studio.logic.data_rows import list_datasets

            return list_datasets(home, extra)

        def done(files: list[Any]) -> None:
            items = [
                (
                    str(f.path),
                    f"{f.name}  ·  {f.rows} kept · {f.rejects} rejected  ·  "
                    f"{f.modified.astimezone():%b %d %H:%M}",
                )
                for f in files
            ]
            before = self.file.currentData()
            fill_combo(self.file, items, keep=False)
            idx = self.file.findData(wanted) if wanted else -1
            self.file.setCurrentIndex(idx if idx >= 0 else (0 if items else -1))
            if not items:
                self.dataset = None
                self.table.set_rows([])
                self._summary_empty()
                return
            if (
                reopen
                or select is not None
                or self.file.currentData() != before
                or self.dataset is None
            ):
                self.open_current()

        self.ctx.jobs.run(work, on_done=done, on_error=self._error, label="Listing datasets")

    def open_file_dialog(self) -> None:
        path = choose_dataset(self, str(self.ctx.home / "datasets"))
        if path:
            self.open_path(Path(path))

    def open_path(self, path: Path) -> None:
        path = Path(path).resolve()
        if path not in self.extra:
            self.extra.append(path)
        self.refresh(select=path)

    def open_current(self) -> None:
        value = self.file.currentData()
        if not value:
            return
        path = Path(value)

        def work() -> Any:
            from studio.logic.data_rows import load_dataset

            return load_dataset(path)

        def done(dataset: Any) -> None:
            if self.file.currentData() != value:
                return
            self.dataset = dataset
            from studio.logic.data_rows import facets

            f = facets(dataset.rows)
            fill_combo(
                self.category,
                [("", "All categories")] + [(c, category_label(c)) for c in f["category"]],
            )
            fill_combo(self.split, [("", "All splits")] + [(s, s) for s in f["split"]])
            if dataset.problems:
                more = f" (+{len(dataset.problems) - 3} more)" if len(dataset.problems) > 3 else ""
                self.banner.show_message(
                    "warning",
                    f"{len(dataset.problems)} line(s) skipped: "
                    + "; ".join(dataset.problems[:3])
                    + more,
                )
            else:
                self.banner.hide()
            self.apply_filter()
            self.loaded.emit()

        self.ctx.jobs.run(work, on_done=done, on_error=self._error, label="Reading dataset")

    def _error(self, exc: BaseException) -> None:
        self.banner.show_message("error", str(exc))

    # ------------------------------------------------------------------ filters

    def row_filter(self) -> Any:
        from studio.logic.data_rows import RowFilter

        return RowFilter(
            outcome=self.outcome.value(),
            category=self.category.currentData() or "",
            split=self.split.currentData() or "",
            variant=self.variant.value(),
            failing=self.failing.currentData() or "",
            text=self.search.text(),
        )

    def apply_filter(self) -> None:
        if self.dataset is None:
            return
        from studio.logic.data_rows import filter_rows

        rows = filter_rows(self.dataset.rows, self.row_filter())
        self.table.set_rows(rows)
        self._summary(rows)
        if self.table.current() is None and rows:
            self.table.select_row(0)

    def _summary_empty(self) -> None:
        clear_layout(self.summary)
        self.summary.addWidget(
            label(
                "No datasets yet: generate one in the Generate tab, or open a JSONL file.", "Muted"
            )
        )
        self.summary.addStretch(1)
        self.conversation.set_items([], "No dataset open.")

    def _summary(self, rows: list[Any]) -> None:
        clear_layout(self.summary)
        all_rows = self.dataset.rows
        kept = sum(r.kept for r in all_rows)
        self.summary.addWidget(chip(f"{len(all_rows)} rows", "neutral"))
        self.summary.addWidget(chip(f"{kept} kept", "added"))
        if len(all_rows) - kept:
            self.summary.addWidget(chip(f"{len(all_rows) - kept} rejected", "removed"))
        variants = sum(r.variant_index > 0 for r in all_rows)
        if variants:
            self.summary.addWidget(chip(f"{variants} under HSA variants", "custom"))
        retries = sum(r.hook_retry for r in all_rows)
        if retries:
            self.summary.addWidget(chip(f"{retries} hook retries", "modified"))
        tasks = len({r.task_id for r in all_rows})
        self.summary.addWidget(chip(f"{tasks} tasks", "neutral"))
        self.summary.addStretch(1)
        if len(rows) != len(all_rows):
            self.summary.addWidget(label(f"{len(rows)} shown", "Faint"))
        self.summary.addWidget(label(str(self.dataset.file.path), "Faint"))

    # ------------------------------------------------------------------ detail

    def _selected(self, summary: Any) -> None:
        clear_layout(self.row_chips)
        if summary is None:
            self.detail = None
            self.conv_pane.title.setText("Trajectory")
            self.conv_pane.aside.setText("")
            self.conversation.set_items([], "Pick a row to read its trajectory.")
            self.grades.set_grades([])
            self.provenance.set_facts([])
            self.applied.setText("")
            return
        from studio.logic.data_rows import row_detail

        self._token += 1
        token = self._token

        def done(detail: Any) -> None:
            if token == self._token:
                self.show_detail(detail)

        self.ctx.jobs.run(
            row_detail, summary, on_done=done, on_error=self._error, label="Reading row"
        )

    def show_detail(self, detail: Any) -> None:
        self.detail = detail
        s = detail.summary
        self.conv_pane.title.setText(s.key)
        clear_layout(self.row_chips)
        self.row_chips.addWidget(
            chip("kept" if s.kept else f"rejected · {s.rejected}", "added" if s.kept else "removed")
        )
        self.row_chips.addWidget(chip(s.variant_text, "custom" if s.variant_index else "neutral"))
        if s.hook_retry:
            self.row_chips.addWidget(
                chip("kept whole" if s.kept_whole else "hook retry · pruned", "modified")
            )
        self.conv_pane.aside.setText(f"{category_label(s.category)} · {s.split}")
        turns = detail.turns
        if detail.reasons:
            from studio.logic.data_turns import TurnItem

            turns = [
                *turns,
                TurnItem("status", "Rejected", body="\n".join(detail.reasons), ok=False),
            ]
        self.conversation.set_items(turns, "This row holds no trajectory.")
        self.grades.set_grades(detail.grades)
        self.provenance.set_facts(detail.provenance)
        if detail.applied:
            from studio.logic.variants import transform_label

            shown = ", ".join(transform_label(n) for n in detail.applied[:8])
            more = f" and {len(detail.applied) - 8} more" if len(detail.applied) > 8 else ""
            self.applied.setText(f"Transforms applied: {shown}{more}")
        else:
            self.applied.setText("")
