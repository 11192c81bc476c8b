"""One column of the chat page: the conversation of one lane, request by request, and the
lane's session latency panel.

A request is a `TurnView`: the viewer's bubble, then what the agent loop reports as it happens —
streamed model text in a host bubble, cards for skill loads, tool calls, tool results and hook
decisions — and at the end the latency row (or a fault card saying what went wrong and what to
do). `LaneStream` carries the loop's callbacks to the GUI thread: requests run either on the
qasync loop (the GUI thread) or in a worker thread, and Qt queues a signal emitted from another
thread, in order. Streamed text is buffered and drawn at most every `FLUSH_MS`, so a fast model
does not relayout the column once per token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QVBoxLayout, QWidget

from core.runtime.trace import ModelCallStep, ReplyStep, Step, Trace
from core.serving.metrics import SpecDecode
from studio.logic.chat_cards import (
    Card,
    SessionSummary,
    cards_for_step,
    reply_latency,
    session_summary,
)
from studio.logic.live_speed import LiveSpeed
from studio.widgets.cards import (
    Divider,
    FaultCard,
    HookAllowRow,
    HostBubble,
    LatencyRow,
    StatsPanel,
    StepCard,
    ViewerBubble,
)
from studio.widgets.common import label

FLUSH_MS = 40


class TurnView(QWidget):
    """One agent request as it unfolds."""

    def __init__(self, message: str, meta: str = "", host: str = "Host") -> None:
        super().__init__()
        self.host = host
        self.lay = QVBoxLayout(self)
        self.lay.setContentsMargins(0, 6, 0, 6)
        self.lay.setSpacing(6)
        self.viewer = ViewerBubble(message, meta)
        self.lay.addWidget(self.viewer)
        self.card_data: list[Card] = []
        """Every card of the request, in order (allowing hooks included)."""
        self.cards: list[StepCard] = []
        """The card widgets (allowing hooks are grouped in `hook_rows` instead)."""
        self.hook_rows: list[HookAllowRow] = []
        self.bubbles: list[HostBubble] = []
        self.draft: HostBubble | None = None
        self.latency: LatencyRow | None = None
        self.fault: FaultCard | None = None
        self.trace: Trace | None = None
        self._allow_row: HookAllowRow | None = None

    # ------------------------------------------------------------------ streaming

    def delta(self, text: str) -> None:
        if self.draft is None:
            self.draft = HostBubble(self.host)
            self._add(self.draft)
        self.draft.append(text)

    def step(self, step: Step, index: int) -> None:
        if isinstance(step, ModelCallStep):
            self._model_call(step)
        elif isinstance(step, ReplyStep):
            bubble = self.draft
            if bubble is None:  # a reply whose text never streamed (the client sent it whole)
                bubble = HostBubble(self.host)
                self._add(bubble)
            bubble.set_text(step.content)
            note = (
                "" if step.accepted else f"Blocked by {step.blocked_by}: the model was asked again"
            )
            bubble.finish(step.accepted, note)
            self.bubbles.append(bubble)
            self.draft = None
        for card in cards_for_step(step, index):
            self.card_data.append(card)
            if card.kind == "model_error":
                continue  # the page follows a failed request with a fault card that says more
            if card.kind == "hook" and card.status == "allow":
                if self._allow_row is None:
                    self._allow_row = HookAllowRow()
                    self.hook_rows.append(self._allow_row)
                    self.lay.addWidget(self._allow_row)
                self._allow_row.add(card)
                continue
            widget = StepCard(card)
            self.cards.append(widget)
            self._add(widget)

    def _add(self, widget: QWidget) -> None:
        self._allow_row = None
        self.lay.addWidget(widget)

    def _model_call(self, step: ModelCallStep) -> None:
        draft = self.draft
        if draft is None:
            return
        if step.error is not None:  # the call broke off: keep what came, marked as cut
            draft.finish(False, "Cut off: the model call failed")
            self.draft = None
        elif step.tool_calls or step.parse_errors:
            # The text was tool calls (their cards follow), not a reply.
            self.lay.removeWidget(draft)
            draft.deleteLater()
            self.draft = None
        else:
            draft.set_text(step.content)

    # ------------------------------------------------------------------ end

    def finish(self, trace: Trace, spec_decode: SpecDecode | None = None) -> None:
        """The request ended: the latency row, with speculative decoding's acceptance where
        the lane measured it."""
        self.trace = trace
        if self.draft is not None:  # streamed text the loop never turned into a reply
            self.draft.finish(False, "Not used as a reply")
            self.draft = None
        self.latency = LatencyRow(reply_latency(trace, spec_decode))
        self._add(self.latency)

    def fail(
        self,
        title: str,
        message: str,
        log_tail: str = "",
        actions: Sequence[tuple[str, str, Callable[[], None]]] = (),
    ) -> FaultCard:
        self.fault = FaultCard(title, message, log_tail, actions)
        self._add(self.fault)
        return self.fault

    # ------------------------------------------------------------------ for tests and views

    def card_kinds(self) -> list[str]:
        return [c.kind for c in self.card_data]

    def reply_text(self) -> str:
        accepted = [b for b in self.bubbles if b.state == "accepted"]
        return accepted[-1].plain_text() if accepted else ""


class LaneStream(QObject):
    """Loop callbacks -> the current TurnView, on the GUI thread, in order."""

    posted = Signal(object)

    speed_changed = Signal(str)
    """The live readout (TTFT, tok/s) while a request streams; "" when it ends."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.turn: TurnView | None = None
        self._text: list[str] = []
        self._steps = 0
        self.speed: LiveSpeed | None = None
        self._tick = QTimer(self)  # the waiting time counts up before the first token
        self._tick.setInterval(250)
        self._tick.timeout.connect(self.show_speed)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(FLUSH_MS)
        self._timer.timeout.connect(self.flush)
        self.posted.connect(self._receive)

    def attach(self, turn: TurnView | None) -> None:
        self.flush()
        self.turn = turn
        self._steps = 0
        self.speed = LiveSpeed(time.monotonic()) if turn is not None else None
        if turn is None:
            self.stop_speed()
        else:
            self._tick.start()
            self.show_speed()

    def stop_speed(self) -> None:
        """The request ended: the readout gives way to the latency row."""
        self._tick.stop()
        self.speed = None
        self.speed_changed.emit("")

    # callbacks: any thread (a chunk is stamped when it arrives, not when it is shown)
    def delta(self, text: str) -> None:
        self.posted.emit(("delta", (text, time.monotonic())))

    def step(self, step: Step) -> None:
        self.posted.emit(("step", (step, time.monotonic())))

    @Slot(object)
    def _receive(self, item: tuple[str, Any]) -> None:
        kind, (payload, at) = item
        if kind == "delta":
            self._text.append(payload)
            if self.speed is not None:
                self.speed.chunk(at)
            if not self._timer.isActive():
                self._timer.start()
            return
        self.flush()
        if self.speed is not None and isinstance(payload, ModelCallStep):
            self.speed.call_ended(at)
        if self.turn is not None:
            self.turn.step(payload, self._steps)
        self._steps += 1

    def flush(self) -> None:
        self._timer.stop()
        if self._text and self.turn is not None:
            self.turn.delta("".join(self._text))
        self._text = []
        self.show_speed()

    def show_speed(self) -> None:
        if self.speed is not None:
            self.speed_changed.emit(self.speed.text(time.monotonic()))


