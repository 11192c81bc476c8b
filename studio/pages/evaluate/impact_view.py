"""The Impact tab: what moving from one stored harness version to another does to a model.
Pick the model and two versions; the gate (core.eval.impact) runs the suites under both
(reusing stored runs), pairs the items and lists the flipped tasks grouped by the changed
component; click a flip to read its trace under each version side by side."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QSpinBox,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.context import StoreChange, StudioContext
from studio.logic.eval_view import SUITE_CHOICES
from studio.pages.data.conversation import ConversationView
from studio.pages.data.widgets import Pane, elastic_combo, fill_combo, stop_on_close
from studio.pages.evaluate.run_view import ModelPicker, read_choices, version_items
from studio.pages.job_view import progress_bar
from studio.widgets.common import Banner, Field, button, label
from studio.widgets.tables import Column, RecordTable

COMPONENT_ICONS = {"manifest": "settings", "prompt": "prompt", "skill": "skill", "tool": "tool"}
ROLE = Qt.ItemDataRole.UserRole


class Stat(QWidget):
    """A big number with a caption (and an optional interval line)."""

    def __init__(self, caption: str) -> None:
        super().__init__()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.value = label("–", "PageTitle")
        self.sub = label("", "Faint")
        lay.addWidget(self.value)
        lay.addWidget(label(caption, "FieldLabel"))
        lay.addWidget(self.sub)

    def set(self, value: str, sub: str = "", tone: str | None = None) -> None:
        self.value.setText(value)
        self.sub.setText(sub)
        self.value.setStyleSheet(f"color: {theme.color(tone)};" if tone else "")


class ImpactView(QWidget):
    progressed = Signal(object)
    reported = Signal(object)

    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.job: Any = None
        self.report: Any = None
        self.groups: list[Any] = []
        self.flip: Any = None
        self._token = 0
        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 12, 24, 16)
        lay.setSpacing(10)

        # ---- controls
        bar = QFrame()
        bar.setObjectName("Card")
        grid = QGridLayout(bar)
        grid.setContentsMargins(16, 10, 16, 12)
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(6)
        self.picker = ModelPicker()
        grid.addWidget(self.picker, 0, 0, 1, 2)
        self.from_version = elastic_combo(20)
        self.to_version = elastic_combo(20)
        for c in (self.from_version, self.to_version):
            c.setMinimumWidth(230)
        grid.addWidget(Field("From (deployed)", self.from_version), 0, 2)
        arrow = QLabel()
        theme.bind_icon(arrow, "chevron-right", "text-faint", 16)
        grid.addWidget(arrow, 0, 3, Qt.AlignmentFlag.AlignBottom)
        grid.addWidget(Field("To (candidate)", self.to_version), 0, 4)
        suites = QHBoxLayout()
        suites.setSpacing(6)
        self.suite_buttons: dict[str, QToolButton] = {}
        for key, title, hint in SUITE_CHOICES:
            b = QToolButton()
            b.setObjectName("Toggle")
            b.setText(title)
            b.setToolTip(hint)
            b.setCheckable(True)
            b.setChecked(key == "ls-qa")
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            self.suite_buttons[key] = b
            suites.addWidget(b)
        suites.addSpacing(8)
        self.limit = QSpinBox()
        self.limit.setRange(0, 100_000)
        self.limit.setValue(24)
        self.limit.setSpecialValueText("every task")
        self.limit.setSuffix(" tasks per suite")
        self.limit.setFixedWidth(190)
        suites.addWidget(self.limit)
        suites.addStretch(1)
        grid.addLayout(suites, 1, 0, 1, 3)
        self.run_button = button(
            "Run impact gate", "play", "primary", "Run the suites under both versions"
        )
        self.stop_button = button("Stop", "close", "danger", "Stop; stored items are kept")
        self.stop_button.hide()
        run_row = QHBoxLayout()
        run_row.addStretch(1)
        run_row.addWidget(self.stop_button)
        run_row.addWidget(self.run_button)
        grid.addLayout(run_row, 1, 4)
        grid.setColumnStretch(0, 2)
        grid.setColumnStretch(2, 2)
        grid.setColumnStretch(4, 2)
        self.bar = progress_bar(6)
        self.bar.hide()
        grid.addWidget(self.bar, 2, 0, 1, 5)
        lay.addWidget(bar)
        self.banner = Banner()
        lay.addWidget(self.banner)

        # ---- summary
        summary = QFrame()
        summary.setObjectName("Card")
        sl = QHBoxLayout(summary)
        sl.setContentsMargins(18, 10, 18, 10)
        sl.setSpacing(30)
        self.stat_score = Stat("Score")
        self.stat_delta = Stat("Score change")
        self.stat_pass = Stat("Pass-rate change")
        self.stat_flips = Stat("Flipped items")
        for w in (self.stat_score, self.stat_delta, self.stat_pass, self.stat_flips):
            sl.addWidget(w)
        sl.addStretch(1)
        self.summary_note = label("", "Faint", wrap=True)
        self.summary_note.setMinimumWidth(300)
        self.summary_note.setMaximumWidth(380)
        sl.addWidget(self.summary_note)
        lay.addWidget(summary)

        # ---- groups, flips, traces
        vsplit = QSplitter(Qt.Orientation.Vertical)
        top = QSplitter(Qt.Orientation.Horizontal)
        self.groups_pane = Pane("Changed components")
        self.group_list = QListWidget()
        self.group_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.group_list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.groups_pane.body.addWidget(self.group_list)
        top.addWidget(self.groups_pane)
        self.flips_pane = Pane("Flipped tasks")
        self.flips = RecordTable(
            [
                Column(
                    "direction",
                    "Flip",
                    70,
                    kind="chip",
                    tone=lambda r: "danger" if r.direction == "broke" else "success",
                ),
                Column("suite", "Suite", 70),
                Column("task_id", "Task", 190, kind="mono"),
                Column(
                    "scores",
                    "Score",
                    90,
                    get=lambda r: r.after - r.before,
                    fmt=lambda v: f"{v:+.2f}",
                    tone=lambda r: "danger" if r.after < r.before else "success",
                    tooltip=lambda r: f"{r.before:.2f} → {r.after:.2f}",
                ),
                Column(
                    "reason", "Why", None, tone=lambda r: "text-muted", tooltip=lambda r: r.reason
                ),
            ],
            key=lambda r: r.flip.key,
        )
        self.flips_pane.body.addWidget(self.flips)
        top.addWidget(self.flips_pane)
        top.setSizes([380, 760])
        vsplit.addWidget(top)
        traces = QWidget()
        tl = QHBoxLayout(traces)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.setSpacing(10)
        self.before_pane = Pane("Under the deployed version")
        self.before = ConversationView()
        self.before_pane.body.addWidget(self.before)
        self.after_pane = Pane("Under the candidate")
        self.after = ConversationView()
        self.after_pane.body.addWidget(self.after)
        tl.addWidget(self.before_pane)
        tl.addWidget(self.after_pane)
        vsplit.addWidget(traces)
        vsplit.setSizes([230, 380])
        lay.addWidget(vsplit, 1)

        self.run_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.progressed.connect(self._progress)
        self.group_list.currentRowChanged.connect(self._group_selected)
        self.flips.rowSelected.connect(self._flip_selected)
        ctx.opened.connect(self.load_choices)
        ctx.versionsChanged.connect(self.load_choices)
        ctx.modelsChanged.connect(self.load_choices)
        if ctx.store is not None:
            self.load_choices()
        self._clear()

    # ------------------------------------------------------------------ choices

    def load_choices(self) -> None:
        def done(choices: Any, versions: Any) -> None:
            first = not self.picker.choices
            self.picker.set_choices(choices)
            if first:
                self.picker.select("oracle-fixed")
            items = version_items(versions)
            fill_combo(self.from_version, items)
            fill_combo(self.to_version, items)
            if (
                len(versions) > 1
                and self.from_version.currentData() == self.to_version.currentData()
            ):
                # default: production (else the version before head) -> head
                older = versions[1:]
                deployed = next((v.id for v in older if "production" in v.labels), older[0].id)
                self.set_versions(deployed, versions[0].id)

        read_choices(self.ctx, done, "Reading versions")

    def set_versions(self, from_id: str, to_id: str) -> None:
        self.from_version.setCurrentIndex(self.from_version.findData(from_id))
        self.to_version.setCurrentIndex(self.to_version.findData(to_id))

    def launch(self) -> Any:
        from studio.logic.eval_view import ImpactLaunch

        choice = self.picker.choice()
        return ImpactLaunch(
            model=choice.key if choice is not None else "",
            kind=self.picker.kind,
            from_version=self.from_version.currentData() or "",
            to_version=self.to_version.currentData() or "",
            suites=tuple(k for k, b in self.suite_buttons.items() if b.isChecked()),
            limit=self.limit.value() or None,
            adapter=self.picker.adapter.currentData() or None,
        )

    # ------------------------------------------------------------------ running

    def start(self) -> None:
        if self.job is not None or self.ctx.store is None:
            return
        from studio.logic.eval_view import RequestError, impact_job

        launch = self.launch()
        try:
            job = impact_job(self.ctx.store, launch)
        except RequestError as exc:
            self.banner.show_message("error", f"Cannot run the gate: {exc.message}")
            return
        except Exception as exc:  # unknown version, bad request: shown, not raised
            self.banner.show_message("error", f"Cannot run the gate: {exc}")
            return
        self.banner.hide()
        stop_on_close(self, self.ctx, self.stop)
        self.job = job
        self.run_button.setEnabled(False)
        self.stop_button.show()
        self.bar.show()
        self.bar.setRange(0, 0)
        self.ctx.run(
            job.run,
            self.progressed.emit,
            changes=StoreChange.RESULTS,
            on_done=self._done,
            on_error=self._failed,
            label="Harness impact",
        )

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            self.stop_button.setEnabled(False)

    def _progress(self, p: Any) -> None:
        if p.total:
            self.bar.setRange(0, p.total)
            self.bar.setValue(p.done)

    def _end(self) -> None:
        self.job = None
        self.run_button.setEnabled(True)
        self.stop_button.hide()
        self.stop_button.setEnabled(True)
        self.bar.hide()

    def _failed(self, exc: BaseException) -> None:
        self._end()
        self.banner.show_message("error", f"The impact gate stopped: {exc}")

    def _done(self, report: Any) -> None:
        self._end()
        self.show_report(report)
        self.ctx.message.emit(
            "success" if not report.broke else "info",
            f"Impact: {report.broke} broke, {report.fixed} fixed over {report.paired} items",
        )

    # ------------------------------------------------------------------ report

    def _clear(self) -> None:
        for s in (self.stat_score, self.stat_delta, self.stat_pass, self.stat_flips):
            s.set("–")
        self.summary_note.setText(
            "Pick the deployed version and a candidate: the gate runs the suites under both "
            "(stored runs are reused) and lists the tasks whose outcome flipped."
        )
        self.group_list.clear()
        self.flips.set_rows([])
        self.before.set_items([], "Pick a flipped task to compare its traces.")
        self.after.set_items([], "")

    def show_report(self, report: Any) -> None:
        from studio.logic.eval_view import impact_groups, model_label

        self.report = report
        lo, hi = report.delta_ci
        plo, phi = report.pass_delta_ci
        self.stat_score.set(
            f"{report.score_from * 100:.1f} → {report.score_to * 100:.1f}",
            f"{report.paired} paired items",
        )
        self.stat_delta.set(
            f"{report.delta * 100:+.1f}",
            f"95 % CI {lo * 100:+.1f} … {hi * 100:+.1f}",
            "danger" if hi < 0 else ("success" if lo > 0 else None),
        )
        self.stat_pass.set(
            f"{report.pass_delta * 100:+.1f}",
            f"{report.pass_from * 100:.0f} → {report.pass_to * 100:.0f} · CI {plo * 100:+.1f} … "
            f"{phi * 100:+.1f}",
            "danger" if phi < 0 else ("success" if plo > 0 else None),
        )
        self.stat_flips.set(
            f"{report.broke} broke · {report.fixed} fixed",
            f"{len(report.changes)} changed component{'s' if len(report.changes) != 1 else ''}",
            "danger" if report.broke else None,
        )
        reused = f" · {len(report.reused)} stored run(s) reused" if report.reused else ""
        self.summary_note.setText(
            f"{model_label(report.model, report.adapter)}\n"
            f"{report.from_version[:10]} → {report.to_version[:10]} · "
            f"{', '.join(s.value for s in report.suites)}{reused}"
        )
        self.before_pane.title.setText(f"Under {report.from_version[:10]} (deployed)")
        self.after_pane.title.setText(f"Under {report.to_version[:10]} (candidate)")
        self.groups = impact_groups(report)
        self.group_list.blockSignals(True)
        self.group_list.clear()
        for g in self.groups:
            counts = []
            if g.broke:
                counts.append(f"{g.broke} broke")
            if g.fixed:
                counts.append(f"{g.fixed} fixed")
            text = f"{g.name or g.label}\n{g.component or 'other'} · {g.change or 'flips'}"
            text += f" · {', '.join(counts)}" if counts else " · no flips"
            role = "danger" if g.broke else ("success" if g.fixed else "text-faint")
            item = QListWidgetItem(theme.icon(COMPONENT_ICONS.get(g.component, "hook"), role), text)
            item.setToolTip(g.label)
            item.setData(ROLE, g.label)
            self.group_list.addItem(item)
        self.group_list.blockSignals(False)
        self.groups_pane.aside.setText(f"{len(report.changes)} changed")
        if self.groups:
            self.group_list.setCurrentRow(0)
            self._group_selected(0)
        else:
            self.flips.set_rows([])
        self.reported.emit(report)

    def _group_selected(self, row: int) -> None:
        from studio.logic.eval_view import flip_rows

        if not 0 <= row < len(self.groups):
            return
        g = self.groups[row]
        self.flips.set_rows(flip_rows(g.flips))
        self.flips_pane.title.setText(f"Flipped tasks · {g.name or g.label}")
        self.flips_pane.aside.setText(
            f"{len(g.flips)} item{'s' if len(g.flips) != 1 else ''}" if g.flips else "no flips"
        )
        if g.flips:
            self.flips.select_row(0)
        else:
            self.before.set_items([], "No task flipped because of this change.")
            self.after.set_items([], "")

    def _flip_selected(self, row: Any) -> None:
        if row is None or self.report is None:
            return
        self.flip = row
        self._token += 1
        token = self._token
        report, key = self.report, row.flip.key

        def work(store: Any) -> Any:
            from studio.logic.eval_view import trace_items

            return trace_items(store, report.from_run, key), trace_items(store, report.to_run, key)

        def done(result: Any) -> None:
            if token != self._token:
                return
            before, after = result
            self.before.set_items(before, row.flip.before.reason or "No stored trace.")
            self.after.set_items(after, row.flip.after.reason or "No stored trace.")
            self.before_pane.aside.setText(self._outcome(row.flip.before))
            self.after_pane.aside.setText(self._outcome(row.flip.after))

        self.ctx.run_store(work, on_done=done, label="Reading traces")

    @staticmethod
    def _outcome(result: Any) -> str:
        if result.status.value == "failed":
            return f"failed: {result.reason or ''}"[:80]
        return f"{'passed' if result.passed else 'not passed'} · score {result.score:.2f}"
