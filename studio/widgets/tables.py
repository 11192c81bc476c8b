"""Record tables for the Data and Evaluate pages: a sortable QTableView over a list of plain
records (dicts or objects) described by `Column`s, plus delegates that draw a score as a
coloured pill and a mean with its 95 % interval as a bar with whiskers.

    table = RecordTable([Column("id", "Task", width=200), Column("score", "Score", kind="score")])
    table.set_rows(rows)               # keeps the selection when the same key is still there
    table.rowSelected.connect(show)    # the record (or None)

Columns read a value with `get` (default: `record[key]` or `getattr(record, key)`) and show
`fmt(value)`; sorting uses the raw value (None sorts first), so numbers sort as numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QRectF,
    QSize,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QWidget,
)

from studio import theme

RECORD_ROLE = Qt.ItemDataRole.UserRole + 1
SORT_ROLE = Qt.ItemDataRole.UserRole + 2
TONE_ROLE = Qt.ItemDataRole.UserRole + 3
Index = QModelIndex | QPersistentModelIndex


def read(record: Any, key: str) -> Any:
    if isinstance(record, dict):
        return record.get(key)
    return getattr(record, key, None)


def score_tone(value: float | None) -> str:
    """Palette role for a score in [0, 1]: full marks, partial, zero."""
    if value is None:
        return "text-faint"
    if value >= 0.999:
        return "success"
    if value > 0:
        return "warning"
    return "danger"


@dataclass
class Column:
    key: str
    title: str
    width: int | None = None
    """Fixed start width in px; None stretches the column (the last stretch column wins)."""
    kind: str = "text"
    """text | mono | number | score (pill) | interval (bar with whiskers) | chip"""
    get: Callable[[Any], Any] | None = None
    fmt: Callable[[Any], str] | None = None
    tone: Callable[[Any], str | None] | None = None
    """Palette role of the text (or the chip), from the record."""
    tooltip: Callable[[Any], str] | None = None
    align: Qt.AlignmentFlag | None = None

    def value(self, record: Any) -> Any:
        return self.get(record) if self.get is not None else read(record, self.key)

    def text(self, record: Any) -> str:
        value = self.value(record)
        if self.fmt is not None:
            return self.fmt(value)
        if value is None:
            return "–"
        if isinstance(value, float):
            return f"{value:.2f}"
        return str(value)


class RecordModel(QAbstractTableModel):
    def __init__(self, columns: Sequence[Column], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.columns = list(columns)
        self.records: list[Any] = []

    def set_records(self, records: Sequence[Any]) -> None:
        self.beginResetModel()
        self.records = list(records)
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt signature
        return 0 if parent.isValid() else len(self.records)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt signature
        return 0 if parent.isValid() else len(self.columns)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.columns[section].title
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.TextAlignmentRole:
            col = self.columns[section]
            if col.kind in ("number", "score", "interval"):
                return int(Qt.AlignmentFlag.AlignCenter)
            return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        record = self.records[index.row()]
        col = self.columns[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return col.text(record)
        if role == RECORD_ROLE:
            return record
        if role == SORT_ROLE:
            value = col.value(record)
            if isinstance(value, tuple):  # (mean, low, high): sort by the mean
                value = value[0] if value else None
            return value
        if role == TONE_ROLE:
            return col.tone(record) if col.tone is not None else None
        if role == Qt.ItemDataRole.ForegroundRole and col.tone is not None and col.kind != "chip":
            tone = col.tone(record)
            return QColor(theme.color(tone)) if tone else None
        if role == Qt.ItemDataRole.ToolTipRole:
            return col.tooltip(record) if col.tooltip is not None else None
        if role == Qt.ItemDataRole.FontRole and col.kind == "mono":
            return theme.mono_font(11)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if col.align is not None:
                return int(col.align)
            if col.kind in ("number", "score"):
                return int(Qt.AlignmentFlag.AlignCenter)
            return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        return None


class _SortProxy(QSortFilterProxyModel):
    def lessThan(self, left: Index, right: Index) -> bool:
        a, b = left.data(SORT_ROLE), right.data(SORT_ROLE)
        if a is None or b is None:
            return a is None and b is not None
        try:
            return bool(a < b)
        except TypeError:
            return str(a) < str(b)


class ScoreDelegate(QStyledItemDelegate):
    """A score as a small rounded pill, coloured by how good it is."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        self._background(painter, option)
        value = index.data(SORT_ROLE)
        text = index.data(Qt.ItemDataRole.DisplayRole) or ""
        tone = index.data(TONE_ROLE) or score_tone(
            value if isinstance(value, float | int) else None
        )
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        font = theme.ui_font(11)
        font.setWeight(font.Weight.DemiBold)
        painter.setFont(font)
        fm = painter.fontMetrics()
        w = max(34, fm.horizontalAdvance(text) + 14)
        h = fm.height() + 4
        rect = option.rect
        box = QRectF(rect.center().x() - w / 2 + 1, rect.center().y() - h / 2 + 1, w, h)
        soft = {"success": "success-soft", "warning": "warning-soft", "danger": "danger-soft"}
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.color(soft.get(tone, "surface-sunken"))))
        painter.drawRoundedRect(box, h / 2, h / 2)
        painter.setPen(QColor(theme.color(tone)))
        painter.drawText(box, int(Qt.AlignmentFlag.AlignCenter), text)
        painter.restore()

    @staticmethod
    def _background(painter: QPainter, option: QStyleOptionViewItem) -> None:
        state = option.state
        if state & QStyle.StateFlag.State_Selected:
            painter.fillRect(option.rect, QColor(theme.color("accent-soft")))


