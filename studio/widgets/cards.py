"""The chat's building blocks: viewer and host bubbles, step cards, the latency row, fault cards,
the session latency panel.

Content comes from `studio.logic.chat_cards` (plain data); these widgets only draw it. Colours
come from `stylesheet()`, which the chat page installs on itself and re-applies on every theme
change, so the cards follow light and dark like the rest of the studio.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.logic.chat_cards import Card, ReplyLatency, SessionSummary
from studio.widgets.common import ElidedLabel, button, label, repolish

KIND_ICONS = {
    "skill": "skill",
    "tool_call": "tool",
    "tool_result": "check",
    "hook": "hook",
    "parse_error": "alert",
    "model_error": "alert",
}
KIND_TITLES = {
    "skill": "Skill loaded",
    "tool_call": "Tool call",
    "tool_result": "Tool result",
    "hook": "Hook",
    "parse_error": "Output",
    "model_error": "Model",
}
BODY_LINES = 8
BODY_CHARS = 260
"""Lines / characters of a card body shown before "Show all"."""


def folded(text: str) -> str:
    """`text` cut to BODY_LINES lines and BODY_CHARS characters, ending in "…" when cut."""
    lines = text.splitlines()
    short = "\n".join(lines[:BODY_LINES])
    if len(short) > BODY_CHARS:
        short = short[:BODY_CHARS].rstrip()
    return short if short == text else short + " …"


STATUS_ROLES = {
    "ok": "text-muted",
    "allow": "success",
    "block": "danger",
    "error": "danger",
    "warning": "warning",
}


def stylesheet() -> str:
    """QSS for the chat widgets in the current theme's colours."""
    c = theme.color
    mono = theme.mono_font().family()
    return f"""
#ChatScroll, #ChatScroll > QWidget > QWidget {{ background: {c("window")}; }}
#ChatColumn {{ background: {c("window")}; }}
#ColumnHeader {{ background: {c("surface")}; border-bottom: 1px solid {c("border")}; }}
#LaneBadge {{ background: {c("accent")}; color: {c("on-accent")}; border-radius: 10px;
    font-weight: 700; font-size: 11px; }}
#ColumnTitle {{ font-size: 13px; font-weight: 600; color: {c("text")}; }}
#ColumnMeta {{ font-size: 11.5px; color: {c("text-faint")}; }}
#ViewerBubble {{ background: {c("accent")}; border-radius: 14px; }}
#ViewerText {{ color: {c("on-accent")}; font-size: 13px; }}
#BubbleMeta {{ color: {c("text-faint")}; font-size: 11px; }}
#HostBubble {{ background: {c("surface")}; border: 1px solid {c("border")}; border-radius: 14px; }}
#HostBubble[state="blocked"] {{ background: {c("surface-alt")};
    border: 1px dashed {c("border-strong")}; }}
#HostBubble[state="blocked"] #HostText {{ color: {c("text-muted")}; }}
#HostText {{ color: {c("text")}; font-size: 13px; }}
#HostName {{ color: {c("accent-text")}; font-size: 11.5px; font-weight: 650; }}
#BubbleNote {{ color: {c("danger")}; font-size: 11.5px; }}
#StepCard {{ background: {c("surface")}; border: 1px solid {c("border")}; border-radius: 8px;
    border-left: 3px solid {c("border-strong")}; }}
#StepCard[kind="skill"] {{ border-left-color: {c("accent")}; }}
#StepCard[kind="tool_call"] {{ border-left-color: {c("info")}; }}
#StepCard[kind="tool_result"] {{ border-left-color: {c("success")}; }}
#StepCard[kind="hook"][status="allow"] {{ border-left-color: {c("success")}; }}
#StepCard[status="block"], #StepCard[status="error"] {{ border-left-color: {c("danger")};
    background: {c("danger-soft")}; border-color: {c("removed-strong")}; }}
#StepCard[status="warning"] {{ border-left-color: {c("warning")};
    background: {c("warning-soft")}; }}
#CardKind {{ color: {c("text-faint")}; font-size: 10.5px; font-weight: 650;
    letter-spacing: 0.5px; }}
#CardTitle {{ color: {c("text")}; font-size: 12.5px; font-weight: 600; font-family: "{mono}"; }}
#CardSubtitle {{ color: {c("text-faint")}; font-size: 11px; }}
#CardDetail {{ color: {c("text-muted")}; font-size: 12px; }}
#StepCard[status="block"] #CardDetail,
#StepCard[status="error"] #CardDetail {{ color: {c("danger")}; }}
#CardBody {{ background: {c("code-bg")}; border: 1px solid {c("border")}; border-radius: 6px;
    padding: 6px 8px; color: {c("text")}; font-family: "{mono}"; font-size: 11.5px; }}
#LatencyRow {{ color: {c("text-muted")}; font-size: 11.5px; }}
#FaultCard {{ background: {c("danger-soft")}; border: 1px solid {c("removed-strong")};
    border-radius: 10px; }}
#FaultTitle {{ color: {c("danger")}; font-size: 13px; font-weight: 650; }}
#FaultText {{ color: {c("text")}; font-size: 12px; }}
#FaultLog {{ background: {c("code-bg")}; border: 1px solid {c("border")}; border-radius: 6px;
    padding: 6px 8px; color: {c("text-muted")}; font-family: "{mono}"; font-size: 11px; }}
#Divider {{ color: {c("text-faint")}; font-size: 11px; }}
#StatsPanel {{ background: {c("surface")}; border-top: 1px solid {c("border")}; }}
#StatsTitle {{ font-size: 12px; font-weight: 600; color: {c("text")}; }}
#StatsHead {{ font-size: 10.5px; font-weight: 650; color: {c("text-faint")}; }}
#StatsName {{ font-size: 12px; color: {c("text-muted")}; }}
#StatsValue {{ font-size: 12px; font-weight: 600; color: {c("text")}; font-family: "{mono}"; }}
#StatsNote {{ font-size: 11px; color: {c("text-faint")}; }}
#EmptyChat {{ color: {c("text-faint")}; font-size: 12.5px; }}
#PresetList {{ background: {c("surface")}; border: 1px solid {c("border")}; border-radius: 8px; }}
#StatusLine {{ font-size: 12px; color: {c("text-muted")}; }}
#StatusDot[state="running"] {{ color: {c("success")}; }}
#StatusDot[state="starting"] {{ color: {c("warning")}; }}
#StatusDot[state="stopped"] {{ color: {c("text-faint")}; }}
#StatusDot[state="failed"], #StatusDot[state="died"] {{ color: {c("danger")}; }}
#Composer {{ background: {c("surface")}; border-top: 1px solid {c("border")}; }}
"""


