"""Side-by-side text diff: two aligned read-only panes, changed lines tinted, changed words
highlighted, scrolling kept in step. The alignment comes from `studio.logic.textdiff`."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QTextEdit, QVBoxLayout, QWidget

from studio import theme
from studio.logic.textdiff import Row, side_by_side, stats
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
        theme.state().changed.connect(lambda _name: self._paint())

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

    def set_texts(self, old: str | None, new: str | None) -> None:
        self._old, self._new = old, new
        self.rows = side_by_side(old, new)
        self.left.edit.setPlainText(
            "\n".join(r.left if r.left is not None else "" for r in self.rows)
        )
        self.right.edit.setPlainText(
            "\n".join(r.right if r.right is not None else "" for r in self.rows)
        )
        s = stats(self.rows)
        if old is None:
            self.left.meta.setText("(absent)")
        else:
            self.left.meta.setText(f"−{s.removed + s.changed} lines" if s.total else "unchanged")
        self.right.meta.setText(
            "(absent)"
            if new is None
            else (f"+{s.added + s.changed} lines" if s.total else "unchanged")
        )
        self._paint()

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


def empty_note(text: str) -> QLabel:
    lab = label(text, "Muted")
    lab.setAlignment(Qt.AlignmentFlag.AlignCenter)
    return lab
