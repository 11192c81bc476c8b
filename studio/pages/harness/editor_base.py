"""What every component editor shares: load a component by uid, validate input as the user
types (debounced), push valid edits to the session, keep broken input as a draft with its
problems shown at the fields they name."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from core.harness import HarnessError, Problem
from studio import theme
from studio.logic.document import Draft
from studio.session import EditSession
from studio.widgets.common import Banner, CodeEdit, Field, button, chip, label

DEBOUNCE_MS = 220
_LINE_RE = re.compile(r"line (\d+)")


def problem_line(problem: Problem) -> int | None:
    match = _LINE_RE.search(problem.field) or _LINE_RE.search(problem.message)
    return int(match.group(1)) if match else None


class ComponentEditor(QWidget):
    attr = ""
    rename_kind: Literal["tool", "skill"] | None = None
    """What `Rename…` renames (editors with a name header: skills and tools)."""
    open_rename: Any = None
    noun = ""
    icon_name = ""

    def __init__(self, session: EditSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.uid: int | None = None
        self._loading = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.commit)
        self.fields: dict[str, Field] = {}
        self.merge_field = "form"
        self._shown: Any = None
        session.changed.connect(self._on_changed)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        # Title strip
        head = QFrame()
        head.setObjectName("EditorHead")
        hl = QHBoxLayout(head)
        hl.setContentsMargins(24, 16, 24, 8)
        hl.setSpacing(10)
        self.head_icon = QLabel()
        theme.bind_icon(self.head_icon, self.icon_name or "skill", "accent", 20)
        self.head_title = label("", "SectionTitle")
        self.head_kind = chip(self.noun, "neutral")
        hl.addWidget(self.head_icon)
        hl.addWidget(self.head_title)
        hl.addWidget(self.head_kind)
        hl.addStretch(1)
        self.head_actions = QHBoxLayout()
        self.head_actions.setSpacing(6)
        hl.addLayout(self.head_actions)
        outer.addWidget(head)
        self.banner = Banner()
        bw = QWidget()
        bl = QVBoxLayout(bw)
        bl.setContentsMargins(24, 0, 24, 0)
        bl.addWidget(self.banner)
        outer.addWidget(bw)
        self.body = QVBoxLayout()
        self.body.setContentsMargins(24, 8, 24, 20)
        self.body.setSpacing(14)
        outer.addLayout(self.body, 1)

    def add_header(
        self,
        name_hint: str,
        second: tuple[str, Field],
        description_height: int,
        stretch: tuple[int, int] = (1, 1),
    ) -> None:
        """The Name | <second field> | Enabled row with the description under it (skills and
        tools); sets `self.name`, `self.enabled` and `self.description`."""
        form = QWidget()
        grid = QGridLayout(form)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(16)
        grid.setVerticalSpacing(12)
        self.name = QLineEdit()
        self.enabled = QCheckBox("Enabled")
        self.description = QPlainTextEdit()
        self.description.setFixedHeight(description_height)
        self.fields["name"] = Field("Name", self.name, name_hint)
        self.fields[second[0]] = second[1]
        self.fields["description"] = Field("Description", self.description)
        grid.addWidget(self.fields["name"], 0, 0)
        grid.addWidget(second[1], 0, 1)
        side = QVBoxLayout()
        side.setSpacing(8)
        side.addWidget(self.enabled)
        self.rename_button = button(
            "Rename…", "", "", "Rename it everywhere it is named: hooks, skills, the prompt"
        )
        self.rename_button.clicked.connect(self.rename)
        self.rename_button.setVisible(self.rename_kind is not None)
        side.addWidget(self.rename_button)
        side.addStretch(1)
        grid.addLayout(side, 0, 2)
        grid.addWidget(self.fields["description"], 1, 0, 1, 3)
        grid.setColumnStretch(0, stretch[0])
        grid.setColumnStretch(1, stretch[1])
        self.body.addWidget(form)

    def rename(self) -> None:
        """Rename the component as a refactoring (rename_dialog.py), one undoable step."""
        from studio.pages.harness.rename_dialog import RenameDialog

        self.flush()
        item = self.current()
        if item is None or self.session.doc is None or not self.rename_kind:
            return
        dialog = RenameDialog(self, self.session.doc.harness, self.rename_kind, item.name)
        self.open_rename = dialog  # tests reach the open dialog here
        try:
            if dialog.exec() != QDialog.DialogCode.Accepted or dialog.plan is None:
                return
            harness = dialog.result_harness()
            if harness is None:
                return
            self.session.replace_all(harness, dialog.plan.title, origin=None)
        finally:
            self.open_rename = None
        self.reload()

    # ------------------------------------------------------------------ the raw-file tab

    def add_raw_tab(
        self, title: str, hint: str, file_text: Callable[[Any], str], *, wrap: bool = False
    ) -> None:
        """The second tab: the component's whole file as text, applied as soon as it parses.
        Its text is regenerated from the component only when the tab is in front and out of
        date (a YAML/JSON dump per keystroke would be wasted while the form is showing)."""
        raw = QWidget()
        lay = QVBoxLayout(raw)
        lay.setContentsMargins(0, 8, 0, 0)
        lay.setSpacing(6)
        lay.addWidget(label(hint, "FieldHint", wrap=True))
        self.raw_banner = Banner()
        lay.addWidget(self.raw_banner)
        self.raw = CodeEdit()
        if wrap:
            self.raw.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        lay.addWidget(self.raw, 1)
        self.tabs.addTab(raw, title)
        self._file_text = file_text
        self._raw_stale = True
        self.tabs.currentChanged.connect(lambda _i: self._sync_raw())
        self.raw.textChanged.connect(lambda: self.edited("raw") if not self._loading else None)

    def _sync_raw(self) -> None:
        if not self._raw_stale or self.tabs.currentIndex() != 1:
            return
        item = self.current()
        if item is None:
            return
        was = self._loading
        self._loading = True
        try:
            self.raw.setPlainText(self._file_text(item))
        finally:
            self._loading = was
        self._raw_stale = False

    def header_state(self) -> dict[str, Any]:
        """The `add_header` fields, for `capture`."""
        return {
            "name": self.name.text(),
            "description": self.description.toPlainText(),
            "enabled": self.enabled.isChecked(),
        }

    def restore_header(self, raw: dict[str, Any]) -> None:
        self.name.setText(raw["name"])
        self.description.setPlainText(raw["description"])
        self.enabled.setChecked(raw["enabled"])

    def raw_state(self) -> dict[str, Any]:
        """The raw tab's text (only while it is what the user edits), mode and open tab."""
        return {
            "raw": self.raw.toPlainText() if self.merge_field == "raw" else "",
            "mode": self.merge_field,
            "tab": self.tabs.currentIndex(),
        }

    def restore_raw_state(self, raw: dict[str, Any]) -> None:
        self._raw_stale = raw.get("mode") != "raw"
        self.tabs.setCurrentIndex(raw.get("tab", 0))
        if not self._raw_stale:
            self.raw.setPlainText(raw["raw"])
        self._sync_raw()
        self.merge_field = raw.get("mode", "form")

    def clear_raw_problems(self) -> None:
        self.raw.mark_line(None)
        self.raw_banner.hide()

    def show_raw_problems(self, problems: list[Problem]) -> set[str]:
        """Problems of the raw text in its own banner, the first line they name marked;
        returns the messages shown (so the form does not repeat them)."""
        shown = set()
        lines = []
        for p in problems:
            where = f"{p.field}: " if p.field else ""
            lines.append(f"{p.file}: {where}{p.message}")
            shown.add(f"{where}{p.message}")
        self.raw_banner.show_message("error", "\n".join(lines), closable=False)
        self.raw.mark_line(next((problem_line(p) for p in problems if problem_line(p)), None))
        return shown

    # ------------------------------------------------------------------ identity

    @property
    def key(self) -> str:
        return f"{self.attr}:{self.uid}"

    @property
    def index(self) -> int | None:
        if self.uid is None or self.session.doc is None:
            return None
        return self.session.doc.index_of(self.attr, self.uid)

    def current(self) -> Any:
        i = self.index
        return None if i is None else self.session.doc.item(self.attr, i)  # type: ignore[union-attr]

    def show_component(self, uid: int) -> None:
        self.flush()
        self.uid = uid
        self.reload()

    def reload(self) -> None:
        item = self.current()
        if item is None:
            return
        self._shown = item
        self._loading = True
        try:
            draft = self.session.draft(self.key)
            self.fill(item)
            if draft is not None:
                self.restore(draft.raw)
                self.show_problems(draft.problems)
            else:
                self.show_problems([])
            self.head_title.setText(self.title_of(item))
        finally:
            self._loading = False

    def title_of(self, item: Any) -> str:
        return str(item.name)

    def _on_changed(self, attr: str, origin: object) -> None:
        if attr != self.attr or origin is self or self.uid is None:
            return
        item = self.current()
        if item is None or item is self._shown:
            return  # another component of the same kind changed
        # Undo/redo (or another view) changed this component: show it, drop the stale draft.
        self.session.set_draft(self.key, None)
        self.reload()

    # ------------------------------------------------------------------ editing

    def edited(self, field: str = "form") -> None:
        if self._loading or self.uid is None:
            return
        self.merge_field = field
        self._timer.start()

    def flush(self) -> None:
        if self._timer.isActive():
            self._timer.stop()
            self.commit()

    def commit(self) -> None:
        self._timer.stop()
        i, uid = self.index, self.uid
        if i is None or uid is None or self.session.doc is None:
            return
        current = self.session.doc.item(self.attr, i)
        try:
            new = self.build(current)
            if new != current:
                snap = self.session.doc.replaced(self.attr, i, new)
                self.session.push(
                    snap,
                    f"Edit {self.noun.lower()} {{name}}",
                    origin=self,
                    merge_key=(self.uid, self.merge_field),
                    subject=(self.attr, uid),
                )
                self._shown = new
        except HarnessError as exc:
            problems = [self.translate(p) for p in exc.problems]
            name = getattr(current, "name", "")
            self.session.set_draft(self.key, Draft(f"{self.noun} {name}", self.capture(), problems))
            self.show_problems(problems)
            return
        self.session.set_draft(self.key, None)
        self.show_problems([])
        self.after_commit()

    def after_commit(self) -> None:
        item = self.current()
        if item is not None:
            self.head_title.setText(self.title_of(item))

    def translate(self, problem: Problem) -> Problem:
        """Harness-level problems (duplicate names) point at this editor's name field."""
        if problem.file == "harness.yaml" and problem.field in (
            "skills",
            "tools",
            "hooks",
            "settings.load_skill_tool",
        ):
            return Problem(problem.file, "name", problem.message)
        return problem

    def show_problems(self, problems: list[Problem]) -> None:
        by_field: dict[str, list[str]] = {}
        loose: list[str] = []
        for p in problems:
            target = self.field_for(p.field)
            if target is None:
                where = f"{p.field}: " if p.field else ""
                loose.append(f"{where}{p.message}")
            else:
                by_field.setdefault(target, []).append(p.message)
        for name, f in self.fields.items():
            msgs = by_field.get(name)
            f.set_error("; ".join(msgs) if msgs else None)
        extra = self.show_other_problems(problems)
        loose = [m for m in loose if m not in extra]
        if loose:
            self.banner.show_message("error", "\n".join(loose), closable=False)
        else:
            self.banner.hide()

    def field_for(self, field: str) -> str | None:
        if field in self.fields:
            return field
        head = field.split(".", 1)[0]
        return head if head in self.fields else None

    def show_other_problems(self, problems: list[Problem]) -> set[str]:
        """Editors with special places for problems (raw text, parameter rows) show them and
        return the messages they took."""
        return set()

    # ------------------------------------------------------------------ per editor

    def fill(self, item: Any) -> None:
        raise NotImplementedError

    def build(self, current: Any) -> Any:
        raise NotImplementedError

    def capture(self) -> dict[str, Any]:
        raise NotImplementedError

    def restore(self, raw: dict[str, Any]) -> None:
        raise NotImplementedError
