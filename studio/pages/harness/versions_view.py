"""Version history: the list of versions with their labels, a per-component diff between any
two versions, labels moved by menu or by dragging a label chip onto another version, rollback,
and import/export of harness folders. Every store call runs in a worker job."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QMimeData, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QDrag, QMouseEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from core.harness import HarnessError
from studio import dialogs, theme
from studio.context import StoreChange, StudioContext, Wrote
from studio.logic.version_names import short_id, version_title, version_tooltip
from studio.widgets.common import Banner, button, label, label_kind, tool_button
from studio.widgets.diffview import SideBySideDiff

LABEL_MIME = "application/x-hat-label"
ROLE = Qt.ItemDataRole.UserRole
TOOLTIP = Qt.ItemDataRole.ToolTipRole
NOTHING = ""
"""The compare combos' data for "nothing": the side before a harness's first version."""
NOTHING_TITLE = "nothing (before the first version)"
COMPONENT_ICONS = {
    "manifest": "settings",
    "prompt": "prompt",
    "skill": "skill",
    "tool": "tool",
    "hook": "hook",
}


def ago(moment: datetime, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 60:
        return "just now"
    for size, unit in ((86400 * 7, "week"), (86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"  # pragma: no cover


class LabelChip(QLabel):
    """A label chip that can be dragged onto another version to move the label."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name
        self.setProperty("chip", label_kind(name))
        self.setCursor(Qt.CursorShape.OpenHandCursor)
        self.setToolTip(f"Drag '{name}' onto another version to move it there")
        self._press: Any = None

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._press = event.position()
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._press is None or (event.position() - self._press).manhattanLength() < 6:
            return
        drag = QDrag(self)
        mime = QMimeData()
        mime.setData(LABEL_MIME, self.name.encode("utf-8"))
        mime.setText(self.name)
        drag.setMimeData(mime)
        drag.setPixmap(self.grab())
        self._press = None
        drag.exec(Qt.DropAction.MoveAction)


