"""Skill editor: front-matter fields, Markdown instructions with a rendered preview, and the
whole SKILL.md as raw text (parsed exactly as folder import parses it)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QPlainTextEdit,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from core.harness import Problem, Skill
from studio.logic.components import parse_skill_text, skill_file_text, skill_from_fields
from studio.pages.harness.editor_base import ComponentEditor
from studio.session import EditSession
from studio.widgets.common import CodeEdit, Field, Segmented, label, set_markdown


class SkillEditor(ComponentEditor):
    attr = "skills"
    rename_kind = "skill"
    noun = "Skill"
    icon_name = "skill"

    def __init__(self, session: EditSession, parent: QWidget | None = None) -> None:
        super().__init__(session, parent)
        self.kind = Segmented([("reply", "Reply"), ("strategy", "Strategy")])
        kind = Field(
            "Kind",
            self.kind,
            "Reply: one must be loaded before answering. Strategy: optional tool chains.",
        )
        self.add_header("The id the model passes to the skill loader.", ("kind", kind), 64, (3, 2))
        self.name.setPlaceholderText("lowercase-with-hyphens")
        self.description.setPlaceholderText(
            "What the skill does, and when the model should load it."
        )

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        # Instructions: editor | preview
        split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 8, 0, 0)
        ll.setSpacing(6)
        ll.addWidget(label("Markdown", "SubTitle"))
        self.markdown = CodeEdit()
        self.markdown.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.markdown.setPlaceholderText(
            "# Skill\n\nThe steps the model follows once it loads this skill."
        )
        ll.addWidget(self.markdown, 1)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 8, 0, 0)
        rl.setSpacing(6)
        rl.addWidget(label("Preview", "SubTitle"))
        self.preview = QTextBrowser()
        self.preview.setObjectName("Preview")
        self.preview.setOpenExternalLinks(False)
        rl.addWidget(self.preview, 1)
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([500, 500])
        self.fields["body"] = Field("", split)
        self.fields["body"].title.hide()
        self.tabs.addTab(self.fields["body"], "Instructions")
        self.add_raw_tab(
            "SKILL.md",
            "The whole SKILL.md: YAML front matter between --- lines, then the body. "
            "Edits apply as soon as the file parses.",
            skill_file_text,
            wrap=True,
        )
        self.body.addWidget(self.tabs, 1)

        self._preview_timer = QTimer(self)
        self._preview_timer.setSingleShot(True)
        self._preview_timer.setInterval(150)
        self._preview_timer.timeout.connect(self._render_preview)

        self.name.textEdited.connect(lambda _t: self.edited("name"))
        self.description.textChanged.connect(lambda: self.edited("description"))
        self.kind.changed.connect(lambda _v: self.edited("kind"))
        self.enabled.toggled.connect(lambda _v: self.edited("enabled"))
        self.markdown.textChanged.connect(self._body_changed)
        self.description.textChanged.connect(self._count)

    def _count(self) -> None:
        n = len(self.description.toPlainText())
        self.fields["description"].aside.setText(f"{n} / 1024")

    def _body_changed(self) -> None:
        self._preview_timer.start()
        self.edited("body")

    def _render_preview(self) -> None:
        set_markdown(self.preview, self.markdown.toPlainText())

    # ------------------------------------------------------------------ editor API

    def fill(self, item: Skill) -> None:
        self.name.setText(item.name)
        self.kind.set_value(item.kind.value)
        self.enabled.setChecked(item.enabled)
        if self.description.toPlainText() != item.description:
            self.description.setPlainText(item.description)
        if self.markdown.toPlainText() != item.body:
            self.markdown.setPlainText(item.body)
        self._preview_timer.start()
        self._raw_stale = True
        self._sync_raw()
        self.clear_raw_problems()
        self._count()

    def build(self, current: Skill) -> Skill:
        if self.merge_field == "raw":
            return self._build_raw()
        return skill_from_fields(
            name=self.name.text().strip(),
            description=self.description.toPlainText(),
            body=self.markdown.toPlainText(),
            kind=self.kind.value(),
            enabled=self.enabled.isChecked(),
            base=current,
        )

    def _build_raw(self) -> Skill:
        assert self.session.doc is not None
        current = self.current()
        file = f"skills/{current.name}/SKILL.md" if current is not None else None
        skill = parse_skill_text(self.raw.toPlainText(), self.session.doc.harness, file)
        if current is not None and current.files:
            # SKILL.md's text holds no other file: keep the skill's scripts/, references/ …
            skill = skill.model_copy(update={"files": current.files})
        return skill

    def after_commit(self) -> None:
        super().after_commit()
        item = self.current()
        if item is None:
            return
        self._loading = True
        try:
            if self.merge_field == "raw":  # the form follows the raw text
                self.name.setText(item.name)
                self.kind.set_value(item.kind.value)
                self.enabled.setChecked(item.enabled)
                if self.description.toPlainText() != item.description:
                    self.description.setPlainText(item.description)
                if self.markdown.toPlainText() != item.body:
                    self.markdown.setPlainText(item.body)
                    self._render_preview()
            else:  # the raw text follows the form (regenerated when its tab is shown)
                self._raw_stale = True
                self._sync_raw()
            self.clear_raw_problems()
        finally:
            self._loading = False

    def show_other_problems(self, problems: list[Problem]) -> set[str]:
        if self.merge_field != "raw" and not any(
            p.field.startswith("front matter") for p in problems
        ):
            self.raw_banner.hide()
            self.raw.mark_line(None)
            return set()
        if self.merge_field != "raw":
            return set()
        return self.show_raw_problems(problems)

    def show_problems(self, problems: list[Problem]) -> None:
        if self.merge_field == "raw" and problems:
            for f in self.fields.values():
                f.set_error(None)
            self.show_other_problems(problems)
            self.banner.show_message(
                "error",
                "SKILL.md does not parse yet; the last valid version is kept until it does.",
                closable=False,
            )
            return
        super().show_problems(problems)

    def capture(self) -> dict[str, Any]:
        return {
            **self.header_state(),
            "kind": self.kind.value(),
            "body": self.markdown.toPlainText(),
            **self.raw_state(),
        }

    def restore(self, raw: dict[str, Any]) -> None:
        self.restore_header(raw)
        self.kind.set_value(raw["kind"])
        self.markdown.setPlainText(raw["body"])
        self._render_preview()
        self.restore_raw_state(raw)

    def apply_raw_now(self) -> None:
        """Parse the raw tab immediately (tests, and leaving the tab)."""
        self.merge_field = "raw"
        self.commit()
