"""The Runs page: every training run of the workspace, and the monitor of the selected one.

The list comes from the store (newest first; a pipeline's stages under it): stage, status,
model, start time, duration, step. Selecting a run opens its monitor (`train_monitor`):
live for a running run, replayed from its event stream for an ended one. When the studio
opens, runs the store still marks running are settled first (`core.train.monitor.
attach_runs`): alive ones are followed again, vanished ones show as failed with the reason
and offer Resume. Nothing is deleted here; the history stays in the store and run folders.

A finished run's adapter can be promoted onto the Chat page's running model server (Promote to
the running server; studio.logic.promotion, core/serving/promote.py): vLLM loads it without a
restart and it becomes live once it answered a health prompt, transformers serve is restarted
with it (the banner says so); Roll back makes what was live before answer again. The Chat
page's server card shows what is live, since when and from which run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHeaderView,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.context import StoreChange, StudioContext
from studio.logic.promotion import promote_on, rollback_on, run_adapter
from studio.pages.train.monitor import STAGE_NAMES, RunMonitor
from studio.run_hub import run_hub
from studio.widgets.common import Banner, PageHeader, button, label

if TYPE_CHECKING:
    from core.store.training import RunRecord

COLUMNS = ("Run", "Stage", "Status", "Model", "Started", "Duration", "Step")
STATUS_COLORS = {
    "running": "accent",
    "done": "success",
    "failed": "danger",
    "stopped": "warning",
    "cancelled": "text-faint",
    "created": "text-faint",
}


def _dot(token: str) -> QIcon:
    pix = QPixmap(20, 20)
    pix.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pix)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(theme.color(token)))
    painter.drawEllipse(5, 5, 10, 10)
    painter.end()
    pix.setDevicePixelRatio(2.0)
    return QIcon(pix)


def _started(run: RunRecord) -> str:
    moment: datetime | None = run.started_at or run.created_at
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment else "—"


class RunsPage(QWidget):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Page")
        self.ctx = ctx
        self.hub = run_hub(ctx)
        self.items: dict[str, QTreeWidgetItem] = {}
        self._order: list[str] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.header = PageHeader(
            "Runs", "Every training run in this workspace: live, finished, failed or stopped"
        )
        self.count = label("", "Muted")
        self.header.add(self.count)
        self.refresh_button = button("Refresh", "history", "", "Read the runs from the store")
        self.header.add(self.refresh_button)
        self.promote_button = button(
            "Promote to the running server", "play", "", "Serve this run's adapter now"
        )
        self.header.add(self.promote_button)
        self.rollback_button = button(
            "Roll back", "rollback", "", "Make what was live before the last promotion answer again"
        )
        self.header.add(self.rollback_button)
        lay.addWidget(self.header)
        self.banner = Banner()
        self._promoting = False

        body = QVBoxLayout()
        body.setContentsMargins(24, 14, 24, 16)
        body.setSpacing(10)
        body.addWidget(self.banner)
        split = QSplitter(Qt.Orientation.Vertical)
        frame = QFrame()
        frame.setObjectName("ListFrame")
        fl = QVBoxLayout(frame)
        fl.setContentsMargins(1, 1, 1, 1)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(len(COLUMNS))
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setFrameShape(QFrame.Shape.NoFrame)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setAlternatingRowColors(False)
        head = self.tree.header()
        head.setStretchLastSection(False)
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in range(1, len(COLUMNS)):
            head.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        fl.addWidget(self.tree)
        self.empty = label(
            "No training runs yet. Start one from the Train page; it appears here.", "Muted"
        )
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        fl.addWidget(self.empty)
        split.addWidget(frame)
        self.monitor = RunMonitor(self.hub)
        self.monitor.on_restart = lambda run: self.select(run.id)
        split.addWidget(self.monitor)
        split.setSizes([230, 620])
        split.setStretchFactor(1, 1)
        body.addWidget(split, 1)
        lay.addLayout(body, 1)

        self.tree.currentItemChanged.connect(self._current_changed)
        self.refresh_button.clicked.connect(self.hub.refresh)
        self.promote_button.clicked.connect(self.promote)
        self.rollback_button.clicked.connect(self.rollback)
        ctx.serversChanged.connect(self._update_actions)
        self.hub.runsChanged.connect(self.reload)
        self.hub.updated.connect(self._run_updated)
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick)
        self._clock.start()
        theme.bind(self, lambda _w: self._recolor())
        if self.hub.attached:
            self.reload()
        self._update_actions()

    # ------------------------------------------------------------------ list

    def reload(self) -> None:
        runs = self.hub.runs
        current = self.monitor.run_id
        if runs and [r.id for r in runs] == self._order:
            for run in runs:  # same runs: update the rows in place (selection, scroll kept)
                self._fill(self.items[run.id], run)
            self._count(runs)
            self._update_actions()  # a run that just finished registered its adapter
            return
        self._order = [r.id for r in runs]
        self.tree.blockSignals(True)
        self.tree.clear()
        self.items.clear()
        parents: dict[str, QTreeWidgetItem] = {}
        for run in runs:  # newest first
            if run.parent is None:
                item = QTreeWidgetItem(self.tree)
                parents[run.id] = item
                self._fill(item, run)
        for run in reversed(runs):  # a pipeline's stages in their order
            if run.parent is not None:
                parent = parents.get(run.parent)
                item = QTreeWidgetItem(parent) if parent is not None else QTreeWidgetItem(self.tree)
                self._fill(item, run)
        self.tree.expandAll()
        self.tree.blockSignals(False)
        self.empty.setVisible(not runs)
        self.tree.setVisible(bool(runs))
        self._count(runs)
        if current and current in self.items:
            self.tree.setCurrentItem(self.items[current])
        elif runs:  # nothing selected yet, or another workspace's run
            self.select(runs[0].id)
        else:
            self.monitor.show_run(None)

    def _count(self, runs: list[RunRecord]) -> None:
        running = sum(r.status == "running" for r in runs)
        self.count.setText(
            f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
            + (f" · {running} running" if running else "")
        )

    def _fill(self, item: QTreeWidgetItem, run: RunRecord) -> None:
        from core.durations import format_duration
        from core.train.monitor import duration_s, model_of

        total = f" / {run.total_steps}" if run.total_steps else ""
        values = (
            run.id,
            STAGE_NAMES.get(run.stage, run.stage),
            run.status,
            model_of(run) or "—",
            _started(run),
            format_duration(duration_s(run)),
            f"{run.step}{total}" if run.stage != "pipeline" else "",
        )
        for column, text in enumerate(values):
            item.setText(column, text)
        item.setIcon(2, _dot(STATUS_COLORS.get(run.status, "text-faint")))
        item.setFont(0, theme.mono_font(12))
        item.setData(0, Qt.ItemDataRole.UserRole, run.id)
        if run.reason:
            item.setToolTip(2, run.reason.splitlines()[0])
        self.items[run.id] = item

    def _recolor(self) -> None:
        for run in self.hub.runs:
            if run.id in self.items:
                self._fill(self.items[run.id], run)

    def _tick(self) -> None:
        """Running durations move on between polls."""
        from core.durations import format_duration
        from core.train.monitor import duration_s

        for run in self.hub.runs:
            if run.status == "running" and run.id in self.items:
                self.items[run.id].setText(5, format_duration(duration_s(run)))

    def _run_updated(self, run_id: str) -> None:
        entry = self.hub.state(run_id)
        item = self.items.get(run_id)
        if entry is None or entry.run is None or item is None:
            return
        run = entry.run
        if item.text(2) != run.status:
            self.reload()
            return
        total = f" / {run.total_steps}" if run.total_steps else ""
        if run.stage != "pipeline":
            item.setText(6, f"{run.step}{total}")

    # ------------------------------------------------------------------ selection

    def select(self, run_id: str) -> None:
        item = self.items.get(run_id)
        if item is not None:
            self.tree.setCurrentItem(item)
        else:
            self.monitor.show_run(run_id)

    def _current_changed(self, item: QTreeWidgetItem | None, _old: object) -> None:
        run_id = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        self.monitor.show_run(run_id)
        self._update_actions()

    # ------------------------------------------------------------------ promotion

    def selected_adapter(self) -> str | None:
        """The registered adapter of the selected (finished) run, or None."""
        run_id = self.monitor.run_id
        run = next((r for r in self.hub.runs if r.id == run_id), None)
        if run is None:
            return None
        stages = [r for r in reversed(self.hub.runs) if r.parent == run.id]
        return run_adapter(run, stages)

    def _server_slot(self) -> str | None:
        """The Chat page's first card with a running server."""
        for slot, status in sorted(self.ctx.servers.items()):
            if status.state == "running" and slot in self.ctx.chat_servers:
                return slot
        return None

    def _update_actions(self) -> None:
        adapter = self.selected_adapter()
        slot = self._server_slot()
        status = self.ctx.servers.get(slot) if slot is not None else None
        ready = adapter is not None and status is not None and not self._promoting
        self.promote_button.setEnabled(ready)
        self.rollback_button.setEnabled(status is not None and not self._promoting)
        if status is None:
            why = "Start a model server on the Chat page first (vLLM loads adapters as it runs)"
        elif adapter is None:
            why = "The selected run registered no adapter (a finished training run does)"
        else:
            why = (
                f"Load {adapter} into {status.label} at {status.url} and make it live once it "
                "answers a health prompt (transformers serve is restarted with it)"
            )
        self.promote_button.setToolTip(why)
        self.rollback_button.setToolTip(
            "Make what was live on the Chat page's server before the last promotion answer again"
            if status is not None
            else "No model server is running on the Chat page"
        )

    def _act(self, work: Callable[..., Any], verb: str, label_text: str) -> None:
        """Run `work(store, chat_server)` in a worker; the banner says what happened."""
        slot = self._server_slot()
        if slot is None:
            self.banner.show_message("warning", "No model server is running on the Chat page.")
            return
        server = self.ctx.chat_servers[slot]
        self._promoting = True
        self._update_actions()
        self.banner.show_message("info", f"{label_text}…", closable=False)

        def done(result: Any) -> None:
            self._promoting = False
            self.banner.show_message("success", result.message)
            self._update_actions()

        def failed(exc: BaseException) -> None:
            self._promoting = False
            self.banner.show_message("error", f"Not {verb}. {exc}")
            self._update_actions()

        self.ctx.run_store(
            work,
            server,
            changes=StoreChange.SERVING,
            on_done=done,
            on_error=failed,
            label=label_text,
        )

    def promote(self) -> None:
        """Promote the selected run's adapter onto the Chat page's running server."""
        adapter = self.selected_adapter()
        if adapter is None:
            return
        self._act(
            lambda store, server: promote_on(store, server, adapter),
            "promoted",
            f"Promoting {adapter}",
        )

    def rollback(self) -> None:
        """Make what was live before the last promotion on that server answer again."""
        self._act(rollback_on, "rolled back", "Rolling back")
