"""Small building blocks shared by the pages: headers, buttons, chips, banners, toasts, forms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import (
    QEasingCurve,
    QEvent,
    QObject,
    QPropertyAnimation,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QFont, QFontInfo, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QGraphicsOpacityEffect,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QStackedWidget,
    QTextBrowser,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio import theme


def repolish(widget: QWidget) -> None:
    style = widget.style()
    style.unpolish(widget)
    style.polish(widget)
    widget.update()


def set_invalid(widget: QWidget, invalid: bool) -> None:
    if bool(widget.property("invalid")) != invalid:
        widget.setProperty("invalid", invalid)
        repolish(widget)


def button(
    text: str,
    icon: str | None = None,
    variant: str = "",
    tooltip: str = "",
    parent: QWidget | None = None,
) -> QPushButton:
    b = QPushButton(text, parent)
    if variant:
        b.setProperty("variant", variant)
    if icon:
        role = (
            "on-accent"
            if variant == "primary"
            else ("danger" if variant == "danger" else "text-muted")
        )
        theme.bind_icon(b, icon, role)
    if tooltip:
        b.setToolTip(tooltip)
    b.setCursor(Qt.CursorShape.PointingHandCursor)
    return b


def tool_button(
    icon: str, tooltip: str, parent: QWidget | None = None, checkable: bool = False
) -> QToolButton:
    b = QToolButton(parent)
    theme.bind_icon(b, icon, "text-muted")
    b.setToolTip(tooltip)
    b.setAutoRaise(True)
    b.setCheckable(checkable)
    b.setCursor(Qt.CursorShape.PointingHandCursor)
    return b


def label(
    text: str = "", name: str = "", parent: QWidget | None = None, wrap: bool = False
) -> QLabel:
    lab = QLabel(text, parent)
    if name:
        lab.setObjectName(name)
    lab.setWordWrap(wrap)
    return lab


def chip(text: str, kind: str = "neutral") -> QLabel:
    lab = QLabel(text)
    lab.setProperty("chip", kind)
    lab.setAlignment(Qt.AlignmentFlag.AlignCenter)
    lab.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    return lab


def label_kind(name: str) -> str:
    return name if name in ("production", "staging") else "custom"


def scrolling(widget: QWidget) -> QScrollArea:
    """`widget` in a frameless scroll area that resizes it: a form keeps the height its
    fields need when the window is smaller, and scrolls."""
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(widget)
    return area


def hline() -> QFrame:
    line = QFrame()
    line.setFixedHeight(1)
    theme.bind(
        line, lambda w: w.setStyleSheet(f"background: {theme.color('border')}; border: none;")
    )  # type: ignore[attr-defined]
    return line


class ElidedLabel(QLabel):
    """One line that shrinks with its column, ending in "…" (the full text in the tooltip)."""

    def __init__(self, text: str, name: str, mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight):
        super().__init__()
        self.setObjectName(name)
        self.mode = mode
        self.full = text
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._elide()

    def setText(self, text: str) -> None:  # type: ignore[override]
        self.full = text
        self._elide()

    def text(self) -> str:  # type: ignore[override]
        return self.full

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(self.fontMetrics().horizontalAdvance(self.full) + 4, hint.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(24, super().minimumSizeHint().height())

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self.full, self.mode, max(0, self.width()))
        QLabel.setText(self, shown)
        self.setToolTip(self.full if shown != self.full else "")


class PageHeader(QFrame):
    """Title, subtitle and right-aligned actions at the top of a page."""

    def __init__(self, title: str, subtitle: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("PageHeader")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(28, 18, 24, 16)
        lay.setSpacing(10)
        text = QVBoxLayout()
        text.setSpacing(2)
        self.title = ElidedLabel(title, "PageTitle")  # a long harness name must not push
        self.subtitle = ElidedLabel(subtitle, "PageSubtitle")  # the actions out of view
        text.addWidget(self.title)
        text.addWidget(self.subtitle)
        lay.addLayout(text, 1)
        self.actions = QHBoxLayout()
        self.actions.setSpacing(8)
        lay.addLayout(self.actions)

    def add(self, widget: QWidget) -> QWidget:
        self.actions.addWidget(widget)
        return widget


class Banner(QFrame):
    """A one-line message strip (error, warning, info, success) with an optional action."""

    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Banner")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 6, 6)
        lay.setSpacing(8)
        self.icon = QLabel()
        self.text = label("", "BannerText", wrap=True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.close_button = tool_button("close", "Dismiss")
        self.close_button.clicked.connect(self.dismiss)
        lay.addWidget(self.icon, 0, Qt.AlignmentFlag.AlignTop)
        lay.addWidget(self.text, 1)
        lay.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_message(self, kind: str, text: str, closable: bool = True) -> None:
        """Show `text` as `kind`. The same message again is a no-op: pages re-render whenever
        their model changes (a run's monitor on every event the run writes, the Evaluate
        results on every stored item), and re-polishing an unchanged strip each time made it
        flicker and what is under it jump."""
        shown = self.isVisibleTo(self.parentWidget()) if self.parentWidget() else self.isVisible()
        if shown and (
            self.property("kind"),
            self.text.text(),
            self.close_button.isVisibleTo(self),
        ) == (kind, text, closable):
            return
        self.setProperty("kind", kind)
        repolish(self)
        repolish(self.text)
        icon = {"error": "alert", "warning": "alert", "success": "check"}.get(kind, "info")
        role = {"error": "danger", "warning": "warning", "success": "success"}.get(kind, "info")
        self.icon.setPixmap(theme.pixmap(icon, 16, role))
        self.text.setText(text)
        self.close_button.setVisible(closable)
        self.show()

    def dismiss(self) -> None:
        self.hide()
        self.closed.emit()


class Toast(QFrame):
    """A short confirmation that fades out at the bottom of its parent."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("Toast")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(14, 9, 14, 9)
        self.icon = QLabel()
        self.text = label("", "ToastText")
        lay.addWidget(self.icon)
        lay.addWidget(self.text)
        self._effect = QGraphicsOpacityEffect(self)
        self.setGraphicsEffect(self._effect)
        self._anim = QPropertyAnimation(self._effect, b"opacity", self)
        self._anim.setEasingCurve(QEasingCurve.Type.InOutQuad)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._fade)
        parent.installEventFilter(self)  # stay centred when the window is resized
        self.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and self.isVisible():
            self._place()
        return False

    def _place(self) -> None:
        parent = self.parentWidget()
        if parent is not None:
            self.move((parent.width() - self.width()) // 2, parent.height() - self.height() - 28)

    def show_text(self, text: str, icon: str = "check", ms: int = 2600) -> None:
        self.text.setText(text)
        self.icon.setPixmap(theme.pixmap(icon, 16, theme.color("window")))
        self.adjustSize()
        self._place()
        self._anim.stop()
        self._effect.setOpacity(1.0)
        self.show()
        self.raise_()
        self._timer.start(ms)

    def _fade(self) -> None:
        self._anim.setDuration(400)
        self._anim.setStartValue(1.0)
        self._anim.setEndValue(0.0)
        self._anim.finished.connect(self.hide)
        self._anim.start()


class Segmented(QWidget):
    """A row of mutually exclusive buttons (a segmented control)."""

    changed = Signal(str)

    def __init__(self, options: Sequence[tuple[str, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        self.buttons: dict[str, QToolButton] = {}
        for i, (value, text) in enumerate(options):
            b = QToolButton()
            b.setObjectName("Segment")
            b.setText(text)
            b.setCheckable(True)
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            pos = (
                "only"
                if len(options) == 1
                else ("first" if i == 0 else ("last" if i == len(options) - 1 else "mid"))
            )
            b.setProperty("pos", pos)
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
            self.group.addButton(b)
            self.buttons[value] = b
            lay.addWidget(b)
            b.toggled.connect(lambda on, v=value: on and self.changed.emit(v))
        lay.addStretch(1)
        if options:
            self.buttons[options[0][0]].setChecked(True)

    def value(self) -> str:
        return next((v for v, b in self.buttons.items() if b.isChecked()), "")

    def set_value(self, value: str, emit: bool = False) -> None:
        b = self.buttons.get(value)
        if b is None:
            return
        if not emit:
            self.blockSignals(True)
            for other in self.buttons.values():
                other.blockSignals(True)
        b.setChecked(True)
        if not emit:
            self.blockSignals(False)
            for other in self.buttons.values():
                other.blockSignals(False)


class Field(QWidget):
    """A labelled form field with a hint and an inline error line under the input."""

    def __init__(
        self, title: str, widget: QWidget, hint: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        head = QHBoxLayout()
        head.setSpacing(6)
        self.title = label(title, "FieldLabel")
        head.addWidget(self.title)
        head.addStretch(1)
        self.aside = label("", "FieldHint")
        head.addWidget(self.aside)
        lay.addLayout(head)
        self.widget = widget
        lay.addWidget(widget, 1)
        self.hint = label(hint, "FieldHint", wrap=True)
        self.hint.setVisible(bool(hint))
        lay.addWidget(self.hint)
        self.error = label("", "FieldError", wrap=True)
        self.error.hide()
        lay.addWidget(self.error)

    def set_error(self, message: str | None) -> None:
        self.error.setText(message or "")
        self.error.setVisible(bool(message))
        self.hint.setVisible(not message and bool(self.hint.text()))
        set_invalid(self.widget, bool(message))


class CodeEdit(QPlainTextEdit):
    """Monospace text editor that can mark one line as the error line."""

    def __init__(self, parent: QWidget | None = None, read_only: bool = False) -> None:
        super().__init__(parent)
        self.setObjectName("Code")
        self.setFont(theme.mono_font())
        self.setReadOnly(read_only)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * 2)
        theme.bind(self, lambda w: w.setFont(theme.mono_font()))  # type: ignore[attr-defined]

    def set_text_keep(self, text: str) -> None:
        """Replace the text without moving the scroll position (used for live previews)."""
        if self.toPlainText() == text:
            return
        bar = self.verticalScrollBar().value()
        self.setPlainText(text)
        self.verticalScrollBar().setValue(bar)

    def mark_line(self, line: int | None) -> None:
        if line is None or line < 1:
            self.setExtraSelections([])
            return
        block = self.document().findBlockByNumber(line - 1)
        sel = QTextEdit.ExtraSelection()
        fmt = QTextCharFormat()
        fmt.setBackground(theme.qcolor("removed"))
        fmt.setProperty(QTextCharFormat.Property.FullWidthSelection, True)
        sel.format = fmt
        cursor = QTextCursor(block)
        sel.cursor = cursor
        self.setExtraSelections([sel])


class FitStack(QStackedWidget):
    """A stacked widget as tall as its current page (QStackedWidget takes the largest)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.currentChanged.connect(lambda _i: self.updateGeometry())

    def sizeHint(self) -> QSize:
        w = self.currentWidget()
        return w.sizeHint() if w is not None else super().sizeHint()

    def minimumSizeHint(self) -> QSize:
        w = self.currentWidget()
        return w.minimumSizeHint() if w is not None else super().minimumSizeHint()


HEADING_SCALE = {1: 1.5, 2: 1.22, 3: 1.08}


def set_markdown(browser: QTextBrowser, text: str) -> None:
    """Render Markdown with heading sizes that suit a side panel (Qt's are poster-sized)."""
    browser.setMarkdown(text)
    base = QFontInfo(browser.font()).pixelSize() or 13
    doc = browser.document()
    block = doc.begin()
    cursor = QTextCursor(doc)
    while block.isValid():
        level = block.blockFormat().headingLevel()
        if level:
            cursor.setPosition(block.position())
            cursor.setPosition(
                block.position() + max(0, block.length() - 1), QTextCursor.MoveMode.KeepAnchor
            )
            it = block.begin()
            fmt = it.fragment().charFormat() if not it.atEnd() else QTextCharFormat()
            # the importer sizes headings by "size adjustment" (up to xx-large): replace it
            fmt.clearProperty(QTextCharFormat.Property.FontSizeAdjustment)
            fmt.setFontPointSize(base * HEADING_SCALE.get(level, 1.0) * 0.75)  # px -> pt
            fmt.setFontWeight(QFont.Weight.DemiBold)
            cursor.setCharFormat(fmt)
            bf = block.blockFormat()
            bf.setTopMargin(10 if level > 1 else 4)
            bf.setBottomMargin(4)
            cursor.setBlockFormat(bf)
        block = block.next()


def clear_layout(layout: QHBoxLayout | QVBoxLayout) -> None:
    while layout.count():
        item = layout.takeAt(0)
        w = item.widget()
        if w is not None:
            w.setParent(None)
            w.deleteLater()
        elif item.layout() is not None:
            clear_layout(item.layout())  # type: ignore[arg-type]