class VersionRow(QFrame):
    """One version in the history. The message wraps and every label chip is shown whole:
    an operator finds a version by what they wrote and the label they moved, so neither is
    cut (the list sizes each row to its wrapped height)."""

    label_dropped = Signal(str, str)
    """(label, version id)"""

    def __init__(self, info: Any, head: bool, editing: bool, first: bool = False) -> None:
        super().__init__()
        self.setObjectName("VersionRow")
        self.info = info
        self.setAcceptDrops(True)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(10, 8, 10, 8)
        lay.setSpacing(3)
        self.message = label(info.message or "(no message)", "VersionMessage", wrap=True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setToolTip(version_tooltip(info))
        lay.addWidget(self.message)
        self.chips: list[LabelChip] = []
        if info.labels:
            chips = QHBoxLayout()
            chips.setSpacing(6)
            for name in info.labels:
                c = LabelChip(name)
                self.chips.append(c)
                chips.addWidget(c)
            chips.addStretch(1)
            lay.addLayout(chips)
        meta = QHBoxLayout()
        meta.setSpacing(6)
        extra = []
        if head:
            extra.append("head")
        if editing:
            extra.append("in editor")
        if first:
            extra.append("first version")
        self.meta = label(
            f"{short_id(info.id)} · {ago(info.created_at)}" + "".join(f" · {e}" for e in extra),
            "VersionMeta",
        )
        self.meta.setToolTip(info.id)
        meta.addWidget(self.meta)
        meta.addStretch(1)
        lay.addLayout(meta)

    def dragEnterEvent(self, event: Any) -> None:
        if event.mimeData().hasFormat(LABEL_MIME):
            event.acceptProposedAction()

    def dropEvent(self, event: Any) -> None:
        name = bytes(event.mimeData().data(LABEL_MIME)).decode("utf-8")
        if name:
            self.label_dropped.emit(name, self.info.id)
            event.acceptProposedAction()


class VersionsView(QWidget):
    open_version = Signal(str)
    rolled_back = Signal(str)
    logged = Signal()
    """The history was read again (labels and messages other views name versions by)."""

    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ctx = ctx
        self.name = ""
        self.base_id = ""
        self.versions: list[Any] = []
        self.diffs: list[Any] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(24, 12, 24, 16)
        lay.setSpacing(10)
        self.banner = Banner()
        lay.addWidget(self.banner)
        split = QSplitter(Qt.Orientation.Horizontal)

        # ---- history
        left = QFrame()
        left.setObjectName("Pane")
        ll = QVBoxLayout(left)
        ll.setContentsMargins(12, 12, 12, 12)
        ll.setSpacing(8)
        lh = QHBoxLayout()
        lh.addWidget(label("History", "SectionTitle"))
        lh.addStretch(1)
        self.count = label("", "Faint")
        lh.addWidget(self.count)
        ll.addLayout(lh)
        self.list = QListWidget()
        self.list.setSpacing(1)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setVerticalScrollMode(QListWidget.ScrollMode.ScrollPerPixel)
        self.list.currentRowChanged.connect(self._row_changed)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(
            lambda pos: self._version_menu(self.list.viewport().mapToGlobal(pos))
        )
        self._fit_timer = QTimer(self)
        self._fit_timer.setSingleShot(True)
        self._fit_timer.setInterval(0)
        self._fit_timer.timeout.connect(self._fit_rows)
        self.list.viewport().installEventFilter(self)
        ll.addWidget(self.list, 1)
        io = QHBoxLayout()
        self.import_button = button(
            "Import folder…", "import", "", "Import a harness folder as a new version"
        )
        self.import_button.clicked.connect(self.import_dialog)
        io.addWidget(self.import_button)
        self.export_button = button(
            "Export…", "export", "", "Write the selected version as a harness folder"
        )
        self.export_button.clicked.connect(self.export_dialog)
        io.addWidget(self.export_button)
        ll.addLayout(io)
        split.addWidget(left)

        # ---- compare
        right = QFrame()
        right.setObjectName("Pane")
        rl = QVBoxLayout(right)
        rl.setContentsMargins(14, 12, 14, 12)
        rl.setSpacing(10)
        actions = QHBoxLayout()
        actions.setSpacing(8)
        self.selected_title = label("", "SectionTitle", wrap=True)
        self.selected_title.setTextFormat(Qt.TextFormat.PlainText)
        actions.addWidget(self.selected_title, 1)
        self.open_button = button("Open in editor", "harness")
        self.open_button.clicked.connect(self._open_selected)
        self.label_button = QPushButton("Labels")
        theme.bind_icon(self.label_button, "tag")
        self.label_menu = QMenu(self.label_button)
        self.label_menu.aboutToShow.connect(self._fill_label_menu)
        self.label_button.setMenu(self.label_menu)
        self.rollback_button = button(
            "Roll back to this", "rollback", "", "Make a new version with this content"
        )
        self.rollback_button.clicked.connect(self._rollback_selected)
        for w in (self.open_button, self.label_button, self.rollback_button):
            actions.addWidget(w)
        rl.addLayout(actions)
        cmp = QHBoxLayout()
        cmp.setSpacing(8)
        icon = QLabel()
        theme.bind_icon(icon, "diff", "text-muted", 16)
        cmp.addWidget(icon)
        cmp.addWidget(label("Compare", "FieldLabel"))
        self.a_combo = QComboBox()
        self.b_combo = QComboBox()
        for c in (self.a_combo, self.b_combo):
            c.setMinimumWidth(220)
            # titles are whole ("production · a1b2c3d4 · message"): the closed combo shrinks
            # to its column and elides, the open list shows them in full
            c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            c.setMinimumContentsLength(24)
            c.activated.connect(lambda _i: self.compare())
        cmp.addWidget(self.a_combo, 1)
        arrow = QLabel()
        theme.bind_icon(arrow, "chevron-right", "text-faint", 16)
        cmp.addWidget(arrow)
        cmp.addWidget(self.b_combo, 1)
        self.swap = tool_button("variants", "Swap the two versions")
        self.swap.clicked.connect(self._swap)
        cmp.addWidget(self.swap)
        rl.addLayout(cmp)
        self.diff_split = QSplitter(Qt.Orientation.Horizontal)
        self.changes = QListWidget()
        self.changes.setMinimumWidth(150)
        self.changes.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.changes.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.changes.currentRowChanged.connect(self._change_selected)
        self.diff_split.addWidget(self.changes)
        self.diff_stack = QStackedWidget()
        self.diff = SideBySideDiff()
        self.same = label("These two versions have the same content.", "Muted")
        self.same.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.diff_stack.addWidget(self.diff)
        self.diff_stack.addWidget(self.same)
        self.diff_split.addWidget(self.diff_stack)
        self.diff_split.setSizes([190, 900])
        self.diff_split.setStretchFactor(1, 1)
        rl.addWidget(self.diff_split, 1)
        split.addWidget(right)
        split.setSizes([330, 900])
        split.setStretchFactor(1, 1)
        lay.addWidget(split, 1)
        self._stale = False
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self._refresh_now)
        ctx.versionsChanged.connect(self.refresh)

    # ------------------------------------------------------------------ data

    def set_harness(self, name: str, base_id: str) -> None:
        self.name = name
        self.base_id = base_id
        self.refresh()

    def refresh(self) -> None:
        """Re-read the history (coalesced; deferred while the view is hidden)."""
        self._stale = True
        if self.isVisible():
            self._refresh_timer.start()

    def showEvent(self, event: Any) -> None:
        if self._stale:
            self._refresh_timer.start()
        super().showEvent(event)

    def _refresh_now(self) -> None:
        if not self.name:
            return
        self._stale = False
        name = self.name
        self.ctx.run_store(
            lambda store: store.log(name), on_done=self._show_log, label="Reading history"
        )

    def labels_of(self, version_id: str) -> tuple[str, ...]:
        return next((v.labels for v in self.versions if v.id == version_id), ())

    def all_labels(self) -> list[str]:
        return sorted({lab for v in self.versions for lab in v.labels})

    def selected(self) -> Any:
        row = self.list.currentRow()
        return self.versions[row] if 0 <= row < len(self.versions) else None

    def eventFilter(self, watched: Any, event: Any) -> bool:
        if watched is self.list.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_timer.start()  # after the resize settles (a scroll bar may come and go)
        return super().eventFilter(watched, event)

    def _fit_rows(self) -> None:
        """Give each history row the height its wrapped message needs at the width the list
        gives it (the style sheet pads items, so the row is narrower than the viewport)."""
        fallback = max(120, self.list.viewport().width() - 12)
        for i in range(self.list.count()):
            item = self.list.item(i)
            row = self.list.itemWidget(item)
            if row is None:
                continue
            row.ensurePolished()  # the style sheet sets the message's font
            for child in row.findChildren(QLabel):
                child.ensurePolished()
            rect = self.list.visualItemRect(item)
            laid_out = row.width() > 0 and rect.width() > row.width() - 1
            width = row.width() if laid_out and row.width() > 60 else fallback
            pad = max(0, rect.height() - row.height()) if laid_out else 10
            height = row.heightForWidth(width) if row.hasHeightForWidth() else -1
            if height < 0:
                height = row.sizeHint().height()
            item.setSizeHint(QSize(0, height + pad))

    def _show_log(self, versions: list[Any]) -> None:
        keep = self.selected().id if self.selected() is not None else None
        self.versions = versions
        self.list.blockSignals(True)
        self.list.clear()
        for i, info in enumerate(versions):
            item = QListWidgetItem()
            item.setData(ROLE, info.id)
            widget = VersionRow(
                info,
                head=i == 0,
                editing=info.id == self.base_id,
                first=i == len(versions) - 1 and not info.parent_id,
            )
            widget.label_dropped.connect(self.move_label)
            self.list.addItem(item)
            self.list.setItemWidget(item, widget)
        self._fit_rows()
        self._fit_timer.start()  # again once the rows are polished and laid out
        self.list.blockSignals(False)
        self.count.setText(f"{len(versions)} version{'s' if len(versions) != 1 else ''}")
        for combo in (self.a_combo, self.b_combo):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            if combo is self.a_combo:
                combo.addItem(NOTHING_TITLE, NOTHING)
                combo.setItemData(
                    0, "Compare with an empty harness: every file shows as added", TOOLTIP
                )
            for i, info in enumerate(versions):
                combo.addItem(version_title(info, head=i == 0), info.id)
                combo.setItemData(combo.count() - 1, version_tooltip(info), TOOLTIP)
            if current is not None:
                idx = combo.findData(current)
                if idx >= 0:
                    combo.setCurrentIndex(idx)
            combo.blockSignals(False)
        ids = [v.id for v in versions]
        row = ids.index(keep) if keep in ids else 0
        if versions:
            self.list.setCurrentRow(row)
            self._row_changed(row)
        self.logged.emit()

    def _row_changed(self, row: int) -> None:
        """Select a version and compare it with the one before it; the first version is
        compared with nothing (comparing it with itself would say "no change")."""
        info = self.selected()
        if info is None:
            return
        first = row == len(self.versions) - 1 and not info.parent_id
        title = info.message or short_id(info.id)
        self.selected_title.setText(f"{title}  (first version)" if first else title)
        self.selected_title.setToolTip(version_tooltip(info))
        self.rollback_button.setEnabled(row > 0)
        b = self.b_combo.findData(info.id)
        if info.parent_id:
            parent = info.parent_id
        elif row + 1 < len(self.versions):
            parent = self.versions[row + 1].id
        else:
            parent = NOTHING
        a = self.a_combo.findData(parent)
        if a < 0:
            a = self.a_combo.findData(NOTHING)
        self.a_combo.setCurrentIndex(a)
        self.b_combo.setCurrentIndex(b)
        self.compare()

    def select_version(self, version_id: str) -> None:
        for i, v in enumerate(self.versions):
            if v.id == version_id:
                self.list.setCurrentRow(i)
                return

    def _swap(self) -> None:
        a, b = self.a_combo.currentIndex(), self.b_combo.currentIndex()
        self.a_combo.setCurrentIndex(b)
        self.b_combo.setCurrentIndex(a)
        self.compare()

    # ------------------------------------------------------------------ diff

    def compare(self, a: str | None = None, b: str | None = None) -> None:
        """Diff version `a` against `b` in a worker; `a` empty ("nothing") shows every file
        of `b` as added."""
        a = self.a_combo.currentData() if a is None else a
        b = b or self.b_combo.currentData()
        if a is None or not b:
            return
        old = None if a == NOTHING else a  # a first version: every component added
        self.ctx.run_store(
            lambda store: store.diff(old, b), on_done=self._show_diff, label="Comparing versions"
        )

    def _show_diff(self, diffs: list[Any]) -> None:
        self.diffs = diffs
        self.changes.blockSignals(True)
        self.changes.clear()
        for d in diffs:
            renamed = d.change == "renamed"
            title = f"{d.old_name} → {d.name}" if renamed else (d.name or d.path)
            item = QListWidgetItem(
                theme.icon(
                    COMPONENT_ICONS.get(d.component, "skill"),
                    {"added": "success", "removed": "danger", "renamed": "accent"}.get(
                        d.change, "warning"
                    ),
                ),
                f"{title}\n{d.component} · {d.change}",
            )
            item.setToolTip(
                f"renamed: {d.old_path} → {d.path}" if renamed else f"{d.change}: {d.path}"
            )
            self.changes.addItem(item)
        self.changes.blockSignals(False)
        if diffs:
            self.diff_stack.setCurrentWidget(self.diff)
            self.changes.setCurrentRow(0)
            self._change_selected(0)
        else:
            self.diff_stack.setCurrentWidget(self.same)

    def _change_selected(self, row: int) -> None:
        if not 0 <= row < len(self.diffs):
            return
        d = self.diffs[row]
        a_id, b_id = self.a_combo.currentData() or "", self.b_combo.currentData() or ""
        a = short_id(a_id) if a_id else "nothing"
        b = short_id(b_id)
        if d.change == "renamed":  # each side under the file's name in that version
            self.diff.set_titles(f"{a}  ·  {d.old_path}", f"{b}  ·  {d.path}")
        else:
            self.diff.set_titles(f"{a}  ·  {d.change if d.change != 'added' else 'absent'}", f"{b}")
        self.diff.set_texts(d.old_text, d.new_text, wrap=d.path.endswith(".md"))
        self.diff.scroll_to_first_change()

    # ------------------------------------------------------------------ labels

    def _fill_label_menu(self) -> None:
        self.label_menu.clear()
        info = self.selected()
        if info is None:
            return
        for name in (
            "production",
            "staging",
            *[x for x in self.all_labels() if x not in ("production", "staging")],
        ):
            act = self.label_menu.addAction(
                theme.icon("tag", "text-muted"),
                f"Move '{name}' here" if name not in info.labels else f"'{name}' is here",
            )
            act.setEnabled(name not in info.labels)
            act.triggered.connect(lambda _c=False, n=name: self.move_label(n, info.id))
        self.label_menu.addAction(
            theme.icon("plus"), "New label…", lambda: self._new_label(info.id)
        )
        if info.labels:
            self.label_menu.addSeparator()
            for name in info.labels:
                self.label_menu.addAction(
                    theme.icon("close", "danger"),
                    f"Remove '{name}'",
                    lambda n=name: self.remove_label(n),
                )

    def _version_menu(self, pos: Any) -> None:
        self._fill_label_menu()
        menu = QMenu(self)
        menu.addAction(theme.icon("harness"), "Open in editor", self._open_selected)
        menu.addAction(theme.icon("rollback"), "Roll back to this…", self._rollback_selected)
        menu.addAction(theme.icon("export"), "Export…", self.export_dialog)
        menu.addSeparator()
        for act in self.label_menu.actions():
            menu.addAction(act)
        menu.exec(pos)

    def _new_label(self, version_id: str) -> None:
        name = dialogs.ask_label(self)
        if name:
            self.move_label(name, version_id)

    def move_label(self, name: str, version_id: str) -> None:
        harness = self.name

        def done(_r: Any) -> None:
            self.ctx.message.emit("success", f"Moved '{name}' to {version_id[:10]}")

        self.ctx.run_store(
            lambda store: store.tag(f"{harness}@{name}", version_id),
            changes=StoreChange.VERSIONS,
            on_done=done,
            on_error=self._error,
            label="Moving label",
        )

    def remove_label(self, name: str) -> None:
        harness = self.name

        def done(_r: Any) -> None:
            self.ctx.message.emit("success", f"Removed label '{name}'")

        self.ctx.run_store(
            lambda store: store.untag(name, harness),
            changes=StoreChange.VERSIONS,
            on_done=done,
            on_error=self._error,
            label="Removing label",
        )

    def _error(self, exc: BaseException) -> None:
        self.banner.show_message("error", str(exc))

    # ------------------------------------------------------------------ actions

    def _open_selected(self) -> None:
        info = self.selected()
        if info is not None:
            self.open_version.emit(info.id)

    def _rollback_selected(self) -> None:
        info = self.selected()
        if info is None:
            return
        if not dialogs.confirm(
            self,
            "Roll back",
            f"Roll back {self.name} to version {version_title(info)}?",
            "Roll back",
            "This adds a new version with that content. Nothing is deleted, and labels stay "
            "where they are.",
        ):
            return
        self.rollback(info.id)

    def rollback(self, version_id: str) -> None:
        message = f"Roll back to {version_id[:10]}"

        def done(info: Any) -> None:
            self.ctx.message.emit("success", f"Rolled back: new version {info.id[:10]}")
            self.rolled_back.emit(info.id)

        self.ctx.run_store(
            lambda store: store.rollback(version_id, message),
            changes=StoreChange.VERSIONS,
            on_done=done,
            on_error=self._error,
            label="Rolling back",
        )

    def import_dialog(self) -> None:
        path = dialogs.choose_folder(self, "Import a harness folder")
        if path:
            self.import_folder(Path(path))

    def import_folder(self, path: Path) -> None:
        """Validate the folder (every problem, file + field); store it as a new version."""
        from core.harness import import_folder

        known = set(self.ctx.harness_names)

        def work(store: Any) -> Wrote:
            harness = import_folder(path)
            info = store.commit(harness, f"Imported from {path}")
            new = info.harness_name not in known
            return Wrote(info, StoreChange.HARNESSES if new else StoreChange.NONE)

        def done(info: Any) -> None:
            if info.harness_name not in self.ctx.harness_names:
                self.ctx.harness_names.append(info.harness_name)
            self.ctx.message.emit(
                "success", f"Imported {info.harness_name} as version {info.id[:10]}"
            )
            self.last_import = info

        def fail(exc: BaseException) -> None:
            if isinstance(exc, HarnessError):
                self.banner.show_message(
                    "error",
                    f"{path.name} was not imported: {len(exc.problems)} problem(s). Nothing was "
                    f"stored.",
                )
                dialogs.show_problems(
                    self,
                    "Import failed",
                    f"{path} has {len(exc.problems)} problem(s); nothing was imported.",
                    exc.problems,
                )
            else:
                self._error(exc)

        self.ctx.run_store(
            work,
            changes=StoreChange.VERSIONS,
            on_done=done,
            on_error=fail,
            label="Importing folder",
        )

    def export_dialog(self) -> None:
        info = self.selected()
        if info is None:
            return
        path = dialogs.choose_folder(self, f"Export {self.name} {info.id[:10]} into…")
        if path:
            self.export_version(info.id, Path(path) / self.name)

    def export_version(self, version_id: str, target: Path) -> None:
        from core.harness import export_folder

        def work(store: Any) -> Path:
            export_folder(store.load(version_id), target)
            return target

        def done(out: Path) -> None:
            self.ctx.message.emit("success", f"Exported to {out}")

        self.ctx.run_store(work, on_done=done, on_error=self._error, label="Exporting")