class ChipDelegate(ScoreDelegate):
    """Text in a pill coloured by the column's `tone` (kept / rejected, pass / fail...)."""


class IntervalDelegate(QStyledItemDelegate):
    """`(mean, low, high)` in [0, 1]: the value as text and a bar with the interval's whiskers."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        ScoreDelegate._background(painter, option)
        record = index.data(RECORD_ROLE)
        model = index.model()
        source = model.sourceModel() if isinstance(model, QSortFilterProxyModel) else model
        col = source.columns[index.column()] if isinstance(source, RecordModel) else None
        value = col.value(record) if col is not None else None
        rect = option.rect
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if not value or value[0] is None:
            painter.setPen(QColor(theme.color("text-faint")))
            painter.drawText(rect, int(Qt.AlignmentFlag.AlignCenter), "–")
            painter.restore()
            return
        mean, low, high = value
        has_ci = low is not None and high is not None
        left, right = float(rect.left()), float(rect.right())
        interval = f"{low * 100:.1f}–{high * 100:.1f}" if has_ci else ""
        if rect.height() >= 36:
            # two lines: the numbers on top, the bar across the whole cell under them
            top = QRectF(left + 10, rect.top() + 3, right - left - 20, rect.height() / 2)
            bold = theme.ui_font(12)
            bold.setWeight(bold.Weight.DemiBold)
            painter.setFont(bold)
            painter.setPen(QColor(theme.color("text")))
            text = f"{mean * 100:.1f}"
            painter.drawText(
                top, int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), text
            )
            if has_ci:
                shift = painter.fontMetrics().horizontalAdvance(text) + 8
                painter.setFont(theme.ui_font(11))
                painter.setPen(QColor(theme.color("text-faint")))
                painter.drawText(
                    top.adjusted(shift, 0, 0, 0),
                    int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                    f"95 % CI {interval}",
                )
            self._bar(painter, left + 10, right - 10, rect.top() + rect.height() * 0.72, value)
            painter.restore()
            return
        show_sub = has_ci and right - left >= 150
        text_box = QRectF(left + 4, rect.top(), 40, rect.height())
        sub_box = QRectF(right - 76, rect.top(), 74, rect.height())
        bar_left = left + 52
        bar_right = (sub_box.left() - 6) if show_sub else right - 10
        painter.setFont(theme.ui_font(12))
        painter.setPen(QColor(theme.color("text")))
        painter.drawText(
            text_box,
            int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight),
            f"{mean * 100:.1f}",
        )
        if show_sub:
            painter.setFont(theme.ui_font(11))
            painter.setPen(QColor(theme.color("text-faint")))
            painter.drawText(
                sub_box, int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), interval
            )
        if bar_right - bar_left >= 30:
            self._bar(painter, bar_left, bar_right, rect.center().y() + 0.5, value)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        return QSize(240, 30)

    @staticmethod
    def _bar(
        painter: QPainter, bar_left: float, bar_right: float, cy: float, value: tuple[Any, ...]
    ) -> None:
        """The 0–1 track, the interval as a soft band with whiskers, the mean as a dot."""
        mean, low, high = value
        span = bar_right - bar_left

        def x(v: float) -> float:
            return bar_left + max(0.0, min(1.0, v)) * span

        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.color("surface-sunken")))
        painter.drawRoundedRect(QRectF(bar_left, cy - 3, span, 6), 3, 3)
        if low is not None and high is not None:
            painter.setBrush(QColor(theme.color("accent-soft")))
            painter.drawRoundedRect(QRectF(x(low), cy - 5, max(2.0, x(high) - x(low)), 10), 3, 3)
        painter.setBrush(QColor(theme.color("accent")))
        painter.drawRoundedRect(QRectF(bar_left, cy - 2, x(mean) - bar_left, 4), 2, 2)
        if low is not None and high is not None:
            pen = QPen(QColor(theme.color("accent-text")))
            pen.setWidthF(1.4)
            painter.setPen(pen)
            for edge in (x(low), x(high)):
                painter.drawLine(int(edge), int(cy - 5), int(edge), int(cy + 5))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(theme.color("accent-text")))
        painter.drawEllipse(QRectF(x(mean) - 3.5, cy - 3.5, 7, 7))


class RecordTable(QTableView):
    """A sortable, row-selecting table of records (see the module doc)."""

    rowSelected = Signal(object)
    rowActivated = Signal(object)

    def __init__(
        self,
        columns: Sequence[Column],
        key: Callable[[Any], Any] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.columns = list(columns)
        self.key = key
        self.source = RecordModel(self.columns, self)
        self.proxy = _SortProxy(self)
        self.proxy.setSourceModel(self.source)
        self.proxy.setSortRole(SORT_ROLE)
        self.setModel(self.proxy)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setAlternatingRowColors(True)
        self.setShowGrid(False)
        self.setWordWrap(False)
        self.setSortingEnabled(True)
        self.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.verticalHeader().hide()
        self.verticalHeader().setDefaultSectionSize(30)
        header = self.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(False)
        header.setSectionsClickable(True)
        self._delegates: list[QStyledItemDelegate] = []
        stretch = [i for i, c in enumerate(self.columns) if c.width is None]
        for i, col in enumerate(self.columns):
            if col.kind in ("score", "chip"):
                delegate: QStyledItemDelegate = ScoreDelegate(self)
            elif col.kind == "interval":
                delegate = IntervalDelegate(self)
            else:
                delegate = QStyledItemDelegate(self)
            self._delegates.append(delegate)
            self.setItemDelegateForColumn(i, delegate)
            if col.width is not None:
                header.setSectionResizeMode(i, QHeaderView.ResizeMode.Interactive)
                header.resizeSection(i, col.width)
        for i in stretch:
            header.setSectionResizeMode(i, QHeaderView.ResizeMode.Stretch)
        if not stretch and self.columns:
            header.setStretchLastSection(True)
        self.selectionModel().currentRowChanged.connect(self._current_changed)
        self.activated.connect(lambda idx: self.rowActivated.emit(idx.data(RECORD_ROLE)))
        self.sortByColumn(-1, Qt.SortOrder.AscendingOrder)

    # ------------------------------------------------------------------ records

    def set_rows(self, records: Sequence[Any], keep_selection: bool = True) -> None:
        wanted = (
            self._key_of(self.current()) if keep_selection and self.current() is not None else None
        )
        self.selectionModel().blockSignals(True)
        self.source.set_records(records)
        self.selectionModel().blockSignals(False)
        if wanted is not None and self.select_where(lambda r: self._key_of(r) == wanted):
            return
        self.rowSelected.emit(None)

    def records(self) -> list[Any]:
        """The records in display order (sorted as shown)."""
        return [self.proxy.index(r, 0).data(RECORD_ROLE) for r in range(self.proxy.rowCount())]

    def current(self) -> Any:
        index = self.currentIndex()
        return index.data(RECORD_ROLE) if index.isValid() else None

    def select_row(self, row: int) -> bool:
        if not 0 <= row < self.proxy.rowCount():
            return False
        index = self.proxy.index(row, 0)
        self.setCurrentIndex(index)
        self.selectRow(row)
        self.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)
        return True

    def select_where(self, predicate: Callable[[Any], bool]) -> bool:
        for row in range(self.proxy.rowCount()):
            if predicate(self.proxy.index(row, 0).data(RECORD_ROLE)):
                return self.select_row(row)
        return False

    def _key_of(self, record: Any) -> Any:
        return self.key(record) if self.key is not None else id(record)

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self.rowSelected.emit(current.data(RECORD_ROLE) if current.isValid() else None)
