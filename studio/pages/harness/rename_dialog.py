"""Rename a tool or a skill as a refactoring: the places that name it, previewed, applied as
one undoable step (core/hsa/refactor.py does the rename; this is its view).

Places that must follow (the name, hook matchers and schemas, bindings) are listed checked and
cannot be unchecked; prose that mentions the name (a skill's body, a prompt section, a
reminder) can be left as written by unchecking it. A name that clashes or a rename that cannot
be done safely is said under the name field and Rename stays off."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from studio.widgets.common import button, label
from studio.widgets.diffview import SideBySideDiff

if TYPE_CHECKING:
    from core.harness import Harness
    from core.hsa.refactor import Place, RenameKind, RenamePlan


class RenameDialog(QDialog):
    def __init__(
        self, parent: QWidget | None, harness: Harness, kind: RenameKind, old: str
    ) -> None:
        super().__init__(parent)
        self.harness, self.kind, self.old = harness, kind, old
        self.plan: RenamePlan | None = None
        self.setWindowTitle(f"Rename {kind} {old}")
        self.resize(900, 620)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(20, 18, 20, 16)
        lay.setSpacing(10)
        head = QLabel(f"Rename {kind} {old}")
        head.setObjectName("SectionTitle")
        lay.addWidget(head)
        lay.addWidget(
            label(
                "Every place that names it follows. Uncheck prose you want to keep as written; "
                "names, matchers, schemas and bindings always follow.",
                "Muted",
                wrap=True,
            )
        )
        row = QHBoxLayout()
        row.addWidget(label("New name", "FieldLabel"))
        self.name = QLineEdit(old)
        self.name.selectAll()
        row.addWidget(self.name, 1)
        lay.addLayout(row)
        self.status = label("", "FieldHint", wrap=True)
        lay.addWidget(self.status)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.places = QListWidget()
        self.places.setMinimumWidth(260)
        self.diff = SideBySideDiff("Now", "After the rename")
        split.addWidget(self.places)
        split.addWidget(self.diff)
        split.setStretchFactor(1, 3)
        lay.addWidget(split, 1)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.cancel = button("Cancel")
        self.cancel.clicked.connect(self.reject)
        self.ok = button("Rename", "check", "primary")
        self.ok.clicked.connect(self.accept)
        self.ok.setEnabled(False)
        buttons.addWidget(self.cancel)
        buttons.addWidget(self.ok)
        lay.addLayout(buttons)
        self.name.textChanged.connect(self.refresh)
        self.places.currentRowChanged.connect(self._show_place)
        self.refresh()

    def refresh(self) -> None:
        from core.hsa.refactor import RenameRefused, plan_rename

        self.places.clear()
        self.diff.set_texts("", "")
        new = self.name.text().strip()
        self.plan = None
        if new == self.old:
            self._say("Type the new name.", error=False)
            return
        try:
            self.plan = plan_rename(self.harness, self.kind, self.old, new)
        except RenameRefused as exc:
            self._say(str(exc), error=True)
            return
        for place in self.plan.places:
            item = QListWidgetItem(f"{place.where}\n{place.field}")
            flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
            if place.optional:
                flags |= Qt.ItemFlag.ItemIsUserCheckable
            item.setFlags(flags)
            item.setCheckState(Qt.CheckState.Checked)
            item.setToolTip("prose: may be kept as written" if place.optional else "must follow")
            self.places.addItem(item)
        count = len(self.plan.places)
        self._say(f"{count} place{'s' if count != 1 else ''} change.", error=False)
        self.places.setCurrentRow(0)

    def _say(self, text: str, *, error: bool) -> None:
        self.status.setObjectName("FieldError" if error else "FieldHint")
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)
        self.status.setText(text)
        self.ok.setEnabled(not error and self.plan is not None)

    def _show_place(self, row: int) -> None:
        if self.plan is None or not 0 <= row < len(self.plan.places):
            return
        place = self.plan.places[row]
        self.diff.set_texts(place.before, place.after, wrap=True)

    def kept(self) -> list[Place]:
        """The prose places the operator unchecked (left as written)."""
        if self.plan is None:
            return []
        return [
            place
            for i, place in enumerate(self.plan.places)
            if self.places.item(i).checkState() != Qt.CheckState.Checked
        ]

    def result_harness(self) -> Harness | None:
        """The harness to apply (None until a valid new name is typed)."""
        return None if self.plan is None else self.plan.apply(self.kept())
