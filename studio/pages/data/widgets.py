"""Small panels the Data and Evaluate pages share: grades with their reasons, a facts grid,
a titled pane and a filter combo (the background-job tabs are in job_view.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from studio.widgets.common import chip, clear_layout, label
from studio.widgets.tables import score_tone

TONE_CHIP = {
    "success": "added",
    "warning": "modified",
    "danger": "removed",
    "text-faint": "neutral",
}


def score_chip(score: float | None) -> QLabel:
    text = "–" if score is None else (f"{score:.0f}" if score in (0.0, 1.0) else f"{score:.2f}")
    return chip(text, TONE_CHIP[score_tone(score)])


def bar_row() -> tuple[QFrame, QHBoxLayout]:
    """The card a Data tab's controls sit in, with its one row (every tab's top strip)."""
    bar = QFrame()
    bar.setObjectName("Card")
    row = QHBoxLayout(bar)
    row.setContentsMargins(14, 10, 14, 10)
    row.setSpacing(10)
    return bar, row


def list_frame(table: QWidget) -> QFrame:
    """A tab's record table in its list frame (1 px inset, the frame draws the border)."""
    frame = QFrame()
    frame.setObjectName("ListFrame")
    lay = QVBoxLayout(frame)
    lay.setContentsMargins(1, 1, 1, 1)
    lay.addWidget(table)
    return frame


class Pane(QFrame):
    """A rounded surface with a title row (title, aside on the right) and a body layout."""

    def __init__(self, title: str, parent: QWidget | None = None, margins: int = 14) -> None:
        super().__init__(parent)
        self.setObjectName("Pane")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(margins, 10, margins, 12)
        lay.setSpacing(8)
        self.head = QHBoxLayout()
        self.head.setSpacing(8)
        self.title = label(title, "SectionTitle")
        self.head.addWidget(self.title)
        self.head.addStretch(1)
        self.aside = label("", "Faint")
        self.head.addWidget(self.aside)
        lay.addLayout(self.head)
        self.body = QVBoxLayout()
        self.body.setSpacing(8)
        lay.addLayout(self.body, 1)


class GradesPanel(QWidget):
    """The four graders: a score pill, the name, and the reasons under it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.column = QVBoxLayout(self)
        self.column.setContentsMargins(0, 0, 0, 0)
        self.column.setSpacing(8)
        self.scores: dict[str, float | None] = {}

    def set_grades(self, grades: Sequence[tuple[str, str, float | None, Sequence[str]]]) -> None:
        clear_layout(self.column)
        self.scores = {key: score for key, _t, score, _r in grades}
        for _key, title, score, reasons in grades:
            row = QHBoxLayout()
            row.setSpacing(8)
            row.addWidget(score_chip(score), 0, Qt.AlignmentFlag.AlignTop)
            text = QVBoxLayout()
            text.setSpacing(1)
            text.addWidget(label(title, "FieldLabel"))
            if reasons:
                shown = "\n".join(f"• {r}" for r in reasons[:4])
                if len(reasons) > 4:
                    shown += f"\n… {len(reasons) - 4} more"
                why = label(shown, "Faint", wrap=True)
                why.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                text.addWidget(why)
            row.addLayout(text, 1)
            self.column.addLayout(row)
        self.column.addStretch(1)


class FactsGrid(QWidget):
    """(label, value) pairs in two columns; values wrap and can be selected."""

    def __init__(self, parent: QWidget | None = None, label_width: int = 92) -> None:
        super().__init__(parent)
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(12)
        self.grid.setVerticalSpacing(5)
        self.grid.setColumnMinimumWidth(0, label_width)
        self.grid.setColumnStretch(1, 1)
        self.values: dict[str, str] = {}

    def set_facts(self, facts: Sequence[tuple[str, str]]) -> None:
        while self.grid.count():
            item = self.grid.takeAt(0)
            w = item.widget()
            if w is not None:
                w.setParent(None)
                w.deleteLater()
        self.values = dict(facts)
        # the stretch row of a shorter list before would stretch a fact's row now
        for row in range(self.grid.rowCount()):
            self.grid.setRowStretch(row, 0)
        top_left = Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft
        for row, (name, value) in enumerate(facts):
            key = label(name, "FieldLabel")
            key.setAlignment(top_left)
            val = label(value, "", wrap=True)
            val.setAlignment(top_left)
            val.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.grid.addWidget(key, row, 0)
            self.grid.addWidget(val, row, 1)
        self.grid.setRowStretch(len(facts), 1)


def fill_combo(combo: QComboBox, items: Sequence[tuple[str, str]], keep: bool = True) -> None:
    """Replace a combo's (value, text) items, keeping the current value when it is still there."""
    current = combo.currentData() if keep else None
    combo.blockSignals(True)
    combo.clear()
    for value, text in items:
        combo.addItem(text, value)
    if current is not None:
        idx = combo.findData(current)
        if idx >= 0:
            combo.setCurrentIndex(idx)
    combo.blockSignals(False)


class _CloseGuard(QObject):
    """Stops a long job when its window closes (see `stop_on_close`)."""

    def __init__(self, window: QWidget, ctx: Any, stop: Callable[[], None]) -> None:
        super().__init__(window)
        self.window = window
        self.ctx = ctx
        self.stop = stop

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.window and event.type() == QEvent.Type.Close:
            if not self.ctx.session.dirty:
                self.stop()  # nothing to ask about: the window will close
            else:  # the user may still cancel the close: check once it is decided
                QTimer.singleShot(0, lambda: None if self.window.isVisible() else self.stop())
        return False


def stop_on_close(widget: QWidget, ctx: Any, stop: Callable[[], None]) -> None:
    """When `widget`'s window closes, call `stop` (ask a running generation or evaluation to
    stop). The window closes the store and the application waits for running jobs on quit,
    so a job left running would hold the quit until it ends; stopped, it ends after the item
    in flight, and what it wrote stays (generation resumes, evaluation runs resume)."""
    window = widget.window()
    if window is widget or widget.property("hatStopOnClose"):
        return  # not in a window yet, or already guarded (each start asks again)
    widget.setProperty("hatStopOnClose", True)
    window.installEventFilter(_CloseGuard(window, ctx, stop))


def elastic_combo(min_chars: int = 14) -> QComboBox:
    """A combo whose long items (version messages, file names) do not set its minimum width:
    it shrinks with its pane and elides, instead of pushing the form wider than the window."""
    combo = QComboBox()
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(min_chars)
    return combo
