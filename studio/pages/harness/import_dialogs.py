"""The Harness page's import and export dialogs: paste or open, preview, then Add (all or
nothing, one undoable step). The reading is `studio.logic.harness_import` (the CLI's code)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.harness import Harness, HarnessError
from studio import dialogs
from studio.logic import harness_import as hi
from studio.widgets.common import CodeEdit, button, label


def _table(headers: list[str]) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setHorizontalHeaderLabels(headers)
    t.verticalHeader().hide()
    t.setWordWrap(True)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    head = t.horizontalHeader()
    for c in range(len(headers) - 1):
        head.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
    head.setStretchLastSection(True)
    return t


def _fill(table: QTableWidget, rows: list[list[str]]) -> None:
    table.setRowCount(len(rows))
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            table.setItem(r, c, QTableWidgetItem(value))
    table.resizeRowsToContents()


class _Base(QDialog):
    def __init__(self, parent: QWidget | None, title: str, intro: str) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(860, 620)
        self.lay = QVBoxLayout(self)
        self.lay.setContentsMargins(20, 18, 20, 16)
        self.lay.setSpacing(10)
        head = QLabel(title.rstrip("…"))
        head.setObjectName("SectionTitle")
        self.lay.addWidget(head)
        self.lay.addWidget(label(intro, "Muted", wrap=True))
        self.status = label("", "FieldHint", wrap=True)
        self.buttons = QHBoxLayout()
        self.buttons.addStretch(1)
        self.cancel = button("Cancel")
        self.cancel.clicked.connect(self.reject)
        self.add = button("Add", "plus", "primary")
        self.add.clicked.connect(self.accept)
        self.add.setEnabled(False)

    def finish(self) -> None:
        self.lay.addWidget(self.status)
        self.buttons.addWidget(self.cancel)
        self.buttons.addWidget(self.add)
        self.lay.addLayout(self.buttons)

    def set_status(self, text: str, error: bool) -> None:
        self.status.setObjectName("FieldError" if error else "FieldHint")
        self.status.setStyleSheet("")  # re-polish for the object name
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)
        self.status.setText(text)


class _PasteDialog(_Base):
    """A paste box with "Open file…", previewed as the text changes."""

    def __init__(self, parent: QWidget | None, title: str, intro: str, harness: Harness) -> None:
        super().__init__(parent, title, intro)
        self.harness = harness
        self.file = hi.PASTED
        row = QHBoxLayout()
        row.addWidget(label("Paste JSON here, or open a file", "FieldLabel"))
        row.addStretch(1)
        self.open_button = button("Open file…", "folder")
        self.open_button.clicked.connect(self.open_file)
        row.addWidget(self.open_button)
        self.lay.addLayout(row)
        self.paste = CodeEdit()
        self.paste.setMinimumHeight(150)
        self.lay.addWidget(self.paste, 2)
        self.paste.textChanged.connect(self._changed)

    def open_file(self) -> None:
        path = dialogs.choose_file(self, "Open a JSON file")
        if not path:
            return
        try:
            text = hi.read_text_file(Path(path))
        except HarnessError as exc:
            self.set_status(str(exc), True)
            return
        self.file = path
        self.paste.blockSignals(True)
        self.paste.setPlainText(text)
        self.paste.blockSignals(False)
        self.refresh()

    def _changed(self) -> None:
        self.file = hi.PASTED
        self.refresh()

    def refresh(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class ImportToolsDialog(_PasteDialog):
    def __init__(self, parent: QWidget | None, harness: Harness) -> None:
        super().__init__(
            parent,
            "Import tools…",
            "An MCP tools/list result (or one MCP tool), an OpenAI tool or a JSON array of "
            "OpenAI tools (strict kept), read as `hat harness import-tools` reads them. The "
            "tools come without an implementation: bind each one in its editor.",
            harness,
        )
        self.table = _table(["Name", "Kind", "Problems"])
        self.lay.addWidget(label("Will be added", "FieldLabel"))
        self.lay.addWidget(self.table, 2)
        self.preview = hi.ToolPreview()
        self.finish()
        self.refresh()

    def refresh(self) -> None:
        self.preview = p = hi.preview_tools(self.paste.toPlainText(), self.harness, self.file)
        self.paste.mark_line(p.error.line if p.error else None)
        _fill(
            self.table,
            [[r.name or "(no name)", r.kind, "\n".join(r.problems) or "ok"] for r in p.rows],
        )
        if p.error is not None:
            self.set_status(p.error.message, bool(self.paste.toPlainText().strip()))
        elif p.ok:
            n = len(p.rows)
            self.set_status(f"{n} tool{'s' if n != 1 else ''} will be added.", False)
        else:
            bad = sum(1 for r in p.rows if r.problems)
            text = f"{bad} of {len(p.rows)} tools have problems; nothing is added until fixed."
            self.set_status("\n".join([text, *p.problems]), True)
        self.add.setText(f"Add {len(p.rows)} tools" if p.ok else "Add")
        self.add.setEnabled(p.ok)


class ImportHooksDialog(_PasteDialog):
    def __init__(self, parent: QWidget | None, harness: Harness) -> None:
        super().__init__(
            parent,
            "Import Claude Code hooks…",
            "The hooks of a Claude Code settings.json. PreToolUse, PostToolUse, "
            "UserPromptSubmit and Stop command hooks become hooks that run the command; the "
            "rest is listed below with the reason.",
            harness,
        )
        warn = label(
            "Imported command hooks are untrusted: they run shell commands, so the agent loop "
            "runs them only once you trust them (hat harness import FOLDER --trust).",
            "FieldError",
            wrap=True,
        )
        self.lay.addWidget(warn)
        self.table = _table(["Hook", "Event", "Matcher", "Command"])
        self.lay.addWidget(label("Become hooks", "FieldLabel"))
        self.lay.addWidget(self.table, 1)
        self.skipped = _table(["Not imported", "Reason"])
        self.lay.addWidget(self.skipped, 2)
        self.paste.setMinimumHeight(120)
        self.resize(900, 780)
        self.preview = hi.HookPreview()
        self.finish()
        self.refresh()

    def refresh(self) -> None:
        self.preview = p = hi.preview_hooks(self.paste.toPlainText(), self.harness, self.file)
        self.paste.mark_line(p.error.line if p.error else None)
        _fill(
            self.table,
            [
                [
                    r.name,
                    r.event,
                    r.matcher,
                    r.command + "".join(f"\nProblem: {x}" for x in r.problems),
                ]
                for r in p.rows
            ],
        )
        _fill(self.skipped, [[s.where, s.reason] for s in p.skipped])
        if p.error is not None:
            self.set_status(p.error.message, bool(self.paste.toPlainText().strip()))
        elif p.ok:
            n = len(p.rows)
            extra = "".join(f"\n{note}" for note in p.notes)
            self.set_status(f"{n} hook{'s' if n != 1 else ''} will be added.{extra}", False)
        elif not p.rows:
            self.set_status("Nothing here becomes a hook (see the reasons).", True)
        else:
            self.set_status("\n".join(["Fix these first; nothing is added:", *p.problems]), True)
        self.add.setEnabled(p.ok)


class ImportSkillDialog(_Base):
    def __init__(self, parent: QWidget | None, harness: Harness, folder: str = "") -> None:
        super().__init__(
            parent,
            "Import skill folder…",
            "An agentskills.io skill folder as published: SKILL.md with scripts/, references/, "
            "assets/, LICENSE.txt and any other file, kept byte for byte with the version.",
        )
        self.harness = harness
        row = QHBoxLayout()
        self.folder = label("No folder chosen", "Muted", wrap=True)
        row.addWidget(self.folder, 1)
        pick = button("Choose folder…", "folder")
        pick.clicked.connect(self.choose)
        row.addWidget(pick)
        self.lay.addLayout(row)
        self.details = label("", "", wrap=True)
        self.lay.addWidget(self.details)
        self.lay.addStretch(1)
        self.preview: hi.SkillPreview | None = None
        self.finish()
        self.resize(640, 320)
        if folder:
            self.load(folder)

    def choose(self) -> None:
        path = dialogs.choose_folder(self, "Choose a skill folder")
        if path:
            self.load(path)

    def load(self, folder: str) -> None:
        self.folder.setText(folder)
        self.preview = p = hi.preview_skill(Path(folder), self.harness)
        if p.skill is not None:
            self.details.setText(
                f"<b>{p.skill.name}</b> · {p.file_count} file{'s' if p.file_count != 1 else ''}"
                f"<br>{p.skill.description}"
            )
        else:
            self.details.setText("")
        if p.ok:
            self.set_status("The skill will be added.", False)
        else:
            self.set_status("\n".join(p.problems), True)
        self.add.setEnabled(p.ok)


class ExportToolsDialog(_Base):
    def __init__(self, parent: QWidget | None, harness: Harness) -> None:
        super().__init__(
            parent,
            "Export tools…",
            "The harness's enabled tools, in harness order, as `hat harness export-tools` "
            "writes them.",
        )
        self.harness = harness
        row = QHBoxLayout()
        row.addWidget(label("Format", "FieldLabel"))
        self.format = QComboBox()
        for key, title in hi.EXPORT_FORMATS.items():
            self.format.addItem(title, key)
        row.addWidget(self.format)
        row.addStretch(1)
        self.lay.addLayout(row)
        self.text = CodeEdit(read_only=True)
        self.lay.addWidget(self.text, 1)
        self.format.currentIndexChanged.connect(lambda _i: self.refresh())
        self.add.hide()
        self.cancel.setText("Close")
        self.copy = button("Copy", "copy")
        self.copy.clicked.connect(self.copy_text)
        self.save = button("Save file…", "save", "primary")
        self.save.clicked.connect(self.save_file)
        self.buttons.addWidget(self.copy)
        self.buttons.addWidget(self.save)
        self.finish()
        self.refresh()

    def fmt(self) -> str:
        return str(self.format.currentData())

    def refresh(self) -> None:
        self.text.setPlainText(hi.export_tools_text(self.harness, self.fmt()))
        n = len(self.harness.active_tools)
        self.set_status(f"{n} tool{'s' if n != 1 else ''}.", False)

    def copy_text(self) -> None:
        QGuiApplication.clipboard().setText(self.text.toPlainText())
        self.set_status("Copied to the clipboard.", False)

    def save_file(self) -> None:
        name = hi.export_file_name(self.harness, self.fmt())
        path = dialogs.choose_save_file(self, "Save tools", name)
        if not path:
            return
        try:
            Path(path).write_text(self.text.toPlainText(), encoding="utf-8")
        except OSError as exc:
            self.set_status(f"Cannot write {path}: {exc.strerror or exc}", True)
            return
        self.set_status(f"Saved {path}.", False)


def run(dialog: Any) -> bool:
    """Show `dialog` modally (tests replace this)."""
    return bool(dialog.exec() == QDialog.DialogCode.Accepted)
