"""Every modal question the studio asks, in one place (tests replace these functions).

Pages call `dialogs.ask_unsaved(...)`, `dialogs.choose_folder(...)` and so on rather than
QMessageBox / QFileDialog directly, so a test can answer with `monkeypatch.setattr`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio import theme

if TYPE_CHECKING:
    from core.harness import Problem

SAVE, DISCARD, CANCEL = "save", "discard", "cancel"


def ask_unsaved(parent: QWidget | None, what: str) -> str:
    """Save / Discard / Cancel before `what` (e.g. "closing", "opening another version")."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Unsaved changes")
    box.setText("The harness has changes that are not in a saved version.")
    box.setInformativeText(f"Save them as a new version before {what}?")
    save = box.addButton("Save version…", QMessageBox.ButtonRole.AcceptRole)
    discard = box.addButton("Discard changes", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton("Cancel", QMessageBox.ButtonRole.RejectRole)
    box.exec()
    clicked = box.clickedButton()
    if clicked is save:
        return SAVE
    if clicked is discard:
        return DISCARD
    return CANCEL


def confirm(
    parent: QWidget | None, title: str, text: str, ok: str = "OK", detail: str = ""
) -> bool:
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle(title)
    box.setText(text)
    if detail:
        box.setInformativeText(detail)
    yes = box.addButton(ok, QMessageBox.ButtonRole.AcceptRole)
    box.addButton("Cancel", QMessageBox.ButtonRole.RejectRole)
    box.exec()
    return box.clickedButton() is yes


def error(parent: QWidget | None, title: str, text: str, detail: str = "") -> None:
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Critical)
    box.setWindowTitle(title)
    box.setText(text)
    if detail:
        box.setDetailedText(detail)
    box.exec()


FILE_DIALOG_MIN = (880, 560)
"""The smallest file dialog the studio opens: room for the places, the names and the dates."""


def _workspace_places(parent: QWidget | None) -> list[Path]:
    """The folders an operator opens files from: their home, the workspace and its datasets
    and models (the studio window's workspace, when `parent` is in one)."""
    places = [Path.home()]
    ctx = getattr(parent.window(), "ctx", None) if parent is not None else None
    home = getattr(ctx, "home", None)
    if home is not None:
        places += [Path(home), Path(home) / "datasets", Path(home) / "models"]
    return [p for p in places if p.is_dir()]


def file_dialog(
    parent: QWidget | None, title: str, start: str = "", filters: str = ""
) -> QFileDialog:
    """A QFileDialog sized to the window (Qt's own dialog opens at a cramped default size
    where there is no native one), in the detail view, with the workspace's folders among its
    places. The native dialogs of macOS and Windows keep their own size and places."""
    dialog = QFileDialog(parent, title, start, filters)
    dialog.setViewMode(QFileDialog.ViewMode.Detail)
    window = parent.window() if parent is not None else None
    width, height = (window.width(), window.height()) if window is not None else (0, 0)
    dialog.resize(max(FILE_DIALOG_MIN[0], int(width * 0.7)),
                  max(FILE_DIALOG_MIN[1], int(height * 0.75)))  # fmt: skip
    places = [QUrl.fromLocalFile(str(p)) for p in _workspace_places(parent)]
    dialog.setSidebarUrls([*places, *(u for u in dialog.sidebarUrls() if u not in places)])
    return dialog


def _run(dialog: QFileDialog) -> list[str]:
    return dialog.selectedFiles() if dialog.exec() == QDialog.DialogCode.Accepted else []


def choose_folder(parent: QWidget | None, title: str, start: str = "") -> str | None:
    dialog = file_dialog(parent, title, start)
    dialog.setFileMode(QFileDialog.FileMode.Directory)
    dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
    return next(iter(_run(dialog)), None)


def choose_file(
    parent: QWidget | None, title: str, filters: str = "JSON (*.json)", start: str = ""
) -> str | None:
    dialog = file_dialog(parent, title, start, f"{filters};;All files (*)")
    dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
    return next(iter(_run(dialog)), None)


def choose_files(
    parent: QWidget | None, title: str, filters: str = "JSON (*.json)", start: str = ""
) -> list[str]:
    dialog = file_dialog(parent, title, start, f"{filters};;All files (*)")
    dialog.setFileMode(QFileDialog.FileMode.ExistingFiles)
    return _run(dialog)


def choose_save_file(
    parent: QWidget | None, title: str, name: str, filters: str = "JSON (*.json)"
) -> str | None:
    dialog = file_dialog(parent, title, "", filters)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.selectFile(name)
    return next(iter(_run(dialog)), None)


def ask_label(parent: QWidget | None) -> str | None:
    text, ok = QInputDialog.getText(parent, "New label", "Label name (letters, digits, . _ -):")
    return text.strip() if ok and text.strip() else None


class SaveDialog(QDialog):
    def __init__(
        self, parent: QWidget | None, suggestion: str, summary: str, labels: Sequence[str]
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Save version")
        self.setMinimumWidth(460)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(20, 18, 20, 16)
        lay.setSpacing(10)
        title = QLabel("Save a new version")
        title.setObjectName("SectionTitle")
        lay.addWidget(title)
        info = QLabel(summary)
        info.setObjectName("Muted")
        info.setWordWrap(True)
        lay.addWidget(info)
        lay.addWidget(QLabel("Message"))
        self.message = QLineEdit(suggestion)
        self.message.selectAll()
        lay.addWidget(self.message)
        row = QHBoxLayout()
        row.addWidget(QLabel("Move label"))
        self.label = QComboBox()
        self.label.addItem("(none)", "")
        for name in labels:
            self.label.addItem(name, name)
        row.addWidget(self.label, 1)
        lay.addLayout(row)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)


def ask_save(
    parent: QWidget | None, suggestion: str, summary: str, labels: Sequence[str]
) -> tuple[str, str] | None:
    """(message, label to move or "") or None when cancelled."""
    dlg = SaveDialog(parent, suggestion, summary, labels)
    if dlg.exec() != QDialog.DialogCode.Accepted:
        return None
    return dlg.message.text().strip() or suggestion, dlg.label.currentData() or ""


class ProblemsDialog(QDialog):
    def __init__(
        self, parent: QWidget | None, title: str, text: str, problems: Sequence[Problem]
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(760, 420)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(20, 18, 20, 16)
        lay.setSpacing(10)
        head = QHBoxLayout()
        icon = QLabel()
        icon.setPixmap(theme.pixmap("alert", 22, "danger"))
        head.addWidget(icon)
        t = QLabel(text)
        t.setObjectName("SectionTitle")
        t.setWordWrap(True)
        head.addWidget(t, 1)
        lay.addLayout(head)
        table = QTableWidget(len(problems), 3)
        table.setHorizontalHeaderLabels(["File", "Field", "Problem"])
        table.verticalHeader().hide()
        table.setWordWrap(True)
        table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        table.horizontalHeader().setStretchLastSection(True)
        for r, p in enumerate(problems):
            for c, value in enumerate((p.file, p.field, p.message)):
                item = QTableWidgetItem(value)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
                table.setItem(r, c, item)
        table.resizeRowsToContents()
        self.table = table
        lay.addWidget(table, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        lay.addWidget(buttons)


def show_problems(
    parent: QWidget | None, title: str, text: str, problems: Sequence[Problem]
) -> None:
    ProblemsDialog(parent, title, text, problems).exec()