def _text(text: str, name: str, *, wrap: bool = True, selectable: bool = True) -> QLabel:
    lab = label(text, name, wrap=wrap)
    lab.setTextFormat(Qt.TextFormat.PlainText)
    if selectable:
        lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return lab


class ViewerBubble(QWidget):
    """The viewer's message, right-aligned, with where it came from.

    The bubble sits after a stretch rather than in an aligned layout item: an aligned item
    gets its size hint and ignores height-for-width, which cut wrapped text off."""

    def __init__(self, text: str, meta: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        col = QVBoxLayout(self)
        col.setContentsMargins(60, 4, 0, 2)
        col.setSpacing(3)
        self.meta = ElidedLabel(meta, "BubbleMeta")
        self.meta.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.meta.setVisible(bool(meta))
        col.addWidget(self.meta)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addStretch(1)
        bubble = QFrame()
        bubble.setObjectName("ViewerBubble")
        bl = QVBoxLayout(bubble)
        bl.setContentsMargins(13, 8, 13, 9)
        self.text = _text(text, "ViewerText")
        wide = self.text.fontMetrics().horizontalAdvance(text) + 4
        self.text.setMinimumWidth(min(wide, 260))
        bl.addWidget(self.text)
        row.addWidget(bubble)
        col.addLayout(row)


class HostBubble(QWidget):
    """The host's reply; streams while the model writes, then is accepted or blocked."""

    def __init__(self, name: str = "Host", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 2, 60, 2)
        self.frame = QFrame()
        self.frame.setObjectName("HostBubble")
        self.frame.setProperty("state", "streaming")
        fl = QVBoxLayout(self.frame)
        fl.setContentsMargins(13, 8, 13, 10)
        fl.setSpacing(3)
        self.name = _text(name, "HostName", wrap=False, selectable=False)
        fl.addWidget(self.name)
        self.text = _text("", "HostText")
        self.text.setMinimumWidth(120)
        fl.addWidget(self.text)
        self.note = _text("", "BubbleNote", selectable=False)
        self.note.hide()
        fl.addWidget(self.note)
        row.addWidget(self.frame, 4)
        row.addStretch(1)
        self._chunks: list[str] = []
        self.state = "streaming"
        self._render()

    def append(self, text: str) -> None:
        self._chunks.append(text)
        self._render()

    def plain_text(self) -> str:
        return "".join(self._chunks)

    def set_text(self, text: str) -> None:
        self._chunks = [text]
        self._render()

    def _render(self) -> None:
        caret = " ▍" if self.state == "streaming" else ""
        self.text.setText(self.plain_text() + caret)

    def finish(self, accepted: bool, note: str = "") -> None:
        self.state = "accepted" if accepted else "blocked"
        self.frame.setProperty("state", self.state)
        repolish(self.frame)
        repolish(self.text)
        self.note.setText(note)
        self.note.setVisible(bool(note))
        self._render()


class StepCard(QFrame):
    """One skill load, tool call, tool result, hook decision or failed output."""

    def __init__(self, card: Card, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.card = card
        self.setObjectName("StepCard")
        self.setProperty("kind", card.kind)
        self.setProperty("status", card.status)
        compact = card.kind == "hook" and card.status == "allow"
        lay = QVBoxLayout(self)
        lay.setContentsMargins(10, 6 if compact else 8, 10, 6 if compact else 9)
        lay.setSpacing(5)
        head = QHBoxLayout()
        head.setSpacing(7)
        icon = QLabel()
        role = STATUS_ROLES.get(card.status, "text-muted")
        if card.kind == "tool_result" and card.status == "error":
            icon_name = "alert"
        else:
            icon_name = KIND_ICONS.get(card.kind, "info")
        if card.status == "ok":
            role = {
                "skill": "accent",
                "tool_call": "info",
                "tool_result": "success",
            }.get(card.kind, role)
        theme.bind_icon(icon, icon_name, role, 14)
        head.addWidget(icon)
        kind = KIND_TITLES.get(card.kind, card.kind).upper()
        if card.kind == "tool_result" and card.status == "error":
            kind = "TOOL ERROR"
        if card.kind == "hook":
            kind = f"HOOK · {card.status.upper()}" if card.status != "warning" else "HOOK · ERROR"
        self.kind_label = _text(kind, "CardKind", wrap=False, selectable=False)
        head.addWidget(self.kind_label)
        self.title = ElidedLabel(card.title, "CardTitle")
        head.addWidget(self.title, 3)
        self.subtitle = ElidedLabel(card.subtitle, "CardSubtitle", Qt.TextElideMode.ElideLeft)
        self.subtitle.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        head.addWidget(self.subtitle, 2)
        lay.addLayout(head)
        self.detail = _text(card.detail, "CardDetail")
        self.detail.setVisible(bool(card.detail))
        lay.addWidget(self.detail)
        self.full_body = card.body
        self.short_body = folded(card.body)
        self.body = _text(self.short_body, "CardBody")
        self.body.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.body.setVisible(bool(card.body))
        lay.addWidget(self.body)
        self.more: QToolButton | None = None
        if self.short_body != card.body:
            self.more = QToolButton()
            self.more.setText(f"Show all ({len(card.body):,} characters)")
            self.more.setCheckable(True)
            self.more.setCursor(Qt.CursorShape.PointingHandCursor)
            self.more.toggled.connect(self._expand)
            lay.addWidget(self.more, 0, Qt.AlignmentFlag.AlignLeft)

    def _expand(self, on: bool) -> None:
        self.body.setText(self.full_body if on else self.short_body)
        if self.more is not None:
            self.more.setText(
                "Show less" if on else f"Show all ({len(self.full_body):,} characters)"
            )


class HookAllowRow(QFrame):
    """Consecutive hooks that allowed, on one line: the decisions that need no attention."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("StepCard")
        self.setProperty("kind", "hook")
        self.setProperty("status", "allow")
        self.cards: list[Card] = []
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 6, 10, 6)
        lay.setSpacing(7)
        icon = QLabel()
        theme.bind_icon(icon, "hook", "success", 14)
        lay.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        self.kind_label = _text("HOOKS · ALLOW", "CardKind", wrap=False, selectable=False)
        lay.addWidget(self.kind_label, 0, Qt.AlignmentFlag.AlignTop)
        self.names = _text("", "CardDetail")
        lay.addWidget(self.names, 1)
        self.subtitle = ElidedLabel("", "CardSubtitle", Qt.TextElideMode.ElideLeft)
        self.subtitle.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        lay.addWidget(self.subtitle, 0, Qt.AlignmentFlag.AlignTop)

    def add(self, card: Card) -> None:
        self.cards.append(card)
        self.names.setText("  ·  ".join(c.title for c in self.cards))
        events = sorted({c.subtitle.split(" · ")[0] for c in self.cards})
        self.subtitle.setText(", ".join(events))
        self.setToolTip("\n".join(f"{c.title}: {c.subtitle}" for c in self.cards))


class LatencyRow(QLabel):
    """TTFT, decode speed, model e2e, agent e2e, model/tool calls and tokens of one reply."""

    def __init__(self, latency: ReplyLatency, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("LatencyRow")
        self.latency = latency
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setWordWrap(True)
        self.setContentsMargins(4, 0, 0, 6)
        self.refresh()
        theme.bind(self, lambda w: w.refresh())  # type: ignore[attr-defined]

    def refresh(self) -> None:
        strong = theme.color("text")
        faint = theme.color("text-faint")
        parts = [
            f"<span style='color:{faint}'>{html.escape(k)}</span>&nbsp;"
            f"<b style='color:{strong}'>{html.escape(v)}</b>"
            for k, v in self.latency.items()
        ]
        status = self.latency.status
        if status != "ok":
            words = html.escape(status.replace("_", " "))
            parts.append(f"<b style='color:{theme.color('danger')}'>{words}</b>")
        self.setText("&nbsp;&nbsp;·&nbsp;&nbsp;".join(parts))

    def plain(self) -> str:
        return "  ·  ".join(f"{k} {v}" for k, v in self.latency.items())


class FaultCard(QFrame):
    """What went wrong, the server's last log lines, and what to do next."""

    def __init__(
        self,
        title: str,
        message: str,
        log_tail: str = "",
        actions: Sequence[tuple[str, str, Callable[[], None]]] = (),
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("FaultCard")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 10)
        lay.setSpacing(6)
        head = QHBoxLayout()
        head.setSpacing(8)
        icon = QLabel()
        theme.bind_icon(icon, "alert", "danger", 16)
        head.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        self.title = _text(title, "FaultTitle")
        head.addWidget(self.title, 1)
        lay.addLayout(head)
        self.message = _text(message, "FaultText")
        lay.addWidget(self.message)
        self.log = _text(log_tail, "FaultLog")
        self.log.setWordWrap(False)
        self.log.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.log.hide()
        self.log_button: QToolButton | None = None
        row = QHBoxLayout()
        row.setSpacing(6)
        self.buttons: dict[str, QPushButton] = {}
        for key, text, slot in actions:
            b = button(
                text, "play" if key == "restart" else None, "primary" if not self.buttons else ""
            )
            b.clicked.connect(slot)
            self.buttons[key] = b
            row.addWidget(b)
        row.addStretch(1)
        if log_tail.strip():
            self.log_button = QToolButton()
            self.log_button.setText("Show server log")
            self.log_button.setCheckable(True)
            self.log_button.setCursor(Qt.CursorShape.PointingHandCursor)
            self.log_button.toggled.connect(self._toggle_log)
            row.addWidget(self.log_button)
        lay.addLayout(row)
        lay.addWidget(self.log)

    def _toggle_log(self, on: bool) -> None:
        self.log.setVisible(on)
        if self.log_button is not None:
            self.log_button.setText("Hide server log" if on else "Show server log")

    def resolve(self, text: str) -> None:
        """The problem is over (server back): say so; only "ask again" stays useful."""
        for key, b in self.buttons.items():
            b.setEnabled(key == "again")
        self.message.setText(f"{self.message.text()}\n{text}")


class Divider(QWidget):
    """A centred line of text between conversations ("New conversation · …")."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 8, 0, 8)
        self.text = _text(text, "Divider", wrap=False, selectable=False)
        self.text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        row.addWidget(self.text, 1)


class StatsPanel(QFrame):
    """Session latency: P50 / P95 per metric, warm-up requests left out."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("StatsPanel")
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(16, 10, 16, 12)
        lay.setSpacing(6)
        head = QHBoxLayout()
        head.addWidget(_text("Session latency", "StatsTitle", wrap=False, selectable=False))
        head.addStretch(1)
        lay.addLayout(head)
        # its own line: the sentence ("5 requests: 3 timed, 1 warm-up left out, …") is longer
        # than the space beside the title in a narrow column
        self.note = _text("no requests yet", "StatsNote", wrap=True, selectable=False)
        lay.addWidget(self.note)
        grid = QGridLayout()
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(3)
        self.cells: dict[tuple[str, str], QLabel] = {}
        self.summary: SessionSummary | None = None
        self.grid = grid
        lay.addLayout(grid)

    def show_summary(self, summary: SessionSummary) -> None:
        """Metrics as columns (name and sample count on top), P50 and P95 as rows."""
        self.summary = summary
        if not self.cells:
            for row, head in enumerate(("", "P50", "P95")):
                h = _text(head, "StatsHead", wrap=False, selectable=False)
                self.grid.addWidget(h, row, 0)
            for col, line in enumerate(summary.lines, start=1):
                name = _text(line.title, "StatsName", wrap=False, selectable=False)
                name.setAlignment(Qt.AlignmentFlag.AlignRight)
                self.grid.addWidget(name, 0, col)
                self.cells[(line.metric, "name")] = name
                for row, key in enumerate(("p50", "p95"), start=1):
                    cell = _text("–", "StatsValue", wrap=False)
                    cell.setAlignment(Qt.AlignmentFlag.AlignRight)
                    self.grid.addWidget(cell, row, col)
                    self.cells[(line.metric, key)] = cell
                self.grid.setColumnStretch(col, 1)
        for line in summary.lines:
            p50, p95 = line.cells()
            self.cells[(line.metric, "p50")].setText(p50)
            self.cells[(line.metric, "p95")].setText(p95)
            name = self.cells[(line.metric, "name")]
            name.setText(line.title)
            unit = "request" if line.metric == "agent_e2e_s" else "model call"
            name.setToolTip(
                f"P50 / P95 over {line.n} {unit}{'s' if line.n != 1 else ''} "
                "(warm-up requests left out)"
            )
        self.note.setText(summary.note())
