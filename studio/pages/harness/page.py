"""The Harness page: the editor (tree + component editors) and the version history.

Loading and saving go through worker jobs. Saving is refused, with the list of what to fix,
while any editor holds input that does not validate; nothing is lost either way. A failed save
(e.g. the database is locked by another process) leaves every edit where it was.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.harness import HarnessError
from studio import dialogs, theme
from studio.context import StoreChange, StudioContext
from studio.logic.version_names import short_id, version_title
from studio.pages.harness.component_tree import ComponentTree
from studio.pages.harness.hook_editor import HookEditor
from studio.pages.harness.overview import OverviewEditor
from studio.pages.harness.prompt_editor import PromptEditor
from studio.pages.harness.skill_editor import SkillEditor
from studio.pages.harness.tool_editor import ToolEditor
from studio.pages.harness.versions_view import VersionsView
from studio.widgets.common import Banner, PageHeader, button, chip, label, label_kind, tool_button

RECOVERY_FILE = "studio-unsaved.json"


class HarnessPage(QWidget):
    saved = Signal(str)
    """A version was saved (its id)."""

    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Page")
        self.ctx = ctx
        self.session = ctx.session
        self._saving = False
        self._pending_after_save: Any = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)

        self.header = PageHeader("Harness", "Loading workspace…")
        self.harness_picker = QComboBox()
        self.harness_picker.setMinimumWidth(150)
        self.harness_picker.setMaximumWidth(340)  # grows with a long name, up to a point
        self.harness_picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.harness_picker.setToolTip("Harness in this workspace")
        self.harness_picker.currentTextChanged.connect(
            lambda name: self.harness_picker.setToolTip(f"Harness in this workspace: {name}")
        )
        self.header.add(self.harness_picker)
        self.dirty = label("", "DirtyDot")
        self.header.add(self.dirty)
        self.undo_button = tool_button("undo", "Undo  (Ctrl+Z)")
        self.redo_button = tool_button("redo", "Redo  (Ctrl+Shift+Z)")
        self.header.add(self.undo_button)
        self.header.add(self.redo_button)
        self.save_button = button(
            "Save version",
            "save",
            "primary",
            "Save the harness as a new immutable version  (Ctrl+S)",
        )
        self.header.add(self.save_button)
        lay.addWidget(self.header)

        self.banner = Banner()
        bw = QWidget()
        bl = QVBoxLayout(bw)
        bl.setContentsMargins(24, 8, 24, 0)
        bl.addWidget(self.banner)
        bw.setVisible(True)
        lay.addWidget(bw)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.tabBar().setContentsMargins(20, 0, 0, 0)
        # ---- editor tab
        editor = QWidget()
        el = QHBoxLayout(editor)
        el.setContentsMargins(12, 4, 12, 12)
        el.setSpacing(0)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.tree = ComponentTree(self.session)
        self.tree.setMinimumWidth(220)
        split.addWidget(self.tree)
        self.stack = QStackedWidget()
        frame = QFrame()
        frame.setObjectName("Pane")
        fl = QVBoxLayout(frame)
        fl.setContentsMargins(0, 0, 0, 0)
        fl.addWidget(self.stack)
        split.addWidget(frame)
        split.setSizes([260, 1000])
        split.setStretchFactor(1, 1)
        el.addWidget(split)
        self.overview = OverviewEditor(self.session)
        self.prompt_editor = PromptEditor(self.session)
        self.skill_editor = SkillEditor(self.session)
        self.tool_editor = ToolEditor(self.session)
        self.hook_editor = HookEditor(self.session)
        self.loading = QLabel("Opening the workspace…")
        self.loading.setObjectName("Muted")
        self.loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        for w in (
            self.loading,
            self.overview,
            self.prompt_editor,
            self.skill_editor,
            self.tool_editor,
            self.hook_editor,
        ):
            self.stack.addWidget(w)
        self.editors = {
            "skills": self.skill_editor,
            "tools": self.tool_editor,
            "hooks": self.hook_editor,
        }
        self.tabs.addTab(editor, theme.icon("harness"), "Editor")
        # ---- versions tab
        self.versions = VersionsView(ctx)
        self.tabs.addTab(self.versions, theme.icon("history"), "Versions")
        lay.addWidget(self.tabs, 1)

        self.undo_button.clicked.connect(self.undo)
        self.redo_button.clicked.connect(self.redo)
        self.save_button.clicked.connect(lambda: self.save())
        self.session.stack.canUndoChanged.connect(self.undo_button.setEnabled)
        self.session.stack.canRedoChanged.connect(self.redo_button.setEnabled)
        self.session.dirtyChanged.connect(lambda _d: self._update_header())
        self.session.stepsChanged.connect(self._update_header)
        self.session.draftsChanged.connect(self._update_header)
        self.session.draftsChanged.connect(self._recheck_blockers)
        self.session.changed.connect(lambda _a, _o: self._recheck_blockers())
        self._blocked = False
        """The banner shows why saving was refused; it follows the fixes until none is left."""
        self.tree.selected.connect(self._select)
        self.tree.add_requested.connect(self.add_component)
        self.tree.import_requested.connect(self.open_import)
        self.tree.delete_requested.connect(self.delete_component)
        self.tree.duplicate_requested.connect(self.duplicate_component)
        self.tree.move_requested.connect(self.move_component)
        self.overview.open_location.connect(self._open_location)
        self.overview.trust_requested.connect(self._set_trust)
        self.versions.open_version.connect(self.open_version)
        self.versions.rolled_back.connect(self._rolled_back)
        self.versions.logged.connect(self._update_header)  # name the version by its title
        self.harness_picker.activated.connect(self._pick_harness)
        ctx.opened.connect(self._store_opened)
        ctx.openFailed.connect(self._open_failed)
        ctx.versionsChanged.connect(self._update_header)
        self._autosave = QTimer(self)
        self._autosave.setSingleShot(True)
        self._autosave.setInterval(1500)
        self._autosave.timeout.connect(self.autosave_now)
        self.session.changed.connect(lambda _a, _o: self._schedule_autosave())
        self.session.dirtyChanged.connect(lambda d: None if d else self._schedule_autosave())
        self.undo_button.setEnabled(False)
        self.redo_button.setEnabled(False)
        self.save_button.setEnabled(False)

    # ------------------------------------------------------------------ loading

    def _store_opened(self) -> None:
        self.harness_picker.clear()
        self.harness_picker.addItems(self.ctx.harness_names)
        self.harness_picker.setCurrentText(self.ctx.harness_name)
        self.load_ref("head", self.ctx.harness_name, restore_selection=True)

    def _open_failed(self, message: str) -> None:
        self.loading.setText("The workspace could not be opened.")
        self.header.subtitle.setText("No workspace")
        self._blocked = False
        self.banner.show_message(
            "error", f"Cannot open the workspace database: {message}", closable=False
        )

    def load_ref(self, ref: str, name: str, restore_selection: bool = False) -> None:
        def work(store: Any) -> tuple[Any, Any]:
            return store.load(ref, name), store.info(ref, name)

        def done(result: tuple[Any, Any]) -> None:
            harness, info = result
            self.ctx.harness_name = name
            self.ctx.settings.setValue("harness/name", name)
            self.session.load(harness, info.id, info.labels)
            self.versions.set_harness(name, info.id)
            self._update_header()
            self.save_button.setEnabled(True)
            selected = (
                str(self.ctx.settings.value("harness/selected", "") or "")
                if restore_selection
                else ""
            )
            if restore_selection:
                self._recover(name, info.id)
            attr, _, item = selected.partition(":")
            if not (attr and self.tree.select_name(attr, item)):
                self.tree.select("overview", None)
            self.ctx.harnessChanged.emit(name)

        self.ctx.run_store(work, on_done=done, label="Loading harness")

    # ------------------------------------------------------------------ crash recovery

    @property
    def recovery_file(self) -> Path:
        return self.ctx.home / RECOVERY_FILE

    def _schedule_autosave(self) -> None:
        self._autosave.start()

    def autosave_now(self) -> None:
        """Write the unsaved harness next to the database (or remove the file when clean), so
        edits survive a crash or a killed process; restored on the next start."""
        self._autosave.stop()
        doc = self.session.doc
        path = self.recovery_file
        if doc is None or not self.session.dirty:
            path.unlink(missing_ok=True)
            return
        harness, version = doc.harness, doc.version_id

        def write() -> None:
            data = {
                "harness": harness.name,
                "version": version,
                "data": harness.model_dump(mode="json"),
            }
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)

        self.ctx.jobs.run(write, on_error=lambda exc: None, label="Keeping unsaved edits")

    def _recover(self, name: str, version_id: str) -> None:
        path = self.recovery_file
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if data.get("harness") != name:
            return
        from core.harness import Harness
        from studio.logic.document import LIST_ATTRS, Snapshot

        doc = self.session.doc
        try:
            recovered = Harness.model_validate(data.get("data"))
        except ValueError:
            return
        if doc is None or recovered == doc.harness:
            path.unlink(missing_ok=True)
            return
        for attr in ("description", "settings", "prompt", *LIST_ATTRS):
            value = getattr(recovered, attr)
            if value == getattr(doc.harness, attr):
                continue
            snap = doc.whole(attr, value) if attr in LIST_ATTRS else Snapshot(attr, value)
            try:
                self.session.push(snap, "Recovered unsaved edits")
            except HarnessError:
                continue
        where = (
            ""
            if data.get("version") == version_id
            else f" (made on version {str(data.get('version'))[:10]})"
        )
        self._blocked = False
        self.banner.show_message(
            "info",
            "Recovered unsaved edits from the last session" + where + ". Save them as a version, "
            "or undo them with Ctrl+Z.",
        )

    def _pick_harness(self, _index: int) -> None:
        name = self.harness_picker.currentText()
        if name == self.ctx.harness_name:
            return
        if not self.confirm_leave("opening another harness", lambda: self.load_ref("head", name)):
            self.harness_picker.setCurrentText(self.ctx.harness_name)
            return
        self.load_ref("head", name)

    def open_version(self, version_id: str) -> None:
        if self.confirm_leave(
            "opening another version", lambda: self.load_ref(version_id, self.ctx.harness_name)
        ):
            self.load_ref(version_id, self.ctx.harness_name)
            self.tabs.setCurrentIndex(0)

    def _rolled_back(self, version_id: str) -> None:
        if not self.session.dirty:
            self.load_ref(version_id, self.ctx.harness_name)

    # ------------------------------------------------------------------ header

    def _update_header(self) -> None:
        doc = self.session.doc
        if doc is None:
            return
        labels = self.versions.labels_of(doc.version_id or "") or self.session.version_labels
        info = next((v for v in self.versions.versions if v.id == doc.version_id), None)
        if info is not None:
            title = version_title(info, labels)
        else:
            tags = f"{', '.join(labels)} · " if labels else ""
            title = f"{tags}{short_id(doc.version_id or '')}"
        self.header.title.setText(f"Harness · {doc.harness.name}")
        self.header.subtitle.setText(f"Editing from version {title}")
        changes = self.session.change_count()
        if doc.drafts:
            # a draft (one component) may have several problems, and has at least one
            n_fields = max(len(doc.draft_problems()), 1)
            self.dirty.setText(f"●  {n_fields} field{'s' if n_fields > 1 else ''} to fix")
            self.dirty.setToolTip("Some input does not validate yet; it is kept in its editor.")
        elif self.session.dirty:
            n = max(changes, 1)
            self.dirty.setText(f"●  {n} unsaved change{'s' if n > 1 else ''}")
            self.dirty.setToolTip("Edits not yet in a saved version")
        else:
            self.dirty.setText("")
        self.dirty.setVisible(bool(self.dirty.text()))
        win = self.window()
        if win is not None and win is not self:
            win.setWindowModified(self.session.dirty)

    # ------------------------------------------------------------------ selection

    def _select(self, kind: str, key: Any) -> None:
        self.flush()
        if kind == "overview":
            self.overview.reload()
            self.stack.setCurrentWidget(self.overview)
            self.ctx.settings.setValue("harness/selected", "overview:")
        elif kind == "prompt":
            if (
                self.stack.currentWidget() is not self.prompt_editor
                or self.prompt_editor._shown is None
            ):
                self.prompt_editor.reload()
            self.stack.setCurrentWidget(self.prompt_editor)
            if key:
                self.prompt_editor.select_section(key)
            self.ctx.settings.setValue("harness/selected", f"prompt:{key or ''}")
        elif kind in self.editors:
            editor = self.editors[kind]
            editor.show_component(key)
            self.stack.setCurrentWidget(editor)
            item = editor.current()
            if item is not None:
                self.ctx.settings.setValue("harness/selected", f"{kind}:{item.name}")

    def _set_trust(self, item: Any, trusted: bool) -> None:
        """Trust (after showing what will run) or withdraw trust in one hook or tool; the
        store records it by the code's hash, so it holds for every version with that code
        and the edited harness's flag follows at once (saving is not needed)."""
        harness = self.session.harness if self.session.doc is not None else None
        if harness is None:
            return
        if trusted:
            what = "hook" if item.kind == "hook" else "tool"
            if not dialogs.confirm(
                self,
                f"Trust {what} {item.name}?",
                f"Trusting {what} {item.name} lets HAT run {item.runs} on this machine, "
                "in every chat, evaluation, data job and training run that uses this "
                "harness. Trust only code you have read.",
                ok="Trust",
                detail=item.detail[:4000],
            ):
                return

        copy = harness.model_copy(deep=True)  # the worker must not touch the session's

        def done(_ok: Any) -> None:
            if self.session.doc is not None:  # the edited harness follows, unsaved edits kept
                current = self.session.harness
                found = (
                    next((h for h in current.hooks if h.name == item.name), None)
                    if item.kind == "hook"
                    else current.tool(item.name)
                )
                if found is not None:
                    found.trusted = trusted
            self.overview.refresh_trust()
            self.overview.refresh_problems()
            verb = "trusted" if trusted else "no longer trusted"
            self.ctx.message.emit("success", f"{item.kind} {item.name} is {verb}")

        self.ctx.run_store(
            lambda store: store.set_trust(copy, item.kind, item.name, trusted),
            on_done=done,
            label="Recording trust",
        )

    def _open_location(self, attr: str, name: str) -> None:
        if not self.tree.select_name(attr, name):
            self.tree.select_name(attr, "")

    def flush(self) -> None:
        for w in (self.overview, self.prompt_editor, *self.editors.values()):
            w.flush()

    # ------------------------------------------------------------------ structure edits

    def add_component(self, attr: str) -> None:
        doc = self.session.doc
        if doc is None:
            return
        self.flush()
        item = {"skills": doc.new_skill, "tools": doc.new_tool, "hooks": doc.new_hook}[attr]()
        index = len(getattr(doc.harness, attr))
        snap = doc.inserted(attr, index, item)
        self.session.push(
            snap, f"Add {attr[:-1]} {{name}}", origin=self, subject=(attr, snap.uids[index])
        )
        self.tree.select(attr, doc.uid(attr, index))

    def open_import(self, kind: str) -> None:
        """The import/export dialogs: preview, then add everything as one undoable step."""
        from studio.logic import harness_import as hi
        from studio.pages.harness import import_dialogs as dlg

        doc = self.session.doc
        if doc is None:
            return
        self.flush()
        harness = doc.harness
        if kind == "export-tools":
            dlg.run(dlg.ExportToolsDialog(self, harness))
            return
        make = {
            "tools": (dlg.ImportToolsDialog, hi.tools_snapshot, "tools"),
            "skill": (dlg.ImportSkillDialog, hi.skill_snapshot, "skills"),
            "hooks": (dlg.ImportHooksDialog, hi.hooks_snapshot, "hooks"),
        }
        cls, snapshot, attr = make[kind]
        dialog = cls(self, harness)
        if not dlg.run(dialog) or dialog.preview is None or not dialog.preview.ok:
            return
        if self.session.doc is not doc or doc.harness is not harness:
            return  # the harness changed under the dialog; nothing is added
        before = len(getattr(harness, attr))
        snap = snapshot(doc, dialog.preview)
        added = [i.name for i in snap.value[before:]]
        what = attr if len(added) != 1 else attr[:-1]
        text = f"Import {what} {', '.join(added[:3])}" + (" …" if len(added) > 3 else "")
        try:
            self.session.push(snap, text, origin=self)
        except HarnessError as exc:
            self._blocked = False
            self.banner.show_message("error", f"Nothing was imported: {exc}")
            return
        self.tree.select(attr, doc.uid(attr, before))
        self.ctx.message.emit("success", f"Imported {len(added)} {what}. Undo with Ctrl+Z.")

    def duplicate_component(self, attr: str, index: int) -> None:
        doc = self.session.doc
        if doc is None:
            return
        self.flush()
        src = doc.item(attr, index)
        sep = "_" if attr == "tools" else "-"
        name = doc.unique_name(attr, f"{src.name}{sep}copy", sep)
        copy = src.model_copy(update={"name": name}, deep=True)
        if attr == "tools":
            copy = copy.model_copy(update={"binding": src.binding})
        snap = doc.inserted(attr, index + 1, copy)
        self.session.push(
            snap,
            f"Duplicate {src.name} as {{name}}",
            origin=self,
            subject=(attr, snap.uids[index + 1]),
        )
        self.tree.select(attr, doc.uid(attr, index + 1))

    def delete_component(self, attr: str, index: int) -> None:
        doc = self.session.doc
        if doc is None:
            return
        self.flush()
        uid = doc.uid(attr, index)
        name = doc.item(attr, index).name
        try:
            self.session.push(doc.removed(attr, index), f"Delete {attr[:-1]} {name}", origin=self)
        except HarnessError as exc:
            self._blocked = False
            self.banner.show_message("error", f"Cannot delete {name}: {exc}")
            return
        self.session.set_draft(f"{attr}:{uid}", None)
        count = len(getattr(doc.harness, attr))
        if count:
            self.tree.select(attr, doc.uid(attr, min(index, count - 1)))
        else:
            self.tree.select("overview", None)
        self.ctx.message.emit("info", f"Deleted {name}. Undo with Ctrl+Z.")

    def move_component(self, attr: str, src: int, dst: int) -> None:
        doc = self.session.doc
        if doc is None or not (0 <= dst < len(getattr(doc.harness, attr))):
            return
        self.flush()
        self.session.push(doc.moved(attr, src, dst), f"Move {attr[:-1]}", origin=self)

    # ------------------------------------------------------------------ undo / redo

    def undo(self) -> None:
        self.flush()
        self.session.stack.undo()

    def redo(self) -> None:
        self.flush()
        self.session.stack.redo()

    # ------------------------------------------------------------------ saving

    def save_blockers(self) -> list[str]:
        self.flush()
        doc = self.session.doc
        return doc.save_blockers() if doc is not None else []

    def suggested_message(self) -> str:
        texts = self.session.change_texts()
        if not texts:
            return "Save"
        if len(texts) > 3:
            return "; ".join(texts[:3]) + f" and {len(texts) - 3} more"
        return "; ".join(texts)

    def save(self, message: str | None = None, label_name: str = "", then: Any = None) -> bool:
        """Ask for a message (unless given) and store a new version in the background.

        Returns False when nothing was started (blocked by problems, cancelled, not loaded).
        `then` runs after a successful save (e.g. continue closing the window).
        """
        doc = self.session.doc
        if doc is None or self._saving:
            return False
        blockers = self.save_blockers()
        if blockers:
            self._show_blockers(blockers)
            return False
        if message is None and not self.session.dirty and doc.version_id:
            # Ctrl+S with nothing changed: say so instead of offering an identical version
            self.ctx.message.emit("info", f"No changes since version {doc.version_id[:10]}")
            return False
        if message is None:
            labels = sorted({"production", "staging", *self.versions.all_labels()})
            changes = self.session.change_count()
            base = (doc.version_id or "")[:10]
            summary = (
                f"{changes} change{'s' if changes != 1 else ''} since version {base}. "
                "Versions are immutable: this adds one."
            )
            answer = dialogs.ask_save(self, self.suggested_message(), summary, labels)
            if answer is None:
                return False
            message, label_name = answer
        harness = doc.harness
        parent = doc.version_id or "head"
        self._saving = True
        self.save_button.setEnabled(False)
        self.save_button.setText("Saving…")

        def work(store: Any) -> Any:
            info = store.commit(harness, message, parent=parent)
            if label_name:
                store.tag(label_name, info.id)
                info = store.info(info.id)
            return info

        def done(info: Any) -> None:
            self._saving = False
            self.save_button.setEnabled(True)
            self.save_button.setText("Save version")
            if self.session.doc is doc and doc.harness is harness:
                self.session.mark_saved(info.id, info.labels)
            else:
                doc.version_id = info.id
            self._blocked = False
            self.banner.hide()
            self.versions.set_harness(harness.name, info.id)
            self._update_header()
            self.ctx.message.emit("success", f"Saved version {info.id[:10]}")
            self.saved.emit(info.id)
            if then is not None:
                then()

        def fail(exc: BaseException) -> None:
            self._saving = False
            self.save_button.setEnabled(True)
            self.save_button.setText("Save version")
            self._blocked = False
            self.banner.show_message(
                "error",
                f"The version was not saved: {exc}\nYour edits are kept; nothing in the store "
                f"changed. Try again.",
            )

        self.ctx.run_store(
            work,
            changes=StoreChange.VERSIONS,
            on_done=done,
            on_error=fail,
            label="Saving version",
        )
        return True

    def _show_blockers(self, blockers: list[str]) -> None:
        text = "Fix these first; your input is kept in its editor:\n• " + "\n• ".join(blockers[:8])
        if len(blockers) > 8:
            text += f"\n• … and {len(blockers) - 8} more"
        self.banner.show_message("error", "Cannot save yet. " + text)
        self._blocked = True

    def _recheck_blockers(self) -> None:
        """After a refused save, keep the banner to what is still wrong, and take it away
        once every field is fixed (a banner naming fixed fields sends people looking)."""
        if not self._blocked or self.session.doc is None:
            return
        blockers = self.session.doc.save_blockers()
        if blockers:
            self._show_blockers(blockers)
        else:
            self._blocked = False
            self.banner.hide()

    def confirm_leave(self, what: str, then: Any = None) -> bool:
        """True when it is fine to replace the edited harness now. On "save", starts saving and
        returns False; `then` runs after the save succeeds."""
        self.flush()
        if not self.session.dirty:
            return True
        answer = dialogs.ask_unsaved(self, what)
        if answer == dialogs.DISCARD:
            self.session.discard()
            return True
        if answer == dialogs.SAVE:
            self.save(then=then)
        return False

    def labels_chip(self, name: str) -> QLabel:
        return chip(name, label_kind(name))
