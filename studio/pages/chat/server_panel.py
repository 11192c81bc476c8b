"""The model-server card of the chat page: engine, model (+ adapter) or URL, start / stop, status,
and — when something goes wrong — what happened, the server's last log lines and a restart.

What is live on a running server (a trained adapter promoted from the Runs page or with `hat
models promote`, studio.logic.promotion): the model, since when, from which run, and Roll back;
the card's endpoint follows it, so the next chat turn names the live model.

All server work (`studio.logic.chat_server.ChatServer`: start and health wait, stop, restart,
attaching to a URL) runs in worker jobs; the card shows `starting` with the elapsed time
meanwhile. A timer checks every `POLL_MS` whether a server this card started has exited on its
own, so a crash shows even when no request is running.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio.context import StoreChange, StudioContext
from studio.logic.chat_server import (
    ENGINE_TITLES,
    ChatServer,
    Endpoint,
    ModelChoices,
    ServerProblem,
    ServerRequest,
    problem_from_exception,
)
from studio.logic.model_labels import model_facts, model_tooltip
from studio.logic.promotion import LiveView, live_view, rollback_on
from studio.logic.servers import ServerStatus
from studio.widgets.common import Banner, Segmented, button, label, repolish

POLL_MS = 1500
ENGINE_OPTIONS = (("transformers", "transformers"), ("vllm", "vLLM"), ("url", "URL"))
SPECULATIVE_OPTIONS = (("Off", None), ("n-gram lookup, 4 tokens", "ngram:4"))
"""vLLM speculative decoding choices: n-gram prompt lookup needs no second model and pays off
where replies repeat the prompt (tool calls quoting a record; docs/benchmarks.md)."""
STATES = {
    "stopped": "Stopped",
    "starting": "Starting",
    "running": "Running",
    "failed": "Not started",
    "died": "Stopped unexpectedly",
}


class ServerPanel(QFrame):
    stateChanged = Signal(str)
    endpointChanged = Signal(object)
    """The endpoint requests should use now (None while there is none)."""

    def __init__(self, ctx: StudioContext, slot: str, title: str = "Model server") -> None:
        super().__init__()
        self.ctx = ctx
        self.slot = slot
        self.setObjectName("Card")
        self.server = ChatServer(log_dir=ctx.home / "logs" / "servers")
        ctx.chat_servers[slot] = self.server
        self.state = "stopped"
        self.problem: ServerProblem | None = None
        self.choices = ModelChoices()
        self._started_at = 0.0
        self._token = 0

        lay = QVBoxLayout(self)
        lay.setContentsMargins(14, 12, 14, 12)
        lay.setSpacing(8)
        head = QHBoxLayout()
        head.setSpacing(6)
        self.title = label(title, "SectionTitle")
        head.addWidget(self.title)
        head.addStretch(1)
        self.dot = label("●", "StatusDot")
        self.dot.setProperty("state", "stopped")
        head.addWidget(self.dot)
        self.status = label("Stopped", "StatusLine")
        head.addWidget(self.status)
        lay.addLayout(head)

        self.engine = Segmented(ENGINE_OPTIONS)
        # vLLM serves adapters as they are and batches; where its environment is missing the
        # choice is not offered (it could only fail), and transformers serve is the default
        from core.serving.engines import default_python, vllm_available

        if vllm_available():
            self.engine.set_value("vllm")
        else:
            vllm = self.engine.buttons["vllm"]
            vllm.setEnabled(False)
            vllm.setToolTip(
                f"No vLLM environment at {default_python('vllm')}: run bash scripts/setup-vllm.sh"
            )
        lay.addWidget(self.engine)
        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(6)
        self.model = QComboBox()
        self.model.setMinimumWidth(150)
        # the facts beside each name (size, precision, origin) must not widen the card: the
        # closed combo elides, the open list shows them whole
        self.model.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.model.setMinimumContentsLength(16)
        self.model.view().setTextElideMode(Qt.TextElideMode.ElideNone)
        self.adapter = QComboBox()
        self.port = QSpinBox()
        self.port.setRange(0, 65535)
        self.port.setSpecialValueText("auto")
        self.port.setToolTip("Port on 127.0.0.1 (auto: a free one)")
        self.url = QLineEdit()
        self.url.setPlaceholderText("http://127.0.0.1:8000/v1")
        self.model_id = QLineEdit()
        self.model_id.setPlaceholderText("model id (default: the first listed)")
        self.speculative = QComboBox()
        for text, value in SPECULATIVE_OPTIONS:
            self.speculative.addItem(text, value)
        self.speculative.setToolTip(
            "vLLM speculative decoding: proposes tokens by looking up the prompt, verified in "
            "one step; the acceptance rate shows in each reply's latency line"
        )
        self.rows: dict[str, list[QWidget]] = {}

        def row(key: str, r: int, title: str, widget: QWidget) -> None:
            lab = label(title, "FieldLabel")
            grid.addWidget(lab, r, 0)
            grid.addWidget(widget, r, 1)
            self.rows[key] = [lab, widget]

        row("model", 0, "Model", self.model)
        row("adapter", 1, "Adapter", self.adapter)
        row("port", 2, "Port", self.port)
        row("url", 3, "URL", self.url)
        row("model_id", 4, "Model id", self.model_id)
        row("speculative", 5, "Speculative", self.speculative)
        grid.setColumnStretch(1, 1)
        lay.addLayout(grid)

        self.add_demo = button(
            "Add the demo model", "plus", "", "Import SmolLM2-135M-Instruct (about a minute)"
        )
        self.add_demo.hide()
        lay.addWidget(self.add_demo)

        buttons = QHBoxLayout()
        buttons.setSpacing(6)
        self.start_button = button("Start", "play", "primary", "Start the server (or connect)")
        self.stop_button = button("Stop", None, "", "Stop the server")
        self.restart_button = button("Restart", None, "", "Restart the server")
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.restart_button)
        buttons.addStretch(1)
        lay.addLayout(buttons)
        self.endpoint_line = label("", "Faint", wrap=True)
        self.endpoint_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.endpoint_line.hide()
        lay.addWidget(self.endpoint_line)
        live = QHBoxLayout()
        live.setSpacing(6)
        self.live_line = label("", "Faint", wrap=True)
        self.live_line.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        live.addWidget(self.live_line, 1)
        self.rollback_button = button(
            "Roll back", "rollback", "", "Make what was live before the last promotion answer again"
        )
        live.addWidget(self.rollback_button, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(live)
        self.live_line.hide()
        self.rollback_button.hide()
        self._shown_endpoint: Endpoint | None = None

        self.banner = Banner()
        lay.addWidget(self.banner)
        self.log_toggle = QToolButton()
        self.log_toggle.setText("Show server log")
        self.log_toggle.setCheckable(True)
        self.log_toggle.setCursor(Qt.CursorShape.PointingHandCursor)
        self.log_toggle.hide()
        self.log_toggle.toggled.connect(self._toggle_log)
        lay.addWidget(self.log_toggle, 0, Qt.AlignmentFlag.AlignLeft)
        self.log = label("", "FaultLog")
        self.log.setTextFormat(Qt.TextFormat.PlainText)
        self.log.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.log.setWordWrap(True)
        self.log.hide()
        lay.addWidget(self.log)
        self._live_log = QTimer(self)  # a started server's log, followed while shown
        self._live_log.setInterval(1000)
        self._live_log.timeout.connect(self._follow_log)

        self.engine.changed.connect(lambda _v: self._engine_changed())
        self.model.currentIndexChanged.connect(lambda _i: self._fill_adapters())
        self.adapter.currentIndexChanged.connect(lambda _i: self._adapter_hint())
        # `activated` is the user's pick only: it becomes every page's current model
        self.model.activated.connect(lambda _i: self._publish_current())
        self.adapter.activated.connect(lambda _i: self._publish_current())
        ctx.currentModelChanged.connect(lambda _name: self._select_current())
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.restart_button.clicked.connect(self.restart)
        self.add_demo.clicked.connect(self._add_demo)
        self.rollback_button.clicked.connect(self.rollback)
        ctx.storeChanged.connect(self._store_changed)
        self._tick = QTimer(self)
        self._tick.setInterval(1000)
        self._tick.timeout.connect(self._show_elapsed)
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._check_alive)
        self._engine_changed()
        self._set_state("stopped")

    # ------------------------------------------------------------------ models

    def load_models(self) -> None:
        from studio.logic.chat_server import model_choices

        self.ctx.run_store(model_choices, on_done=self._models_loaded, label="Loading models")

    def _models_loaded(self, choices: ModelChoices) -> None:
        self.choices = choices
        current = self.model.currentData()
        self.model.blockSignals(True)
        self.model.clear()
        for record in choices.models:
            kind = "" if record.kind == "base" else f" ({record.kind})"
            self.model.addItem(f"{record.name}{kind} — {model_facts(record)}", record.name)
            self.model.setItemData(
                self.model.count() - 1, model_tooltip(record), Qt.ItemDataRole.ToolTipRole
            )
        if not choices.models:
            self.model.addItem("No model registered", None)
        idx = self.model.findData(current)
        self.model.setCurrentIndex(idx if idx >= 0 else 0)
        self.model.blockSignals(False)
        self._fill_adapters()
        self._select_current()
        self._engine_changed()

    def _select_current(self) -> None:
        """Show the studio's current model (a just-trained adapter: its base and it) while
        the card can still be edited; a running server keeps what it serves."""
        name = self.ctx.current_model
        if not name or self.state not in ("stopped", "failed", "died"):
            return
        base = next(
            (
                b
                for b, records in self.choices.adapters.items()
                if any(r.name == name for r in records)
            ),
            None,
        )
        idx = self.model.findData(base or name)
        if idx < 0:
            return
        if idx != self.model.currentIndex():
            self.model.setCurrentIndex(idx)  # refills the adapters
        if base is not None:
            self.adapter.setCurrentIndex(max(self.adapter.findData(name), 0))

    def _publish_current(self) -> None:
        self.ctx.set_current_model(self.adapter.currentData() or self.model.currentData() or "")

    def _fill_adapters(self) -> None:
        base = self.model.currentData()
        self.adapter.clear()
        self.adapter.addItem("none", None)
        for record in self.choices.adapters.get(base or "", []):
            copy = self.choices.copies.get(record.name)
            self.adapter.addItem(record.name + (" · merged copy" if copy else ""), record.name)
            if copy is not None:
                self.adapter.setItemData(
                    self.adapter.count() - 1,
                    f"Also registered merged into its base as {copy.name}: engines that cannot "
                    "load adapters serve that copy",
                    Qt.ItemDataRole.ToolTipRole,
                )
        self.adapter.setEnabled(self.adapter.count() > 1)
        self._adapter_hint()

    def _adapter_hint(self) -> None:
        """Say what Start will do with an adapter the engine cannot load as it is."""
        merging = self.engine.value() == "transformers" and self.adapter.currentData()
        self.adapter.setToolTip(
            "transformers serve cannot load an adapter: Start merges it into its base first "
            "(once; later starts reuse the merged model)"
            if merging
            else "A LoRA adapter trained on this model (vLLM serves it as it is)"
        )

    def _add_demo(self) -> None:
        from core.models import add_demo

        self.add_demo.setEnabled(False)
        self.add_demo.setText("Importing the demo model…")

        def done(_result: Any) -> None:
            self.add_demo.setText("Add the demo model")
            self.add_demo.setEnabled(True)

        def failed(exc: BaseException) -> None:
            done(None)
            self.show_problem(problem_from_exception(exc))

        self.ctx.run_store(
            add_demo,
            changes=StoreChange.MODELS,
            on_done=done,
            on_error=failed,
            label="Importing the demo model",
        )

    # ------------------------------------------------------------------ form

    def _engine_changed(self) -> None:
        engine = self.engine.value()
        url = engine == "url"
        for key in ("model", "adapter", "port"):
            for w in self.rows[key]:
                w.setVisible(not url)
        for key in ("url", "model_id"):
            for w in self.rows[key]:
                w.setVisible(url)
        for w in self.rows["speculative"]:
            w.setVisible(engine == "vllm")
        self._adapter_hint()
        no_models = not url and self.model.currentData() is None and self.ctx.store is not None
        self.add_demo.setVisible(no_models and self.model.count() > 0)
        self._update_buttons()

    def request(self) -> ServerRequest:
        engine = self.engine.value()
        if engine == "url":
            return ServerRequest(
                "url", url=self.url.text().strip(), model_id=self.model_id.text().strip() or None
            )
        return ServerRequest(
            engine,
            model=self.model.currentData(),
            adapter=self.adapter.currentData(),
            port=self.port.value() or None,
            speculative=self.speculative.currentData() if engine == "vllm" else None,
        )

    # ------------------------------------------------------------------ lifecycle

    @property
    def endpoint(self) -> Endpoint | None:
        return self.server.endpoint if self.state == "running" else None

    def start(self) -> None:
        """Start the server the form describes (or connect to its URL)."""
        store = self.ctx.store
        request = self.request()
        if request.engine != "url" and request.model is None:
            self.show_problem(
                ServerProblem(
                    "registry",
                    "No model to serve",
                    "Register a model first (hat models add-demo, or the button below).",
                )
            )
            return
        if store is None and request.engine != "url":
            return
        self._token += 1
        token = self._token
        self._set_state("starting")
        server = self.server
        if request.engine == "url":
            work: Any = lambda: server.attach(request.url or "", request.model_id)  # noqa: E731
        else:
            work = lambda: server.start(store, request)  # type: ignore[arg-type]  # noqa: E731
        self.ctx.jobs.run(
            work,
            on_done=lambda ep: self._started(token, ep),
            on_error=lambda exc: self._start_failed(token, exc, request.engine),
            label="Connecting to a server"
            if request.engine == "url"
            else "Starting a model server",
        )

    def attach(self, base_url: str, model_id: str | None = None) -> None:
        """Connect to a server that already runs (the form switches to URL mode)."""
        self.engine.set_value("url")
        self._engine_changed()
        self.url.setText(base_url)
        self.model_id.setText(model_id or "")
        self.start()

    def restart(self) -> None:
        if self.server.request is None:
            self.start()
            return
        self._token += 1
        token = self._token
        engine = self.server.request.engine
        self._set_state("starting")
        store = self.ctx.store
        server = self.server
        self.ctx.jobs.run(
            lambda: server.restart(store),
            on_done=lambda ep: self._started(token, ep),
            on_error=lambda exc: self._start_failed(token, exc, engine),
            label="Restarting the model server",
        )

    def stop(self) -> None:
        self._token += 1
        token = self._token
        server = self.server
        self.stop_button.setEnabled(False)

        def done(_r: Any) -> None:
            if token == self._token:
                self._set_state("stopped")

        self.ctx.jobs.run(
            server.stop, on_done=done, on_error=done, label="Stopping the model server"
        )

    def shutdown(self) -> None:
        """Stop a server this card started, now (the studio is quitting)."""
        self._poll.stop()
        self._tick.stop()
        if self.server.managed:
            self.server.stop()

    def _started(self, token: int, endpoint: Endpoint) -> None:
        if token != self._token:
            return
        self.problem = None
        self.banner.hide()
        self._show_log("")
        self._set_state("running")
        self._show_endpoint(endpoint)
        self.endpointChanged.emit(endpoint)
        self.refresh_live()

    def _show_endpoint(self, endpoint: Endpoint) -> None:
        self._shown_endpoint = endpoint
        engine = ENGINE_TITLES.get(endpoint.engine or "", "")
        where = f"{engine} started here" if endpoint.managed else "attached"
        self.endpoint_line.setText(f"{endpoint.label} at {endpoint.base_url}  ·  {where}")
        self.endpoint_line.setToolTip(f"model id {endpoint.model_id}")

    # ------------------------------------------------------------------ live model

    def _store_changed(self, changes: StoreChange) -> None:
        if changes & StoreChange.SERVING:
            self.refresh_live()

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.refresh_live()  # a promotion from the command line meanwhile

    def refresh_live(self) -> None:
        """Read what is live on the running server (the store's record) and follow it."""
        if self.state != "running" or self.ctx.store is None:
            self._show_live(None)
            return
        token = self._token
        self.ctx.run_store(
            live_view,
            self.server,
            on_done=lambda view: self._live_read(token, view),
            on_error=lambda _exc: None,  # the record is a nicety; chat works without it
            label="Reading what the server answers with",
        )

    def _live_read(self, token: int, view: LiveView) -> None:
        if token != self._token or self.state != "running":
            return
        self._show_live(view)
        endpoint = view.endpoint
        if endpoint is not None and endpoint != self._shown_endpoint:
            self._show_endpoint(endpoint)
            self._set_state("running")  # the status bar names the live model
            self.endpointChanged.emit(endpoint)

    def _show_live(self, view: LiveView | None) -> None:
        text = view.text if view is not None else ""
        self.live_line.setText(text)
        self.live_line.setToolTip(view.tooltip if view is not None else "")
        self.live_line.setVisible(bool(text))
        self.rollback_button.setVisible(bool(text))
        self.rollback_button.setEnabled(bool(view is not None and view.can_roll_back))

    def rollback(self) -> None:
        """Make what was live before the last promotion answer again (in a worker)."""
        self.rollback_button.setEnabled(False)

        def done(result: Any) -> None:
            self.banner.show_message("success", result.message)
            self.refresh_live()

        def failed(exc: BaseException) -> None:
            self.banner.show_message("error", f"Not rolled back. {exc}")
            self.refresh_live()

        self.ctx.run_store(
            rollback_on,
            self.server,
            changes=StoreChange.SERVING,
            on_done=done,
            on_error=failed,
            label="Rolling back the promoted model",
        )

    def _start_failed(self, token: int, exc: BaseException, engine: str) -> None:
        if token != self._token:
            return
        problem = problem_from_exception(exc, engine=engine)
        if problem.kind == "stopped":
            self._set_state("stopped")
            return
        self.show_problem(problem)

    # ------------------------------------------------------------------ problems

    def show_problem(self, problem: ServerProblem, *, died: bool = False) -> None:
        self.problem = problem
        self._set_state("died" if died or problem.kind == "died" else "failed")
        self.banner.show_message("error", f"{problem.title}. {problem.message}")
        self._show_log(problem.log_tail)
        self.endpointChanged.emit(None)

    def _check_alive(self) -> None:
        if self.state != "running":
            return
        problem = self.server.died()
        if problem is not None:
            self.show_problem(problem, died=True)

    def _show_log(self, text: str) -> None:
        self.log.setText(text)
        self.log_toggle.setVisible(bool(text.strip()))
        if not text.strip():
            self.log_toggle.setChecked(False)
            self.log.hide()

    def _toggle_log(self, on: bool) -> None:
        self.log.setVisible(on)
        self.log_toggle.setText("Hide server log" if on else "Show server log")
        if on and self._log_is_live():
            self._follow_log()
            self._live_log.start()
        else:
            self._live_log.stop()

    def _log_is_live(self) -> bool:
        """A server this card started is starting or running: its log can be followed."""
        return self.state in ("starting", "running") and self.server.managed

    def _follow_log(self) -> None:
        """The log's last lines, as the engine writes them (LM Studio's server log)."""
        if not self._log_is_live():
            self._live_log.stop()
            return
        text = self.server.log_tail(40)
        if text != self.log.text():
            self.log.setText(text)

    # ------------------------------------------------------------------ state

    def _set_state(self, state: str) -> None:
        self.state = state
        self.dot.setProperty("state", state)
        repolish(self.dot)
        self.status.setText(STATES.get(state, state))
        if state == "starting":
            self._started_at = time.monotonic()
            self._tick.start()
            self.banner.hide()
            self._show_log("")
        else:
            self._tick.stop()
        if state == "running":
            self._poll.start()
        else:
            self._poll.stop()
        self.endpoint_line.setVisible(state == "running")
        if state != "running":
            self._show_live(None)
        if self._log_is_live():  # the log can be opened while the server starts and runs
            self.log_toggle.show()
            if self.log_toggle.isChecked():
                self._live_log.start()
        self._update_buttons()
        endpoint = self.endpoint
        self.ctx.set_server(
            self.slot,
            ServerStatus(state)
            if endpoint is None
            else ServerStatus(
                state, endpoint.label, endpoint.base_url, endpoint.managed, endpoint.model_id
            ),
        )
        self.stateChanged.emit(state)

    def _show_elapsed(self) -> None:
        seconds = time.monotonic() - self._started_at
        verb = "Connecting" if self.engine.value() == "url" else "Starting"
        self.status.setText(f"{self.server.phase or verb}… {seconds:.0f} s")

    def _update_buttons(self) -> None:
        state = self.state
        self.start_button.setEnabled(state in ("stopped", "failed", "died"))
        self.start_button.setText("Connect" if self.engine.value() == "url" else "Start")
        self.stop_button.setEnabled(state in ("starting", "running"))
        self.stop_button.setText("Disconnect" if self.engine.value() == "url" else "Stop")
        self.restart_button.setEnabled(
            state in ("running", "died", "failed") and self.server.request is not None
        )
        editable = state in ("stopped", "failed", "died")
        for w in (self.model, self.adapter, self.port, self.url, self.model_id):
            w.setEnabled(editable)
        self.engine.setEnabled(editable)
        if editable:
            self.adapter.setEnabled(self.adapter.count() > 1)
