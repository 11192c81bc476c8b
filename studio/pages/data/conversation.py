"""A request drawn as cards, one per `TurnItem`: the viewer's message as a bubble, skill loads
as a compact line, tool calls with their arguments and a collapsible result, hook reminders and
blocked replies in amber, the reply in green, failures in red.

Used by the Data page (dataset rows, the oracle's gold play) and the Evaluate page (traces).
The card styles live in a widget-local stylesheet built from the active palette, re-applied
when the theme changes (the application stylesheet stays the shared one).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.logic.data_turns import TurnItem
from studio.widgets.common import ElidedLabel, clear_layout, label

ICONS = {
    "viewer": ("chat", "accent-text"),
    "say": ("sparkles", "text-muted"),
    "skill": ("skill", "accent-text"),
    "tool": ("tool", "info"),
    "hook": ("hook", "warning"),
    "reminder": ("info", "warning"),
    "blocked": ("alert", "warning"),
    "reply": ("check", "success"),
    "error": ("alert", "danger"),
    "status": ("alert", "danger"),
}
RESULT_LINES = 7
ZWSP = "\u200b"
_LONG = re.compile(r"\S{36,}")

QSS = """
#Conversation, #ConversationBody { background: @surface; }
QFrame#Turn { background: @surface-alt; border: 1px solid @border; border-radius: 8px; }
QFrame#Turn[kind="viewer"] { background: @accent-soft; border: 1px solid @accent-soft; }
QFrame#Turn[kind="reply"] { background: @success-soft; border: 1px solid @success-soft; }
QFrame#Turn[kind="blocked"], QFrame#Turn[kind="reminder"], QFrame#Turn[kind="hook"] {
    background: @warning-soft; border: 1px solid @warning-soft; }
QFrame#Turn[kind="error"], QFrame#Turn[kind="status"] {
    background: @danger-soft; border: 1px solid @removed-strong; }
QFrame#Turn[kind="tool"][ok="false"] { border: 1px solid @removed-strong; }
QFrame#Turn[kind="skill"] { background: transparent; border: 1px dashed @border-strong; }
#TurnTitle { font-weight: 600; font-size: 12.5px; color: @text; }
#TurnMono { font-family: "@mono-family"; font-size: 11.5px; color: @text-muted; }
#TurnCall { font-family: "@mono-family"; font-size: 11.5px; }
#TurnBody { font-size: 12.5px; color: @text; }
#TurnViewer { font-size: 13.5px; color: @accent-text; font-weight: 550; }
#TurnMeta { font-size: 11px; color: @text-faint; }
#TurnResult { font-family: "@mono-family"; font-size: 11px; color: @text-muted;
    background: @code-bg; border: 1px solid @border; border-radius: 6px; padding: 6px 8px; }
#TurnResult[ok="false"] { color: @danger; }
QToolButton#MoreButton { color: @accent-text; font-size: 11px; padding: 0 2px; border: none; }
QToolButton#MoreButton:hover { text-decoration: underline; background: transparent; }
"""


def themed(template: str) -> str:
    """A local stylesheet template with the active palette's @tokens filled in."""
    palette = theme.PALETTES[theme.current()]
    for token in sorted(palette, key=len, reverse=True):
        template = template.replace(f"@{token}", palette[token])
    return template.replace("@mono-family", theme.mono_font().family())


def breakable(text: str) -> str:
    """Text a word-wrapping label can fit in a narrow pane: long unbroken runs (tool lists,
    identifiers, URLs) get zero-width break opportunities after `,` `_` `/` `.` `-` `=`, and
    every 24 characters when they have none (a QLabel never breaks inside a word, and one
    long word would make the whole card wider than its pane)."""

    def split(match: re.Match[str]) -> str:
        word = re.sub(r"([,_/.\-=])", "\\1" + ZWSP, match.group(0))
        if ZWSP not in word:
            word = ZWSP.join(word[i : i + 24] for i in range(0, len(word), 24))
        return word

    return _LONG.sub(split, text)


