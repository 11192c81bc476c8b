"""The Train page: configure a stage (or the whole pipeline), see the exact command, start it,
and watch it in the Monitor tab.

The forms are generated from the stage config models (`core.train.config`: SftConfig,
OpdConfig, RlConfig, PipelineConfig) with their defaults and descriptions. Every edit is
validated at once by the model itself (the message appears under the field it names); the
machine-dependent checks (`check_launch`: files exist, GPU-only options on a CPU, batch
divisibility) and the command preview run in a worker shortly after typing stops.

Devices: the GPUs found by NVML (nvidia-ml-py) or nvidia-smi, each selectable; on a machine
without one the page says the stages run on the CPU. The scale-out card is generated from
LaunchSettings (strategy: DDP, FSDP2, ZeRO-3; machines, rank, rendezvous address) and applies
to every stage of a pipeline.

Estimate: the memory the stage needs (core/train/estimate.py: weights, adapter and optimizer
state, activations at the chosen length and batch, the LM head's logits) against what the
machine has free is computed with the launch check and shown at once; a run that does not fit
is refused under Start with both numbers. "Estimate time" runs a few real optimizer steps in a
training child (a job: the window stays live) and extrapolates to the run's steps.

Start freezes the config into a new run (`core.train.launcher`) and shows it in the Monitor
tab; from then on the monitor draws that run's frozen config, never this form.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.context import StudioContext
from studio.logic.train_forms import (
    FieldSpec,
    data_files_missing,
    field_errors,
    form_data,
    form_fields,
    newest_dataset,
    split_problem,
)
from studio.pages.train.monitor import STAGE_NAMES, RunMonitor
from studio.run_hub import run_hub
from studio.widgets.common import (
    Banner,
    CodeEdit,
    PageHeader,
    Segmented,
    button,
    chip,
    clear_layout,
    label,
    tool_button,
)
from studio.widgets.forms import ModelForm

if TYPE_CHECKING:
    from core.store.training import RunRecord
    from core.train.launch_checks import Environment

STAGES = ("sft", "opd", "rl")
MODES = (
    ("sft", "Stage 1 · HSA-SFT"),
    ("opd", "Stage 2 · OPD"),
    ("rl", "Stage 3 · HSA-RL"),
    ("pipeline", "Full pipeline"),
)
STAGE_BLURBS = {
    "sft": "Fine-tune on teacher trajectories under the original and augmented harnesses.",
    "opd": "On-policy distillation: reverse KL to the pre-SFT base on general prompts.",
    "rl": "GRPO in a world: the simulated live room (faults on) or your task file with your "
    "harness's own tools; a fresh harness variant per group.",
}
MODEL_FIELDS = {"model": "base", "teacher": "base", "adapter": "adapter"}
FILE_FIELDS = ("data", "tasks")
PIPELINE_SET = ("model", "adapter")
"""Stage fields a pipeline sets itself (hidden from the stage forms in pipeline mode)."""


def _scroll(widget: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(widget)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return area


def _card(title: str) -> tuple[QFrame, QVBoxLayout]:
    card = QFrame()
    card.setObjectName("Card")
    lay = QVBoxLayout(card)
    lay.setContentsMargins(16, 12, 16, 14)
    lay.setSpacing(8)
    if title:
        lay.addWidget(label(title, "SectionTitle"))
    return card, lay


class TrainPage(QWidget):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Page")
        self.ctx = ctx
        self.hub = run_hub(ctx)
        self.env: Environment | None = self.hub.env
        self.config: Any = None
        self.problems: list[str] = []
        self._token = 0
        self._measured: dict[tuple[object, ...], Any] = {}
        """Row lengths per (model, data files and their mtimes, system prompt, max rows):
        measured once with the model's tokenizer (core/train/measure.py)."""
        self._suggested: int | None = None
        self._checked_token = -1
        self._starting = False
        self._ready = False
        self.memory: Any = None
        """The last memory estimate (core/train/estimate.py MemoryEstimate) or None."""
        self._timing = False
        self._timed: str | None = None
        """The config (JSON) the time shown was measured for."""
        from core.train.runs import new_run_id

        self._new_run_id = new_run_id
        self.run_id = new_run_id("sft")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.header = PageHeader(
            "Train", "HSA-SFT, on-policy distillation and HSA-RL, run as child processes"
        )
        self.command_toggle = button("Show command", "code", "", "Show the exact launch command")
        self.command_toggle.setCheckable(True)
        self.start_button = button("Start", "play", "primary", "Freeze this config and start")
        self.header.add(self.command_toggle)
        self.header.add(self.start_button)
        lay.addWidget(self.header)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        lay.addWidget(self.tabs, 1)
        self.tabs.addTab(self._build_configure(), theme.icon("settings"), "Configure")
        monitor_page = QWidget()
        ml = QVBoxLayout(monitor_page)
        ml.setContentsMargins(24, 14, 24, 16)
        self.monitor = RunMonitor(self.hub)
        self.monitor.on_restart = self._show_started
        ml.addWidget(self.monitor)
        self.tabs.addTab(monitor_page, theme.icon("train"), "Monitor")

        self._check_timer = QTimer(self)
        self._check_timer.setSingleShot(True)
        self._check_timer.setInterval(180)
        self._check_timer.timeout.connect(self._check_launch)
        self.mode_picker.changed.connect(self._mode_changed)
        self.start_button.clicked.connect(self.start)
        self.command_toggle.toggled.connect(self._toggle_command)
        for form in (*self.forms.values(), self.launch_form, self.pipeline_form):
            form.changed.connect(self.validate)
        for box in self.include.values():
            box.toggled.connect(lambda _on: self.validate())
        self.hub.envReady.connect(self._env_ready)
        self.hub.runsChanged.connect(self._runs_changed)
        ctx.opened.connect(self._load_models)
        ctx.modelsChanged.connect(self._load_models)
        if ctx.store is not None:
            self._load_models()
        if self.env is not None:
            self._env_ready()
        self._restore()
        self._offer_dataset()
        self.command_toggle.setChecked(
            str(ctx.settings.value("train/show_command", "true")) == "true"
        )
        self._toggle_command(self.command_toggle.isChecked())
        self._mode_changed(self.mode_picker.value())
        if self.hub.attached:
            self._runs_changed()

    # ------------------------------------------------------------------ building

    def _build_configure(self) -> QWidget:
        from core.train.config import STAGE_MODELS as MODELS
        from core.train.config import LaunchSettings, PipelineConfig

        page = QWidget()
        outer = QVBoxLayout(page)
        outer.setContentsMargins(24, 12, 24, 14)
        outer.setSpacing(10)
        top = QHBoxLayout()
        self.mode_picker = Segmented(MODES)
        top.addWidget(self.mode_picker)
        top.addSpacing(12)
        self.blurb = label("", "Muted", wrap=True)
        top.addWidget(self.blurb, 1)
        outer.addLayout(top)

        split = QSplitter(Qt.Orientation.Horizontal)
        self.form_stack = QStackedWidget()
        self.stage_specs: dict[str, list[FieldSpec]] = {}
        self.forms: dict[str, ModelForm] = {}
        suggestions = {name: [] for name in ("model", "teacher", "adapter", "harness")}
        for stage in STAGES:
            specs = form_fields(MODELS[stage], exclude={"launch"})
            self.stage_specs[stage] = specs
            form = ModelForm(
                specs,
                columns=3,
                suggestions={k: v for k, v in suggestions.items() if k in {s.path for s in specs}},
                files=FILE_FIELDS,
            )
            self.forms[stage] = form
            self.form_stack.addWidget(_scroll(form))
        # ---- pipeline panel
        self.pipeline_specs = form_fields(PipelineConfig, exclude={"sft", "opd", "rl"})
        self.pipeline_form = ModelForm(self.pipeline_specs, columns=2, suggestions={"model": []})
        pipe = QWidget()
        pl = QVBoxLayout(pipe)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.setSpacing(12)
        pl.addWidget(self.pipeline_form)
        card, cl = _card("Stages")
        cl.addWidget(
            label(
                "Each stage starts from the previous stage's adapter; OPD's teacher is the base "
                "model. The settings of each stage are those of its own tab.",
                "Muted",
                wrap=True,
            )
        )
        self.include: dict[str, QCheckBox] = {}
        self.stage_summaries: dict[str, Any] = {}
        for stage in STAGES:
            row = QHBoxLayout()
            row.setSpacing(10)
            box = QCheckBox(dict(MODES)[stage])
            box.setChecked(True)
            self.include[stage] = box
            row.addWidget(box)
            summary = label("", "Faint")
            self.stage_summaries[stage] = summary
            row.addWidget(summary, 1)
            edit = button("Edit settings", "settings", "ghost")
            edit.clicked.connect(lambda _c=False, s=stage: self.mode_picker.set_value(s, True))
            row.addWidget(edit)
            cl.addLayout(row)
        pl.addWidget(card)
        pl.addStretch(1)
        self.pipeline_form.layout().takeAt(self.pipeline_form.layout().count() - 1)  # no stretch
        self.form_stack.addWidget(_scroll(pipe))
        split.addWidget(self.form_stack)

        # ---- side column
        side = QWidget()
        sl = QVBoxLayout(side)
        sl.setContentsMargins(0, 0, 4, 0)
        sl.setSpacing(12)
        devices, self.devices_layout = _card("Devices")
        self.devices_body = QVBoxLayout()
        self.devices_body.setSpacing(6)
        self.devices_layout.addLayout(self.devices_body)
        self.devices_body.addWidget(label("Looking for GPUs…", "Muted"))
        self.gpu_boxes: list[QCheckBox] = []
        sl.addWidget(devices)
        self.start_banner = Banner()
        sl.addWidget(self.start_banner)
        check, check_layout = _card("Launch check")
        self.check_text = label("Checking…", "Muted", wrap=True)
        self.check_text.setTextFormat(Qt.TextFormat.RichText)
        self.check_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        check_layout.addWidget(self.check_text)
        sl.addWidget(check)
        estimate, estimate_layout = _card("Estimate")
        self.memory_text = label("Memory: once the configuration is valid", "Muted", wrap=True)
        self.memory_text.setTextFormat(Qt.TextFormat.RichText)
        self.memory_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        estimate_layout.addWidget(self.memory_text)
        time_row = QHBoxLayout()
        self.time_text = label("Time: from a short warm-up of the stage", "Muted", wrap=True)
        time_row.addWidget(self.time_text, 1)
        self.estimate_button = button(
            "Estimate time", "history", "", "Run a few real training steps in a training child "
            "and extrapolate to the run's steps"
        )  # fmt: skip
        self.estimate_button.clicked.connect(self.estimate_time)
        time_row.addWidget(self.estimate_button)
        estimate_layout.addLayout(time_row)
        sl.addWidget(estimate)
        self.command_card, command_layout = _card("")
        head = QHBoxLayout()
        head.addWidget(label("Command", "SectionTitle"))
        head.addStretch(1)
        self.copy_button = tool_button("copy", "Copy the command")
        self.copy_button.clicked.connect(self.copy_command)
        head.addWidget(self.copy_button)
        command_layout.addLayout(head)
        self.command_view = CodeEdit(read_only=True)
        self.command_view.setLineWrapMode(CodeEdit.LineWrapMode.WidgetWidth)
        self.command_view.setMinimumHeight(150)
        command_layout.addWidget(self.command_view, 1)
        sl.addWidget(self.command_card, 1)
        self.launch_specs = form_fields(
            LaunchSettings, prefix="launch", exclude={"launch.device", "launch.num_gpus"}
        )
        self.launch_form = ModelForm(self.launch_specs, columns=2)
        self.launch_form.layout().takeAt(self.launch_form.layout().count() - 1)
        sl.addWidget(self.launch_form)
        sl.addStretch(0)
        side_scroll = _scroll(side)
        side_scroll.setMinimumWidth(380)
        split.addWidget(side_scroll)
        split.setStretchFactor(0, 1)
        split.setSizes([820, 420])
        outer.addWidget(split, 1)
        return page

    # ------------------------------------------------------------------ models, devices

    def _load_models(self) -> None:
        def work(store: Any) -> tuple[list[str], list[str]]:
            from core.models import group_models, list_models

            grouped = group_models(list_models(store))  # an adapter's merged copy: not a base
            bases = [r.name for r in grouped.models]
            adapters = [a.name for group in grouped.adapters.values() for a in group]
            return bases, adapters

        self.ctx.run_store(work, on_done=self._models_loaded, on_error=lambda _e: None)

    def _models_loaded(self, result: tuple[list[str], list[str]]) -> None:
        bases, adapters = result
        for stage, form in self.forms.items():
            del stage
            for path, kind in MODEL_FIELDS.items():
                if path in form.specs:
                    form.set_suggestions(path, bases if kind == "base" else ["", *adapters])
            if "harness" in form.specs:
                form.set_suggestions("harness", ["", *self.ctx.harness_names])
            if bases and not str(form.value("model")).strip():
                form.set_values({"model": bases[0]})
        self.pipeline_form.set_suggestions("model", bases)
        if bases and not str(self.pipeline_form.value("model")).strip():
            self.pipeline_form.set_values({"model": bases[0]})

    def _env_ready(self) -> None:
        env = self.hub.env
        if env is None:
            return
        self.env = env
        clear_layout(self.devices_body)
        self.gpu_boxes = []
        if env.gpus == 0:
            row = QHBoxLayout()
            row.setSpacing(8)
            row.addWidget(label("CPU", "FieldLabel"))
            row.addWidget(chip(f"{env.cpu_count} cores", "neutral"))
            row.addWidget(chip("bf16" if env.cpu_bf16 else "fp32", "neutral"))
            row.addStretch(1)
            self.devices_body.addLayout(row)
            self.devices_body.addWidget(
                label("No GPU found: the stages run on the CPU.", "Faint", wrap=True)
            )
        else:
            for index, name in enumerate(env.gpu_names):
                box = QCheckBox(f"GPU {index} · {name}")
                box.setChecked(True)
                box.toggled.connect(lambda _on: self.validate())
                self.gpu_boxes.append(box)
                self.devices_body.addWidget(box)
            self.devices_body.addWidget(
                label(
                    "Unchecked GPUs are hidden from the run; none checked runs on the CPU.",
                    "Faint",
                    wrap=True,
                )
            )
        self.validate()

    def devices(self) -> tuple[dict[str, Any], list[int] | None]:
        """(launch settings from the device choice, CUDA_VISIBLE_DEVICES list or None)."""
        if not self.gpu_boxes:
            return {}, None
        chosen = [i for i, box in enumerate(self.gpu_boxes) if box.isChecked()]
        if not chosen:
            return {"device": "cpu", "num_gpus": 0}, None
        if len(chosen) == len(self.gpu_boxes):
            return {}, None
        return {"num_gpus": len(chosen)}, chosen

    # ------------------------------------------------------------------ mode, state

    @property
    def mode(self) -> str:
        return self.mode_picker.value()

    def _mode_changed(self, mode: str) -> None:
        index = [m for m, _t in MODES].index(mode)
        self.form_stack.setCurrentIndex(index)
        self.blurb.setText(
            STAGE_BLURBS.get(mode, "SFT → OPD → RL, each stage continuing the previous adapter.")
        )
        self.start_button.setText("Start pipeline" if mode == "pipeline" else "Start")
        self.run_id = self._new_run_id(mode if mode != "pipeline" else "sft")
        self.ctx.settings.setValue("train/mode", mode)
        self.validate()

    def _restore(self) -> None:
        for stage, form in [*self.forms.items(), ("pipeline", self.pipeline_form)]:
            text = self.ctx.settings.value(f"train/form/{stage}", "")
            if not text:
                continue
            try:
                values = json.loads(str(text))
            except ValueError:
                continue
            if isinstance(values, dict):
                form.set_values({k: v for k, v in values.items() if k in form.specs})
        mode = str(self.ctx.settings.value("train/mode", "sft") or "sft")
        if mode in dict(MODES):
            self.mode_picker.set_value(mode)

    def _offer_dataset(self) -> None:
        """Point the SFT data field at the workspace's newest dataset when it names none that
        exists (the config's placeholder default, or a file since deleted), and open its
        Browse dialog in the datasets folder: the data the Data page just made is the data
        an operator means to train on."""
        folder = self.ctx.home / "datasets"
        for form in self.forms.values():
            form.set_file_folder(str(folder))
        form = self.forms.get("sft")
        if form is None or "data" not in form.specs:
            return
        if not data_files_missing(str(form.values().get("data") or ""), self.ctx.home):
            return
        newest = newest_dataset(folder)
        if newest is not None:
            form.set_values({"data": str(newest)})
            self.validate()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._offer_dataset()

    def _remember(self) -> None:
        for stage, form in [*self.forms.items(), ("pipeline", self.pipeline_form)]:
            self.ctx.settings.setValue(f"train/form/{stage}", json.dumps(form.values()))

    def _toggle_command(self, on: bool) -> None:
        self.command_card.setVisible(on)
        self.command_toggle.setText("Hide command" if on else "Show command")
        self.ctx.settings.setValue("train/show_command", "true" if on else "false")

    # ------------------------------------------------------------------ validation

    def _stage_data(self, stage: str, *, in_pipeline: bool) -> tuple[dict[str, Any], list[str]]:
        form = self.forms[stage]
        values = form.values()
        if in_pipeline:
            values = {k: v for k, v in values.items() if k not in PIPELINE_SET}
        data, missing = form_data(self.stage_specs[stage], values)
        launch, launch_missing = form_data(self.launch_specs, self.launch_form.values())
        device_settings, _devices = self.devices()
        data["launch"] = {**launch.get("launch", {}), **device_settings}
        return data, missing + launch_missing

    def build(self) -> tuple[Any, dict[int, dict[str, str]], list[str]]:
        """(config or None, {id(form): {path: message}}, problems naming no form field)."""
        from core.train.config import ConfigError, parse_pipeline, parse_stage

        mode = self.mode
        targets = self._targets(mode)
        found: dict[int, dict[str, str]] = {id(form): {} for form, _s, _p in targets}
        problems: list[tuple[str, str]] = []
        if mode == "pipeline":
            data: dict[str, Any] = {}
            pipe, missing = form_data(self.pipeline_specs, self.pipeline_form.values())
            data.update(pipe)
            problems += [(f"pipeline.{p}", "required") for p in missing]
            for stage in STAGES:
                if self.include[stage].isChecked():
                    stage_data, stage_missing = self._stage_data(stage, in_pipeline=True)
                    data[stage] = stage_data
                    problems += [(f"pipeline.{stage}.{p}", "required") for p in stage_missing]
            parse: Any = lambda: parse_pipeline(data)  # noqa: E731
        else:
            data, missing = self._stage_data(mode, in_pipeline=False)
            problems += [(f"{mode}.{p}", "required") for p in missing]
            parse = lambda: parse_stage(data, mode)  # noqa: E731
        config = None
        if not problems:
            try:
                config = parse()
            except ConfigError as exc:
                problems = list(exc.problems)
        other = self._dispatch(problems, targets, found)
        return config, found, other

    def _targets(self, mode: str) -> list[tuple[ModelForm, list[FieldSpec], str]]:
        if mode == "pipeline":
            out = [(self.pipeline_form, self.pipeline_specs, "pipeline")]
            for stage in STAGES:
                out.append((self.forms[stage], self.stage_specs[stage], f"pipeline.{stage}"))
                out.append((self.launch_form, self.launch_specs, f"pipeline.{stage}"))
            return out
        return [
            (self.forms[mode], self.stage_specs[mode], mode),
            (self.launch_form, self.launch_specs, mode),
        ]

    @staticmethod
    def _dispatch(
        problems: list[tuple[str, str]],
        targets: list[tuple[ModelForm, list[FieldSpec], str]],
        found: dict[int, dict[str, str]],
    ) -> list[str]:
        """Put each problem under the field it names; the rest come back as lines."""
        other: list[str] = []
        for where, message in problems:
            for form, specs, prefix in targets:
                if prefix != where and not where.startswith(prefix + ".") and where != "":
                    continue
                hits, _rest = field_errors([(where, message)], specs, prefix=prefix)
                if hits:
                    for path, text in hits.items():
                        found.setdefault(id(form), {}).setdefault(path, text)
                    break
            else:
                other.append(f"{where}: {message}" if where else message)
        return other

    def validate(self) -> None:
        """Check the form now (pydantic) and schedule the machine checks (worker)."""
        config, found, other = self.build()
        all_forms = [*self.forms.values(), self.launch_form, self.pipeline_form]
        for form in all_forms:
            form.set_errors(found.get(id(form), {}))
        pipeline = self.mode == "pipeline"
        for stage in STAGES:
            self.forms[stage].set_enabled_fields(PIPELINE_SET, not pipeline)
        self._update_summaries()
        self.config = config
        self._form_problems = other + [
            message if message.startswith(path.rsplit(".", 1)[-1] + " ") else f"{path}: {message}"
            for errors in found.values()
            for path, message in errors.items()
        ]
        self._token += 1
        if config is None:  # no command for a config that does not validate
            self.command_view.set_text_keep("# the command appears once the configuration is valid")
            self._render_memory(None)
        self._render_check(pending=config is not None)
        if config is not None:
            self._check_timer.start()

    def _update_summaries(self) -> None:
        for stage in STAGES:
            values = self.forms[stage].values()
            bits = []
            if values.get("max_steps"):
                bits.append(f"{values['max_steps']} steps")
            else:
                bits.append(f"{values.get('epochs')} epoch(s)")
            bits.append(f"lr {values.get('learning_rate')}")
            if stage == "sft" and values.get("data"):
                bits.append(str(values["data"]))
            self.stage_summaries[stage].setText(" · ".join(bits))

    def _check_launch(self) -> None:
        config, env = self.config, self.env
        if config is None or env is None:
            return
        token = self._token
        home = self.ctx.home
        run_id = self.run_id
        _settings, devices = self.devices()

        def work() -> tuple[list[str], str, str]:
            from core.train.config import PipelineConfig
            from core.train.launch_checks import (
                batch_plan,
                check_launch,
                check_pipeline,
                memory_problems,
                processes_per_machine,
                uses_gpu,
            )
            from core.train.launcher import command_preview

            if isinstance(config, PipelineConfig):
                problems = check_pipeline(config, env)
                stages = config.stages()
                first = stages[0] if stages else None
            else:
                problems = check_launch(config, env)
                first = config
            preview = command_preview(config, env, home=home, run_id=run_id, devices=devices)
            suggestion: int | None = None
            notes: list[str] = []
            memory: Any = None
            if not problems and not isinstance(config, PipelineConfig):
                measured = self._measure(config)
                if isinstance(measured, str):
                    problems = [*problems, f"{config.stage}.data: {measured}"]
                elif measured is not None:
                    refusals, notes = measured.problems(config.max_length)  # type: ignore[attr-defined]
                    problems = [*problems, *(f"{config.stage}.{r}" for r in refusals)]
                    suggestion = measured.suggested_max_length()
                memory = self._memory(config, env, measured)
                if memory is not None:
                    problems = [*problems, *memory_problems(memory, prefix=config.stage)]
            plan_text = ""
            if first is not None:
                launch = first.launch
                per = processes_per_machine(launch, env)
                where = "GPU" if uses_gpu(launch, env) else "CPU"
                machines = f" × {launch.num_machines} machines" if launch.num_machines > 1 else ""
                try:
                    plan = batch_plan(first, env)
                    plan_text = (
                        f"{per} process{'es' if per > 1 else ''} on the {where}{machines} · "
                        f"{plan.global_batch} row{'s' if plan.global_batch > 1 else ''} per "
                        f"step ({plan.per_device} per device × "
                        f"{plan.processes} × {plan.accumulation} accumulation)"
                    )
                except Exception:  # reported by check_launch
                    plan_text = ""
            if notes:
                plan_text = " · ".join([plan_text, *notes]) if plan_text else " · ".join(notes)
            return problems, preview, plan_text, suggestion, memory

        def done(result: tuple[list[str], str, str, int | None, Any]) -> None:
            if token != self._token:
                return
            problems, preview, plan_text, suggestion, memory = result
            if suggestion is not None and self._follow_suggestion(suggestion):
                return  # the form changed: validated and checked again
            self._checked_token = token
            self.problems = problems
            found: dict[int, dict[str, str]] = {}
            targets = self._targets(self.mode)
            other = self._dispatch([split_problem(p) for p in problems], targets, found)
            for form in [*self.forms.values(), self.launch_form, self.pipeline_form]:
                merged = {**found.get(id(form), {}), **form.errors}
                form.set_errors(merged)
            del other
            self.command_view.set_text_keep(preview)
            self._render_check(pending=False, plan=plan_text)
            self._render_memory(memory)

        def fail(exc: BaseException) -> None:
            if token == self._token:
                self.problems = [str(exc)]
                self._render_check(pending=False)

        self.ctx.jobs.run(work, on_done=done, on_error=fail, label="")

    def _measure(self, config: Any) -> Any:
        """The SFT rows' token lengths (RowLengths), a message when they cannot be measured,
        or None for other stages. Runs in the job worker; cached per data and model."""
        from core.train.config import SftConfig
        from core.train.measure import MeasureError, measure_rows
        from core.train.runs import resolve_model

        store = self.ctx.store
        if not isinstance(config, SftConfig) or store is None or not config.data:
            return None
        try:
            folder, _name = resolve_model(store, str(config.model), field="model")
        except Exception:
            return None
        if not Path(folder).is_dir():
            return None  # a hub id: the stage measures it
        stamps = tuple((str(p), Path(p).stat().st_mtime_ns if Path(p).exists() else 0)
                       for p in config.data)  # fmt: skip
        key = (folder, stamps, config.system_prompt, config.max_rows)
        if key not in self._measured:
            try:
                self._measured[key] = measure_rows(folder, config.data,
                                                   system_prompt=config.system_prompt,
                                                   max_rows=config.max_rows)  # fmt: skip
            except MeasureError as exc:
                return str(exc)
        return self._measured[key]

    def _model_folder(self, config: Any) -> Path | None:
        """The local folder of the config's model, or None (a hub id, no store, unknown)."""
        from core.train.runs import resolve_model

        store = self.ctx.store
        if store is None or not getattr(config, "model", None):
            return None
        try:
            folder, _name = resolve_model(store, str(config.model), field="model")
        except Exception:
            return None
        return Path(folder) if Path(folder).is_dir() else None

    def _memory(self, config: Any, env: Environment, measured: Any) -> Any:
        """The memory estimate (MemoryEstimate) of a stage config, or None where the model is
        not a local folder. Runs in the job worker: reads the model's config.json."""
        from core.train.estimate import EstimateError
        from core.train.launch_checks import stage_memory
        from core.train.measure import RowLengths

        folder = self._model_folder(config)
        if folder is None:
            return None
        lengths = measured if isinstance(measured, RowLengths) else None
        try:
            return stage_memory(config, env, folder, lengths=lengths)
        except EstimateError:
            return None

    def _render_memory(self, memory: Any) -> None:
        """The Estimate card: the total against what the machine has, and the parts."""
        self.memory = memory
        if memory is None:
            text = (
                "Memory: estimated per stage, for a model in a local folder"
                if self.mode == "pipeline" or self.config is not None
                else "Memory: once the configuration is valid"
            )
            self.memory_text.setText(_html(text))
            return
        from core.train.estimate import gib

        color = theme.color("text-muted" if memory.fits else "danger")
        parts = " · ".join(f"{name} {gib(size)}" for name, size in memory.parts.items())
        self.memory_text.setText(
            f"<span style='color:{color}'>Memory: {_html(memory.summary())}</span><br>"
            f"<span style='color:{theme.color('text-faint')}'>{_html(parts)} GiB "
            f"({memory.rows} × {memory.sequence} tokens, {memory.dtype})</span>"
        )
        if self._timed is not None and self._timed != self._config_key():
            self.time_text.setText("Time: the configuration changed since the last warm-up")

    def _config_key(self) -> str | None:
        config = self.config
        return None if config is None else json.dumps(config.model_dump(mode="json"))

    def estimate_time(self) -> None:
        """Run the stage for a few steps in a training child (a job; the window stays live)
        and show the time per step and for the whole run."""
        from core.train.config import PipelineConfig

        config, env = self.config, self.env
        if config is None or env is None or self._timing:
            return
        if isinstance(config, PipelineConfig):
            self.time_text.setText("Time: estimated per stage (open a stage's tab)")
            return
        key = self._config_key()
        self._timing = True
        self.estimate_button.setEnabled(False)
        self.time_text.setText("Time: running a few training steps…")

        def work() -> Any:
            from core.train.estimate import warmup

            folder = self._model_folder(config)
            if folder is None:
                raise ValueError("the model is not a local folder: nothing to warm up")
            return warmup(config.model_copy(update={"model": str(folder)}), env, steps=3)

        def done(result: Any) -> None:
            from core.durations import format_duration
            from core.train.estimate import gib

            self._timing = False
            self._timed = key
            self.estimate_button.setEnabled(True)
            whole = (
                f", ~{format_duration(result.run_s)} for {result.total_steps} "
                f"step{'s' if result.total_steps != 1 else ''}"
                if result.run_s is not None
                else " (the run's steps are known once the stage loads its data)"
            )
            self.time_text.setText(
                f"Time: {result.step_s:.1f} s per step{whole} (measured over {result.steps} "
                f"steps; peak {gib(result.peak_rss_bytes)} GiB)"
            )

        def fail(exc: BaseException) -> None:
            self._timing = False
            self.estimate_button.setEnabled(True)
            self.time_text.setText(f"Time: {exc}")

        self.ctx.jobs.run(work, on_done=done, on_error=fail, label="Estimating training time")

    def _follow_suggestion(self, suggestion: int) -> bool:
        """Set the SFT form's max_length to the data's longest row (rounded up) while the
        operator has not typed one: the default, or an earlier suggestion, follows the data.
        True when the form changed."""
        form = self.forms.get("sft")
        if form is None or self.mode != "sft":
            return False
        current = form.values().get("max_length")
        from core.train.config import STAGE_MODELS

        default = STAGE_MODELS["sft"].model_fields["max_length"].default
        try:
            value = int(str(current))
        except ValueError:
            return False
        if value == suggestion or value not in (default, self._suggested):
            return False
        self._suggested = suggestion
        form.set_values({"max_length": suggestion})
        self.validate()
        return True

    def _render_check(self, *, pending: bool, plan: str = "") -> None:
        lines = list(self._form_problems)
        if not pending and self.config is not None:
            lines += [p for p in self.problems if p not in lines]
        self._ready = self.config is not None and not pending and not self.problems and not lines
        self._update_start()
        if pending:
            self.check_text.setText(
                f"<span style='color:{theme.color('text-muted')}'>Checking "
                "this configuration on this machine…</span>"
            )
            return
        if self.config is None and not lines:
            return
        if lines:
            ok = theme.color("danger")
            items = "".join(f"<li>{_html(line)}</li>" for line in lines[:12])
            more = f"<li>… {len(lines) - 12} more</li>" if len(lines) > 12 else ""
            count = f"{len(lines)} problem{'s' if len(lines) > 1 else ''} before this can start"
            note = (
                f"<span style='color:{theme.color('text-faint')}'>The checks against this "
                "machine (files, devices, batch) run once these are fixed.</span>"
                if self.config is None
                else ""
            )
            self.check_text.setText(
                f"<span style='color:{ok}; font-weight:600'>{count}</span>"
                f"<ul style='margin-left:-18px'>{items}{more}</ul>{note}"
            )
            return
        good = theme.color("success")
        self.check_text.setText(
            f"<span style='color:{good}; font-weight:600'>Ready to start</span><br>"
            f"<span style='color:{theme.color('text-muted')}'>{_html(plan)}</span>"
        )

    # ------------------------------------------------------------------ actions

    def _update_start(self) -> None:
        """Start is for a valid config while nothing trains: a second run would share the
        machine's cores or GPU with the first and slow both (the Monitor tab stops one)."""
        live = self.hub.live_runs()
        self.start_button.setEnabled(
            self._ready and not self._starting and self.env is not None and not live
        )
        self.start_button.setToolTip(
            f"{live[0].id} is training: stop it on the Monitor tab, or wait for it"
            if live
            else "Freeze this config and start"
        )

    def copy_command(self) -> None:
        QGuiApplication.clipboard().setText(self.command_view.toPlainText())
        self.ctx.message.emit("info", "Command copied")

    def start(self) -> None:
        """Start the configured stage or pipeline (validated again right before)."""
        self.validate()
        if self.config is None or self.env is None or self._starting:
            return
        config, env = self.config, self.env
        _settings, devices = self.devices()
        self._starting = True
        self.start_button.setEnabled(False)
        self.start_banner.hide()
        self._remember()

        def done(run: RunRecord) -> None:
            self._starting = False
            self.run_id = self._new_run_id(self.mode if self.mode != "pipeline" else "sft")
            self.validate()
            self._show_started(run)

        def fail(exc: BaseException) -> None:
            self._starting = False
            lines = exc.lines() if hasattr(exc, "lines") else [str(exc)]
            self.start_banner.show_message("error", "Not started: " + "\n".join(lines))
            self.run_id = self._new_run_id(self.mode if self.mode != "pipeline" else "sft")
            self.validate()

        run_id = self.run_id if self.mode != "pipeline" else None
        self.hub.launch(config, env, devices=devices, run_id=run_id, on_done=done, on_error=fail)

    def _show_started(self, run: RunRecord) -> None:
        name = STAGE_NAMES.get(run.stage, run.stage)
        self.ctx.message.emit("success", f"{name} started: {run.id}")
        self.monitor.show_run(run.id)
        self.tabs.setCurrentIndex(1)

    def _runs_changed(self) -> None:
        """On opening: show the newest running run (or the newest run) in the monitor."""
        self._update_start()
        ids = {r.id for r in self.hub.runs}
        if self.monitor.run_id in ids:
            return
        if not self.hub.runs:
            self.monitor.show_run(None)
            return
        running = [r for r in self.hub.runs if r.status == "running" and r.parent is None]
        target = running[0] if running else self.hub.runs[0]
        self.monitor.show_run(target.id)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
