"""The Drafts tab: logged production conversations as task drafts (core/taskfile/drafts.py),
reviewed one by one into a task file: accept into the train or test split with the facts fixed,
or drop. The same files and rules as `hat data drafts`; the widgets only show and ask."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core.taskfile.drafts import (
    DRAFT_KEY,
    ChatLogError,
    accept,
    add_drafts,
    drop,
    load_drafts,
    read_chat_log,
)
from core.taskfile.models import TaskFileError
from studio.context import StudioContext
from studio.dialogs import choose_file, choose_save_file
from studio.pages.data.widgets import Pane, bar_row, list_frame
from studio.widgets.common import Banner, button, label
from studio.widgets.tables import Column, RecordTable


def _calls(draft: dict[str, Any]) -> str:
    return ", ".join(str(c.get("tool")) for c in draft.get("gold_calls", [])) or "no calls"


def draft_detail(draft: dict[str, Any]) -> str:
    """The draft as the reviewer reads it: the turns, the calls with their arguments, the
    reply the agent gave, and what was masked."""
    lines = [f"{t['role']}: {t['content']}" for t in draft.get("history", [])]
    lines.append(f"user: {draft.get('message', '')}")
    for call in draft.get("gold_calls", []):
        lines.append(f"  call {call.get('tool')} {call.get('arguments', {})}")
    if draft.get("skills"):
        lines.append(f"  skills loaded: {', '.join(draft['skills'])}")
    lines.append(f"agent: {draft.get('reference', '')}")
    masked = draft.get(DRAFT_KEY, {}).get("masked") or {}
    if masked:
        lines.append("masked: " + ", ".join(f"{n} {k}" for k, n in sorted(masked.items())))
    return "\n".join(lines)


class DraftsView(QWidget):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 12, 24, 16)
        lay.setSpacing(10)

        bar, row = bar_row()
        row.addWidget(label("Task file", "FieldLabel"))
        self.task_file = QLineEdit()
        self.task_file.setPlaceholderText("The task file accepted drafts join (JSONL)")
        row.addWidget(self.task_file, 1)
        self.choose_button = button("Choose…", "folder", "", "Pick the task file")
        row.addWidget(self.choose_button)
        self.import_button = button(
            "Import chat log…", "data", "primary",
            "Read a log of conversations (OpenAI chat JSONL) as drafts; personal data is masked",
        )  # fmt: skip
        row.addWidget(self.import_button)
        self.count = label("", "Faint")
        row.addWidget(self.count)
        lay.addWidget(bar)
        self.banner = Banner()
        lay.addWidget(self.banner)

        split = QSplitter(Qt.Orientation.Vertical)
        self.table = RecordTable(
            [
                Column("id", "Draft", 170, kind="mono"),
                Column("message", "User message", None),
                Column("calls", "Calls", 220, get=_calls, tone=lambda r: "text-muted"),
                Column(
                    "source",
                    "From",
                    200,
                    get=lambda r: r.get(DRAFT_KEY, {}).get("source", ""),
                    tone=lambda r: "text-faint",
                ),
            ],
            key=lambda r: r["id"],
        )
        split.addWidget(list_frame(self.table))

        review = Pane("Review")
        review.aside.setText("fix the facts a correct reply states, then accept or drop")
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        review.body.addWidget(self.detail, 1)
        form = QHBoxLayout()
        form.addWidget(label("Facts", "FieldLabel"))
        self.facts = QLineEdit()
        self.facts.setPlaceholderText("phrases a correct reply states, separated by ;")
        form.addWidget(self.facts, 1)
        self.split_choice = QComboBox()
        self.split_choice.addItem("into train", "train")
        self.split_choice.addItem("into test", "test")
        form.addWidget(self.split_choice)
        self.accept_button = button("Accept", "check", "primary", "Add it to the task file")
        self.drop_button = button("Drop", "trash", "", "Remove this draft")
        form.addWidget(self.accept_button)
        form.addWidget(self.drop_button)
        review.body.addLayout(form)
        split.addWidget(review)
        split.setSizes([320, 300])
        lay.addWidget(split, 1)

        self.choose_button.clicked.connect(self._choose_task_file)
        self.import_button.clicked.connect(self._choose_log)
        self.task_file.editingFinished.connect(self.refresh)
        self.table.rowSelected.connect(self._show)
        self.accept_button.clicked.connect(self.accept_current)
        self.drop_button.clicked.connect(self.drop_current)
        self._show(None)

    # ------------------------------------------------------------------ files

    def path(self) -> Path | None:
        text = self.task_file.text().strip()
        return Path(text).expanduser() if text else None

    def set_task_file(self, path: str | Path) -> None:
        self.task_file.setText(str(path))
        self.refresh()

    def _choose_task_file(self) -> None:
        chosen = choose_save_file(
            self, "Task file the drafts join", "tasks.jsonl", "JSONL (*.jsonl)"
        )
        if chosen:
            self.set_task_file(chosen)

    def _choose_log(self) -> None:
        chosen = choose_file(self, "Chat log (OpenAI chat JSONL)", "JSONL (*.jsonl)")
        if chosen:
            self.import_log(chosen)

    def import_log(self, log: str | Path) -> None:
        """Every conversation of `log` as a draft of the task file (a bad line is named)."""
        target = self.path()
        if target is None:
            self.banner.show_message("warning", "Choose the task file the drafts are for first.")
            return
        try:
            report = read_chat_log(Path(log))
            added = add_drafts(target, report.drafts)
        except (ChatLogError, TaskFileError) as exc:
            self.banner.show_message("error", str(exc))
            return
        masked = sum(report.masked.values())
        text = f"{added} draft(s) from {Path(log).name}; {masked} personal value(s) masked."
        if report.problems:
            shown = "\n".join(report.problems[:5])
            more = f"\n… and {len(report.problems) - 5} more" if len(report.problems) > 5 else ""
            self.banner.show_message("warning", f"{text} Skipped:\n{shown}{more}")
        else:
            self.banner.show_message("success", text)
        self.refresh()

    def refresh(self) -> None:
        target = self.path()
        try:
            drafts = load_drafts(target) if target is not None else []
        except TaskFileError as exc:
            self.banner.show_message("error", str(exc))
            drafts = []
        self.table.set_rows(drafts)
        self.count.setText(f"{len(drafts)} to review" if drafts else "")
        if drafts and self.table.current() is None:
            self.table.select_row(0)
        self._show(self.table.current())

    # ------------------------------------------------------------------ review

    def _show(self, draft: Any) -> None:
        self.accept_button.setEnabled(draft is not None)
        self.drop_button.setEnabled(draft is not None)
        self.facts.setEnabled(draft is not None)
        if draft is None:
            self.detail.setPlainText("")
            self.facts.clear()
            return
        self.detail.setPlainText(draft_detail(draft))
        facts = [f if isinstance(f, str) else f[0] for f in draft.get("facts", [])]
        self.facts.setText("; ".join(facts))

    def accept_current(self) -> None:
        draft, target = self.table.current(), self.path()
        if draft is None or target is None:
            return
        facts = [f.strip() for f in self.facts.text().split(";") if f.strip()]
        split = str(self.split_choice.currentData())
        try:
            task = accept(target, draft["id"], split=split, facts=facts)
        except TaskFileError as exc:
            self.banner.show_message("error", str(exc))
            return
        self.banner.show_message("success", f"{task.id} joined {target.name} ({split}).")
        self.refresh()

    def drop_current(self) -> None:
        draft, target = self.table.current(), self.path()
        if draft is None or target is None:
            return
        try:
            drop(target, draft["id"])
        except TaskFileError as exc:
            self.banner.show_message("error", str(exc))
            return
        self.refresh()