class TurnCard(QFrame):
    def __init__(self, item: TurnItem) -> None:
        super().__init__()
        self.item = item
        self.setObjectName("Turn")
        self.setProperty("kind", item.kind)
        self.setProperty("ok", "true" if item.ok else "false")
        lay = QVBoxLayout(self)
        compact = item.kind == "skill"
        lay.setContentsMargins(12, 6 if compact else 9, 12, 6 if compact else 10)
        lay.setSpacing(5)
        head = QHBoxLayout()
        head.setSpacing(8)
        icon_name, role = ICONS.get(item.kind, ("info", "text-muted"))
        if item.kind == "tool" and not item.ok:
            role = "danger"
        icon = QLabel()
        icon.setPixmap(theme.pixmap(icon_name, 15, role))
        head.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        # Every head has one part that gives way (wraps or elides) in a narrow pane: a head
        # as wide as its texts made the card wider than the trace pane, its right side cut.
        if item.kind == "skill":
            head.addWidget(label("Loaded skill", "TurnMeta"))
            head.addWidget(label(item.title, "TurnMono"))
            first = item.body.splitlines()[0] if item.body else ""
            head.addWidget(ElidedLabel(f"· {first}" if first else "", "TurnMeta"), 1)
        elif item.kind == "tool":
            # name and arguments in one wrapping label: it fits a narrow pane
            call = label("", "TurnCall", wrap=True)
            call.setTextFormat(Qt.TextFormat.RichText)
            call.setText(
                f"<span style='font-weight:600; color:{theme.color('text')}; font-size:12.5px'>"
                f"{html.escape(breakable(item.title))}</span>&nbsp; "
                f"<span style='color:{theme.color('text-muted')}'>"
                f"({html.escape(breakable(item.body))})</span>"
            )
            call.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            call.setMinimumWidth(60)
            head.addWidget(call, 1)
        elif item.kind == "viewer":
            head.addWidget(label("Viewer", "TurnMeta"))
            head.addStretch(1)
        else:
            head.addWidget(label(breakable(item.title), "TurnTitle", wrap=True), 1)
        meta = " · ".join(
            x
            for x in (
                item.meta if item.kind != "skill" else "",
                f"turn {item.turn}" if item.turn else "",
            )
            if x
        )
        if meta:
            head.addWidget(label(meta, "TurnMeta"), 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(head)
        if item.kind == "viewer":
            body = label(breakable(item.body), "TurnViewer", wrap=True)
            body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            lay.addWidget(body)
        elif item.kind in ("reply", "say", "blocked", "reminder", "hook", "error", "status"):
            if item.body:
                body = label(breakable(item.body), "TurnBody", wrap=True)
                body.setTextFormat(Qt.TextFormat.PlainText)
                body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                lay.addWidget(body)
        elif item.kind == "tool" and item.result:
            self._add_result(lay, item)

    def _add_result(self, lay: QVBoxLayout, item: TurnItem) -> None:
        lines = item.result.splitlines() or [""]
        short = breakable("\n".join(lines[:RESULT_LINES]))
        full = breakable(item.result)
        result = label(short, "TurnResult", wrap=True)
        result.setProperty("ok", "true" if item.ok else "false")
        result.setTextFormat(Qt.TextFormat.PlainText)
        result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(result)
        self.result_label = result
        if len(lines) > RESULT_LINES:
            more = QToolButton()
            more.setObjectName("MoreButton")
            more.setCursor(Qt.CursorShape.PointingHandCursor)
            more.setText(f"Show all {len(lines)} lines")
            expanded = {"on": False}

            def toggle() -> None:
                expanded["on"] = not expanded["on"]
                result.setText(full if expanded["on"] else short)
                more.setText("Show less" if expanded["on"] else f"Show all {len(lines)} lines")

            more.clicked.connect(toggle)
            lay.addWidget(more, 0, Qt.AlignmentFlag.AlignLeft)


class ConversationView(QScrollArea):
    """Cards for a list of TurnItems, scrolled to the top on every new list."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Conversation")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.body = QWidget()
        self.body.setObjectName("ConversationBody")
        self.column = QVBoxLayout(self.body)
        self.column.setContentsMargins(2, 2, 8, 2)
        self.column.setSpacing(6)
        self.column.addStretch(1)
        self.setWidget(self.body)
        self.items: list[TurnItem] = []
        self.cards: list[TurnCard] = []
        self.empty = label("", "Muted", wrap=True)
        theme.bind(self, lambda w: w._restyle())  # type: ignore[attr-defined]

    def _restyle(self) -> None:
        self.setStyleSheet(themed(QSS))
        if self.items:
            self.set_items(self.items, self.empty_text)

    empty_text = ""

    def set_items(self, items: Sequence[TurnItem], empty: str = "") -> None:
        self.items = list(items)
        self.empty_text = empty
        clear_layout(self.column)
        self.cards = []
        if not self.items and empty:
            self.empty = label(empty, "Muted", wrap=True)
            self.column.addWidget(self.empty)
        for item in self.items:
            card = TurnCard(item)
            self.cards.append(card)
            self.column.addWidget(card)
        self.column.addStretch(1)
        self.verticalScrollBar().setValue(0)

    def kinds(self) -> list[str]:
        return [c.item.kind for c in self.cards]
