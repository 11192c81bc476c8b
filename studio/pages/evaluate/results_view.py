"""The Results tab: stored evaluation runs; for the selected run its per-suite scores and pass
rates with 95 % intervals, the per-HSA-dimension cost, every item (click one to read its
trace), and beside it the distribution over harness variants of every evaluated model.

Reading and the statistics run in workers (studio.logic.eval_view); a newer selection makes
an older result stale."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.context import StoreChange, StudioContext
from studio.pages.data.conversation import ConversationView
from studio.pages.data.widgets import Pane
from studio.pages.evaluate.plots import VariantPlot
from studio.widgets.common import Banner, ElidedLabel, button, chip, clear_layout, label
from studio.widgets.tables import Column, RecordTable, score_tone

STATUS_TONE = {
    "done": "success",
    "running": "info",
    "created": "text-muted",
    "stopped": "warning",
    "failed": "danger",
}
STATUS_CHIP = {"done": "added", "running": "custom", "stopped": "modified", "failed": "removed"}


def pct(v: float | None) -> str:
    return "–" if v is None else f"{v * 100:.1f}"


def signed(ci: tuple[float, float, float] | None) -> str:
    if ci is None:
        return "–"
    mean, low, high = ci
    return f"{mean * 100:+.1f}  [{low * 100:+.1f}, {high * 100:+.1f}]"


def ci_tip(ci: tuple[float, float, float] | None) -> str:
    if ci is None:
        return ""
    return f"{ci[0] * 100:.1f}  (95 % interval {ci[1] * 100:.1f} – {ci[2] * 100:.1f})"


class RunItem(QFrame):
    """A run in the list: model and status on the first line, suites, time and pass rate
    under it."""

    def __init__(self, row: Any) -> None:
        super().__init__()
        self.setObjectName("VersionRow")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(10, 7, 10, 7)
        lay.setSpacing(2)
        top = QHBoxLayout()
        top.setSpacing(6)
        top.addWidget(ElidedLabel(row.model, "VersionMessage"), 1)
        if row.status != "done":
            top.addWidget(chip(row.status, STATUS_CHIP.get(row.status, "neutral")))
        if row.pass_rate is not None:
            tone = {"success": "added", "warning": "modified", "danger": "removed"}
            passed = chip(f"{row.pass_rate * 100:.0f} %", tone[score_tone(row.pass_rate)])
            passed.setToolTip("items passed")
            top.addWidget(passed)
        lay.addLayout(top)
        n = row.suites.count(",") + 1
        suites = row.suites if n == 1 else f"{n} suites"
        lay.addWidget(ElidedLabel(f"{suites} · {row.version} · {row.created}", "VersionMeta"))
        self.setToolTip(
            f"{row.id}\nharness {row.version}\n{row.run.done}/{row.run.total} items"
            + (f"\n{row.run.reason}" if row.run.reason else "")
        )


class RunList(QListWidget):
    """The stored runs, newest first (two-line rows)."""

    rowSelected = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Any] = []
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSpacing(1)
        self.currentRowChanged.connect(
            lambda i: self.rowSelected.emit(self.rows[i] if 0 <= i < len(self.rows) else None)
        )

    def set_rows(self, rows: list[Any]) -> None:
        keep = self.current().id if self.current() is not None else None
        self.blockSignals(True)
        self.clear()
        self.rows = list(rows)
        for row in rows:
            item = QListWidgetItem()
            widget = RunItem(row)
            item.setSizeHint(QSize(0, widget.sizeHint().height() + 2))
            self.addItem(item)
            self.setItemWidget(item, widget)
        self.blockSignals(False)
        if keep is not None:
            self.select_where(lambda r: r.id == keep)

    def current(self) -> Any:
        i = self.currentRow()
        return self.rows[i] if 0 <= i < len(self.rows) else None

    def records(self) -> list[Any]:
        return list(self.rows)

    def select_row(self, row: int) -> bool:
        if not 0 <= row < len(self.rows):
            return False
        if self.currentRow() == row:
            self.rowSelected.emit(self.rows[row])
        self.setCurrentRow(row)
        return True

    def select_where(self, predicate: Any) -> bool:
        for i, row in enumerate(self.rows):
            if predicate(row):
                return self.select_row(i)
        return False


def interval_height(table: RecordTable, rows: int) -> int:
    return (
        table.horizontalHeader().height() + rows * table.verticalHeader().defaultSectionSize() + 4
    )


class ResultsView(QWidget):
    viewed = Signal(object)
    """A RunView was shown (tests wait on it)."""
    resume_requested = Signal(str)

    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.runs: list[Any] = []
        self.view: Any = None
        self.trace_key: Any = None
        self._token = 0
        self._trace_token = 0
        self._listed = False
        lay = QHBoxLayout(self)
        lay.setContentsMargins(24, 12, 24, 16)
        lay.setSpacing(0)
        split = QSplitter(Qt.Orientation.Horizontal)

        # ---- runs
        self.runs_pane = Pane("Runs")
        self.runs_table = RunList()
        self.runs_pane.body.addWidget(self.runs_table)
        self.runs_pane.setMinimumWidth(230)
        split.addWidget(self.runs_pane)

        # ---- the run
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(10, 0, 0, 0)
        rl.setSpacing(10)
        head = QHBoxLayout()
        head.setSpacing(8)
        self.title = label("No run selected", "SectionTitle")
        head.addWidget(self.title)
        self.chips = QHBoxLayout()
        self.chips.setSpacing(6)
        head.addLayout(self.chips)
        head.addStretch(1)
        self.meta = label("", "Faint")
        head.addWidget(self.meta)
        self.resume_button = button(
            "Resume", "play", "", "Continue this run: stored items are skipped"
        )
        self.resume_button.hide()
        head.addWidget(self.resume_button)
        self.retry_button = button(
            "Retry failed items",
            "redo",
            "",
            "Run again only the items that hit an infrastructure error; the rest are kept",
        )
        self.retry_button.hide()
        head.addWidget(self.retry_button)
        rl.addLayout(head)
        self.banner = Banner()
        rl.addWidget(self.banner)

        vsplit = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        tl = QHBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.setSpacing(10)
        left_top = QWidget()
        ltl = QVBoxLayout(left_top)
        ltl.setContentsMargins(0, 0, 0, 0)
        ltl.setSpacing(10)
        self.scores_pane = Pane("Scores")
        self.scores_pane.aside.setText("mean with its 95 % bootstrap interval (tasks resampled)")
        self.scores = RecordTable(
            [
                Column("suite", "Suite", 100),
                Column("items", "Items", 56, kind="number"),
                Column("score", "Score", None, kind="interval", tooltip=lambda r: ci_tip(r.score)),
                Column(
                    "pass_rate",
                    "Pass rate",
                    None,
                    kind="interval",
                    tooltip=lambda r: ci_tip(r.pass_rate),
                ),
                Column(
                    "failed",
                    "Failed",
                    56,
                    kind="number",
                    tone=lambda r: "danger" if r.failed else "text-faint",
                    tooltip=lambda r: "The model could not complete these (counted as 0)",
                ),
                Column(
                    "errors",
                    "Errors",
                    56,
                    kind="number",
                    tone=lambda r: "warning" if r.errors else "text-faint",
                    tooltip=lambda r: (
                        "Infrastructure errors (server unreachable or 5xx, timeouts): left "
                        "out of the score and pass rate; Retry failed items runs them again"
                    ),
                ),
            ],
            key=lambda r: r.suite,
        )
        self.scores.setSortingEnabled(False)
        self.scores.verticalHeader().setDefaultSectionSize(42)
        self.scores_pane.body.addWidget(self.scores)
        self.notes = label("", "Faint", wrap=True)
        self.scores_pane.body.addWidget(self.notes)
        ltl.addWidget(self.scores_pane, 3)
        self.dims_pane = Pane("Per HSA dimension")
        self.dims_pane.aside.setText("")
        self.dims = RecordTable(
            [
                Column("dimension", "Dimension", 130),
                Column("rows", "Items", 50, kind="number"),
                Column("score", "Score", None, kind="interval", tooltip=lambda r: ci_tip(r.score)),
                Column(
                    "cost",
                    "Cost vs original",
                    160,
                    fmt=signed,
                    tone=lambda r: (
                        "text-faint"
                        if r.cost is None
                        else ("danger" if r.cost[0] > 0.0001 else "success")
                    ),
                    tooltip=lambda r: (
                        "LS-QA score minus this dimension's HV-QA score, paired "
                        "per task (positive: the dimension costs score)"
                    ),
                ),
            ],
            key=lambda r: r.dimension,
        )
        self.dims.setSortingEnabled(False)
        self.dims.verticalHeader().setDefaultSectionSize(28)
        self.dims_pane.body.addWidget(self.dims)
        ltl.addWidget(self.dims_pane, 4)
        tl.addWidget(left_top, 5)
        self.plot_pane = Pane("Variant distribution")
        self.plot_pane.aside.setText("HV-QA, newest run per model")
        self.plot = VariantPlot()
        self.plot.setMinimumHeight(200)
        self.plot_pane.body.addWidget(self.plot, 1)
        self.plot_stats = label("", "Faint", wrap=True)
        self.plot_pane.body.addWidget(self.plot_stats)
        self.legend = label("", "Faint", wrap=True)
        self.plot_pane.body.addWidget(self.legend)
        theme.bind(self.legend, lambda w: w.setText(self._legend()))  # type: ignore[attr-defined]
        self.plot_pane.setMinimumWidth(300)
        tl.addWidget(self.plot_pane, 3)
        vsplit.addWidget(top)

        bottom = QSplitter(Qt.Orientation.Horizontal)
        self.items_pane = Pane("Items")
        self.items = RecordTable(
            [
                Column("task_id", "Task", 158, kind="mono"),
                Column(
                    "variant",
                    "Suite · variant",
                    150,
                    get=lambda r: f"{r.suite} · {r.variant}" if r.variant else r.suite,
                    tone=lambda r: "accent-text" if r.variant else "text",
                ),
                Column(
                    "score",
                    "Score",
                    58,
                    kind="score",
                    fmt=lambda v: f"{v:.2f}".rstrip("0").rstrip(".") if v else "0",
                ),
                Column(
                    "reason",
                    "Why not full marks",
                    None,
                    tone=lambda r: {"failed": "danger", "error": "warning"}.get(
                        r.status, "text-muted"
                    ),
                    tooltip=lambda r: r.reason,
                ),
            ],
            key=lambda r: r.key,
        )
        self.items_pane.body.addWidget(self.items)
        bottom.addWidget(self.items_pane)
        self.trace_pane = Pane("Trace")
        self.conversation = ConversationView()
        self.trace_pane.body.addWidget(self.conversation)
        bottom.addWidget(self.trace_pane)
        bottom.setSizes([640, 410])
        vsplit.addWidget(bottom)
        vsplit.setSizes([450, 300])
        rl.addWidget(vsplit, 1)
        split.addWidget(right)
        split.setSizes([266, 974])
        split.setStretchFactor(1, 1)
        lay.addWidget(split)

        self.runs_table.rowSelected.connect(self._run_selected)
        self.items.rowSelected.connect(self._item_selected)
        self.resume_button.clicked.connect(
            lambda: self.view is not None and self.resume_requested.emit(self.view.run.id)
        )
        # a resume runs stored error rows again and skips everything else (core.eval.api)
        self.retry_button.clicked.connect(
            lambda: self.view is not None and self.resume_requested.emit(self.view.run.id)
        )
        ctx.opened.connect(self.refresh)
        ctx.storeChanged.connect(self._store_changed)
        self._show_empty()

    # ------------------------------------------------------------------ runs

    def showEvent(self, event: Any) -> None:
        if not self._listed and self.ctx.store is not None:
            self.refresh()
        super().showEvent(event)

    def _store_changed(self, changes: StoreChange) -> None:
        """Evaluation results were written: re-list now if shown, else when next shown."""
        if changes & StoreChange.RESULTS:
            self._listed = False
            if self.isVisible() and self.ctx.store is not None:
                self.refresh()

    def refresh(self, select: str | None = None) -> None:
        """Re-list the runs (and the distribution plot); select `select` when given."""
        self._listed = True
        name = self.ctx.harness_name

        def work(store: Any) -> Any:
            from core.eval.api import list_eval_runs
            from studio.logic.eval_view import run_rows, variant_distributions

            runs = list_eval_runs(store)
            labels: dict[str, tuple[str, ...]] = {}
            if name:
                labels = {v.id: tuple(v.labels) for v in store.log(name)}
            return run_rows(runs, labels), variant_distributions(store, runs)

        def done(result: Any) -> None:
            rows, dists = result
            self.runs = rows
            self.runs_table.set_rows(rows)
            self.runs_pane.aside.setText(f"{len(rows)} run{'s' if len(rows) != 1 else ''}")
            self.plot.set_models(dists)
            self.plot_stats.setText(
                "\n".join(
                    f"{d.label}:  mean {d.distribution.mean:.2f} · P5 {d.distribution.p5:.2f} · "
                    f"worst {d.distribution.worst:.2f} · {d.distribution.variants} variants"
                    for d in dists
                )
            )
            self.plot_stats.setVisible(bool(dists))
            self.plot_pane.aside.setText(
                f"HV-QA · {len(dists)} model{'s' if len(dists) != 1 else ''}"
                if dists
                else "no HV-QA run yet"
            )
            if select is not None:
                self.runs_table.select_where(lambda r: r.id == select)
            elif self.runs_table.current() is None and rows:
                self.runs_table.select_row(0)
            if not rows:
                self._show_empty()

        self.ctx.run_store(work, on_done=done, on_error=self._error, label="Listing evaluations")

    @staticmethod
    def _legend() -> str:
        def swatch(token: str, glyph: str, text: str) -> str:
            return f"<span style='color:{theme.color(token)}'>{glyph}</span>&nbsp;{text}"

        return "&nbsp;&nbsp;&nbsp;".join(
            [
                swatch("accent", "●", "variant"),
                swatch("accent-text", "━", "mean"),
                swatch("warning", "┅", "P5"),
                swatch("danger", "━", "worst"),
            ]
        )

    def _error(self, exc: BaseException) -> None:
        self.banner.show_message("error", str(exc))

    def _show_empty(self) -> None:
        self.title.setText("No evaluation yet")
        self.meta.setText("")
        clear_layout(self.chips)
        self.scores.set_rows([])
        self.dims.set_rows([])
        self.items.set_rows([])
        self.notes.setText("Start one in the Run tab: pick a model and the suites.")
        self.conversation.set_items([], "Pick an item to read its trace.")

    def _run_selected(self, row: Any) -> None:
        if row is None:
            return
        self._token += 1
        token = self._token
        run_id = row.id

        def work(store: Any) -> Any:
            from studio.logic.eval_view import run_view

            return run_view(store, run_id)

        def done(view: Any) -> None:
            if token == self._token:
                self.show_view(view)

        self.ctx.run_store(work, on_done=done, on_error=self._error, label="Reading results")

    def show_view(self, view: Any) -> None:
        from studio.logic.eval_view import model_label

        self.view = view
        run = view.run
        self.banner.hide()
        self.title.setText(model_label(run.model, run.adapter))
        clear_layout(self.chips)
        self.chips.addWidget(chip(run.status.value, STATUS_CHIP.get(run.status.value, "neutral")))
        self.chips.addWidget(chip(f"{run.harness} @ {(run.harness_version or '')[:10]}", "neutral"))
        self.meta.setText(f"{run.id} · {run.done}/{run.total} items")
        self.resume_button.setVisible(view.resumable)
        retry = view.retryable
        self.retry_button.setVisible(bool(retry))
        self.retry_button.setText(f"Retry {retry} failed item{'s' if retry != 1 else ''}")
        if run.reason and run.status.value != "done":
            self.banner.show_message(
                "warning" if run.status.value == "stopped" else "error",
                f"This run {run.status.value}: {run.reason}. Resume continues where it stopped"
                + (f" and runs the {run.errors} error item(s) again." if run.errors else "."),
            )
        elif retry:
            self.banner.show_message(
                "warning",
                f"{retry} item{'s' if retry != 1 else ''} hit an infrastructure error (server "
                "unreachable or failing, a timeout): left out of the scores, not counted as "
                "wrong answers. Retry failed items runs only them again.",
            )
        self.scores.set_rows(view.suites)
        self.scores.setFixedHeight(interval_height(self.scores, max(1, len(view.suites))))
        notes = [f"{s.suite}: {s.extra}" for s in view.suites if s.extra]
        notes += [f"{kind} × {n} (e.g. {example[:90]})" for kind, n, example in view.failures[:3]]
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))
        self.dims.set_rows(view.dimensions)
        self.dims_pane.setVisible(True)
        if not view.dimensions:
            self.dims_pane.aside.setText("run HV-QA to see which dimension costs most")
        else:
            self.dims_pane.aside.setText("HV-QA, costliest first")
        self.items.set_rows(view.items)
        self.items_pane.aside.setText(
            f"{sum(i.passed for i in view.items)} of {len(view.items)} passed"
        )
        if view.items and self.items.current() is None:
            failing = next((i for i, r in enumerate(self.items.records()) if not r.passed), 0)
            self.items.select_row(failing)
        self.viewed.emit(view)

    # ------------------------------------------------------------------ traces

    def _item_selected(self, item: Any) -> None:
        if item is None or self.view is None:
            self.conversation.set_items([], "Pick an item to read its trace.")
            return
        self._trace_token += 1
        token = self._trace_token
        run_id, key = self.view.run.id, item.key
        self.trace_pane.title.setText(f"Trace · {item.task_id}")
        self.trace_pane.aside.setText(item.variant or item.suite)

        def work(store: Any) -> Any:
            from studio.logic.eval_view import trace_items

            return trace_items(store, run_id, key)

        def done(turns: Any) -> None:
            if token == self._trace_token:
                self.trace_key = key
                empty = item.reason or "This item has no stored trace."
                self.conversation.set_items(turns, empty)

        self.ctx.run_store(work, on_done=done, on_error=self._error, label="Reading trace")
