"""The Chat page: talk to the served model through the agent loop, with latency readouts.

Left, the setup: the model server (start / stop a transformers or vLLM server for a registered
model and adapter, or connect to a running one by URL), the harness version, viewer-message
presets from the task generator and the live-room replay. Right, one column per lane: the
conversation with cards for skill loads, tool calls and results and hook decisions, a latency
row under every reply, and the lane's session P50/P95.

Modes: a single chat; A/B over harness versions (one server, two stored versions); A/B over
models (one harness, two servers). In A/B the same viewer message goes to both lanes, one after
the other (the order alternates per message), so neither lane's latency includes the other's
load on a shared CPU or GPU.

Requests run as asyncio tasks on the studio's qasync loop (`jobs.run_async`; without a running
loop, in a worker thread). Nothing here blocks the GUI thread on the network or the store.

Faults: a server that dies mid-reply ends the request as `model_error`; the chat keeps its
history (ChatSession), the turn gets a card that says what happened (exit status, the server's
last log lines) with "Restart server" and "Ask again", and the server card shows the same.
Starting a server that cannot start (engine not installed, port taken, broken model folder)
shows the cause on the server card.

Tests and tools may pass their own client (`client_factory`, see studio.logic.chat_lane) and
attach to an external server (`attach(base_url, model_id)`).
"""

from __future__ import annotations

import random
import time
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.context import StoreChange, StudioContext
from studio.logic.chat_queue import ChatJob, ChatQueue, LaneState, lane_problem
from studio.logic.chat_server import Endpoint, ServerProblem
from studio.pages.chat.column import ChatColumn, TurnView
from studio.pages.chat.server_panel import ServerPanel
from studio.widgets import cards
from studio.widgets.cards import FaultCard
from studio.widgets.common import Banner, PageHeader, Segmented, button, label, tool_button

MODES = (("single", "Chat"), ("ab_harness", "A/B harness"), ("ab_model", "A/B models"))
LANES = ("A", "B")
LANE_LABEL_ROLE = Qt.ItemDataRole.UserRole + 1
"""Item role of a harness choice's stored label ("live-host @ a1b2c3d4e5 · production")."""


