"""The harness overview: what is in it, loop settings, and every open problem in one list."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core.harness import HarnessError, Settings
from core.harness.errors import problems_from_validation
from studio import theme
from studio.logic.document import Draft, Snapshot
from studio.session import EditSession
from studio.widgets.common import Field, button, label, scrolling


class StatCard(QFrame):
    clicked = Signal()

    def __init__(self, icon: str, title: str) -> None:
        super().__init__()
        self.setObjectName("Card")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(16, 14, 16, 14)
        lay.setSpacing(12)
        badge = QLabel()
        badge.setObjectName("HeroIcon")
        badge.setFixedSize(40, 40)
        badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        theme.bind_icon(badge, icon, "accent", 20)
        lay.addWidget(badge)
        text = QVBoxLayout()
        text.setSpacing(0)
        self.value = label("0", "PageTitle")
        self.caption = label(title, "Muted")
        text.addWidget(self.value)
        text.addWidget(self.caption)
        lay.addLayout(text, 1)

    def mousePressEvent(self, event: Any) -> None:
        self.clicked.emit()
        super().mousePressEvent(event)


class OverviewEditor(QWidget):
    """Description, loop settings and the problems list of the harness being edited."""

    open_location = Signal(str, str)
    """(attribute, name) of a problem the user clicked."""
    trust_requested = Signal(object, bool)
    """(TrustItem, grant?): the operator asked to trust or withdraw trust (the page asks
    for confirmation and writes it to the store)."""

    def __init__(self, session: EditSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self._loading = False
        self._shown: Any = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(220)
        self._timer.timeout.connect(self.commit)
        self.merge_field = ""
        content = QWidget()
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scrolling(content))
        lay = QVBoxLayout(content)
        lay.setContentsMargins(24, 18, 24, 20)
        lay.setSpacing(16)
        self.title = label("", "SectionTitle")
        lay.addWidget(self.title)

        stats = QHBoxLayout()
        stats.setSpacing(12)
        self.cards = {
            "prompt": StatCard("prompt", "prompt sections"),
            "skills": StatCard("skill", "skills"),
            "tools": StatCard("tool", "tools"),
            "hooks": StatCard("hook", "hooks"),
        }
        for key, card in self.cards.items():
            stats.addWidget(card)
            card.clicked.connect(lambda k=key: self.open_location.emit(k, ""))
        lay.addLayout(stats)

        body = QHBoxLayout()
        body.setSpacing(16)
        left = QFrame()
        left.setObjectName("Card")
        grid = QGridLayout(left)
        grid.setContentsMargins(18, 16, 18, 18)
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(12)
        grid.addWidget(label("Harness", "SectionTitle"), 0, 0, 1, 2)
        self.description = QPlainTextEdit()
        self.description.setFixedHeight(70)
        self.f_description = Field("Description", self.description)
        grid.addWidget(self.f_description, 1, 0, 1, 2)
        self.max_turns = QSpinBox()
        self.max_turns.setRange(1, 64)
        self.retry_budget = QSpinBox()
        self.retry_budget.setRange(0, 16)
        self.protocol = QComboBox()
        self.protocol.addItem("prompt: harness renders tools, parses <tool_call>", "prompt")
        self.protocol.addItem("native: the chat template renders tools", "native")
        self.loader = QLineEdit()
        self.reminder_role = QComboBox()
        self.reminder_role.addItems(["user", "system", "tool"])
        self.reminder_format = QLineEdit()
        self.settings_fields = {
            "max_turns": Field("Max model calls per request", self.max_turns),
            "retry_budget": Field("Retry budget (hook blocks)", self.retry_budget),
            "tool_protocol": Field("Tool-call protocol", self.protocol),
            "load_skill_tool": Field("Skill loader tool", self.loader),
            "reminder_role": Field("Reminder role", self.reminder_role),
            "reminder_format": Field(
                "Reminder format", self.reminder_format, "Must contain ${reminder}."
            ),
        }
        f = self.settings_fields
        grid.addWidget(f["max_turns"], 2, 0)
        grid.addWidget(f["retry_budget"], 2, 1)
        grid.addWidget(f["tool_protocol"], 3, 0, 1, 2)
        grid.addWidget(f["load_skill_tool"], 4, 0)
        grid.addWidget(f["reminder_role"], 4, 1)
        grid.addWidget(f["reminder_format"], 5, 0, 1, 2)
        grid.setRowStretch(6, 1)
        body.addWidget(left, 3)

        right = QFrame()
        right.setObjectName("Card")
        rl = QVBoxLayout(right)
        rl.setContentsMargins(18, 16, 18, 16)
        rl.setSpacing(8)
        ph = QHBoxLayout()
        ph.addWidget(label("Problems", "SectionTitle"))
        ph.addStretch(1)
        self.problem_count = label("", "Faint")
        ph.addWidget(self.problem_count)
        rl.addLayout(ph)
        self.problems = QListWidget()
        self.problems.setWordWrap(True)
        self.problems.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.problems.itemActivated.connect(self._open_problem)
        self.problems.itemClicked.connect(self._open_problem)
        rl.addWidget(self.problems, 1)
        self._build_trust(rl)
        body.addWidget(right, 2)
        lay.addLayout(body, 1)

        self.description.textChanged.connect(lambda: self.edited("description"))
        self.max_turns.valueChanged.connect(lambda _v: self.edited("settings"))
        self.retry_budget.valueChanged.connect(lambda _v: self.edited("settings"))
        self.protocol.currentIndexChanged.connect(lambda _i: self.edited("settings"))
        self.loader.textEdited.connect(lambda _t: self.edited("settings"))
        self.reminder_role.currentIndexChanged.connect(lambda _i: self.edited("settings"))
        self.reminder_format.textEdited.connect(lambda _t: self.edited("settings"))
        session.changed.connect(self._on_changed)
        session.draftsChanged.connect(self.refresh_problems)

    def reload(self) -> None:
        if self.session.doc is None:
            return
        h = self.session.doc.harness
        self._shown = (h.settings, h.description)
        self._loading = True
        try:
            self.title.setText(h.name)
            if self.description.toPlainText() != h.description:
                self.description.setPlainText(h.description)
            s = h.settings
            self.max_turns.setValue(s.max_turns)
            self.retry_budget.setValue(s.retry_budget)
            self.protocol.setCurrentIndex(self.protocol.findData(s.tool_protocol.value))
            self.loader.setText(s.load_skill_tool)
            self.reminder_role.setCurrentText(s.reminder_role.value)
            self.reminder_format.setText(s.reminder_format)
            for fld in self.settings_fields.values():
                fld.set_error(None)
        finally:
            self._loading = False
        # The Trust panel and the Problems panel describe the same harness: a load that
        # replaced it (another version, or the store's copy read back) refreshes both.
        self.refresh_counts()
        self.refresh_problems()
        self.refresh_trust()

    def _build_trust(self, rl: QVBoxLayout) -> None:
        """The Trust panel: what this harness runs only once trusted (Python hooks, tools
        bound to code, a server or a URL), what each would run, and Trust / Withdraw. Hidden
        when there is nothing to trust (the demo harness)."""
        self.trust_box = QWidget()
        tl = QVBoxLayout(self.trust_box)
        tl.setContentsMargins(0, 8, 0, 0)
        tl.setSpacing(6)
        th = QHBoxLayout()
        th.addWidget(label("Trust", "SectionTitle"))
        self.trust_count = label("", "Faint")
        th.addWidget(self.trust_count)
        th.addStretch(1)
        self.trust_button = button("Trust…", "check", "ghost")
        self.trust_button.setToolTip("Let the selected code run (shows it first)")
        self.untrust_button = button("Withdraw", "close", "ghost")
        self.untrust_button.setToolTip("Stop the selected code running until trusted again")
        self.trust_button.clicked.connect(lambda: self._ask_trust(True))
        self.untrust_button.clicked.connect(lambda: self._ask_trust(False))
        th.addWidget(self.trust_button)
        th.addWidget(self.untrust_button)
        tl.addLayout(th)
        tl.addWidget(
            label(
                "Code this harness runs only once you trust it. Read what it runs first.",
                "Faint",
                wrap=True,
            )
        )
        self.trust_list = QListWidget()
        self.trust_list.setWordWrap(True)
        self.trust_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.trust_list.currentRowChanged.connect(lambda _r: self._trust_buttons())
        tl.addWidget(self.trust_list, 1)
        self.trust_items: list[Any] = []
        rl.addWidget(self.trust_box, 1)

    def refresh_trust(self) -> None:
        from core.harness.trust import trust_items

        if self.session.doc is None:
            return
        row = self.trust_list.currentRow()
        self.trust_items = trust_items(self.session.doc.harness)
        self.trust_list.clear()
        for item in self.trust_items:
            state = "trusted" if item.trusted else "not trusted"
            critical = " · task-critical" if item.kind == "hook" and item.task_critical else ""
            entry = QListWidgetItem(
                theme.icon("check" if item.trusted else "alert",
                           "success" if item.trusted else "warning"),
                f"{item.kind} {item.name} · {state}{critical}\n{item.runs}",
            )  # fmt: skip
            entry.setToolTip(item.detail[:2000])
            self.trust_list.addItem(entry)
        untrusted = sum(not i.trusted for i in self.trust_items)
        self.trust_count.setText(f"{untrusted} not trusted" if untrusted else "all trusted")
        self.trust_box.setVisible(bool(self.trust_items))
        if self.trust_items:
            self.trust_list.setCurrentRow(min(max(row, 0), len(self.trust_items) - 1))
        self._trust_buttons()

    def _trust_buttons(self) -> None:
        row = self.trust_list.currentRow()
        item = self.trust_items[row] if 0 <= row < len(self.trust_items) else None
        self.trust_button.setEnabled(item is not None and not item.trusted)
        self.untrust_button.setEnabled(item is not None and item.trusted)

    def _ask_trust(self, trusted: bool) -> None:
        row = self.trust_list.currentRow()
        if not 0 <= row < len(self.trust_items):
            return
        self.trust_requested.emit(self.trust_items[row], trusted)

    def refresh_counts(self) -> None:
        if self.session.doc is None:
            return
        h = self.session.doc.harness
        self.cards["prompt"].value.setText(str(len(h.prompt.sections)))
        for attr in ("skills", "tools", "hooks"):
            items = getattr(h, attr)
            off = sum(1 for i in items if not i.enabled)
            self.cards[attr].value.setText(str(len(items)))
            self.cards[attr].caption.setText(f"{attr} · {off} off" if off else attr)

    def refresh_problems(self) -> None:
        if self.session.doc is None or not self.isVisible():
            return
        self.problems.clear()
        entries: list[tuple[str, str, str, str]] = []  # where, text, icon, colour
        for lab, p in self.session.doc.draft_problems():
            entries.append(
                (lab, f"{p.field + ': ' if p.field else ''}{p.message}", "alert", "danger")
            )
        for p in self.session.doc.problems():
            entries.append(
                (p.file, f"{p.field + ': ' if p.field else ''}{p.message}", "info", "warning")
            )
        for p in self.session.doc.warnings():  # saved and served as is, but worth a look
            entries.append(
                (p.file, f"{p.field + ': ' if p.field else ''}{p.message}", "alert", "warning")
            )
        for where, text, icon, role in entries:
            item = QListWidgetItem(theme.icon(icon, role), f"{where}\n{text}")
            item.setData(Qt.ItemDataRole.UserRole, where)
            self.problems.addItem(item)
        if not entries:
            item = QListWidgetItem(
                theme.icon("check", "success"), "No problems: this harness can be saved and served."
            )
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.problems.addItem(item)
        self.problem_count.setText(f"{len(entries)} open" if entries else "")

    def _open_problem(self, item: QListWidgetItem) -> None:
        where = item.data(Qt.ItemDataRole.UserRole) or ""
        for prefix, attr in (
            ("skills/", "skills"),
            ("tools/", "tools"),
            ("hooks/", "hooks"),
            ("Skill ", "skills"),
            ("Tool ", "tools"),
            ("Hook ", "hooks"),
            ("prompt/", "prompt"),
        ):
            if where.startswith(prefix):
                name = (
                    where[len(prefix) :]
                    .split("/")[0]
                    .removesuffix(".json")
                    .removesuffix(".yaml")
                    .removesuffix(".md")
                )
                self.open_location.emit(attr, name)
                return

    def _on_changed(self, attr: str, origin: object) -> None:
        if self.session.doc is None:
            return
        if attr in ("settings", "description") and origin is not self:
            h = self.session.doc.harness
            if (h.settings, h.description) != self._shown:
                self.session.set_draft("settings", None)
                self.reload()
                return
        if self.isVisible():
            self.refresh_counts()
            self.refresh_problems()
            self.refresh_trust()

    def showEvent(self, event: Any) -> None:
        self.refresh_counts()
        self.refresh_problems()
        self.refresh_trust()
        super().showEvent(event)

    def edited(self, field: str) -> None:
        if self._loading or self.session.doc is None:
            return
        self.merge_field = field
        self._timer.start()

    def flush(self) -> None:
        if self._timer.isActive():
            self.commit()

    def commit(self) -> None:
        self._timer.stop()
        doc = self.session.doc
        if doc is None:
            return
        h = doc.harness
        description = self.description.toPlainText()
        if description != h.description:
            self.session.push(
                Snapshot("description", description),
                "Edit description",
                origin=self,
                merge_key=("description",),
            )
        data = {
            "max_turns": self.max_turns.value(),
            "retry_budget": self.retry_budget.value(),
            "tool_protocol": self.protocol.currentData(),
            "load_skill_tool": self.loader.text().strip(),
            "reminder_role": self.reminder_role.currentText(),
            "reminder_format": self.reminder_format.text(),
        }
        for fld in self.settings_fields.values():
            fld.set_error(None)
        try:
            try:
                settings = Settings.model_validate(data)
            except ValidationError as exc:
                raise HarnessError(
                    problems_from_validation(exc, "harness.yaml", "settings")
                ) from None
            if settings != h.settings:
                self.session.push(
                    Snapshot("settings", settings),
                    "Edit settings",
                    origin=self,
                    merge_key=("settings",),
                )
        except HarnessError as exc:
            problems = exc.problems
            for p in problems:
                key = p.field.removeprefix("settings.")
                if key in self.settings_fields:
                    self.settings_fields[key].set_error(p.message)
            self.session.set_draft("settings", Draft("Settings", {}, problems))
            return
        self._shown = (doc.harness.settings, doc.harness.description)
        self.session.set_draft("settings", None)
        self.refresh_problems()
