"""Side-by-side text diff: two aligned read-only panes, changed lines tinted, changed words
highlighted, scrolling kept in step. The alignment comes from `studio.logic.textdiff`."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QTextEdit, QVBoxLayout, QWidget

from studio import theme
from studio.logic.textdiff import Row, side_by_side, stats, wrap_rows
from studio.widgets.common import CodeEdit, label


class _Pane(QWidget):
    def __init__(self, title: str) -> None:
        super().__init__()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(6)
        head = QHBoxLayout()
        self.title = label(title, "SubTitle")
        self.meta = label("", "Faint")
        head.addWidget(self.title)
        head.addStretch(1)
        head.addWidget(self.meta)
        lay.addLayout(head)
        self.edit = CodeEdit(read_only=True)
        self.edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        lay.addWidget(self.edit, 1)


class SideBySideDiff(QWidget):
    def __init__(
        self, left_title: str = "Before", right_title: str = "After", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(12)
        self.left = _Pane(left_title)
        self.right = _Pane(right_title)
        lay.addWidget(self.left, 1)
        lay.addWidget(self.right, 1)
        self.rows: list[Row] = []
        self._syncing = False
        self.left.edit.verticalScrollBar().valueChanged.connect(
            lambda v: self._sync(self.right.edit, v)
        )
        self.right.edit.verticalScrollBar().valueChanged.connect(
            lambda v: self._sync(self.left.edit, v)
        )
        self.left.edit.horizontalScrollBar().valueChanged.connect(
            lambda v: self._sync(self.right.edit, v, horizontal=True)
        )
        self.right.edit.horizontalScrollBar().valueChanged.connect(
            lambda v: self._sync(self.left.edit, v, horizontal=True)
        )
        self._old: str | None = ""
        self._new: str | None = ""
        self._wrap = False
        self._width = 0
        self._rewrap = QTimer(self)
        self._rewrap.setSingleShot(True)
        self._rewrap.setInterval(80)
        self._rewrap.timeout.connect(lambda: self.set_texts(self._old, self._new, self._wrap))
        theme.bind(self, lambda w: w._paint())  # type: ignore[attr-defined]

    def set_titles(self, left: str, right: str) -> None:
        self.left.title.setText(left)
        self.right.title.setText(right)

    def set_wrap(self, wrap: bool) -> None:
        mode = (
            QPlainTextEdit.LineWrapMode.WidgetWidth if wrap else QPlainTextEdit.LineWrapMode.NoWrap
        )
        self.left.edit.setLineWrapMode(mode)
        self.right.edit.setLineWrapMode(mode)

    def _sync(self, other: QPlainTextEdit, value: int, horizontal: bool = False) -> None:
        if self._syncing:
            return
        self._syncing = True
        bar = other.horizontalScrollBar() if horizontal else other.verticalScrollBar()
        bar.setValue(value)
        self._syncing = False

    def _columns(self) -> int:
        edit = self.left.edit
        advance = max(1, edit.fontMetrics().horizontalAdvance("m"))
        margin = 2 * edit.document().documentMargin() + 14  # scroll bar appearing later
        return max(20, int(edit.viewport().width() - margin) // advance)

    def set_texts(self, old: str | None, new: str | None, wrap: bool = False) -> None:
        """Show the diff of `old` and `new` (None: the file is absent on that side). `wrap`
        re-flows long lines to the pane width after diffing (both sides stay aligned; the
        counts and word highlights are those of the whole lines)."""
        self._old, self._new, self._wrap = old, new, wrap
        self._width = self._columns() if wrap else 0
        lines = side_by_side(old, new)
        self.rows = wrap_rows(lines, self._width) if wrap else lines
        self.left.edit.setPlainText(
            "\n".join(r.left if r.left is not None else "" for r in self.rows)
        )
        self.right.edit.setPlainText(
            "\n".join(r.right if r.right is not None else "" for r in self.rows)
        )
        s = stats(lines)
        if old is None:
            self.left.meta.setText("absent")
        else:
            self.left.meta.setText(_count(s.removed, "removed", s.changed))
        if new is None:
            self.right.meta.setText("absent")
        else:
            self.right.meta.setText(_count(s.added, "added", s.changed))
        self._paint()

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if self._wrap and self._columns() != self._width:
            self._rewrap.start()

    def _paint(self) -> None:
        self._decorate(self.left.edit, left=True)
        self._decorate(self.right.edit, left=False)

    def _decorate(self, edit: QPlainTextEdit, left: bool) -> None:
        doc = edit.document()
        line_fmt = QTextCharFormat()
        line_fmt.setProperty(QTextCharFormat.Property.FullWidthSelection, True)
        filler = QTextCharFormat(line_fmt)
        filler.setBackground(theme.qcolor("surface-sunken"))
        changed = QTextCharFormat(line_fmt)
        changed.setBackground(theme.qcolor("removed" if left else "added"))
        word = QTextCharFormat()
        word.setBackground(theme.qcolor("removed-strong" if left else "added-strong"))
        selections = []
        for i, row in enumerate(self.rows):
            if row.tag == "equal":
                continue
            text = row.left if left else row.right
            block = doc.findBlockByNumber(i)
            sel = QTextEdit.ExtraSelection()
            sel.cursor = QTextCursor(block)
            sel.format = filler if text is None else changed
            selections.append(sel)
            for start, end in row.left_spans if left else row.right_spans:
                ws = QTextEdit.ExtraSelection()
                cursor = QTextCursor(block)
                cursor.setPosition(block.position() + start)
                cursor.setPosition(block.position() + end, QTextCursor.MoveMode.KeepAnchor)
                ws.cursor = cursor
                ws.format = word
                selections.append(ws)
        edit.setExtraSelections(selections)

    def first_change(self) -> int | None:
        return next((i for i, r in enumerate(self.rows) if r.tag != "equal"), None)

    def scroll_to_first_change(self) -> None:
        i = self.first_change()
        if i is None:
            return
        block = self.left.edit.document().findBlockByNumber(max(0, i - 3))
        cursor = QTextCursor(block)
        self.left.edit.setTextCursor(cursor)
        self.left.edit.centerCursor()


def _count(n: int, what: str, changed: int) -> str:
    parts = []
    if n:
        parts.append(f"{n} {what}")
    if changed:
        parts.append(f"{changed} changed")
    return " · ".join(parts) or "unchanged"


def empty_note(text: str) -> QLabel:
    lab = label(text, "Muted")
    lab.setAlignment(Qt.AlignmentFlag.AlignCenter)
    return lab