class ChatPage(QWidget):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Page")
        self.ctx = ctx
        self.client_factory: Any = None
        """Callable (endpoint, options, lane) -> ChatClient; None: OpenAIChatClient."""
        self.lanes: dict[str, Any] = {}
        self.harness_refs: dict[str, str] = {}
        """The version picked for each lane (maybe still loading)."""
        self.lane_refs: dict[str, str] = {}
        self._notice_for: dict[str, tuple[str | None, str | None]] = {}
        """The version each lane runs now."""
        self.presets: list[Any] = []
        self.replay: Any = None
        self.queue = ChatQueue()
        """Which lane answers next, the A/B order, what Stop drops (studio/logic/chat_queue)."""
        self._task: Any = None
        self._turn: Any = None
        self._room_task: Any = None
        self._faults: list[tuple[str, FaultCard]] = []
        self._loaded = False
        theme.bind(self, lambda w: w.setStyleSheet(cards.stylesheet()))  # type: ignore[attr-defined]

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.header = PageHeader("Chat", "Talk to the served model through the agent loop")
        self.mode = Segmented(MODES)
        self.header.add(self.mode)
        self.clear_button = button(
            "New conversation", "plus", "", "Forget the history of every lane"
        )
        self.header.add(self.clear_button)
        lay.addWidget(self.header)

        body = QHBoxLayout()
        body.setContentsMargins(24, 14, 24, 16)
        body.setSpacing(14)
        body.addWidget(self._build_setup())
        body.addWidget(self._build_chat(), 1)
        lay.addLayout(body, 1)

        self.mode.changed.connect(lambda _v: self._mode_changed())
        self.clear_button.clicked.connect(self.new_conversation)
        self.replay_timer = QTimer(self)
        self.replay_timer.setInterval(100)
        self.replay_timer.timeout.connect(self._replay_tick)
        self._mode_changed()
        ctx.opened.connect(self._on_opened)
        ctx.versionsChanged.connect(self._load_harnesses)
        ctx.modelsChanged.connect(self._reload_models)
        ctx.storeChanged.connect(self._recheck_notices)
        if ctx.store is not None:
            self._on_opened()
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    # ------------------------------------------------------------------ building

    def _build_setup(self) -> QWidget:
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFixedWidth(340)
        inner = QWidget()
        col = QVBoxLayout(inner)
        col.setContentsMargins(0, 0, 6, 0)
        col.setSpacing(12)
        self.servers = {
            "A": ServerPanel(self.ctx, "A", "Model server"),
            "B": ServerPanel(self.ctx, "B", "Model server B"),
        }
        for key, panel in self.servers.items():
            panel.endpointChanged.connect(lambda ep, k=key: self._endpoint_changed(k, ep))
            panel.stateChanged.connect(lambda _s: self._refresh_headers())
            col.addWidget(panel)

        # ---- harness and generation
        hcard = QFrame()
        hcard.setObjectName("Card")
        hl = QGridLayout(hcard)
        hl.setContentsMargins(14, 12, 14, 12)
        hl.setHorizontalSpacing(8)
        hl.setVerticalSpacing(6)
        hl.addWidget(label("Harness", "SectionTitle"), 0, 0, 1, 2)
        self.harness_combo = {"A": QComboBox(), "B": QComboBox()}
        self.harness_label = {
            "A": label("Version", "FieldLabel"),
            "B": label("Version B", "FieldLabel"),
        }
        for row, key in enumerate(LANES, start=1):
            self.harness_combo[key].setMinimumWidth(180)
            hl.addWidget(self.harness_label[key], row, 0)
            hl.addWidget(self.harness_combo[key], row, 1)
            self.harness_combo[key].currentIndexChanged.connect(
                lambda _i, k=key: self._harness_selected(k)
            )
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 8192)
        self.max_tokens.setValue(256)
        self.max_tokens.setSuffix(" tokens")
        self.max_tokens.setToolTip("Most tokens per model call")
        hl.addWidget(label("Max output", "FieldLabel"), 3, 0)
        hl.addWidget(self.max_tokens, 3, 1)
        self.timeout = QSpinBox()
        self.timeout.setRange(5, 3600)
        self.timeout.setValue(300)
        self.timeout.setSuffix(" s per call")
        self.timeout.setToolTip("How long one model call may take (prefill and decode)")
        hl.addWidget(label("Timeout", "FieldLabel"), 4, 0)
        hl.addWidget(self.timeout, 4, 1)
        hl.setColumnStretch(1, 1)
        col.addWidget(hcard)

        # ---- presets
        pcard = QFrame()
        pcard.setObjectName("Card")
        pl = QVBoxLayout(pcard)
        pl.setContentsMargins(14, 12, 14, 12)
        pl.setSpacing(6)
        ph = QHBoxLayout()
        ph.addWidget(label("Viewer messages", "SectionTitle"))
        ph.addStretch(1)
        self.reshuffle = tool_button("dice", "Other messages from the task generator")
        ph.addWidget(self.reshuffle)
        pl.addLayout(ph)
        pl.addWidget(
            label("From the task generator (dev split). Double-click to send.", "Faint", wrap=True)
        )
        self.preset_list = QListWidget()
        self.preset_list.setObjectName("PresetList")
        self.preset_list.setMinimumHeight(170)
        self.preset_list.setWordWrap(True)
        self.preset_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.preset_list.itemClicked.connect(self._preset_clicked)
        self.preset_list.itemDoubleClicked.connect(self._preset_double_clicked)
        self.reshuffle.clicked.connect(lambda: self.load_presets(random.randint(1, 9999)))
        pl.addWidget(self.preset_list)
        col.addWidget(pcard)

        # ---- live room
        lcard = QFrame()
        lcard.setObjectName("Card")
        ll = QGridLayout(lcard)
        ll.setContentsMargins(14, 12, 14, 12)
        ll.setHorizontalSpacing(8)
        ll.setVerticalSpacing(6)
        ll.addWidget(label("Live room replay", "SectionTitle"), 0, 0, 1, 2)
        ll.addWidget(
            label(
                "Viewer messages arrive at a steady pace and wait while the host is busy.",
                "Faint",
                wrap=True,
            ),
            1,
            0,
            1,
            2,
        )
        self.replay_count = QSpinBox()
        self.replay_count.setRange(1, 500)
        self.replay_count.setValue(8)
        self.replay_count.setSuffix(" messages")
        self.replay_pace = QDoubleSpinBox()
        self.replay_pace.setRange(0.0, 600.0)
        self.replay_pace.setDecimals(1)
        self.replay_pace.setSingleStep(0.5)
        self.replay_pace.setValue(5.0)
        self.replay_pace.setSuffix(" s apart")
        self.replay_pace.setSpecialValueText("all at once")
        self.replay_history = QCheckBox("Carry the conversation between messages")
        ll.addWidget(label("Stream", "FieldLabel"), 2, 0)
        ll.addWidget(self.replay_count, 2, 1)
        ll.addWidget(label("Pace", "FieldLabel"), 3, 0)
        ll.addWidget(self.replay_pace, 3, 1)
        ll.addWidget(self.replay_history, 4, 0, 1, 2)
        rb = QHBoxLayout()
        self.replay_button = button("Play", "play", "", "Replay a stream of viewer messages")
        self.replay_button.clicked.connect(self.toggle_replay)
        rb.addWidget(self.replay_button)
        self.replay_status = label("", "Faint")
        rb.addWidget(self.replay_status, 1)
        ll.addLayout(rb, 5, 0, 1, 2)
        ll.setColumnStretch(1, 1)
        col.addWidget(lcard)
        col.addStretch(1)
        scroll.setWidget(inner)
        return scroll

    def _build_chat(self) -> QWidget:
        pane = QFrame()
        pane.setObjectName("Pane")
        pl = QVBoxLayout(pane)
        pl.setContentsMargins(1, 1, 1, 1)
        pl.setSpacing(0)
        self.banner = Banner()
        banner_wrap = QHBoxLayout()
        banner_wrap.setContentsMargins(12, 10, 12, 0)
        banner_wrap.addWidget(self.banner)
        pl.addLayout(banner_wrap)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.columns = {key: ChatColumn(key) for key in LANES}
        for column in self.columns.values():
            self.splitter.addWidget(column)
        pl.addWidget(self.splitter, 1)
        composer = QFrame()
        composer.setObjectName("Composer")
        cl = QHBoxLayout(composer)
        cl.setContentsMargins(14, 10, 14, 10)
        cl.setSpacing(8)
        self.composer = QLineEdit()
        self.composer.setPlaceholderText("Type a viewer message…")
        self.composer.setClearButtonEnabled(True)
        self.composer.returnPressed.connect(self.send)
        cl.addWidget(self.composer, 1)
        self.send_button = button("Send", "chat", "primary", "Send to the host (Enter)")
        self.send_button.clicked.connect(self.send)
        cl.addWidget(self.send_button)
        self.cancel_button = button(
            "Stop", "close", "danger", "Stop this reply (Esc); the conversation goes on without it"
        )
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        cl.addWidget(self.cancel_button)
        # on the page, not the composer: while a reply streams the focus is often on the
        # transcript or a card, and Esc must stop the stream from anywhere on the page
        cancel = QShortcut(QKeySequence(Qt.Key.Key_Escape), self)
        cancel.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        cancel.activated.connect(self.cancel)
        pl.addWidget(composer)
        return pane

    # ------------------------------------------------------------------ workspace

    def _on_opened(self) -> None:
        """A workspace opened (also after switching workspace): reload what comes from it."""
        for key, lane in self.lanes.items():
            if lane.store is not self.ctx.store:
                lane.store = self.ctx.store
                lane.reset()
                self.columns[key].add_divider("New conversation  ·  workspace changed")
        self._reload_models()
        self._load_harnesses()
        if not self._loaded:
            self._loaded = True
            self.load_presets(0)

    def _reload_models(self) -> None:
        for panel in self.servers.values():
            if panel.state not in ("starting", "running"):
                panel.load_models()

    def showEvent(self, event: Any) -> None:
        if self._loaded:  # training may have registered adapters meanwhile
            self._reload_models()
        super().showEvent(event)

    def _load_harnesses(self) -> None:
        from studio.logic.chat_lane import harness_choices

        self.ctx.run_store(
            harness_choices, on_done=self._harnesses_loaded, label="Loading harness versions"
        )

    def _harnesses_loaded(self, choices: list[Any]) -> None:
        for key, combo in self.harness_combo.items():
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            from studio.logic.version_names import version_title, version_tooltip

            for choice in choices:
                combo.addItem(f"{choice.harness} · {version_title(choice)}", choice.version_id)
                tip = version_tooltip(choice)
                combo.setItemData(combo.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
                # the lane's label (column header, latency rows) keeps the stored form
                combo.setItemData(combo.count() - 1, choice.label, LANE_LABEL_ROLE)
            wanted = current or self.ctx.settings.value(f"chat/harness_{key}", "")
            idx = combo.findData(wanted)
            named = [i for i, c in enumerate(choices) if c.harness == self.ctx.harness_name]
            if idx < 0 and choices:
                # default: the version being edited (the one the status bar shows), else the
                # current harness's newest: what Data and Evaluate start from too
                doc = self.ctx.session.doc
                edited = combo.findData(doc.version_id) if doc is not None else -1
                idx = edited if edited >= 0 else (named or [0])[0]
            if key == "B" and len(choices) > 1:
                other = self.harness_combo["A"].currentData()
                if combo.itemData(max(idx, 0)) == other:  # an A/B of a version with itself
                    pool = [i for i in named if i != idx] or [
                        i for i in range(len(choices)) if i != idx
                    ]
                    idx = pool[0]
            combo.setCurrentIndex(max(idx, 0))
            combo.blockSignals(False)
            if combo.currentData() != self.harness_refs.get(key):
                self._harness_selected(key)

    def load_presets(self, seed: int = 0) -> None:
        from studio.logic.viewer_stream import viewer_presets

        self.ctx.jobs.run(
            lambda: viewer_presets(per_category=2, seed=seed),
            on_done=self._presets_loaded,
            on_error=lambda e: self.banner.show_message("error", f"Presets: {e}"),
            label="Loading viewer messages",
        )

    def _presets_loaded(self, presets: list[Any]) -> None:
        self.presets = presets
        self.preset_list.clear()
        for preset in presets:
            item = QListWidgetItem(f"{preset.category}  ·  {preset.message}")
            item.setToolTip(f"{preset.task_id}\n{preset.message}")
            self.preset_list.addItem(item)

    # ------------------------------------------------------------------ harness

    def _harness_selected(self, key: str) -> None:
        ref = self.harness_combo[key].currentData()
        if not ref or self.ctx.store is None:
            return
        self.harness_refs[key] = ref
        if key in self.lanes and self.lane_refs.get(key) == ref:
            return  # already the lane's harness: keep the conversation
        self.ctx.settings.setValue(f"chat/harness_{key}", ref)
        combo = self.harness_combo[key]
        text = combo.currentData(LANE_LABEL_ROLE) or combo.currentText()
        self.ctx.run_store(
            lambda store, r=ref: store.load(r),
            on_done=lambda h, k=key, t=text, r=ref: self._harness_loaded(k, h, t, r),
            on_error=lambda e: self.banner.show_message("error", f"Harness: {e}"),
            label="Loading harness version",
        )

    def set_harness(self, lane: str, version_id: str) -> None:
        """Select a stored version for a lane (as picking it in the combo does)."""
        combo = self.harness_combo[lane]
        idx = combo.findData(version_id)
        if idx < 0:
            raise KeyError(f"no harness version {version_id} in the list")
        if idx == combo.currentIndex():
            self._harness_selected(lane)
        else:
            combo.setCurrentIndex(idx)

    def _harness_loaded(self, key: str, harness: Any, text: str, ref: str) -> None:
        if self.harness_refs.get(key) != ref or (
            key in self.lanes and self.lane_refs.get(key) == ref
        ):
            return  # a newer pick is loading, or this version is already the lane's
        self.lane_refs[key] = ref
        from studio.logic.chat_lane import ChatLane

        lane = self.lanes.get(key)
        if lane is None:
            self.lanes[key] = ChatLane(key, harness, store=self.ctx.store, harness_label=text)
        else:
            lane.reset(harness, text)
            self.columns[key].add_divider(f"New conversation  ·  {text}")
        if key == "A" and self.mode.value() == "ab_model":
            self._sync_model_lane()
        self._refresh_headers()

    def _sync_model_lane(self) -> None:
        """A/B over models: lane B runs lane A's harness."""
        a = self.lanes.get("A")
        if a is None:
            return
        from studio.logic.chat_lane import ChatLane

        b = self.lanes.get("B")
        self.lane_refs["B"] = self.lane_refs.get("A", "")
        if b is None:
            self.lanes["B"] = ChatLane(
                "B", a.harness, store=self.ctx.store, harness_label=a.harness_label
            )
        elif b.harness is not a.harness:
            b.reset(a.harness, a.harness_label)
            self.columns["B"].add_divider(f"New conversation  ·  {a.harness_label}")

    # ------------------------------------------------------------------ modes

    def active_lanes(self) -> list[str]:
        return ["A"] if self.mode.value() == "single" else ["A", "B"]

    def server_for(self, lane: str) -> ServerPanel:
        return self.servers["B" if lane == "B" and self.mode.value() == "ab_model" else "A"]

    def _mode_changed(self) -> None:
        mode = self.mode.value()
        self.columns["B"].setVisible(mode != "single")
        self.servers["B"].setVisible(mode == "ab_model")
        self.servers["A"].title.setText("Model server A" if mode == "ab_model" else "Model server")
        self.harness_label["B"].setVisible(mode == "ab_harness")
        self.harness_combo["B"].setVisible(mode == "ab_harness")
        self.harness_label["A"].setText("Version A" if mode == "ab_harness" else "Version")
        if mode == "ab_model":
            self._sync_model_lane()
        elif mode == "ab_harness":
            b = self.lanes.get("B")
            if b is None or self.harness_refs.get("B") is None:
                self._harness_selected("B")
            else:
                a = self.lanes.get("A")
                if a is not None and b.harness is a.harness:  # was a model comparison
                    self._harness_selected("B")
        if mode != "single":
            self.splitter.setSizes([1, 1])
        self._refresh_headers()

    def _endpoint_changed(self, slot: str, endpoint: Endpoint | None) -> None:
        if endpoint is not None:
            for panel_slot, fault in list(self._faults):
                if panel_slot == slot:
                    fault.resolve("The server is running again: ask again when ready.")
            self._faults = [(s, f) for s, f in self._faults if s != slot]
            self.banner.hide()
        self._refresh_headers()

    def _refresh_headers(self) -> None:
        for key, column in self.columns.items():
            panel = self.server_for(key)
            endpoint = panel.endpoint
            lane = self.lanes.get(key)
            title = endpoint.label if endpoint is not None else "No model server"
            if endpoint is None and panel.state == "starting":
                title = "Starting the model server…"
            meta = lane.harness_label if lane is not None else "loading harness…"
            column.set_header(title, meta)
            model = endpoint.model if endpoint is not None else None
            self._check_harness_notice(key, model, self.lane_refs.get(key) if lane else None)

    def _recheck_notices(self, changes: StoreChange) -> None:
        """A finished evaluation or a new model can change a lane's notice (the gate's
        verdict needs runs under both versions): read them again."""
        if changes & (StoreChange.RESULTS | StoreChange.MODELS | StoreChange.VERSIONS):
            self._notice_for.clear()
            self._refresh_headers()

    def _check_harness_notice(self, key: str, model: str | None, version: str | None) -> None:
        """Show on lane `key` whether `model` was trained on another harness version than
        `version` and what the impact gate measured of it (core/eval/card.py), read in a
        worker; asked again only when the pair changes."""
        wanted = (model, version)
        if self._notice_for.get(key) == wanted:
            return
        self._notice_for[key] = wanted
        column = self.columns[key]
        if model is None or not version or self.ctx.store is None:
            column.set_notice(None)
            return

        def shown(text: str | None) -> None:
            if self._notice_for.get(key) == wanted:  # not a stale answer
                column.set_notice(text)

        def read(store: Any) -> str | None:
            from core.eval.card import harness_notice

            return harness_notice(store, model, version)

        self.ctx.run_store(
            read,
            on_done=shown,
            on_error=lambda _e: None,  # a card that cannot be read is no warning
            label="Reading the model card",
        )

    # ------------------------------------------------------------------ presets

    def _preset_clicked(self, item: QListWidgetItem) -> None:
        preset = self.presets[self.preset_list.row(item)]
        self.composer.setText(preset.message)
        self._room_task = preset.task

    def _preset_double_clicked(self, item: QListWidgetItem) -> None:
        preset = self.presets[self.preset_list.row(item)]
        self.send_preset(preset)

    def send_preset(self, preset: Any) -> None:
        self._room_task = preset.task
        self.composer.clear()
        self.ask(preset.message, task=preset.task, meta=f"{preset.category} · {preset.task_id}")

    # ------------------------------------------------------------------ sending

    @property
    def busy(self) -> bool:
        return self.queue.busy

    def send(self) -> None:
        """Send the composer's text to every active lane."""
        text = self.composer.text().strip()
        if not text:
            return
        task = self._room_task
        if self.ask(text, task=task):
            self.composer.clear()

    def ready(self, lanes: list[str] | None = None) -> str | None:
        """Why the lanes cannot take a message now (None when they can)."""
        for key in lanes or self.active_lanes():
            panel = self.server_for(key)
            which = f"model server {panel.slot}" if self.mode.value() == "ab_model" else ""
            problem = lane_problem(
                LaneState(
                    has_endpoint=panel.endpoint is not None,
                    server_state=panel.state,
                    server_label=which or "a model server",
                    harness_loaded=key in self.lanes,
                )
            )
            if problem is not None:
                return problem
        return None

    def ask(
        self,
        message: str,
        *,
        task: Any = None,
        meta: str = "",
        fresh: bool = False,
        lanes: list[str] | None = None,
    ) -> bool:
        """Queue `message` for the lanes (default: the active ones); False when not ready."""
        lanes = lanes or self.active_lanes()
        problem = self.ready(lanes)
        if problem is not None:
            self.banner.show_message("warning", problem)
            return False
        self.banner.hide()
        self.queue.add(message, lanes, task=task, fresh=fresh, meta=meta)
        self._update_busy()
        self._dispatch()
        return True

    def _dispatch(self) -> None:
        if self.queue.running is not None:
            return
        job = self.queue.start_next()
        if job is None:
            self._idle()
            return
        endpoint = self.server_for(job.lane).endpoint
        lane = self.lanes.get(job.lane)
        column = self.columns[job.lane]
        if endpoint is None or lane is None:
            turn = column.begin_turn(job.message, job.meta)
            turn.fail("Not sent", self.ready([job.lane]) or "No server", "")
            self.queue.finished()
            self._dispatch()
            return
        if lane.session.rows and lane.session.model not in (None, endpoint.model):
            lane.reset()
            column.add_divider(f"New conversation  ·  {endpoint.label}")
        turn = column.begin_turn(job.message, job.meta)
        column.set_status("answering…")
        stream = column.stream
        from core.serving.client import GenerationOptions

        options = GenerationOptions(max_tokens=self.max_tokens.value())
        factory = self.client_factory
        if factory is None:
            from functools import partial

            from studio.logic.chat_lane import default_client

            factory = partial(default_client, timeout_s=float(self.timeout.value()))

        def work() -> Any:
            return lane.ask(
                job.message,
                endpoint,
                task=job.task,
                options=options,
                client_factory=factory,
                on_delta=stream.delta,
                on_event=stream.step,
                fresh=job.fresh,
            )

        self._turn = turn
        self._task = self.ctx.jobs.run_async(
            work,
            on_done=lambda trace: self._answered(job, turn, trace),
            on_error=lambda exc: self._crashed(job, turn, exc),
            label=f"Chat {job.lane}: answering",
        )

    def cancel(self) -> None:
        """Stop the reply being written and drop the queued ones. The request is abandoned
        (its model call closed), the turn says so, and the history stays as it was before
        the message: the conversation goes on as if it had not been sent."""
        running = self.queue.stop()
        if running is None:
            return
        task, turn, lane = self._task, self._turn, running.lane
        if task is None:  # running in a worker thread (no event loop): it cannot be cut off
            self.banner.show_message("warning", "This reply cannot be stopped; it ends soon.")
            return
        task.cancel()
        column = self.columns[lane]
        column.stream.flush()
        column.set_status("")
        if turn is not None:
            turn.fail("Stopped", "You stopped this reply; it is not in the conversation.")
        self._task = self._turn = None
        self.queue.finished()
        self._update_busy()
        self._dispatch()

    def _answered(self, job: ChatJob, turn: TurnView, trace: Any) -> None:
        column = self.columns[job.lane]
        column.stream.flush()
        lane = self.lanes[job.lane]
        turn.finish(trace, lane.spec_decode)
        from studio.logic.chat_cards import session_summary

        column.show_stats(session_summary(lane.session.rows))
        column.set_status("")
        if trace.status.value == "model_error":
            self._diagnose(job, turn, trace.reason, len(lane.history))
        self.queue.finished()
        self._update_busy()
        self._dispatch()

    def _crashed(self, job: ChatJob, turn: TurnView, exc: BaseException) -> None:
        column = self.columns[job.lane]
        column.stream.flush()
        column.set_status("")
        turn.fail("The request failed", f"{type(exc).__name__}: {exc}")
        self.queue.finished()
        self._update_busy()
        self._dispatch()

    def _diagnose(self, job: ChatJob, turn: TurnView, reason: str | None, history: int) -> None:
        panel = self.server_for(job.lane)
        server = panel.server

        def show(problem: ServerProblem) -> None:
            actions: list[tuple[str, str, Any]] = []
            if problem.action == "restart":
                actions.append(("restart", "Restart server", panel.restart))
            elif problem.action == "reconnect":
                actions.append(("restart", "Reconnect", panel.restart))
            actions.append(("again", "Ask again", lambda: self._ask_again(job)))
            fault = turn.fail(problem.title, problem.message, problem.log_tail, actions)
            self._faults.append((panel.slot, fault))
            if problem.kind in ("died", "unreachable"):
                panel.show_problem(problem, died=problem.kind == "died")

        self.ctx.jobs.run(
            lambda: server.diagnose(reason, history=history),
            on_done=show,
            on_error=lambda e: show(ServerProblem("error", "The model call failed", str(e))),
            label="Checking the model server",
        )

    def _ask_again(self, job: ChatJob) -> None:
        self.ask(job.message, task=job.task, meta=job.meta, fresh=job.fresh, lanes=[job.lane])

    def _update_busy(self) -> None:
        busy = self.busy
        self.send_button.setEnabled(not busy)
        self.send_button.setText("Answering…" if busy else "Send")
        self.cancel_button.setVisible(busy)

    def _idle(self) -> None:
        if self.replay is not None:
            self.replay.answered()
            self._replay_tick()

    def new_conversation(self) -> None:
        """Forget every lane's history and latency session; clear the columns."""
        if self.busy:
            self.banner.show_message("info", "Wait for the current reply to finish.")
            return
        for key, lane in self.lanes.items():
            lane.reset()
            self.columns[key].clear()
            from studio.logic.chat_cards import session_summary

            self.columns[key].show_stats(session_summary([]))

    # ------------------------------------------------------------------ live room

    def toggle_replay(self) -> None:
        if self.replay is not None and not self.replay.finished:
            self.stop_replay()
        else:
            self.start_replay()

    def start_replay(
        self, count: int | None = None, pace_s: float | None = None, seed: int | None = None
    ) -> bool:
        from studio.logic.viewer_stream import ReplaySchedule, live_stream

        problem = self.ready()
        if problem is not None:
            self.banner.show_message("warning", problem)
            return False
        n = count if count is not None else self.replay_count.value()
        pace = pace_s if pace_s is not None else self.replay_pace.value()
        stream = live_stream(n, seed=seed if seed is not None else random.randint(0, 9999))
        self.replay = ReplaySchedule(stream, pace)
        self.replay.start(time.monotonic())
        self.replay_button.setText("Stop")
        self.replay_timer.start()
        self._replay_tick()
        return True

    def stop_replay(self) -> None:
        if self.replay is not None:
            self.replay.stop()
        self.replay_timer.stop()
        self.replay_button.setText("Play")
        self._replay_status()

    def _replay_tick(self) -> None:
        replay = self.replay
        if replay is None:
            return
        now = time.monotonic()
        replay.arrived(now)
        if not self.busy and not replay.busy:
            item = replay.take(now)
            if item is not None:
                preset = item.preset
                meta = (
                    f"live {item.index + 1}/{replay.total} · {preset.category}"
                    f" · waited {item.waited_s:.1f} s"
                )
                if not self.ask(
                    preset.message,
                    task=preset.task,
                    meta=meta,
                    fresh=not self.replay_history.isChecked(),
                ):
                    self.stop_replay()
                    return
        if replay.finished:
            self.replay_timer.stop()
            self.replay_button.setText("Play")
        self._replay_status()

    def _replay_status(self) -> None:
        replay = self.replay
        if replay is None:
            self.replay_status.setText("")
            return
        text = f"{replay.done_count} / {replay.total} answered"
        if replay.waiting:
            text += f" · {replay.waiting} waiting"
        if replay.stopped:
            text += " · stopped"
        self.replay_status.setText(text)

    # ------------------------------------------------------------------ external servers, quit

    def attach(self, base_url: str, model_id: str | None = None, slot: str = "A") -> None:
        """Use a server that already runs (tests, or a server started elsewhere)."""
        self.servers[slot].attach(base_url, model_id)

    def shutdown(self) -> None:
        self.replay_timer.stop()
        for panel in self.servers.values():
            panel.shutdown()
