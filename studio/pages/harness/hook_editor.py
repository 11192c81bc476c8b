"""Hook editor: event, kind, matcher, kind-specific parameters, reminder text, and a "test this
hook" box that runs the hook through the agent loop's own `run_hook` on a sample."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core.harness import Hook, HookEvent, HookKind, Problem
from core.harness.hook_params import DEFAULT_NUMBER_PATTERN
from studio.logic.components import hook_from_fields
from studio.logic.hooktest import HookSample, SampleOutcome, default_sample, run_sample_async
from studio.pages.harness.editor_base import ComponentEditor
from studio.session import EditSession
from studio.widgets.common import (
    CodeEdit,
    Field,
    FitStack,
    button,
    chip,
    label,
    repolish,
    scrolling,
)

KIND_HELP = {
    HookKind.REQUIRE_REPLY_SKILL: "Blocks a reply unless a reply skill was loaded in this request.",
    HookKind.VALIDATE_TOOL_ARGS: "Matched tools' arguments must also satisfy an extra JSON Schema.",
    HookKind.FORBIDDEN_CLAIMS: (
        "Blocks when a pattern (case-insensitive regex) occurs in the reply or viewer message."
    ),
    HookKind.FACT_CHECK: "Every number in the reply must come from a tool result or the viewer.",
    HookKind.REPLY_FORMAT: "Length limits, no Markdown, forbidden patterns.",
    HookKind.PYTHON: (
        "Your own check(event) -> {decision, reason}, run in a child process with a timeout."
    ),
}
EVENT_LABELS = {
    HookEvent.ON_INPUT: "on input",
    HookEvent.BEFORE_TOOL: "before tool call",
    HookEvent.AFTER_TOOL: "after tool result",
    HookEvent.BEFORE_REPLY: "before reply",
}


def _lines(text: str) -> list[str]:
    return [line for line in (x.strip() for x in text.splitlines()) if line]


class HookEditor(ComponentEditor):
    attr = "hooks"
    noun = "Hook"
    icon_name = "hook"

    def __init__(self, session: EditSession, parent: QWidget | None = None) -> None:
        super().__init__(session, parent)
        split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        form = QGridLayout(left)
        form.setContentsMargins(0, 0, 8, 0)
        form.setHorizontalSpacing(14)
        form.setVerticalSpacing(12)
        self.name = QLineEdit()
        self.event = QComboBox()
        for ev in HookEvent:
            self.event.addItem(EVENT_LABELS[ev], ev.value)
        self.kind = QComboBox()
        for k in HookKind:
            self.kind.addItem(k.value.replace("_", " "), k.value)
        self.matcher = QLineEdit()
        self.matcher.setPlaceholderText("* or a regex over tool names")
        self.timeout = QDoubleSpinBox()
        self.timeout.setRange(0.1, 300)
        self.timeout.setSuffix(" s")
        self.timeout.setDecimals(1)
        self.enabled = QCheckBox("Enabled")
        self.critical = QCheckBox("Task-critical")
        self.critical.setToolTip("Off: HSA may switch this hook off without changing the task.")
        self.fields["name"] = Field("Name", self.name)
        self.fields["event"] = Field("Event", self.event)
        self.fields["kind"] = Field("Kind", self.kind)
        self.fields["matcher"] = Field(
            "Matcher", self.matcher, "Tool events only: which tools it checks."
        )
        self.fields["timeout"] = Field("Timeout", self.timeout)
        form.addWidget(self.fields["name"], 0, 0)
        checks = QHBoxLayout()
        checks.setSpacing(18)
        checks.addWidget(self.enabled)
        checks.addWidget(self.critical)
        checks.addStretch(1)
        form.addLayout(checks, 0, 1, Qt.AlignmentFlag.AlignBottom)
        form.addWidget(self.fields["event"], 1, 0)
        form.addWidget(self.fields["kind"], 1, 1)
        form.addWidget(self.fields["matcher"], 2, 0)
        form.addWidget(self.fields["timeout"], 2, 1)
        self.kind_help = label("", "FieldHint", wrap=True)
        form.addWidget(self.kind_help, 3, 0, 1, 2)
        # kind-specific parameters
        self.params_stack = FitStack()
        self._build_params()
        self.fields["params"] = Field("Parameters", self.params_stack)
        form.addWidget(self.fields["params"], 4, 0, 1, 2)
        self.reminder = QPlainTextEdit()
        self.reminder.setFixedHeight(76)
        self.fields["reminder"] = Field(
            "Reminder",
            self.reminder,
            "Shown to the model when the hook blocks; ${reason} is the check's reason.",
        )
        form.addWidget(self.fields["reminder"], 5, 0, 1, 2)
        form.setRowStretch(6, 1)
        form.setColumnStretch(0, 1)
        form.setColumnStretch(1, 1)
        split.addWidget(scrolling(left))
        split.addWidget(self._build_tester())
        split.setSizes([560, 420])
        self.body.addWidget(split, 1)

        self.name.textEdited.connect(lambda _t: self.edited("name"))
        self.event.currentIndexChanged.connect(lambda _i: self.edited("event"))
        self.event.currentIndexChanged.connect(lambda _i: self._matcher_applies())
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.matcher.textEdited.connect(lambda _t: self.edited("matcher"))
        self.timeout.valueChanged.connect(lambda _v: self.edited("timeout"))
        self.enabled.toggled.connect(lambda _v: self.edited("enabled"))
        self.critical.toggled.connect(lambda _v: self.edited("critical"))
        self.reminder.textChanged.connect(lambda: self.edited("reminder"))

    # ------------------------------------------------------------------ parameter forms

    def _build_params(self) -> None:
        self.param_pages: dict[str, QWidget] = {}
        none = label("This kind takes no parameters.", "Muted")
        self.param_pages[HookKind.REQUIRE_REPLY_SKILL.value] = none

        self.p_schema = CodeEdit()
        self.p_schema.setFixedHeight(150)
        self.param_pages[HookKind.VALIDATE_TOOL_ARGS.value] = self._wrap(
            "Extra JSON Schema for the arguments", self.p_schema
        )

        self.p_patterns = CodeEdit()
        self.p_patterns.setFixedHeight(150)
        self.param_pages[HookKind.FORBIDDEN_CLAIMS.value] = self._wrap(
            "Patterns, one regex per line", self.p_patterns
        )

        fc = QWidget()
        fl = QGridLayout(fc)
        fl.setContentsMargins(0, 0, 0, 0)
        self.p_number = QLineEdit()
        self.p_number.setPlaceholderText(DEFAULT_NUMBER_PATTERN)
        self.p_ignore = QDoubleSpinBox()
        self.p_ignore.setRange(0, 1e9)
        fl.addWidget(label("Number pattern", "FieldLabel"), 0, 0)
        fl.addWidget(self.p_number, 1, 0)
        fl.addWidget(label("Ignore numbers below", "FieldLabel"), 0, 1)
        fl.addWidget(self.p_ignore, 1, 1)
        fl.setColumnStretch(0, 2)
        self.param_pages[HookKind.FACT_CHECK.value] = fc

        rf = QWidget()
        rl = QGridLayout(rf)
        rl.setContentsMargins(0, 0, 0, 0)
        self.p_max = QSpinBox()
        self.p_max.setRange(0, 100000)
        self.p_max.setSpecialValueText("no limit")
        self.p_min = QSpinBox()
        self.p_min.setRange(0, 100000)
        self.p_min.setSpecialValueText("no minimum")
        self.p_markdown = QCheckBox("Forbid Markdown")
        self.p_forbid = CodeEdit()
        self.p_forbid.setFixedHeight(80)
        rl.addWidget(label("Max characters", "FieldLabel"), 0, 0)
        rl.addWidget(label("Min characters", "FieldLabel"), 0, 1)
        rl.addWidget(self.p_max, 1, 0)
        rl.addWidget(self.p_min, 1, 1)
        rl.addWidget(self.p_markdown, 1, 2)
        rl.addWidget(label("Forbidden patterns, one regex per line", "FieldLabel"), 2, 0, 1, 3)
        rl.addWidget(self.p_forbid, 3, 0, 1, 3)
        self.param_pages[HookKind.REPLY_FORMAT.value] = rf

        py = QWidget()
        pyl = QVBoxLayout(py)
        pyl.setContentsMargins(0, 0, 0, 0)
        self.p_source = CodeEdit()
        self.p_source.setFixedHeight(170)
        self.p_pyparams = CodeEdit()
        self.p_pyparams.setFixedHeight(60)
        pyl.addWidget(label('Source: def check(event) -> {"decision", "reason"}', "FieldLabel"))
        pyl.addWidget(self.p_source)
        pyl.addWidget(label("Params (JSON object)", "FieldLabel"))
        pyl.addWidget(self.p_pyparams)
        self.param_pages[HookKind.PYTHON.value] = py

        for page in self.param_pages.values():
            self.params_stack.addWidget(page)
        for w in (self.p_schema, self.p_patterns, self.p_forbid, self.p_source, self.p_pyparams):
            w.textChanged.connect(lambda: self.edited("params"))
        self.p_number.textEdited.connect(lambda _t: self.edited("params"))
        self.p_ignore.valueChanged.connect(lambda _v: self.edited("params"))
        self.p_max.valueChanged.connect(lambda _v: self.edited("params"))
        self.p_min.valueChanged.connect(lambda _v: self.edited("params"))
        self.p_markdown.toggled.connect(lambda _v: self.edited("params"))

    @staticmethod
    def _wrap(title: str, widget: QWidget) -> QWidget:
        w = QWidget()
        lay = QVBoxLayout(w)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(label(title, "FieldHint"))
        lay.addWidget(widget)
        return w

    def _kind_changed(self) -> None:
        kind = self.kind.currentData()
        self.params_stack.setCurrentWidget(self.param_pages[kind])
        self.kind_help.setText(KIND_HELP[HookKind(kind)])
        self.edited("kind")

    def _fill_params(self, kind: HookKind, params: dict[str, Any], source: str | None) -> None:
        self.params_stack.setCurrentWidget(self.param_pages[kind.value])
        self.kind_help.setText(KIND_HELP[kind])
        self.p_schema.setPlainText(
            json.dumps(params.get("schema", {}), indent=2)
            if kind is HookKind.VALIDATE_TOOL_ARGS
            else "{}"
        )
        self.p_patterns.setPlainText(
            "\n".join(params.get("patterns", [])) if kind is HookKind.FORBIDDEN_CLAIMS else ""
        )
        self.p_number.setText(
            params.get("number_pattern", "") if kind is HookKind.FACT_CHECK else ""
        )
        self.p_ignore.setValue(
            float(params.get("ignore_below", 0)) if kind is HookKind.FACT_CHECK else 0.0
        )
        rf = kind is HookKind.REPLY_FORMAT
        self.p_max.setValue(int(params.get("max_chars") or 0) if rf else 0)
        self.p_min.setValue(int(params.get("min_chars") or 0) if rf else 0)
        self.p_markdown.setChecked(bool(params.get("forbid_markdown")) if rf else False)
        self.p_forbid.setPlainText("\n".join(params.get("forbid_patterns", [])) if rf else "")
        self.p_source.setPlainText(
            source or 'def check(event):\n    return {"decision": "allow", "reason": ""}\n'
        )
        self.p_pyparams.setPlainText(
            json.dumps(params, indent=2) if kind is HookKind.PYTHON else "{}"
        )

    def _params(self, kind: HookKind) -> tuple[dict[str, Any] | None, str | None, list[Problem]]:
        """(params, python source, problems) from the kind's form."""
        file = "hooks/hook.yaml"
        if kind is HookKind.REQUIRE_REPLY_SKILL:
            return {}, None, []
        if kind is HookKind.VALIDATE_TOOL_ARGS:
            try:
                schema = json.loads(self.p_schema.toPlainText() or "{}")
            except ValueError as exc:
                return None, None, [Problem(file, "params.schema", f"not valid JSON: {exc}")]
            return {"schema": schema}, None, []
        if kind is HookKind.FORBIDDEN_CLAIMS:
            return {"patterns": _lines(self.p_patterns.toPlainText())}, None, []
        if kind is HookKind.FACT_CHECK:
            out: dict[str, Any] = {}
            if self.p_number.text().strip():
                out["number_pattern"] = self.p_number.text().strip()
            if self.p_ignore.value():
                v = self.p_ignore.value()
                out["ignore_below"] = int(v) if float(v).is_integer() else v
            return out, None, []
        if kind is HookKind.REPLY_FORMAT:
            out = {}
            if self.p_max.value():
                out["max_chars"] = self.p_max.value()
            if self.p_min.value():
                out["min_chars"] = self.p_min.value()
            if self.p_markdown.isChecked():
                out["forbid_markdown"] = True
            patterns = _lines(self.p_forbid.toPlainText())
            if patterns:
                out["forbid_patterns"] = patterns
            return out, None, []
        try:
            params = json.loads(self.p_pyparams.toPlainText() or "{}")
        except ValueError as exc:
            return None, None, [Problem(file, "params", f"not valid JSON: {exc}")]
        if not isinstance(params, dict):
            return None, None, [Problem(file, "params", "must be a JSON object")]
        return params, self.p_source.toPlainText(), []

    # ------------------------------------------------------------------ tester

    def _build_tester(self) -> QWidget:
        card = QFrame()
        card.setObjectName("Card")
        lay = QVBoxLayout(card)
        lay.setContentsMargins(16, 14, 16, 14)
        lay.setSpacing(8)
        head = QHBoxLayout()
        head.addWidget(label("Test this hook", "SectionTitle"))
        head.addStretch(1)
        self.sample_reset = button(
            "Example", "sparkles", "ghost", "Fill in a sample that exercises this hook"
        )
        self.sample_reset.clicked.connect(self._reset_sample)
        head.addWidget(self.sample_reset)
        lay.addLayout(head)
        lay.addWidget(
            label(
                "Runs the hook exactly as the agent loop would, on this sample.",
                "FieldHint",
                wrap=True,
            )
        )
        self.t_viewer = QLineEdit()
        self.t_reply = QPlainTextEdit()
        self.t_reply.setFixedHeight(70)
        self.t_tool = QComboBox()
        self.t_tool.setEditable(True)
        self.t_args = CodeEdit()
        self.t_args.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.t_args.setFixedHeight(48)
        self.t_result = CodeEdit()
        self.t_result.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.t_result.setFixedHeight(48)
        self.t_results = CodeEdit()
        self.t_results.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.t_results.setFixedHeight(60)
        self.t_skills = QLineEdit()
        self.t_skills.setPlaceholderText("skills loaded so far, comma-separated")
        self.sample_fields = {
            "viewer": Field("Viewer message", self.t_viewer),
            "reply": Field("Reply", self.t_reply),
            "tool": Field("Tool", self.t_tool),
            "args": Field("Arguments (JSON)", self.t_args),
            "result": Field("Tool result (JSON)", self.t_result),
            "results": Field("Tool results so far (JSON list)", self.t_results),
            "skills": Field("Loaded skills", self.t_skills),
        }
        for f in self.sample_fields.values():
            lay.addWidget(f)
        run_row = QHBoxLayout()
        self.run_button = button("Run hook", "play", "primary")
        self.run_button.clicked.connect(self.run_test)
        run_row.addWidget(self.run_button)
        run_row.addStretch(1)
        lay.addLayout(run_row)
        self.outcome = QFrame()
        self.outcome.setObjectName("OutcomeCard")
        ol = QVBoxLayout(self.outcome)
        ol.setContentsMargins(12, 10, 12, 10)
        ol.setSpacing(6)
        top = QHBoxLayout()
        self.decision = chip("", "allow")
        top.addWidget(self.decision)
        top.addStretch(1)
        ol.addLayout(top)
        self.reason = label("", "", wrap=True)
        self.reason.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        ol.addWidget(self.reason)
        self.reminder_out = label("", "Muted", wrap=True)
        self.reminder_out.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        ol.addWidget(self.reminder_out)
        self.outcome.hide()
        lay.addWidget(self.outcome)
        lay.addStretch(1)
        return scrolling(card)

    def _matcher_applies(self) -> None:
        """The matcher only filters tool events: for the others it is shown disabled, with
        why, rather than left editable with no effect."""
        tool_event = self.event.currentData() in (HookEvent.BEFORE_TOOL, HookEvent.AFTER_TOOL)
        self.matcher.setEnabled(tool_event)
        self.fields["matcher"].hint.setText(
            "Which tools it checks (a regex over tool names, or *)."
            if tool_event
            else "Not used: only tool events are filtered by tool."
        )

    def _sample_visibility(self, hook: Hook) -> None:
        ev = hook.event
        tool_event = ev in (HookEvent.BEFORE_TOOL, HookEvent.AFTER_TOOL)
        self.sample_fields["reply"].setVisible(ev is HookEvent.BEFORE_REPLY)
        self.sample_fields["tool"].setVisible(tool_event)
        self.sample_fields["args"].setVisible(tool_event)
        self.sample_fields["result"].setVisible(ev is HookEvent.AFTER_TOOL)
        self.sample_fields["results"].setVisible(
            ev is HookEvent.BEFORE_REPLY and hook.kind is HookKind.FACT_CHECK
        )
        self.sample_fields["skills"].setVisible(
            ev is HookEvent.BEFORE_REPLY and hook.kind is HookKind.REQUIRE_REPLY_SKILL
        )

    def _set_sample(self, sample: HookSample) -> None:
        self.t_viewer.setText(sample.viewer_message)
        self.t_reply.setPlainText(sample.reply)
        self.t_tool.setCurrentText(sample.tool)
        self.t_args.setPlainText(sample.arguments)
        self.t_result.setPlainText(sample.result)
        self.t_results.setPlainText(sample.tool_results)
        self.t_skills.setText(", ".join(sample.loaded_skills))

    def _reset_sample(self) -> None:
        hook = self.current()
        if hook is not None and self.session.doc is not None:
            self._set_sample(default_sample(hook, self.session.doc.harness))
            self._sample_visibility(hook)

    def sample(self) -> HookSample:
        return HookSample(
            viewer_message=self.t_viewer.text(),
            reply=self.t_reply.toPlainText(),
            tool=self.t_tool.currentText().strip(),
            arguments=self.t_args.toPlainText(),
            result=self.t_result.toPlainText(),
            tool_results=self.t_results.toPlainText(),
            loaded_skills=[s.strip() for s in self.t_skills.text().split(",") if s.strip()],
        )

    def run_test(self) -> None:
        """Run the hook (as last validated) on the sample, off the GUI thread."""
        self.flush()
        hook = self.current()
        if hook is None or self.session.doc is None:
            return
        harness = self.session.doc.harness
        sample = self.sample()
        self.run_button.setEnabled(False)
        self.run_button.setText("Running…")
        from studio.jobs import jobs

        jobs().run_async(
            lambda: run_sample_async(hook, harness, sample),
            on_done=self._show_outcome,
            on_error=lambda exc: self._show_outcome(
                SampleOutcome("error", f"{type(exc).__name__}: {exc}")
            ),
            label="Testing hook",
        )

    def _show_outcome(self, outcome: SampleOutcome) -> None:
        self.run_button.setEnabled(True)
        self.run_button.setText("Run hook")
        self.last_outcome = outcome
        self.decision.setText(outcome.decision.upper())
        self.decision.setProperty("chip", outcome.decision)
        repolish(self.decision)
        self.reason.setText(outcome.reason or "No objection.")
        self.reminder_out.setText(f"Model is told: {outcome.reminder}" if outcome.reminder else "")
        self.reminder_out.setVisible(bool(outcome.reminder))
        self.outcome.show()
        if self.session.draft(self.key) is not None:
            self.reason.setText(
                (outcome.reason or "No objection.")
                + "\n(Tested the last valid version: the form has errors.)"
            )

    # ------------------------------------------------------------------ editor API

    def fill(self, item: Hook) -> None:
        self.name.setText(item.name)
        self.event.setCurrentIndex(self.event.findData(item.event.value))
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(self.kind.findData(item.kind.value))
        self.kind.blockSignals(False)
        self.matcher.setText(item.matcher)
        self._matcher_applies()
        self.timeout.setValue(item.timeout)
        self.enabled.setChecked(item.enabled)
        self.critical.setChecked(item.task_critical)
        self._fill_params(item.kind, item.params, item.source)
        if self.reminder.toPlainText() != item.reminder:
            self.reminder.setPlainText(item.reminder)
        if getattr(self, "_sample_uid", None) != self.uid:
            self.t_tool.clear()
            if self.session.doc is not None:
                self.t_tool.addItems(
                    [t.name for t in self.session.doc.harness.tools if item.matches(t.name)]
                )
                self._set_sample(default_sample(item, self.session.doc.harness))
            self._sample_uid = self.uid
            self.outcome.hide()
        self._sample_visibility(item)

    def build(self, current: Hook) -> Hook:
        from core.harness import HarnessError

        kind = HookKind(self.kind.currentData())
        params, source, problems = self._params(kind)
        if problems or params is None:
            raise HarnessError(problems)
        data: dict[str, Any] = {
            "name": self.name.text().strip(),
            "event": self.event.currentData(),
            "kind": kind.value,
            "matcher": self.matcher.text().strip() or "*",
            "params": params,
            "reminder": self.reminder.toPlainText(),
            "timeout": self.timeout.value(),
            "enabled": self.enabled.isChecked(),
            "task_critical": self.critical.isChecked(),
            "source": source,
            "trusted": current.trusted if kind is HookKind.PYTHON else True,
        }
        hook = hook_from_fields(data)
        self._sample_visibility(hook)
        return hook

    def capture(self) -> dict[str, Any]:
        return {
            "name": self.name.text(),
            "event": self.event.currentIndex(),
            "kind": self.kind.currentIndex(),
            "matcher": self.matcher.text(),
            "timeout": self.timeout.value(),
            "enabled": self.enabled.isChecked(),
            "critical": self.critical.isChecked(),
            "reminder": self.reminder.toPlainText(),
            "schema": self.p_schema.toPlainText(),
            "patterns": self.p_patterns.toPlainText(),
            "number": self.p_number.text(),
            "ignore": self.p_ignore.value(),
            "max": self.p_max.value(),
            "min": self.p_min.value(),
            "markdown": self.p_markdown.isChecked(),
            "forbid": self.p_forbid.toPlainText(),
            "source": self.p_source.toPlainText(),
            "pyparams": self.p_pyparams.toPlainText(),
        }

    def restore(self, raw: dict[str, Any]) -> None:
        self.name.setText(raw["name"])
        self.event.setCurrentIndex(raw["event"])
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(raw["kind"])
        self.kind.blockSignals(False)
        kind = self.kind.currentData()
        self.params_stack.setCurrentWidget(self.param_pages[kind])
        self.kind_help.setText(KIND_HELP[HookKind(kind)])
        self.matcher.setText(raw["matcher"])
        self.timeout.setValue(raw["timeout"])
        self.enabled.setChecked(raw["enabled"])
        self.critical.setChecked(raw["critical"])
        self.reminder.setPlainText(raw["reminder"])
        self.p_schema.setPlainText(raw["schema"])
        self.p_patterns.setPlainText(raw["patterns"])
        self.p_number.setText(raw["number"])
        self.p_ignore.setValue(raw["ignore"])
        self.p_max.setValue(raw["max"])
        self.p_min.setValue(raw["min"])
        self.p_markdown.setChecked(raw["markdown"])
        self.p_forbid.setPlainText(raw["forbid"])
        self.p_source.setPlainText(raw["source"])
        self.p_pyparams.setPlainText(raw["pyparams"])
