"""The live monitor of one training run (used by the Train and Runs pages).

Top: the run, its stage and status, Stop (save) / Cancel / Resume / Restart. Then progress:
phase, step / total, time training and left, tokens/s, GPU memory per device when the child
reports it. Charts of loss, learning rate, grad norm, reward components and completion length
(one curve per series, updated in place). Tabs: the log tail, the run's frozen config (from
the store, never the Train form), details (command, provenance, outputs).

A failed run says why (the store's reason: the child's own, or the exit status and the last
log lines when the process vanished) and offers Resume when it has a checkpoint, and Restart
(a new run with the same request) otherwise. Everything shown comes from the hub's state
(`studio.run_hub`), which folds events in as they arrive.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.run_hub import Followed, RunHub
from studio.widgets.charts import MetricChart
from studio.widgets.common import Banner, CodeEdit, button, chip, clear_layout, label, repolish

if TYPE_CHECKING:
    from core.store.training import RunRecord

STATUS_CHIPS = {
    "running": "custom",
    "done": "added",
    "failed": "removed",
    "stopped": "modified",
    "cancelled": "neutral",
    "created": "neutral",
}
STAGE_NAMES = {"sft": "HSA-SFT", "opd": "OPD", "rl": "HSA-RL", "pipeline": "Pipeline"}
CHARTS = (
    ("loss", "Loss", ("loss",)),
    ("learning_rate", "Learning rate", ("learning_rate",)),
    ("grad_norm", "Grad norm", ("grad_norm",)),
    ("rewards", "Reward components", ("reward", "reward/")),
    ("completion_length", "Completion length", ("completion_length",)),
)
LEGENDS = {"reward": "total"}


def chart_of(series: str) -> str | None:
    """Which chart a series belongs to."""
    for key, _title, names in CHARTS:
        for name in names:
            if series == name or (name.endswith("/") and series.startswith(name)):
                return key
    return None


def _progress(line: str) -> bool:
    """A progress-bar line of the log (not worth a place in the failure banner)."""
    return "█" in line or "it/s]" in line or "/s]" in line or line.rstrip().endswith("%|")


BAR_COLORS = {
    "failed": "danger",
    "stopped": "warning",
    "cancelled": "text-faint",
    "done": "success",
}


def status_chip(status: str) -> QLabel:
    return chip(status, STATUS_CHIPS.get(status, "neutral"))


def _clock(seconds: float | None) -> str:
    from core.durations import format_duration

    return format_duration(seconds)


class RunMonitor(QWidget):
    def __init__(self, hub: RunHub, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.run_id: str | None = None
        self.status_text = ""
        self._header_key: tuple[Any, ...] | None = None
        self._bar_colour = "accent"
        self._gpu_key: list[Any] | None = None
        self._rendered: dict[str, int] = {}
        self._log_shown = 0
        self._source: str | None = None
        self._config_for: tuple[str, str] | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.stack = QStackedWidget()
        lay.addWidget(self.stack)
        self.empty = label("Select a run to see its progress.", "Muted")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack.addWidget(self.empty)
        body = QWidget()
        self.stack.addWidget(body)
        bl = QVBoxLayout(body)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.setSpacing(10)

        # ---- summary card
        card = QFrame()
        card.setObjectName("Card")
        cl = QVBoxLayout(card)
        cl.setContentsMargins(16, 12, 16, 12)
        cl.setSpacing(8)
        top = QHBoxLayout()
        top.setSpacing(8)
        self.title = label("", "SectionTitle")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.title)
        self.chips = QHBoxLayout()
        self.chips.setSpacing(6)
        top.addLayout(self.chips)
        top.addStretch(1)
        self.stop_button = button("Stop", "save", "", "Save a checkpoint and the adapter, then end")
        self.cancel_button = button("Cancel", "close", "danger", "End now without saving")
        self.resume_button = button("Resume", "play", "primary", "Continue from the checkpoint")
        self.restart_button = button(
            "Run again with this config", "redo", "", "Start a new run from step 0 with this config"
        )
        for b in (self.stop_button, self.cancel_button, self.resume_button, self.restart_button):
            top.addWidget(b)
        cl.addLayout(top)
        self.meta = label("", "Faint")
        cl.addWidget(self.meta)
        progress = QHBoxLayout()
        progress.setSpacing(14)
        self.phase = label("", "FieldLabel")
        self.phase.setMinimumWidth(86)
        progress.addWidget(self.phase)
        self.bar = QProgressBar()
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)
        self.bar.setRange(0, 1000)
        progress.addWidget(self.bar, 1)
        self.step_label = label("", "FieldLabel")
        self.time_label = label("", "Muted")
        self.time_label.setToolTip(
            "Time in the training loop. 'In all' is the run from start to end: loading the "
            "model, preparing the data and saving count too."
        )
        self.speed_label = label("", "Muted")
        for w in (self.step_label, self.time_label, self.speed_label):
            progress.addWidget(w)
        cl.addLayout(progress)
        self.gpu_row = QHBoxLayout()
        self.gpu_row.setSpacing(6)
        cl.addLayout(self.gpu_row)
        self.stages_row = QHBoxLayout()
        self.stages_row.setSpacing(6)
        cl.addLayout(self.stages_row)
        bl.addWidget(card)
        theme.bind(self.bar, lambda w: self._style_bar())

        self.banner = Banner()
        bl.addWidget(self.banner)

        # ---- charts
        self.charts: dict[str, MetricChart] = {}
        self.chart_grid = QGridLayout()
        self.chart_grid.setHorizontalSpacing(10)
        self.chart_grid.setVerticalSpacing(10)
        for key, title, _names in CHARTS:
            chart = MetricChart(title)
            chart.hide()
            self.charts[key] = chart
        self._chart_keys: tuple[str, ...] = ()
        charts = QWidget()
        charts.setLayout(self.chart_grid)
        bl.addWidget(charts, 3)

        # ---- tabs
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.log = CodeEdit(read_only=True)
        self.log.setMaximumBlockCount(2000)
        self._follow_log = True
        self._log_updating = False
        self.log.verticalScrollBar().rangeChanged.connect(self._log_range)
        self.log.verticalScrollBar().valueChanged.connect(self._log_scrolled)
        self.config_view = CodeEdit(read_only=True)
        self.details = CodeEdit(read_only=True)
        self.details.setLineWrapMode(CodeEdit.LineWrapMode.WidgetWidth)
        self.tabs.addTab(self.log, theme.icon("code"), "Log")
        self.tabs.addTab(self.config_view, theme.icon("settings"), "Frozen config")
        self.tabs.addTab(self.details, theme.icon("info"), "Details")
        bl.addWidget(self.tabs, 2)

        self.stop_button.clicked.connect(lambda: self._do(self.hub.stop))
        self.cancel_button.clicked.connect(lambda: self._do(self.hub.cancel))
        self.resume_button.clicked.connect(lambda: self._do(self.hub.resume))
        self.restart_button.clicked.connect(self._restart)
        self.hub.updated.connect(self._updated)
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick_times)
        self.on_restart: Any = None
        """Called with the new run when Restart started one (the page shows it)."""

    # ------------------------------------------------------------------ selection

    def show_run(self, run_id: str | None) -> None:
        if run_id == self.run_id:
            return
        self.run_id = run_id
        self._reset_view()
        if run_id is None:
            self.stack.setCurrentWidget(self.empty)
            self._clock.stop()
            return
        self.stack.setCurrentIndex(1)
        self.title.setText(run_id)
        self.hub.follow(run_id)
        self.render()

    def _reset_view(self) -> None:
        for chart in self.charts.values():
            chart.reset()
        self._rendered.clear()
        self._log_shown = 0
        self._source = None
        self._config_for = None
        self._header_key = None
        self._gpu_key = None
        self._follow_log = True
        self.log.clear()
        self.config_view.clear()
        self.details.clear()
        self.banner.hide()
        self._layout_charts(())

    def _do(self, action: Any) -> None:
        if self.run_id is not None:
            action(self.run_id)
            for b in (self.stop_button, self.cancel_button, self.resume_button):
                b.setEnabled(False)

    def _restart(self) -> None:
        if self.run_id is None:
            return
        self.restart_button.setEnabled(False)

        def started(run: RunRecord) -> None:
            if self.on_restart is not None:
                self.on_restart(run)
            else:
                self.show_run(run.id)

        self.hub.restart(self.run_id, started)

    # ------------------------------------------------------------------ rendering

    def _updated(self, run_id: str) -> None:
        if run_id == self.run_id:
            self.render()

    def entry(self) -> Followed | None:
        return self.hub.state(self.run_id) if self.run_id else None

    def render(self) -> None:
        entry = self.entry()
        run = entry.run if entry is not None else None
        if run is None and self.run_id is not None:
            run = self.hub.record(self.run_id)
        if entry is None or run is None:
            self.phase.setText("loading…")
            return
        if entry.source != self._source:
            if self._source is not None:  # a pipeline moved to its next stage
                for chart in self.charts.values():
                    chart.reset()
                self._rendered.clear()
                self._log_shown = 0
                self.log.clear()
            self._source = entry.source
        self._render_header(run, entry)
        self._render_progress(run, entry)
        self._render_charts(entry)
        self._render_log(entry)
        self._render_config(run)
        running = run.status in ("running", "created")
        if running and not self._clock.isActive():
            self._clock.start()
        elif not running:
            self._clock.stop()

    def _render_header(self, run: RunRecord, entry: Followed) -> None:
        from core.train.monitor import can_restart, can_resume, model_of

        key = (
            run.id, run.status, run.reason, run.step, entry.error, self.hub.env is not None,
            entry.state.info.get("device"), tuple((c.id, c.status) for c in entry.children),
        )  # fmt: skip
        if key == self._header_key:
            return
        self._header_key = key
        clear_layout(self.chips)
        self.chips.addWidget(chip(STAGE_NAMES.get(run.stage, run.stage), "neutral"))
        status = status_chip(run.status)
        status.setObjectName("RunStatus")
        self.chips.addWidget(status)
        self.status_text = run.status
        started = run.started_at.astimezone().strftime("%Y-%m-%d %H:%M") if run.started_at else ""
        device = entry.state.info.get("device") or ""
        parts = [f"model {model_of(run) or '?'}"]
        if started:
            parts.append(f"started {started}")
        if device:
            parts.append(str(device).upper() if str(device) == "cpu" else str(device))
        if run.parent:
            parts.append(f"stage of {run.parent}")
        self.meta.setText("  ·  ".join(parts))
        live = run.status in ("running", "created")
        self.stop_button.setVisible(live)
        self.cancel_button.setVisible(live)
        self.stop_button.setEnabled(live and run.status == "running")
        self.cancel_button.setEnabled(live)
        resumable = can_resume(run)
        self.resume_button.setVisible(resumable)
        self.resume_button.setEnabled(resumable)
        self.restart_button.setVisible(can_restart(run))
        self.restart_button.setEnabled(can_restart(run) and self.hub.env is not None)
        self._render_banner(run, entry, resumable)
        clear_layout(self.stages_row)
        if run.stage == "pipeline" and entry.children:
            self.stages_row.addWidget(label("Stages", "FieldLabel"))
            for child in entry.children:
                c = chip(f"{STAGE_NAMES.get(child.stage, child.stage)} · {child.status}",
                         STATUS_CHIPS.get(child.status, "neutral"))  # fmt: skip
                c.setToolTip(child.id)
                self.stages_row.addWidget(c)
            self.stages_row.addStretch(1)

    def _render_banner(self, run: RunRecord, entry: Followed, resumable: bool) -> None:
        if entry.error:
            self.banner.show_message("error", f"Cannot read this run: {entry.error}")
            return
        reason = (run.reason or "").strip()
        first = reason.splitlines()[0] if reason else ""
        if run.status == "failed":
            hint = (
                " Resume continues from its last checkpoint."
                if resumable
                else " Run again with this config starts over (no checkpoint was saved)."
            )
            tail = "\n".join(
                [ln for ln in reason.splitlines()[1:] if ln.strip() and not _progress(ln)][-3:]
            )
            text = f"Failed: {first or 'no reason recorded'}.{hint}"
            if tail:
                text += "\n" + tail
            self.banner.show_message("error", text)
        elif run.status == "stopped":
            step = f" at step {run.step}" if run.step else ""
            text = (
                f"Stopped{step}: checkpoint and adapter saved. Resume continues it."
                if resumable
                else f"Stopped{step} before a checkpoint was saved: Run again starts over."
            )
            self.banner.show_message("warning", text)
        elif run.status == "cancelled":
            self.banner.show_message("info", f"Cancelled{': ' + first if first else ''}.")
        elif run.status == "done":
            registered = ", ".join(run.outputs.get("registered") or [])
            note = f" Registered as {registered}." if registered else ""
            self.banner.show_message("success", f"Done.{note}")
        else:
            self.banner.hide()

    def _render_progress(self, run: RunRecord, entry: Followed) -> None:
        state = entry.state
        phase = state.phase or ("starting" if run.status in ("running", "created") else run.status)
        if run.finished and run.status != phase:
            phase = run.status
        self.phase.setText(phase.capitalize())
        total = state.total or run.total_steps
        step = state.step or run.step
        self.step_label.setText(f"step {step} / {total}" if total else f"step {step}")
        fraction = (step / total) if total else 0.0
        self.bar.setValue(int(max(0.0, min(1.0, fraction)) * 1000))
        colour = BAR_COLORS.get(run.status, "accent")
        if colour != self._bar_colour:
            self._bar_colour = colour
            self._style_bar()
        self._tick_times()
        speed = state.tokens_per_s
        self.speed_label.setText(f"{speed:,.0f} tok/s" if speed else "")
        if state.gpu_memory == self._gpu_key:
            return
        self._gpu_key = list(state.gpu_memory)
        clear_layout(self.gpu_row)
        if state.gpu_memory:
            self.gpu_row.addWidget(label("GPU memory", "FieldLabel"))
            for device in state.gpu_memory:
                used = float(device.get("used_mb") or 0) / 1024
                cap = float(device.get("total_mb") or 0) / 1024
                text = f"GPU {device.get('device', '?')}  {used:.1f} / {cap:.0f} GB"
                self.gpu_row.addWidget(chip(text, "neutral"))
            self.gpu_row.addStretch(1)

    def _tick_times(self) -> None:
        entry = self.entry()
        if entry is None or entry.run is None:
            return
        running = entry.run.status == "running" and entry.state.phase == "training"
        now = time.time()
        elapsed = entry.state.elapsed(running=running, now=now)
        remaining = entry.state.remaining(running=running, now=now)
        if elapsed is None:
            self.time_label.setText("")
            return
        text = f"{_clock(elapsed)} training"
        if remaining is not None and not entry.run.finished:
            text += f" · {_clock(remaining)} left"
        elif entry.run.finished:
            from core.train.monitor import duration_s  # the runs list's Duration

            text += f" · {_clock(duration_s(entry.run))} in all"
        self.time_label.setText(text)

    def _render_charts(self, entry: Followed) -> None:
        series = entry.state.series
        wanted = []
        for key, _title, _names in CHARTS:
            if any(chart_of(name) == key and s.xs for name, s in series.items()):
                wanted.append(key)
        if not wanted:
            wanted = ["loss", "learning_rate", "grad_norm"]
        if tuple(wanted) != self._chart_keys:
            self._layout_charts(tuple(wanted))
        for name, data in series.items():
            key = chart_of(name)
            if key is None or self._rendered.get(name) == data.version:
                continue
            legend = LEGENDS.get(name, name.split("/", 1)[-1])
            self.charts[key].set_series(name, data.xs, data.ys, legend=legend)
            self._rendered[name] = data.version
        resumes = sorted(set(entry.state.resumes))
        for key in self._chart_keys:
            self.charts[key].set_markers(resumes, "resumed from this step's checkpoint")

    def _layout_charts(self, keys: tuple[str, ...]) -> None:
        for chart in self.charts.values():
            self.chart_grid.removeWidget(chart)
            chart.hide()
        columns = 3
        for index, key in enumerate(keys):
            row, column = divmod(index, columns)
            self.chart_grid.addWidget(self.charts[key], row, column)
            self.charts[key].show()
        self._chart_keys = keys

    def _render_log(self, entry: Followed) -> None:
        state = entry.state
        new = state.log_total - self._log_shown
        if new <= 0:
            return
        lines = list(state.log_lines)
        follow, self._log_updating = self._follow_log, True
        if new >= len(lines):
            self.log.setPlainText("\n".join(lines))
        else:
            self.log.appendPlainText("\n".join(lines[-new:]))
        self._log_updating, self._follow_log = False, follow
        if follow:
            bar = self.log.verticalScrollBar()
            bar.setValue(bar.maximum())
        self._log_shown = state.log_total

    def _log_range(self, _low: int, high: int) -> None:
        """Keep following the end of the log unless the reader scrolled up."""
        if self._follow_log:
            self.log.verticalScrollBar().setValue(high)

    def _log_scrolled(self, value: int) -> None:
        if self._log_updating:  # setting the text scrolls to the top; not the reader
            return
        self._follow_log = value >= self.log.verticalScrollBar().maximum() - 2

    def _render_config(self, run: RunRecord) -> None:
        key = (run.id, run.status)
        if self._config_for == key:
            return
        self._config_for = key
        self.config_view.set_text_keep(run.config)
        from core.train.runs import show_command

        lines = [
            f"run        {run.id}",
            f"stage      {run.stage}",
            f"status     {run.status}" + (f" (exit {run.exit_code})" if run.exit_code else ""),
            f"folder     {run.run_dir}",
        ]
        if run.command:
            lines.append(f"command    {show_command(run.command)}")
        lines += [
            f"harness    {run.harness_version or '-'}",
            f"dataset    {run.dataset_hash or '-'}",
            f"code       {run.code_revision or '-'}",
        ]
        if run.packages:
            lines.append(
                "packages   " + ", ".join(f"{k} {v}" for k, v in sorted(run.packages.items()))
            )
        for key_name in ("adapter", "merged", "model"):
            if run.outputs.get(key_name):
                lines.append(f"{key_name:<10} {run.outputs[key_name]}")
        if run.outputs.get("registered"):
            lines.append("registered " + ", ".join(run.outputs["registered"]))
        if run.reason:
            lines += ["", "reason", run.reason]
        self.details.setPlainText("\n".join(lines))

    def _style_bar(self) -> None:
        self.bar.setStyleSheet(
            f"QProgressBar {{ background: {theme.color('surface-sunken')}; border: none;"
            " border-radius: 4px; }"
            f"QProgressBar::chunk {{ background: {theme.color(self._bar_colour)};"
            " border-radius: 4px; }"
        )
        repolish(self.bar)