class ChatColumn(QFrame):
    """Header (lane, model, harness, status), the conversation, the session panel."""

    def __init__(self, lane: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lane = lane
        self.setObjectName("ChatColumn")
        self.setMinimumWidth(340)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        header = QFrame()
        header.setObjectName("ColumnHeader")
        hl = QHBoxLayout(header)
        hl.setContentsMargins(16, 9, 16, 9)
        hl.setSpacing(9)
        self.badge = label(lane, "LaneBadge")
        self.badge.setFixedSize(20, 20)
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        hl.addWidget(self.badge)
        titles = QVBoxLayout()
        titles.setSpacing(0)
        self.title = label("No model server", "ColumnTitle")
        self.meta = label("", "ColumnMeta")
        titles.addWidget(self.title)
        titles.addWidget(self.meta)
        hl.addLayout(titles, 1)
        self.status = label("", "ColumnMeta")
        hl.addWidget(self.status)
        lay.addWidget(header)
        self.notice = label("", "HarnessNotice", wrap=True)
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notice.hide()
        lay.addWidget(self.notice)

        self.scroll = QScrollArea()
        self.scroll.setObjectName("ChatScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        body = QWidget()
        self.flow = QVBoxLayout(body)
        self.flow.setContentsMargins(18, 12, 18, 12)
        self.flow.setSpacing(4)
        self.empty = label(
            "Ask something as a viewer would, or pick a preset on the left.", "EmptyChat", wrap=True
        )
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setMinimumHeight(240)
        self.flow.addWidget(self.empty)
        self.flow.addStretch(1)
        self.scroll.setWidget(body)
        lay.addWidget(self.scroll, 1)
        self.stats = StatsPanel()
        self.stats.show_summary(session_summary([]))
        lay.addWidget(self.stats)

        self.stream = LaneStream(self)
        self.stream.speed_changed.connect(self._show_speed)
        self.turns: list[TurnView] = []
        self._stick = True
        bar = self.scroll.verticalScrollBar()
        bar.valueChanged.connect(lambda v: setattr(self, "_stick", v >= bar.maximum() - 30))
        bar.rangeChanged.connect(lambda _lo, hi: self._stick and bar.setValue(hi))

    def _insert(self, widget: QWidget) -> None:
        self.empty.hide()
        self.flow.insertWidget(self.flow.count() - 1, widget)

    def show_turn(self, turn: TurnView) -> None:
        """Scroll so that `turn` starts at the top (or the end is reached)."""
        self.scroll.widget().layout().activate()
        self._stick = False
        self.scroll.verticalScrollBar().setValue(turn.y() - 8)

    def set_header(self, title: str, meta: str) -> None:
        self.title.setText(title)
        self.meta.setText(meta)

    def set_notice(self, text: str | None) -> None:
        """The model card's harness notice (served under a harness it was not trained on,
        and what the impact gate measured of that); None hides it."""
        self.notice.setText(text or "")
        self.notice.setVisible(bool(text))

    def set_status(self, text: str) -> None:
        self.status.setText(text)
        if not text:  # the request ended
            self.stream.stop_speed()
        elif self.stream.speed is not None:  # a request streams: its live readout wins
            self.stream.show_speed()

    def _show_speed(self, text: str) -> None:
        """While a request streams the header shows its live TTFT and tok/s."""
        if text:
            self.status.setText(text)

    def begin_turn(self, message: str, meta: str = "") -> TurnView:
        turn = TurnView(message, meta)
        self.turns.append(turn)
        self._insert(turn)
        self.stream.attach(turn)
        self._stick = True
        return turn

    def add_divider(self, text: str) -> None:
        if self.turns:
            self._insert(Divider(text))

    def clear(self) -> None:
        self.stream.attach(None)
        while self.flow.count() > 2:
            item = self.flow.takeAt(1)
            w = item.widget()
            if w is not None:
                w.setParent(None)
                w.deleteLater()
        self.turns = []
        self.empty.show()

    def show_stats(self, summary: SessionSummary) -> None:
        self.stats.show_summary(summary)
