"""Tool editor: name, description, binding, a parameter form generated from the JSON Schema
(one card per property: type, description, required, enum, default), and the tool's raw JSON
file. Both are validated as you type; a problem shows under the property it belongs to."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.harness import HarnessError, Problem, Tool
from studio.logic.components import (
    CUSTOM,
    TYPES,
    ParamRow,
    param_field,
    param_row_of_field,
    param_row_of_problem,
    parse_tool_text,
    rows_from_schema,
    schema_from_rows,
    tool_file_text,
    tool_from_fields,
)
from studio.pages.harness.editor_base import ComponentEditor, problem_line
from studio.session import EditSession
from studio.widgets.common import Banner, Field, button, label, scrolling, set_invalid, tool_button


class ParamCard(QFrame):
    changed = Signal()
    remove = Signal(object)

    def __init__(self, row: ParamRow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ParamCard")
        self.extra = dict(row.extra)
        self.keys = row.keys
        grid = QGridLayout(self)
        grid.setContentsMargins(12, 10, 10, 10)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(6)
        self.name = QLineEdit(row.name)
        self.name.setPlaceholderText("parameter_name")
        self.type = QComboBox()
        self.type.addItems([*TYPES, CUSTOM] if row.type == CUSTOM else list(TYPES))
        self.type.setCurrentText(row.type)
        self.required = QCheckBox("Required")
        self.required.setChecked(row.required)
        self.delete = tool_button("trash", "Remove this parameter")
        self.description = QLineEdit(row.description)
        self.description.setPlaceholderText("What the model should pass here")
        self.enum = QLineEdit(row.enum)
        self.enum.setPlaceholderText("Allowed values, comma-separated (optional)")
        self.default = QLineEdit(row.default)
        self.default.setPlaceholderText("Default (optional)")
        grid.addWidget(self.name, 0, 0)
        grid.addWidget(self.type, 0, 1)
        grid.addWidget(self.required, 0, 2)
        grid.addWidget(self.delete, 0, 3)
        grid.addWidget(self.description, 1, 0, 1, 4)
        grid.addWidget(self.enum, 2, 0)
        grid.addWidget(self.default, 2, 1, 1, 3)
        grid.setColumnStretch(0, 3)
        grid.setColumnStretch(1, 2)
        self.keywords = label(self._keywords_text(), "FieldHint", wrap=True)
        self.keywords.setVisible(bool(self.extra))
        grid.addWidget(self.keywords, 3, 0, 1, 4)
        self.error = label("", "FieldError", wrap=True)
        self.error.hide()
        grid.addWidget(self.error, 4, 0, 1, 4)
        for w in (self.name, self.description, self.enum, self.default):
            w.textEdited.connect(lambda _t: self.changed.emit())
        self.type.currentTextChanged.connect(lambda _t: self.changed.emit())
        self.required.toggled.connect(lambda _v: self.changed.emit())
        self.delete.clicked.connect(lambda: self.remove.emit(self))

    def _keywords_text(self) -> str:
        if not self.extra:
            return ""
        parts = [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in self.extra.items()]
        return "Also: " + ", ".join(parts) + "  (edit in the JSON tab)"

    def row(self) -> ParamRow:
        return ParamRow(
            name=self.name.text(),
            type=self.type.currentText(),
            description=self.description.text(),
            required=self.required.isChecked(),
            enum=self.enum.text(),
            default=self.default.text(),
            extra=dict(self.extra),
            keys=self.keys,
        )

    def set_error(self, messages: list[str] | None) -> None:
        text = "; ".join(messages or [])
        self.error.setText(text)
        self.error.setVisible(bool(text))
        set_invalid(self, bool(text))
        lowered = text.lower()
        set_invalid(self.name, lowered.startswith("name") or "name:" in lowered)
        set_invalid(self.enum, "enum" in lowered)
        set_invalid(self.default, "default" in lowered)


class ToolEditor(ComponentEditor):
    attr = "tools"
    rename_kind = "tool"
    noun = "Tool"
    icon_name = "tool"

    def __init__(self, session: EditSession, parent: QWidget | None = None) -> None:
        super().__init__(session, parent)
        self.binding = QLineEdit()
        binding = Field("Binding", self.binding, "The implementation the runtime calls.")
        self.add_header("Letters, digits, _ and -, up to 64.", ("binding", binding), 58)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        params = QWidget()
        pl = QVBoxLayout(params)
        pl.setContentsMargins(0, 10, 0, 0)
        pl.setSpacing(8)
        top = QHBoxLayout()
        self.params_title = label("Parameters", "SubTitle")
        top.addWidget(self.params_title)
        top.addStretch(1)
        self.add_param = button("Add parameter", "plus", "ghost")
        self.add_param.clicked.connect(self._add_row)
        top.addWidget(self.add_param)
        pl.addLayout(top)
        self.schema_banner = Banner()
        pl.addWidget(self.schema_banner)
        self.cards_host = QWidget()
        self.cards = QVBoxLayout(self.cards_host)
        self.cards.setContentsMargins(0, 0, 0, 0)
        self.cards.setSpacing(8)
        self.cards.addStretch(1)
        pl.addWidget(scrolling(self.cards_host), 1)
        self.tabs.addTab(params, "Parameters")

        self.add_raw_tab(
            "JSON",
            'The tool file: OpenAI function shape {"type": "function", "function": {...}} plus '
            '"x-hat" (binding). Paste a schema here; it applies as soon as it is valid.',
            tool_file_text,
        )
        self.body.addWidget(self.tabs, 1)
        self.param_cards: list[ParamCard] = []
        self._base_schema: dict[str, Any] = {}

        self.name.textEdited.connect(lambda _t: self.edited("name"))
        self.binding.textEdited.connect(lambda _t: self.edited("binding"))
        self.description.textChanged.connect(lambda: self.edited("description"))
        self.enabled.toggled.connect(lambda _v: self.edited("enabled"))

    # ------------------------------------------------------------------ parameter cards

    def _set_rows(self, rows: list[ParamRow]) -> None:
        for card in self.param_cards:
            card.setParent(None)
            card.deleteLater()
        self.param_cards = []
        for row in rows:
            self._append_card(row)
        self._update_count()

    def _append_card(self, row: ParamRow) -> ParamCard:
        card = ParamCard(row)
        card.changed.connect(lambda: self.edited("params"))
        card.remove.connect(self._remove_card)
        self.cards.insertWidget(self.cards.count() - 1, card)
        self.param_cards.append(card)
        return card

    def _update_count(self) -> None:
        n = len(self.param_cards)
        self.params_title.setText(f"Parameters · {n}" if n else "Parameters (none)")

    def _add_row(self) -> None:
        taken = {c.name.text() for c in self.param_cards}
        name = next(f"param_{i}" for i in range(1, 999) if f"param_{i}" not in taken)
        card = self._append_card(ParamRow(name=name))
        self._update_count()
        card.name.setFocus()
        card.name.selectAll()
        self.edited("params")

    def _remove_card(self, card: ParamCard) -> None:
        self.param_cards.remove(card)
        card.setParent(None)
        card.deleteLater()
        self._update_count()
        self.edited("params")

    # ------------------------------------------------------------------ editor API

    def fill(self, item: Tool) -> None:
        self.name.setText(item.name)
        self.binding.setText(item.binding)
        self.enabled.setChecked(item.enabled)
        if self.description.toPlainText() != item.description:
            self.description.setPlainText(item.description)
        self._base_schema = dict(item.parameters)
        self._set_rows(rows_from_schema(item.parameters))
        self._raw_stale = True
        self._sync_raw()
        self.clear_raw_problems()
        self.schema_banner.hide()

    def build(self, current: Tool) -> Tool:
        assert self.session.doc is not None
        if self.merge_field == "raw":
            return parse_tool_text(self.raw.toPlainText(), self.session.doc.harness)
        rows = [c.row() for c in self.param_cards]
        result = schema_from_rows(rows, self._base_schema)
        problems = [
            Problem(f"tools/{current.name}.json", param_field(i, rows), "; ".join(m))
            for i, m in result.row_errors.items()
        ]
        problems += [Problem(f"tools/{current.name}.json", "parameters", m) for m in result.errors]
        name = self.name.text().strip()
        try:
            tool = tool_from_fields(
                name=name,
                description=self.description.toPlainText(),
                binding=self.binding.text().strip(),
                enabled=self.enabled.isChecked(),
                parameters=result.schema,
                base=current,
            )
        except HarnessError as exc:
            problems += exc.problems
            tool = None
        if problems or tool is None:
            raise HarnessError(problems)
        return tool

    def after_commit(self) -> None:
        super().after_commit()
        item = self.current()
        if item is None:
            return
        self._loading = True
        try:
            if self.merge_field == "raw":
                self.name.setText(item.name)
                self.binding.setText(item.binding)
                self.enabled.setChecked(item.enabled)
                if self.description.toPlainText() != item.description:
                    self.description.setPlainText(item.description)
                self._base_schema = dict(item.parameters)
                self._set_rows(rows_from_schema(item.parameters))
            else:
                self._base_schema = dict(item.parameters)
                self._raw_stale = True
                self._sync_raw()
            self.clear_raw_problems()
        finally:
            self._loading = False

    def field_for(self, field: str) -> str | None:
        if field.startswith("function."):
            field = field.removeprefix("function.")
        if field.startswith("x-hat."):
            field = field.removeprefix("x-hat.")
        return super().field_for(field)

    def show_problems(self, problems: list[Problem]) -> None:
        if self.merge_field == "raw" and problems:
            for f in self.fields.values():
                f.set_error(None)
            lines = [f"{p.file}: {p.field + ': ' if p.field else ''}{p.message}" for p in problems]
            self.raw_banner.show_message("error", "\n".join(lines), closable=False)
            self.raw.mark_line(next((problem_line(p) for p in problems if problem_line(p)), None))
            self.banner.show_message(
                "error",
                "The JSON does not validate yet; the last valid tool is kept until it does.",
                closable=False,
            )
            return
        self.raw_banner.hide()
        self.raw.mark_line(None)
        super().show_problems(problems)

    def show_other_problems(self, problems: list[Problem]) -> set[str]:
        rows = [c.row() for c in self.param_cards]
        per_row: dict[int, list[str]] = {}
        whole: list[str] = []
        taken: set[str] = set()
        for p in problems:
            row = param_row_of_field(p.field, rows)
            if row is not None:
                per_row.setdefault(row, []).append(p.message)
                taken.add(f"{p.field}: {p.message}")
            elif p.field == "parameters":
                i = param_row_of_problem(p.message, rows)
                if i is not None:
                    per_row.setdefault(i, []).append(p.message)
                else:
                    whole.append(p.message)
                taken.add(f"{p.field}: {p.message}")
        for i, card in enumerate(self.param_cards):
            card.set_error(per_row.get(i))
        if whole:
            self.schema_banner.show_message("error", "\n".join(whole), closable=False)
        else:
            self.schema_banner.hide()
        return taken

    def capture(self) -> dict[str, Any]:
        return {
            **self.header_state(),
            "binding": self.binding.text(),
            "rows": [c.row() for c in self.param_cards],
            "base": dict(self._base_schema),
            **self.raw_state(),
        }

    def restore(self, raw: dict[str, Any]) -> None:
        self.restore_header(raw)
        self.binding.setText(raw["binding"])
        self._base_schema = raw["base"]
        self._set_rows(raw["rows"])
        self.restore_raw_state(raw)
