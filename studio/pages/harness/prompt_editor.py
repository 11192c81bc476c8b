"""Prompt pipeline editor: sections (drag to reorder, on/off), style, variables, the selected
section's template, and the system prompt rendered live as the model will see it."""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.harness import HarnessError, Problem, PromptPipeline, SectionKind, render_system_prompt
from core.harness.checks import cross_check
from core.harness.errors import problems_from_validation
from studio import theme
from studio.logic.document import Draft, Snapshot
from studio.session import EditSession
from studio.widgets.common import Banner, CodeEdit, Field, Segmented, label, tool_button

KIND_NOTE = {
    SectionKind.SKILL_INDEX: "Generated: the enabled skills. The template is an optional intro.",
    SectionKind.TOOL_BLOCK: "Generated: the tool schemas and the <tool_call> format.",
    SectionKind.TEXT: "Your text. Use ${variable} for values from the variables table.",
}
_keys = itertools.count(1)


RENDERED_BESIDE_FROM = 860  # editor width (px) from which the rendered prompt fits beside


class PromptEditor(QWidget):
    attr = "prompt"

    def __init__(self, session: EditSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.sections: list[dict[str, Any]] = []
        self.variables: list[list[str]] = []
        self._loading = False
        self._current_key: int | None = None
        self._shown: Any = None
        self._last_problems: list[Problem] = []
        self.merge_field = "prompt"
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(220)
        self._timer.timeout.connect(self.commit)
        self._render_timer = QTimer(self)
        self._render_timer.setSingleShot(True)
        self._render_timer.setInterval(120)
        self._render_timer.timeout.connect(self.render_preview)
        session.changed.connect(self._on_changed)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(24, 16, 24, 20)
        outer.setSpacing(10)
        head = QHBoxLayout()
        icon = label()
        theme.bind_icon(icon, "prompt", "accent", 20)
        head.addWidget(icon)
        head.addWidget(label("System prompt", "SectionTitle"))
        head.addStretch(1)
        self.show_rendered = QToolButton()
        self.show_rendered.setObjectName("Toggle")
        self.show_rendered.setText("Rendered")
        self.show_rendered.setCheckable(True)
        self.show_rendered.setChecked(True)
        self.show_rendered.setCursor(Qt.CursorShape.PointingHandCursor)
        self.show_rendered.setToolTip(
            "Show the rendered system prompt beside the template (hidden by itself while the "
            "editor is narrow, until you choose)"
        )
        self._rendered_chosen = False  # once the user clicks, the width no longer decides
        self.show_rendered.clicked.connect(lambda: setattr(self, "_rendered_chosen", True))
        head.addWidget(self.show_rendered)
        head.addSpacing(10)
        head.addWidget(label("Style", "FieldLabel"))
        self.style_picker = Segmented(
            [("markdown", "Markdown"), ("xml", "XML"), ("plain", "Plain"), ("json", "JSON")]
        )
        head.addWidget(self.style_picker)
        outer.addLayout(head)
        self.banner = Banner()
        outer.addWidget(self.banner)

        split = QSplitter(Qt.Orientation.Horizontal)
        # ---- left: sections + variables
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.setSpacing(8)
        sh = QHBoxLayout()
        sh.addWidget(label("Sections", "SubTitle"))
        sh.addStretch(1)
        self.add_section = tool_button("plus", "Add a text section")
        self.remove_section = tool_button("trash", "Remove the selected section")
        sh.addWidget(self.add_section)
        sh.addWidget(self.remove_section)
        ll.addLayout(sh)
        frame = QFrame()
        frame.setObjectName("ListFrame")
        fl = QVBoxLayout(frame)
        fl.setContentsMargins(4, 4, 4, 4)
        self.section_list = QListWidget()
        self.section_list.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.section_list.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.section_list.setToolTip("Drag to reorder; untick to leave a section out of the prompt")
        fl.addWidget(self.section_list)
        ll.addWidget(frame, 3)
        ll.addWidget(label("Drag to reorder · untick to leave out", "FieldHint"))
        vh = QHBoxLayout()
        vh.addWidget(label("Variables", "SubTitle"))
        vh.addStretch(1)
        self.add_var = tool_button("plus", "Add a variable")
        self.remove_var = tool_button("trash", "Remove the selected variable")
        vh.addWidget(self.add_var)
        vh.addWidget(self.remove_var)
        ll.addLayout(vh)
        vframe = QFrame()
        vframe.setObjectName("ListFrame")
        vfl = QVBoxLayout(vframe)
        vfl.setContentsMargins(2, 2, 2, 2)
        self.var_table = QTableWidget(0, 2)
        self.var_table.setHorizontalHeaderLabels(["Name", "Value"])
        self.var_table.verticalHeader().hide()
        self.var_table.horizontalHeader().setSectionResizeMode(
            0, QHeaderView.ResizeMode.ResizeToContents
        )
        self.var_table.horizontalHeader().setStretchLastSection(True)
        self.var_table.setShowGrid(False)
        vfl.addWidget(self.var_table)
        ll.addWidget(vframe, 2)
        self.var_error = label("", "FieldError", wrap=True)
        self.var_error.hide()
        ll.addWidget(self.var_error)
        split.addWidget(left)

        # ---- middle: selected section
        mid = QWidget()
        ml = QVBoxLayout(mid)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.setSpacing(10)
        row = QHBoxLayout()
        self.s_title = QLineEdit()
        self.s_id = QLineEdit()
        self.f_title = Field("Title", self.s_title)
        self.f_id = Field("Id", self.s_id, "Also the template's file name: prompt/<id>.md")
        row.addWidget(self.f_title, 3, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.f_id, 2, Qt.AlignmentFlag.AlignTop)
        ml.addLayout(row)
        self.kind_note = label("", "FieldHint", wrap=True)
        ml.addWidget(self.kind_note)
        self.s_template = CodeEdit()
        self.s_template.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.f_template = Field("Template", self.s_template)
        ml.addWidget(self.f_template, 1)
        split.addWidget(mid)

        # ---- right: rendered prompt
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.setSpacing(6)
        rh = QHBoxLayout()
        rh.addWidget(label("Rendered", "SubTitle"))
        rh.addStretch(1)
        self.render_meta = label("", "Faint", wrap=True)
        rh.addWidget(self.render_meta)
        rl.addLayout(rh)
        self.rendered = CodeEdit(read_only=True)
        self.rendered.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        rl.addWidget(self.rendered, 1)
        split.addWidget(right)
        self.rendered_pane = right
        self.show_rendered.toggled.connect(self._show_rendered)
        split.setSizes([260, 420, 460])
        split.setStretchFactor(1, 1)
        split.setStretchFactor(2, 1)
        outer.addWidget(split, 1)

        self.style_picker.changed.connect(lambda _v: self.edited("style"))
        self.section_list.currentRowChanged.connect(self._select_row)
        self.section_list.itemChanged.connect(self._item_checked)
        self.section_list.model().rowsMoved.connect(self._rows_moved)
        self.s_title.textEdited.connect(lambda t: self._section_field("title", t))
        self.s_id.textEdited.connect(lambda t: self._section_field("id", t))
        self.s_template.textChanged.connect(
            lambda: self._section_field("template", self.s_template.toPlainText())
        )
        self.add_section.clicked.connect(self._add_section)
        self.remove_section.clicked.connect(self._remove_section)
        self.add_var.clicked.connect(self._add_variable)
        self.remove_var.clicked.connect(self._remove_variable)
        self.var_table.itemChanged.connect(self._var_changed)

    # ------------------------------------------------------------------ loading

    @property
    def key(self) -> str:
        return "prompt"

    def reload(self) -> None:
        if self.session.doc is None:
            return
        pipeline = self.session.doc.harness.prompt
        self._shown = pipeline
        draft = self.session.draft(self.key)
        if draft is not None:
            self._restore(draft.raw)
            self._show(draft.problems)
        else:
            keep = self._current_index()
            self.sections = [
                {
                    "_key": next(_keys),
                    "id": s.id,
                    "title": s.title,
                    "kind": s.kind.value,
                    "template": s.template,
                    "enabled": s.enabled,
                }
                for s in pipeline.sections
            ]
            self.variables = [[k, v] for k, v in pipeline.variables.items()]
            self._style = pipeline.style.value
            self._fill(keep)
            self._show([])
        self.render_preview()

    def _fill(self, row: int | None = None) -> None:
        self._loading = True
        try:
            self.style_picker.set_value(self._style)
            self.section_list.clear()
            for s in self.sections:
                item = QListWidgetItem(self._item_text(s))
                item.setData(Qt.ItemDataRole.UserRole, s["_key"])
                item.setFlags(
                    item.flags() | Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsDragEnabled
                )
                item.setCheckState(
                    Qt.CheckState.Checked if s["enabled"] else Qt.CheckState.Unchecked
                )
                icon = {"skill_index": "skill", "tool_block": "tool"}.get(s["kind"], "section")
                item.setIcon(theme.icon(icon))
                self.section_list.addItem(item)
            self.var_table.setRowCount(0)
            for name, value in self.variables:
                r = self.var_table.rowCount()
                self.var_table.insertRow(r)
                self.var_table.setItem(r, 0, QTableWidgetItem(name))
                self.var_table.setItem(r, 1, QTableWidgetItem(value))
        finally:
            self._loading = False
        if self.sections:
            target = min(row if row is not None and row >= 0 else 0, len(self.sections) - 1)
            self.section_list.setCurrentRow(target)
            self._select_row(target)

    @staticmethod
    def _item_text(s: dict[str, Any]) -> str:
        suffix = {"skill_index": "  · skills", "tool_block": "  · tools"}.get(s["kind"], "")
        return f"{s['title']}{suffix}"

    def _current_index(self) -> int | None:
        row = self.section_list.currentRow()
        return row if row >= 0 else None

    def select_section(self, section_id: str) -> None:
        for i, s in enumerate(self.sections):
            if s["id"] == section_id:
                self.section_list.setCurrentRow(i)
                return

    def _select_row(self, row: int) -> None:
        if row < 0 or row >= len(self.sections):
            return
        s = self.sections[row]
        self._current_key = s["_key"]
        self._loading = True
        try:
            self.s_title.setText(s["title"])
            self.s_id.setText(s["id"])
            if self.s_template.toPlainText() != s["template"]:
                self.s_template.setPlainText(s["template"])
            self.kind_note.setText(KIND_NOTE[SectionKind(s["kind"])])
            self.f_template.title.setText(
                "Intro template (optional)" if s["kind"] != "text" else "Template"
            )
        finally:
            self._loading = False
        self._show(self._last_problems)

    # ------------------------------------------------------------------ edits

    def _section(self) -> dict[str, Any] | None:
        return next((s for s in self.sections if s["_key"] == self._current_key), None)

    def _section_field(self, field: str, value: str) -> None:
        if self._loading:
            return
        s = self._section()
        if s is None:
            return
        s[field] = value
        if field == "title":
            item = self.section_list.currentItem()
            if item is not None:
                self._loading = True
                item.setText(self._item_text(s))
                self._loading = False
        self.edited(f"{s['_key']}.{field}")

    def _item_checked(self, item: QListWidgetItem) -> None:
        if self._loading:
            return
        key = item.data(Qt.ItemDataRole.UserRole)
        for s in self.sections:
            if s["_key"] == key:
                s["enabled"] = item.checkState() == Qt.CheckState.Checked
        self.edited("enabled")
        self.commit()

    def _rows_moved(self, *_args: Any) -> None:
        if self._loading:
            return
        order = [
            self.section_list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.section_list.count())
        ]
        by_key = {s["_key"]: s for s in self.sections}
        self.sections = [by_key[k] for k in order if k in by_key]
        self.edited("order")
        self.commit()

    def move_section(self, src: int, dst: int) -> None:
        """Reorder as a drag would (keyboard and tests)."""
        item = self.section_list.takeItem(src)
        self._loading = True
        self.section_list.insertItem(dst, item)
        self._loading = False
        self.section_list.setCurrentRow(dst)
        self._rows_moved()

    def _add_section(self) -> None:
        taken = {s["id"] for s in self.sections}
        n = next(i for i in itertools.count(1) if f"section-{i}" not in taken)
        s = {
            "_key": next(_keys),
            "id": f"section-{n}",
            "title": "New section",
            "kind": "text",
            "template": "Write this section.",
            "enabled": True,
        }
        row = (self._current_index() or len(self.sections) - 1) + 1
        self.sections.insert(row, s)
        self._fill(row)
        self.edited("add")
        self.commit()

    def _remove_section(self) -> None:
        row = self._current_index()
        if row is None:
            return
        del self.sections[row]
        self._fill(max(0, row - 1))
        self.edited("remove")
        self.commit()

    def _add_variable(self) -> None:
        taken = {n for n, _ in self.variables}
        name = next(f"var_{i}" for i in itertools.count(1) if f"var_{i}" not in taken)
        self.variables.append([name, ""])
        self._fill(self._current_index())
        self.var_table.setCurrentCell(len(self.variables) - 1, 0)
        self.edited("variables")
        self.commit()

    def _remove_variable(self) -> None:
        row = self.var_table.currentRow()
        if 0 <= row < len(self.variables):
            del self.variables[row]
            self._fill(self._current_index())
            self.edited("variables")
            self.commit()

    def _var_changed(self, item: QTableWidgetItem) -> None:
        if self._loading:
            return
        r, c = item.row(), item.column()
        if r < len(self.variables):
            self.variables[r][c] = item.text()
        self.edited("variables")

    def edited(self, field: str) -> None:
        if self._loading or self.session.doc is None:
            return
        self.merge_field = field
        self._timer.start()
        self._render_timer.start()

    def flush(self) -> None:
        if self._timer.isActive():
            self.commit()

    def _pipeline(self) -> PromptPipeline:
        data = {
            "style": self.style_picker.value(),
            "variables": {},
            "sections": [{k: v for k, v in s.items() if k != "_key"} for s in self.sections],
        }
        problems: list[Problem] = []
        seen: set[str] = set()
        for name, value in self.variables:
            name = name.strip()
            if not name:
                problems.append(
                    Problem("harness.yaml", "prompt.variables", "a variable needs a name")
                )
            elif name in seen:
                problems.append(
                    Problem("harness.yaml", "prompt.variables", f"duplicate variable {name!r}")
                )
            seen.add(name)
            data["variables"][name] = value
        try:
            pipeline = PromptPipeline.model_validate(data)
        except ValidationError as exc:
            problems += problems_from_validation(exc, "harness.yaml", "prompt")
            raise HarnessError(problems) from None
        if problems:
            raise HarnessError(problems)
        return pipeline

    def commit(self) -> None:
        self._timer.stop()
        if self.session.doc is None:
            return
        try:
            pipeline = self._pipeline()
            if pipeline != self.session.doc.harness.prompt:
                self.session.push(
                    Snapshot("prompt", pipeline),
                    "Edit prompt",
                    origin=self,
                    merge_key=("prompt", self.merge_field),
                )
                self._shown = pipeline
        except HarnessError as exc:
            self.session.set_draft(self.key, Draft("Prompt", self._capture(), exc.problems))
            self._show(exc.problems)
            self.render_preview()
            return
        self.session.set_draft(self.key, None)
        self._show([])
        self.render_preview()

    def _show(self, problems: list[Problem]) -> None:
        self._last_problems = problems
        s = self._section()
        title = id_ = template = None
        loose: list[str] = []
        var_errors: list[str] = []
        index = self.sections.index(s) if s is not None else -1
        for p in problems:
            f = p.field
            if f.startswith(f"prompt.sections.{index}."):
                sub = f.rsplit(".", 1)[-1]
                if sub == "title":
                    title = p.message
                elif sub == "id":
                    id_ = p.message
                else:
                    template = p.message
            elif f.startswith("prompt.variables"):
                var_errors.append(p.message)
            else:
                loose.append(str(p))
        self.f_title.set_error(title)
        self.f_id.set_error(id_)
        # cross-component problems about this section's template (unknown ${variable})
        if s is not None and self.session.doc is not None and not problems:
            cross = [
                p.message
                for p in cross_check(self.session.doc.harness)
                if p.file == f"prompt/{s['id']}.md"
            ]
            template = "; ".join(cross) or None
        self.f_template.set_error(template)
        self.var_error.setText("; ".join(var_errors))
        self.var_error.setVisible(bool(var_errors))
        if loose:
            self.banner.show_message("error", "\n".join(loose), closable=False)
        else:
            self.banner.hide()

    def _show_rendered(self, on: bool) -> None:
        self.rendered_pane.setVisible(on)
        self.render_preview()  # it was not kept up to date while hidden

    def render_preview(self) -> None:
        if self.session.doc is None or not self.show_rendered.isChecked():
            return  # (a whole-prompt render per edit, for a pane nobody sees)
        try:
            text = render_system_prompt(self.session.doc.harness)
        except HarnessError as exc:
            self.rendered.set_text_keep(f"The prompt does not render:\n{exc}")
            self.render_meta.setText("")
            return
        self.rendered.set_text_keep(text)
        n = sum(1 for s in self.session.doc.harness.prompt.sections if s.enabled)
        self.render_meta.setText(
            f"{len(text):,} chars · ~{max(1, len(text) // 4):,} tokens · {n} sections"
        )

    def _on_changed(self, attr: str, origin: object) -> None:
        if self.session.doc is None:
            return
        if (
            attr == "prompt"
            and origin is not self
            and self.session.doc.harness.prompt is not self._shown
        ):
            self.session.set_draft(self.key, None)
            self.reload()
        elif self.isVisible():
            self._render_timer.start()

    def showEvent(self, event: Any) -> None:
        self.render_preview()
        super().showEvent(event)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if not self._rendered_chosen:
            self.show_rendered.setChecked(self.width() >= RENDERED_BESIDE_FROM)

    # ------------------------------------------------------------------ drafts

    def _capture(self) -> dict[str, Any]:
        return {
            "sections": [dict(s) for s in self.sections],
            "variables": [list(v) for v in self.variables],
            "style": self.style_picker.value(),
            "row": self._current_index(),
        }

    def _restore(self, raw: dict[str, Any]) -> None:
        self.sections = [dict(s) for s in raw["sections"]]
        self.variables = [list(v) for v in raw["variables"]]
        self._style = raw["style"]
        self._fill(raw.get("row"))
