"""The Generate tab: teacher generation (the oracle or an OpenAI-compatible endpoint) over a
split or suite and K harness variants per task, as a background job with live progress, the
latest jobs, rejection reasons and a cancel that keeps every row written so far.

The form's values become a `studio.logic.data_generate.GenerationRequest`, the same call
`hat data generate` makes (the exact command is shown under the form). Progress arrives from
the worker thread through a queued signal, so the window never waits on the generator.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from core.durations import format_duration
from studio.context import StoreChange, StudioContext
from studio.logic.data_generate import SAMPLER_CHOICES
from studio.logic.data_tasks import SOURCES
from studio.pages.data.widgets import elastic_combo, fill_combo, stop_on_close
from studio.pages.job_view import JobColumn, JobView
from studio.widgets.common import (
    Field,
    Segmented,
    button,
    chip,
    clear_layout,
    label,
)


class GenerateView(JobView):
    progressed = Signal(object)
    finished = Signal(object)
    """The GenerationResult (also after a cancel)."""

    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(ctx, (470, 560), parent)
        self.run: Any = None
        self.result: Any = None
        self.last: Any = None
        self.history: list[Any] = []
        fl = self.form

        # ---------------------------------------------------------------- form
        fl.addWidget(label("Teacher", "SectionTitle"))
        self.teacher = Segmented(
            [("oracle", "Oracle (simulator)"), ("openai", "OpenAI-compatible endpoint")]
        )
        fl.addWidget(self.teacher)
        oracle_note = label(
            "The simulator's oracle plays every task perfectly under any harness variant: "
            "instant, deterministic gold data.",
            "Faint",
            wrap=True,
        )
        self.oracle_note = oracle_note
        fl.addWidget(oracle_note)
        remote = QWidget()
        rg = QGridLayout(remote)
        rg.setContentsMargins(0, 0, 0, 0)
        rg.setHorizontalSpacing(10)
        rg.setVerticalSpacing(8)
        self.url = QLineEdit()
        self.url.setPlaceholderText("http://localhost:8000/v1")
        self.model = QLineEdit()
        self.model.setPlaceholderText("Qwen/Qwen3-32B")
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("optional (local servers ignore it)")
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setDecimals(2)
        self.url_field = Field("Base URL", self.url)
        self.model_field = Field("Model", self.model)
        rg.addWidget(self.url_field, 0, 0, 1, 2)
        rg.addWidget(self.model_field, 1, 0, 1, 2)
        rg.addWidget(Field("API key", self.api_key), 2, 0)
        rg.addWidget(Field("Temperature", self.temperature), 2, 1)
        rg.setColumnStretch(0, 2)
        rg.setColumnStretch(1, 1)
        self.remote = remote
        remote.hide()
        fl.addWidget(remote)

        fl.addSpacing(4)
        fl.addWidget(label("Tasks and harness variants", "SectionTitle"))
        grid = QGridLayout()
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(8)
        self.source = QComboBox()
        for key, text in SOURCES:
            self.source.addItem(text, key)
        self.per_category = QSpinBox()
        self.per_category.setRange(1, 500)
        self.per_category.setValue(2)
        self.per_category.setSuffix(" per category")
        self.variants = QSpinBox()
        self.variants.setRange(0, 64)
        self.variants.setValue(2)
        self.variants.setSuffix(" per task")
        self.sampler = QComboBox()
        for key, text in SAMPLER_CHOICES:
            self.sampler.addItem(text, key)
        self.version = elastic_combo()
        self.version.setMinimumWidth(200)
        self.per_category_field = Field("Size", self.per_category)
        grid.addWidget(Field("Tasks", self.source), 0, 0)
        grid.addWidget(self.per_category_field, 0, 1)
        variants_field = Field("Variants", self.variants)
        variants_field.aside.setText("+ the original")
        grid.addWidget(variants_field, 1, 0)
        grid.addWidget(Field("Sampler", self.sampler), 1, 1)
        grid.addWidget(Field("Harness version", self.version), 2, 0, 1, 2)
        grid.setColumnStretch(0, 1)
        grid.setColumnStretch(1, 1)
        fl.addLayout(grid)

        fl.addSpacing(4)
        fl.addWidget(label("Output", "SectionTitle"))
        og = QGridLayout()
        og.setHorizontalSpacing(10)
        og.setVerticalSpacing(8)
        self.out_name = QLineEdit("sft-oracle")
        self.out_field = Field("Dataset name", self.out_name, "")
        self.concurrency = QSpinBox()
        self.concurrency.setRange(1, 64)
        self.concurrency.setValue(4)
        self.concurrency.setSuffix(" parallel")
        self.limit = QSpinBox()
        self.limit.setRange(0, 1_000_000)
        self.limit.setSpecialValueText("no limit")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2_000_000_000)
        og.addWidget(self.out_field, 0, 0, 1, 3)
        og.addWidget(Field("Concurrency", self.concurrency), 1, 0)
        og.addWidget(Field("Stop after", self.limit), 1, 1)
        og.addWidget(Field("Seed", self.seed), 1, 2)
        fl.addLayout(og)
        self.command = label("", "CodeLine", wrap=True)
        self.command.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.command.setToolTip("The same generation from a terminal")
        fl.addWidget(self.command)
        actions = QHBoxLayout()
        actions.addStretch(1)
        self.start_button = button(
            "Start generation", "play", "primary", "Run the teacher as a background job"
        )
        actions.addWidget(self.start_button)
        fl.addLayout(actions)
        fl.addStretch(1)

        # ---------------------------------------------------------------- progress
        self.open_button = button("Open in Trajectories", "eye", "", "Browse the rows written")
        self.open_button.setEnabled(False)
        self.cancel_button = button(
            "Cancel", "close", "danger", "Stop; the rows written so far stay"
        )
        self.cancel_button.setEnabled(False)
        self.cancel_button.hide()
        self.reasons = QHBoxLayout()
        self.reasons.setSpacing(6)
        right = JobColumn(
            "No generation running",
            (
                ("done", "Jobs"),
                ("written", "Kept"),
                ("rejected", "Rejected"),
                ("rate", "Jobs / s"),
                ("elapsed", "Elapsed"),
                ("left", "Remaining"),
            ),
            self.open_button,
            self.cancel_button,
            "Latest jobs",
            extra=self.reasons,
        )
        self.set_column(right)

        self.teacher.changed.connect(self._teacher_changed)
        self.source.currentIndexChanged.connect(lambda _i: self._update_command())
        for w in (self.url, self.model, self.out_name):
            w.textChanged.connect(lambda _t: self._update_command())
        for s in (self.per_category, self.variants, self.concurrency, self.limit, self.seed):
            s.valueChanged.connect(lambda _v: self._update_command())
        self.temperature.valueChanged.connect(lambda _v: self._update_command())
        self.sampler.currentIndexChanged.connect(lambda _i: self._update_command())
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.progressed.connect(self._show_progress)
        ctx.opened.connect(self._load_versions)
        ctx.versionsChanged.connect(self._load_versions)
        ctx.harnessChanged.connect(lambda _n: self._load_versions())
        if ctx.store is not None:
            self._load_versions()
        self._update_command()

    # ------------------------------------------------------------------ form

    def _teacher_changed(self, value: str) -> None:
        self.oracle_note.setVisible(value == "oracle")
        self.remote.setVisible(value != "oracle")
        if value == "openai" and self.out_name.text() == "sft-oracle":
            self.out_name.setText("sft-teacher")
        elif value == "oracle" and self.out_name.text() == "sft-teacher":
            self.out_name.setText("sft-oracle")
        self._update_command()

    def _load_versions(self) -> None:
        name = self.ctx.harness_name
        if not name:
            return

        def done(versions: list[Any]) -> None:
            from studio.logic.version_names import version_items

            rows = version_items(versions)
            fill_combo(self.version, [(vid, title) for vid, title, _tip in rows])
            for i, (_vid, _title, tip) in enumerate(rows):
                self.version.setItemData(i, tip, Qt.ItemDataRole.ToolTipRole)

        self.ctx.run_store(lambda store: store.log(name), on_done=done, label="Reading history")

    def request(self) -> Any:
        from studio.logic.data_generate import GenerationRequest

        source = self.source.currentData()
        return GenerationRequest(
            out_name=self.out_name.text(),
            teacher=self.teacher.value(),
            url=self.url.text(),
            model=self.model.text(),
            api_key=self.api_key.text(),
            temperature=self.temperature.value(),
            source=source,
            per_category=self.per_category.value() if source in ("train", "dev", "test") else None,
            variants=self.variants.value(),
            sampler=self.sampler.currentData(),
            concurrency=self.concurrency.value(),
            seed=self.seed.value(),
            limit=self.limit.value() or None,
        )

    def _update_command(self) -> None:
        source = self.source.currentData()
        self.per_category_field.setEnabled(source in ("train", "dev", "test"))
        self.per_category_field.aside.setText(
            f"{self.per_category.value() * 12} tasks"
            if source in ("train", "dev", "test")
            else "the whole suite"
        )
        self.sampler.setEnabled(self.variants.value() > 0)
        req = self.request()
        self.out_field.hint.setText(f"written to {req.out_path(self.ctx.home)}")
        self.out_field.hint.setVisible(True)
        self.command.setText(req.command())
        for f in (self.url_field, self.model_field, self.out_field):
            f.set_error(None)

    # ------------------------------------------------------------------ running

    @property
    def running(self) -> bool:
        return self.run is not None

    def start(self) -> None:
        if self.running:
            return
        from studio.logic.data_generate import GenerationRun, RequestError

        req = self.request()
        fields = {"url": self.url_field, "model": self.model_field, "out_name": self.out_field}
        try:
            req.validate()
        except RequestError as exc:
            target = fields.get(exc.field)
            if target is not None:
                target.set_error(exc.message)
            self.banner.show_message("error", f"Cannot start: {exc}")
            return
        version_id = self.version.currentData()
        store = self.ctx.store
        if store is None or not version_id:
            self.banner.show_message("error", "The workspace is not open yet.")
            return
        self.banner.hide()
        home = self.ctx.home

        def prepare(store: Any) -> Any:
            run = GenerationRun(req, store.load(version_id), home, harness_version=version_id)
            run.prepare()
            return run

        self._set_running(True)
        self.progress_pane.title.setText("Preparing…")
        self.ctx.run_store(
            prepare, on_done=self._prepared, on_error=self._failed, label="Preparing generation"
        )

    def _prepared(self, run: Any) -> None:
        from studio.logic.data_generate import Progress

        stop_on_close(self, self.ctx, self.cancel)
        self.run = run
        self.result = None
        self.log.clear()
        self.progress_pane.title.setText(f"Generating {run.out.name}")
        skipped = f" · {run.skipped} already done (resumed)" if run.skipped else ""
        self.progress_pane.aside.setText(f"{run.total} jobs{skipped}")
        self._show_progress(Progress(total=run.total, skipped=run.skipped))
        emit = self.progressed.emit

        def work() -> Any:
            return run.run(lambda p: emit(dataclasses.replace(p, reasons=dict(p.reasons))))

        self.ctx.run(
            work,
            changes=StoreChange.ROWS,
            on_done=self._done,
            on_error=self._failed,
            label="Generating data",
        )

    def cancel(self) -> None:
        if self.run is not None:
            self.run.cancel()
            self.cancel_button.setEnabled(False)
            self.progress_pane.title.setText("Cancelling…")

    def _set_running(self, on: bool) -> None:
        self.start_button.setEnabled(not on)
        self.cancel_button.setEnabled(on)
        self.cancel_button.setVisible(on)
        if on:
            self.open_button.setEnabled(False)

    def _show_progress(self, p: Any) -> None:
        self.last = p
        self._col().show_count(p.done, p.total)
        s = self.stat_labels
        s["done"].setText(f"{p.done} / {p.total}")
        s["written"].setText(str(p.written))
        s["rejected"].setText(str(p.rejected))
        s["rate"].setText(f"{p.rows_per_s:.1f}" if p.done else "–")
        s["elapsed"].setText(format_duration(p.elapsed_s) if p.done else "–")
        s["left"].setText(format_duration(p.remaining_s) if 0 < p.done < p.total else "–")
        clear_layout(self.reasons)
        for kind, n in sorted(p.reasons.items(), key=lambda kv: -kv[1]):
            self.reasons.addWidget(chip(f"{kind} · {n}", "removed"))
        self.reasons.addStretch(1)
        if p.last_key:
            text = p.last_key + ("" if p.last_kept else f"  —  {p.last_reason}")
            self._col().add_item(text, p.last_kept)

    def _done(self, result: Any) -> None:
        self.result = result
        self.history.append(result)
        self.run = None
        self._set_running(False)
        self.open_button.setEnabled(True)
        self._show_progress(dataclasses.replace(result.progress, last_key=""))
        p = result.progress
        if result.cancelled:
            self.progress_pane.title.setText(f"Cancelled · {result.out.name}")
            self.ctx.message.emit(
                "info", f"Generation cancelled: {p.written} rows kept in {result.out.name}"
            )
        else:
            self.progress_pane.title.setText(f"Finished · {result.out.name}")
            self.ctx.message.emit(
                "success",
                f"Generated {p.written} rows ({p.rejected} rejected) into {result.out.name}",
            )
        self.finished.emit(result)

    def _failed(self, exc: BaseException) -> None:
        self.run = None
        self._set_running(False)
        self.progress_pane.title.setText("Generation failed")
        self.banner.show_message("error", f"Generation failed: {exc}")

    def output_path(self) -> Path | None:
        return self.result.out if self.result is not None else None
