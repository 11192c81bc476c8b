"""A form generated from a pydantic model's fields (`studio.logic.train_forms` specs).

    form = ModelForm(form_fields(SftConfig, exclude={"launch"}), columns=3)
    form.changed.connect(validate)        # after every edit
    form.values()                         # {"learning_rate": "2e-4", "merge": False, ...}
    form.set_errors({"learning_rate": "Input should be a valid number"})

Editors by kind: a check box (bool, the field's help as its text), a combo box (Literal), a
line edit for numbers, text and lists (comma-separated), an editable combo where the caller
gives suggestions (registered models), a line edit with a Browse button for file fields. The
field's description is its help line and tooltip; a field whose value differs from the
model's default says so, with the default. Fields are grouped in titled cards by section.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLineEdit,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from studio.logic.train_forms import FieldSpec
from studio.widgets.common import Field, label, set_invalid, tool_button

SECTION_ORDER = (
    "Model",
    "Data",
    "Optimisation",
    "LoRA",
    "Generation",
    "Reward weights",
    "Saving and logging",
    "Scale-out",
    "Stage",
)


class _CheckText(QWidget):
    """A check box whose text wraps (QCheckBox's own text does not); clicking it toggles."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 2, 0, 0)
        lay.setSpacing(8)
        self.box = QCheckBox()
        self.text = label(text, "FieldHint", wrap=True)
        self.text.setCursor(Qt.CursorShape.PointingHandCursor)
        lay.addWidget(self.box, 0, Qt.AlignmentFlag.AlignTop)
        lay.addWidget(self.text, 1)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if self.isEnabled():
            self.box.toggle()
        super().mousePressEvent(event)


def _combo() -> QComboBox:
    combo = QComboBox()
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(6)
    return combo


class _FileEdit(QWidget):
    """A line edit with a Browse… button (JSONL files)."""

    def __init__(self, multiple: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.edit = QLineEdit()
        self.browse = tool_button("folder", "Choose a file…")
        lay.addWidget(self.edit, 1)
        lay.addWidget(self.browse)
        self.multiple = multiple
        self.start_dir = ""
        """Where the dialog opens (the workspace's datasets folder; "" = the process's)."""
        self.browse.clicked.connect(self._choose)

    def _choose(self) -> None:
        title = "Choose data files" if self.multiple else "Choose a file"
        start = self.start_dir
        from studio import dialogs

        if self.multiple:
            files = dialogs.choose_files(self, title, "JSONL (*.jsonl)", start)
            if files:
                self.edit.setText(", ".join(files))
        else:
            path = dialogs.choose_file(self, title, "JSONL (*.jsonl)", start)
            if path:
                self.edit.setText(path)


class ModelForm(QWidget):
    changed = Signal()
    """Some value changed (after the user's edit; not while values are being set)."""

    def set_file_folder(self, folder: str) -> None:
        """Open every file field's Browse dialog in `folder`."""
        for editor in self.editors.values():
            if isinstance(editor, _FileEdit):
                editor.start_dir = folder

    def __init__(
        self,
        specs: list[FieldSpec],
        *,
        columns: int = 3,
        suggestions: dict[str, list[str]] | None = None,
        files: Iterable[str] = (),
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.specs = {s.path: s for s in specs}
        self.fields: dict[str, Field] = {}
        self.editors: dict[str, QWidget] = {}
        self.cards: dict[str, QFrame] = {}
        self._setting = False
        self._errors: dict[str, str] = {}
        suggestions = suggestions or {}
        file_paths = set(files)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(12)
        grids: dict[str, tuple[QGridLayout, list[int]]] = {}
        sections = sorted(
            {s.section for s in specs},
            key=lambda s: SECTION_ORDER.index(s) if s in SECTION_ORDER else len(SECTION_ORDER),
        )
        for section in sections:
            card = QFrame()
            card.setObjectName("Card")
            cl = QVBoxLayout(card)
            cl.setContentsMargins(16, 12, 16, 14)
            cl.setSpacing(10)
            cl.addWidget(label(section, "SectionTitle"))
            grid = QGridLayout()
            grid.setHorizontalSpacing(16)
            grid.setVerticalSpacing(10)
            for column in range(columns):
                grid.setColumnStretch(column, 1)
            cl.addLayout(grid)
            lay.addWidget(card)
            self.cards[section] = card
            grids[section] = (grid, [0])
        for spec in specs:
            editor = self._editor(spec, suggestions.get(spec.path), spec.path in file_paths)
            hint = "" if spec.kind == "bool" else spec.help
            field = Field(spec.title, editor, hint)
            # equal columns whatever the editors' contents (long model names, choices)
            field.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            field.setToolTip(f"{spec.path}\n{spec.help}" if spec.help else spec.path)
            field.title.setToolTip(field.toolTip())
            grid, count = grids[spec.section]
            row, column = divmod(count[0], columns)
            grid.addWidget(field, row, column, Qt.AlignmentFlag.AlignTop)
            count[0] += 1
            self.fields[spec.path] = field
            self.editors[spec.path] = editor
        lay.addStretch(1)
        self.set_values({s.path: s.default for s in specs})

    # ------------------------------------------------------------------ editors

    def _editor(self, spec: FieldSpec, suggestions: list[str] | None, is_file: bool) -> QWidget:
        if spec.kind == "bool":
            check = _CheckText(spec.help or spec.title)
            check.box.toggled.connect(lambda _on, p=spec.path: self._edited(p))
            return check
        if spec.kind == "choice":
            combo = _combo()
            combo.addItems(list(spec.choices))
            combo.currentIndexChanged.connect(lambda _i, p=spec.path: self._edited(p))
            return combo
        if suggestions is not None:
            combo = _combo()
            combo.setEditable(True)
            combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            combo.addItems(suggestions)
            combo.editTextChanged.connect(lambda _t, p=spec.path: self._edited(p))
            if spec.nullable:
                combo.lineEdit().setPlaceholderText("not set")
            return combo
        if is_file:
            files = _FileEdit(spec.kind == "list")
            files.edit.textChanged.connect(lambda _t, p=spec.path: self._edited(p))
            return files
        edit = QLineEdit()
        if spec.nullable:
            edit.setPlaceholderText("not set")
        elif spec.kind == "list":
            edit.setPlaceholderText("comma-separated")
        edit.textChanged.connect(lambda _t, p=spec.path: self._edited(p))
        return edit

    def line_edit(self, path: str) -> QLineEdit | None:
        """The text input of a field (None for check boxes and fixed choices)."""
        editor = self.editors[path]
        if isinstance(editor, QLineEdit):
            return editor
        if isinstance(editor, _FileEdit):
            return editor.edit
        if isinstance(editor, QComboBox) and editor.isEditable():
            return editor.lineEdit()
        return None

    def _edited(self, path: str) -> None:
        self._update_default_note(path)
        if not self._setting:
            self.changed.emit()

    def _update_default_note(self, path: str) -> None:
        spec = self.specs[path]
        current = self.value(path)
        default = spec.default if spec.kind in ("bool", "choice") else spec.text(spec.default)
        differs = current != default
        if spec.kind not in ("bool", "choice"):
            differs = str(current).strip() != str(default)
        shown = spec.text(spec.default)
        # no note for fields without a default value (a model name): nothing to return to
        self.fields[path].aside.setText(f"default: {shown}" if differs and shown else "")

    # ------------------------------------------------------------------ values

    def value(self, path: str) -> Any:
        editor = self.editors[path]
        if isinstance(editor, _CheckText):
            return editor.box.isChecked()
        if isinstance(editor, QComboBox) and not editor.isEditable():
            return editor.currentText()
        line = self.line_edit(path)
        return line.text() if line is not None else None

    def values(self) -> dict[str, Any]:
        return {path: self.value(path) for path in self.specs if self.fields[path].isEnabled()}

    def set_value(self, path: str, value: Any) -> None:
        spec = self.specs.get(path)
        if spec is None:
            return
        editor = self.editors[path]
        if isinstance(editor, _CheckText):
            editor.box.setChecked(bool(value))
        elif isinstance(editor, QComboBox) and not editor.isEditable():
            index = editor.findText(str(value))
            if index >= 0:
                editor.setCurrentIndex(index)
        else:
            line = self.line_edit(path)
            if line is not None:
                line.setText(spec.text(value))
        self._update_default_note(path)

    def set_values(self, values: dict[str, Any]) -> None:
        """Set editor values without emitting `changed` per field (one emit at the end)."""
        self._setting = True
        try:
            for path, value in values.items():
                self.set_value(path, value)
        finally:
            self._setting = False
        self.changed.emit()

    def set_suggestions(self, path: str, items: list[str]) -> None:
        editor = self.editors.get(path)
        if not isinstance(editor, QComboBox) or not editor.isEditable():
            return
        text = editor.currentText()
        self._setting = True
        try:
            editor.clear()
            editor.addItems(items)
            editor.setEditText(text)
        finally:
            self._setting = False

    def set_enabled_fields(self, paths: Iterable[str], enabled: bool) -> None:
        """Hide fields another part of the page sets (a pipeline sets model / adapter)."""
        for path in paths:
            field = self.fields.get(path)
            if field is not None:
                field.setEnabled(enabled)
                field.setVisible(enabled)

    # ------------------------------------------------------------------ errors

    def set_errors(self, errors: dict[str, str]) -> None:
        """Show each message under its field; clear the others."""
        for path, field in self.fields.items():
            message = errors.get(path)
            if self._errors.get(path) == message:
                continue
            field.set_error(message)
            inner = self.line_edit(path)
            if inner is not None and inner is not field.widget:
                set_invalid(inner, bool(message))
        self._errors = {p: m for p, m in errors.items() if p in self.fields}

    @property
    def errors(self) -> dict[str, str]:
        return dict(self._errors)
