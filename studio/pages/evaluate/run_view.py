"""The Run tab: evaluate a model (optionally with an adapter) on the suites, through a managed
server, a running OpenAI-compatible server, or one of the oracle baselines; as a background
job with progress and stop (a stopped run is stored and can be resumed).

The form becomes a `studio.logic.eval_view.LaunchRequest`, the same request `hat eval run`
makes (the command is shown under the form)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.durations import format_duration
from core.serving.engines import pick_engine
from studio.context import StoreChange, StudioContext
from studio.logic.eval_view import HV_SUITE_KEYS, SUITE_CHOICES, TASK_FILE_SUITES, number_field
from studio.pages.data.widgets import elastic_combo, fill_combo, stop_on_close
from studio.pages.job_view import JobColumn, JobView
from studio.widgets.common import Field, Segmented, button, label


def read_choices(ctx: StudioContext, on_done: Callable[[Any, Any], None], label: str) -> None:
    """The model choices and the edited harness's versions, read in a worker; `on_done(choices,
    versions)` on the GUI thread."""
    name = ctx.harness_name

    def work(store: Any) -> Any:
        from studio.logic.eval_view import model_choices

        return model_choices(store), (store.log(name) if name else [])

    ctx.run_store(work, on_done=lambda result: on_done(*result), label=label)


def version_items(versions: list[Any]) -> list[tuple[str, str]]:
    """(id, "head · production · a1b2c3d4 · message") per version, as every picker names them."""
    from studio.logic import version_names

    return [(vid, title) for vid, title, _tip in version_names.version_items(versions)]


def number_spin(name: str, maximum: int, suffix: str = "", more: str = "") -> QSpinBox:
    """A spin box for `EvalRequest.<name>`: bound, starting value and help from core
    (`number_field`); `more` adds what the form says beyond the field's description."""
    spec = number_field(name)
    box = QSpinBox()
    box.setRange(int(spec.minimum), maximum)
    box.setValue(int(spec.default))
    box.setSuffix(suffix)
    box.setToolTip(f"{spec.help.rstrip('.')}; {more}" if more else spec.help)
    return box


class ModelPicker(QWidget):
    """Model + adapter combos over `model_choices`, and for the fixed oracle its version."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(8)
        self.model = elastic_combo(16)
        self.adapter = QComboBox()
        self.model_field = Field("Model", self.model)
        self.adapter_field = Field("Adapter", self.adapter)
        grid.addWidget(self.model_field, 0, 0)
        grid.addWidget(self.adapter_field, 0, 1)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 2)
        self.choices: list[Any] = []
        self.model.currentIndexChanged.connect(lambda _i: self._model_changed())
        self.adapter.currentIndexChanged.connect(lambda _i: self.changed.emit())

    def set_choices(self, choices: list[Any]) -> None:
        self.choices = choices
        fill_combo(self.model, [(c.key, c.label) for c in choices])
        self._model_changed()

    def choice(self) -> Any:
        key = self.model.currentData()
        return next((c for c in self.choices if c.key == key), None)

    def select(self, key: str) -> None:
        idx = self.model.findData(key)
        if idx >= 0:
            self.model.setCurrentIndex(idx)

    def select_model(self, name: str) -> None:
        """Show the registered `name`: a model, or an adapter (its base, then it)."""
        base = next((c.key for c in self.choices if name in c.adapters), None)
        self.select(base or name)
        if base is not None:
            self.adapter.setCurrentIndex(max(self.adapter.findData(name), 0))

    def _model_changed(self) -> None:
        c = self.choice()
        adapters = c.adapters if c is not None else ()
        fill_combo(self.adapter, [("", "none")] + [(a, a) for a in adapters])
        self.adapter_field.setEnabled(bool(adapters))
        self.model_field.aside.setText(c.detail if c is not None else "")
        self.changed.emit()

    @property
    def kind(self) -> str:
        c = self.choice()
        return c.kind if c is not None else "model"


class RunView(JobView):
    progressed = Signal(object)
    finished = Signal(object)
    """The stored EvalRun when the job ends (done, stopped or failed)."""

    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(ctx, (480, 580), parent)
        self.job: Any = None
        self.result: Any = None
        self.last: Any = None
        fl = self.form
        fl.addWidget(label("Model", "SectionTitle"))
        self.picker = ModelPicker()
        fl.addWidget(self.picker)
        self.trained_notice = label("", "HarnessNotice", wrap=True)
        self.trained_notice.hide()
        fl.addWidget(self.trained_notice)
        self._notice_for: tuple[str, str] | None = None
        self.fixed_on = elastic_combo()
        self.fixed_field = Field("Fixed on", self.fixed_on)
        self.fixed_field.aside.setText("calls tools and skills by this version's names")
        fl.addWidget(self.fixed_field)
        self.server_box = QWidget()
        sl = QVBoxLayout(self.server_box)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.setSpacing(8)
        self.server = Segmented([("managed", "Start a server"), ("url", "Use a running server")])
        sl.addWidget(self.server)
        self.engine = Segmented([("transformers", "transformers serve"), ("vllm", "vLLM")])
        # vLLM where its environment is installed (batched decoding, prefix caching), as
        # `hat eval run --engine auto` does; the tooltip says why when it is not.
        engine, notice = pick_engine("auto")
        self.engine.set_value(engine)
        if notice is not None:
            self.engine.setToolTip(notice)
        sl.addWidget(self.engine)
        url_row = QGridLayout()
        url_row.setHorizontalSpacing(10)
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("http://127.0.0.1:8000/v1")
        self.model_id = QLineEdit()
        self.model_id.setPlaceholderText("the server's first model")
        self.url_field = Field("Base URL", self.base_url)
        url_row.addWidget(self.url_field, 0, 0)
        url_row.addWidget(Field("Model id", self.model_id), 0, 1)
        url_row.setColumnStretch(0, 3)
        url_row.setColumnStretch(1, 2)
        self.url_box = QWidget()
        self.url_box.setLayout(url_row)
        url_row.setContentsMargins(0, 0, 0, 0)
        sl.addWidget(self.url_box)
        fl.addWidget(self.server_box)

        fl.addSpacing(4)
        fl.addWidget(label("Suites", "SectionTitle"))
        suites = QGridLayout()  # three a row: five toggles do not fit the minimum width
        suites.setHorizontalSpacing(6)
        suites.setVerticalSpacing(6)
        self.suite_buttons: dict[str, QToolButton] = {}
        for index, (key, title, hint) in enumerate(SUITE_CHOICES):
            b = QToolButton()
            b.setObjectName("Toggle")
            b.setText(title)
            b.setToolTip(hint)
            b.setCheckable(True)
            b.setChecked(key in ("ls-qa", "hv-qa"))
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            b.toggled.connect(lambda _on: self._update())
            self.suite_buttons[key] = b
            suites.addWidget(b, index // 3, index % 3)
        suites.setColumnStretch(3, 1)
        fl.addLayout(suites)
        self.suites_error = label("", "FieldError", wrap=True)
        self.suites_error.hide()
        fl.addWidget(self.suites_error)
        grid = QGridLayout()
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(8)
        self.limit = QSpinBox()
        self.limit.setRange(0, 100_000)
        self.limit.setValue(20)
        self.limit.setSpecialValueText("every task")
        self.limit.setSuffix(" tasks")
        self.variants = number_spin("variants", 64, " per task")
        self.samples = number_spin("samples", 16)
        self.max_tokens = number_spin("max_tokens", 32_768)
        self.concurrency = number_spin("concurrency", 64)  # batched: 8 cost little more
        self.call_timeout = number_spin(
            "call_timeout_s",
            3600,
            " s",
            "a longer one is an infrastructure error: left out of the scores and retryable, "
            "not graded as a wrong answer",
        )
        self.item_timeout = number_spin("item_timeout_s", 86_400, " s", "every turn and tool call")
        self.version = elastic_combo()
        grid.addWidget(Field("Per suite", self.limit), 0, 0)
        variants_field = Field("HV-QA variants", self.variants)
        grid.addWidget(variants_field, 0, 1)
        grid.addWidget(Field("Samples", self.samples), 0, 2)
        grid.addWidget(Field("Max tokens", self.max_tokens), 1, 0)
        grid.addWidget(Field("Concurrency", self.concurrency), 1, 1)
        grid.addWidget(Field("Call timeout", self.call_timeout), 1, 2)
        self.item_timeout_field = Field("Item timeout", self.item_timeout)
        grid.addWidget(self.item_timeout_field, 2, 0)
        grid.addWidget(Field("Harness version", self.version), 2, 1, 1, 2)
        self.ifeval = QLineEdit()
        self.ifeval.setPlaceholderText("input_data.jsonl (default: google/IFEval via datasets)")
        self.ifeval_field = Field("IFEval prompts", self.ifeval)
        grid.addWidget(self.ifeval_field, 3, 0, 1, 3)
        self.task_file = QLineEdit()
        self.task_file.setPlaceholderText("tasks.jsonl: your tasks (docs/task-files.md)")
        self.task_file_field = Field("Task file", self.task_file)
        grid.addWidget(self.task_file_field, 4, 0, 1, 3)
        fl.addLayout(grid)
        self.command = label("", "CodeLine", wrap=True)
        self.command.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        fl.addWidget(self.command)
        actions = QHBoxLayout()
        self.size = label("", "FieldHint", wrap=True)
        actions.addWidget(self.size, 1)
        self.start_button = button("Run evaluation", "play", "primary", "Run as a background job")
        actions.addWidget(self.start_button)
        fl.addLayout(actions)
        fl.addStretch(1)

        self.results_button = button("Open results", "eye", "", "Show this run in Results")
        self.results_button.setEnabled(False)
        self.stop_button = button(
            "Stop", "close", "danger", "Stop after the items in flight; resume continues"
        )
        self.stop_button.hide()
        right = JobColumn(
            "No evaluation running",
            (("done", "Items"), ("passed", "Passed"), ("failed", "Failed"), ("elapsed", "Elapsed")),
            self.results_button,
            self.stop_button,
            "Latest items",
        )
        self.set_column(right)

        self._started = 0.0
        self.picker.changed.connect(self._update)
        self.server.changed.connect(lambda _v: self._update())
        self.engine.changed.connect(lambda _v: self._update())
        for w in (self.base_url, self.model_id, self.ifeval, self.task_file):
            w.textChanged.connect(lambda _t: self._update())
        for s in (
            self.limit,
            self.variants,
            self.samples,
            self.max_tokens,
            self.concurrency,
            self.call_timeout,
            self.item_timeout,
        ):
            s.valueChanged.connect(lambda _v: self._update())
        self.version.currentIndexChanged.connect(lambda _i: self._update())
        self.fixed_on.currentIndexChanged.connect(lambda _i: self._update())
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)
        self.progressed.connect(self._show_progress)
        self._pace: float | None = None
        """Items a minute of the last run finished here (for the size line's estimate)."""
        self._size_timer = QTimer(self)
        self._size_timer.setSingleShot(True)
        self._size_timer.setInterval(250)
        self._size_timer.timeout.connect(self._measure_size)
        self._size_token = 0
        self._clock = QTimer(self)
        self._clock.setInterval(1000)
        self._clock.timeout.connect(self._tick)
        self._first_done: int | None = None
        ctx.opened.connect(self.load_choices)
        ctx.versionsChanged.connect(self.load_choices)
        ctx.modelsChanged.connect(self.load_choices)
        ctx.storeChanged.connect(self._recheck_notice)
        # the studio's current model and Chat's running server are the defaults here
        self._offered_url = ""
        self._server_picked = False
        self.server.changed.connect(lambda _v: setattr(self, "_server_picked", True))
        ctx.serversChanged.connect(self._offer_server)
        ctx.currentModelChanged.connect(self.picker.select_model)
        if ctx.store is not None:
            self.load_choices()
        self._offer_server()
        self._update()

    # ------------------------------------------------------------------ form

    def _offer_server(self) -> None:
        """Fill "Use a running server" with the Chat page's server, and choose it unless the
        user chose otherwise; a URL the user typed is left alone."""
        running = self.ctx.running_server()
        ours = not self.base_url.text().strip() or self.base_url.text() == self._offered_url
        if not ours:
            return
        if running is None:
            if self._offered_url:
                self.base_url.clear()
                self.model_id.clear()
                self._offered_url = ""
                if not self._server_picked:
                    self.server.set_value("managed")
        else:
            self._offered_url = running.url
            self.base_url.setText(running.url)
            self.model_id.setText(running.model_id)
            self.url_field.aside.setText(f"Chat's server: {running.label}")
            if not self._server_picked:
                self.server.set_value("url")
        self._update()

    def load_choices(self) -> None:
        def done(choices: Any, versions: Any) -> None:
            self.picker.set_choices(choices)
            if self.ctx.current_model:
                self.picker.select_model(self.ctx.current_model)
            items = version_items(versions)
            fill_combo(self.version, items)
            fill_combo(self.fixed_on, items)
            self._update()

        read_choices(self.ctx, done, "Reading models")

    def launch(self) -> Any:
        from studio.logic.eval_view import LaunchRequest

        choice = self.picker.choice()
        return LaunchRequest(
            model=choice.key if choice is not None else "",
            kind=self.picker.kind,
            adapter=self.picker.adapter.currentData() or None,
            harness=self.version.currentData(),
            suites=tuple(k for k, b in self.suite_buttons.items() if b.isChecked()),
            limit=self.limit.value() or None,
            variants=self.variants.value(),
            samples=self.samples.value(),
            concurrency=self.concurrency.value(),
            max_tokens=self.max_tokens.value(),
            call_timeout_s=float(self.call_timeout.value()),
            item_timeout_s=float(self.item_timeout.value()),
            server=self.server.value(),
            engine=self.engine.value(),
            base_url=self.base_url.text(),
            model_id=self.model_id.text(),
            ifeval_path=self.ifeval.text(),
            task_file=self.task_file.text(),
            fixed_on=self.fixed_on.currentData() if self.picker.kind == "oracle-fixed" else None,
        )

    def _update(self) -> None:
        kind = self.picker.kind
        self.fixed_field.setVisible(kind == "oracle-fixed")
        self.server_box.setVisible(kind == "model")
        self.engine.setVisible(self.server.value() == "managed")
        self.url_box.setVisible(self.server.value() == "url")
        self.ifeval_field.setVisible(self.suite_buttons["ifeval"].isChecked())
        self.task_file_field.setVisible(
            any(self.suite_buttons[k].isChecked() for k in TASK_FILE_SUITES)
        )
        self.variants.setEnabled(any(self.suite_buttons[k].isChecked() for k in HV_SUITE_KEYS))
        self.command.setText(self.launch().command())
        self._size_timer.start()
        self._check_notice()
        self.url_field.set_error(None)
        self.task_file_field.set_error(None)
        self.suites_error.hide()

    def _recheck_notice(self, changes: StoreChange) -> None:
        """A finished evaluation can bring the gate's verdict: read the notice again."""
        if changes & (StoreChange.RESULTS | StoreChange.MODELS):
            self._notice_for = None
            self._check_notice()

    def _check_notice(self) -> None:
        """Whether the chosen model was trained on another harness version than the one
        chosen, and what the impact gate measured of it (core/eval/card.py), read in a
        worker when the pair changes."""
        choice = self.picker.choice()
        adapter = self.picker.adapter.currentData() or ""
        name = adapter or (choice.key if choice is not None and self.picker.kind == "model" else "")
        version = self.version.currentData() or ""
        wanted = (name, version)
        if wanted == self._notice_for:
            return
        self._notice_for = wanted
        if not name or not version:
            self.trained_notice.hide()
            return

        def read(store: Any) -> str | None:
            from core.eval.card import harness_notice

            return harness_notice(store, name, version)

        def shown(text: str | None) -> None:
            if self._notice_for == wanted:
                self.trained_notice.setText(text or "")
                self.trained_notice.setVisible(bool(text))

        self.ctx.run_store(read, on_done=shown, on_error=lambda _e: None, label="Model card")

    # ------------------------------------------------------------------ running

    @property
    def running(self) -> bool:
        return self.job is not None

    def start(self) -> None:
        if self.running:
            return
        from studio.logic.eval_view import RequestError, launch_job

        launch = self.launch()
        try:
            launch.validate()
        except RequestError as exc:
            if exc.field == "base_url":
                self.url_field.set_error(exc.message)
            elif exc.field == "task_file":
                self.task_file_field.set_error(exc.message)
            elif exc.field == "item_timeout_s":
                self.item_timeout_field.set_error(exc.message)
            elif exc.field == "suites":
                self.suites_error.setText(exc.message)
                self.suites_error.show()
            self.banner.show_message("error", f"Cannot start: {exc.message}")
            return
        store = self.ctx.store
        if store is None:
            return
        self.banner.hide()
        try:
            job = launch_job(store, launch)
        except Exception as exc:  # a bad request (pydantic, unknown version): shown, not raised
            self.banner.show_message("error", f"Cannot start: {exc}")
            return
        self.begin(job, f"Evaluating {launch.model_name}")

    def begin(self, job: Any, title: str) -> None:
        """Run `job` (an EvalJob) with this pane's progress (also used by Resume)."""
        import time

        stop_on_close(self, self.ctx, self.stop)
        self.job = job
        self.result = None
        self.log.clear()
        self._started = time.monotonic()
        self.progress_pane.title.setText(title)
        self.progress_pane.aside.setText("starting…")
        self.start_button.setEnabled(False)
        self.stop_button.setVisible(True)
        self.stop_button.setEnabled(True)
        self.results_button.setEnabled(False)
        self.bar.setRange(0, 0)  # busy until the first progress (a server may be starting)
        self.last = None
        self._first_done = None
        self._first_at = 0.0
        self._clock.start()
        emit = self.progressed.emit
        self.ctx.run(
            job.run,
            emit,
            changes=StoreChange.RESULTS,
            on_done=self._done,
            on_error=self._failed,
            label="Evaluating",
        )

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
            self.stop_button.setEnabled(False)
            self.progress_pane.aside.setText("stopping after the items in flight…")

    def _measure_size(self) -> None:
        """How many items the form's run has (planned in a worker: loading the suites and
        IFEval's prompts is not instant)."""
        from studio.logic.eval_view import size_line

        self._size_token += 1
        token = self._size_token
        launch = self.launch()

        def work() -> tuple[int, bool]:
            from studio.logic.eval_view import planned_items

            launch.validate()
            return planned_items(launch.eval_request())

        def done(result: tuple[int, bool]) -> None:
            if token == self._size_token:
                items, complete = result
                self.size.setText(size_line(items, self._pace, complete=complete))

        def failed(_exc: BaseException) -> None:
            if token == self._size_token:
                self.size.setText("")

        self.ctx.jobs.run(work, on_done=done, on_error=failed, label="")

    def _tick(self) -> None:
        """Elapsed and time left move every second, not only when an item finishes (a
        server start or a long item would look frozen)."""
        import time

        from studio.logic.eval_view import pace_line

        elapsed = time.monotonic() - self._started
        self.stat_labels["elapsed"].setText(format_duration(elapsed))
        p = self.last
        if p is not None and p.total and self._first_done is not None:
            since = elapsed - self._first_at
            self.progress_pane.aside.setText(pace_line(p.done, p.total, since, self._first_done))

    def _show_progress(self, p: Any) -> None:
        import time

        self.last = p
        if self._first_done is None:  # the pace counts from the first progress (the server
            self._first_done = p.done  # is up by then), not from the click
            self._first_at = time.monotonic() - self._started
        self._col().show_count(p.done, p.total)
        s = self.stat_labels
        s["done"].setText(f"{p.done} / {p.total}")
        s["passed"].setText(str(p.passed))
        s["failed"].setText(str(p.failed))
        s["failed"].setToolTip(
            f"Items that did not pass; {p.errors} of them hit an infrastructure error (not "
            "scored; Retry failed items in Results runs them again)"
            if p.errors
            else "Items that did not pass"
        )
        self._tick()
        if p.last:
            self._col().add_item(p.last, p.last_ok)

    def _done(self, run: Any) -> None:
        import time

        self._clock.stop()
        self._tick()
        ran = time.monotonic() - self._started
        if run.done and ran > 0 and self._first_done is not None:
            self._pace = 60 * max(run.done - self._first_done, 1) / ran
        self.job = None
        self.result = run
        self.start_button.setEnabled(True)
        self.stop_button.hide()
        self.results_button.setEnabled(True)
        if self.bar.maximum() == 0:
            self.bar.setRange(0, 1)
        status = run.status.value
        self.progress_pane.title.setText(f"{status.capitalize()} · {run.id}")
        self.progress_pane.aside.setText(f"{run.done} / {run.total} items")
        if status == "done":
            self.ctx.message.emit(
                "success", f"Evaluation finished: {run.passed}/{run.done} items passed"
            )
        elif run.reason:
            self.banner.show_message(
                "warning" if status == "stopped" else "error",
                f"The run {status}: {run.reason}. Its items are stored; Resume continues it.",
            )
        self.finished.emit(run)

    def _failed(self, exc: BaseException) -> None:
        self._clock.stop()
        self.job = None
        self.start_button.setEnabled(True)
        self.stop_button.hide()
        self.bar.setRange(0, 1)
        self.progress_pane.title.setText("Evaluation failed")
        self.banner.show_message("error", f"Evaluation failed: {exc}")
