"""The layout of a background-job tab (teacher generation, an evaluation run): a scrolling
form card on the left, and on the right a column with the job's progress, big-number stats,
its two buttons and the latest items.

`JobView` owns the column and exposes its parts (`bar`, `stat_labels`, `log`, ...) so the
views, their tests and the screenshots address them the same way on every job tab."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLayout,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.context import StudioContext
from studio.pages.data.widgets import Pane
from studio.widgets.common import Banner, label

PROGRESS_QSS = """
QProgressBar { background: @surface-sunken; border: none; border-radius: 4px; height: 8px; }
QProgressBar::chunk { background: @accent; border-radius: 4px; }
"""

LOG_LIMIT = 200
"""Items a job's log keeps (newest first); older ones drop off the end."""


def progress_bar(height: int = 8) -> QProgressBar:
    """A thin themed bar without text (the numbers are shown beside it)."""
    from studio.pages.data.conversation import themed

    bar = QProgressBar()
    bar.setTextVisible(False)
    bar.setFixedHeight(height)
    bar.setRange(0, 1)
    bar.setValue(0)
    theme.bind(bar, lambda w: w.setStyleSheet(themed(PROGRESS_QSS)))  # type: ignore[attr-defined]
    return bar


class JobColumn(QVBoxLayout):
    """The right-hand column: an error banner, a pane with a progress bar, big-number stats,
    an optional extra row, the job's two buttons (open the result, stop), and a pane listing
    the latest items."""

    def __init__(
        self,
        idle_title: str,
        stats: Sequence[tuple[str, str]],
        open_button: QPushButton,
        stop_button: QPushButton,
        log_title: str,
        extra: QLayout | None = None,
    ) -> None:
        super().__init__()
        self.setSpacing(10)
        self.banner = Banner()
        self.addWidget(self.banner)
        self.progress_pane = Pane(idle_title)
        self.bar = progress_bar()
        self.progress_pane.body.addWidget(self.bar)
        row = QHBoxLayout()
        row.setSpacing(18)
        self.stat_labels: dict[str, QLabel] = {}
        for key, title in stats:
            box = QVBoxLayout()
            box.setSpacing(0)
            value = label("–", "PageTitle")
            box.addWidget(value)
            box.addWidget(label(title, "Faint"))
            row.addLayout(box)
            self.stat_labels[key] = value
        row.addStretch(1)
        self.progress_pane.body.addLayout(row)
        if extra is not None:
            self.progress_pane.body.addLayout(extra)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(open_button)
        buttons.addWidget(stop_button)
        self.progress_pane.body.addLayout(buttons)
        self.addWidget(self.progress_pane)
        self.log_pane = Pane(log_title)
        self.log = QListWidget()
        self.log.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.log.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.log_hint = label("Items appear here as they finish, the newest first.", "Muted")
        self.log_pane.body.addWidget(self.log_hint)
        self.log_pane.body.addWidget(self.log)
        self.addWidget(self.log_pane, 1)
        model = self.log.model()
        for signal in (model.rowsInserted, model.rowsRemoved, model.modelReset):
            signal.connect(self._sync_hint)

    def _sync_hint(self, *_: Any) -> None:
        if shiboken6.isValid(self.log) and shiboken6.isValid(self.log_hint):  # (not while closing)
            self.log_hint.setVisible(self.log.count() == 0)

    def show_count(self, done: int, total: int) -> None:
        self.bar.setRange(0, max(1, total))
        self.bar.setValue(done)

    def add_item(self, text: str, ok: bool) -> None:
        """The newest item on top, with a check or a cross."""
        item = QListWidgetItem(
            theme.icon("check" if ok else "close", "success" if ok else "danger"), text
        )
        item.setToolTip(text)
        self.log.insertItem(0, item)
        while self.log.count() > LOG_LIMIT:
            self.log.takeItem(self.log.count() - 1)


class JobView(QWidget):
    """A job tab's frame: `self.form` is the (scrolling) form card's layout to fill; call
    `set_column` once with the job column."""

    def __init__(
        self, ctx: StudioContext, width: tuple[int, int], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(24, 12, 24, 16)
        self._row.setSpacing(14)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(width[0])
        scroll.setMaximumWidth(width[1])
        card = QFrame()
        card.setObjectName("Card")
        self.form = QVBoxLayout(card)
        self.form.setContentsMargins(18, 14, 18, 16)
        self.form.setSpacing(12)
        scroll.setWidget(card)
        self._row.addWidget(scroll)
        self.column: JobColumn | None = None

    def set_column(self, column: JobColumn) -> None:
        self.column = column
        self._row.addLayout(column, 1)

    def _col(self) -> JobColumn:
        assert self.column is not None, "set_column() first"
        return self.column

    @property
    def banner(self) -> Banner:
        return self._col().banner

    @property
    def progress_pane(self) -> Pane:
        return self._col().progress_pane

    @property
    def bar(self) -> QProgressBar:
        return self._col().bar

    @property
    def stat_labels(self) -> dict[str, QLabel]:
        return self._col().stat_labels

    @property
    def log(self) -> QListWidget:
        return self._col().log
