"""The edit session: a `HarnessDocument` behind a QUndoStack, with signals for the views.

Every accepted edit is a `SnapshotCommand` holding the attribute's value before and after
(lists of immutable components, so a snapshot costs a list copy). Consecutive edits of the
same field of the same component within a couple of seconds merge into one undo step, like
typing in a text editor. The stack's clean state is the last saved (or loaded) version, so
"dirty" means exactly "has edits not in a stored version"; open drafts (broken input an editor
holds) count as dirty too.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

if TYPE_CHECKING:  # the harness modules load in a worker, after the window paints
    from core.harness import Harness
    from studio.logic.document import Draft, HarnessDocument, Snapshot

MERGE_SECONDS = 2.0


def _name_in(snap: Snapshot, attr: str, uid: int) -> str | None:
    if snap.attr != attr or uid not in snap.uids:
        return None
    return str(snap.value[snap.uids.index(uid)].name)


class SnapshotCommand(QUndoCommand):
    """One undo step. With a `subject` (attribute, component uid) its `text` is a template
    with `{name}`, filled with the component's name *now*: a step made before a rename then
    describes the component by the name it will be saved under."""

    def __init__(
        self,
        session: EditSession,
        before: Snapshot,
        after: Snapshot,
        text: str,
        merge_key: Any,
        subject: tuple[str, int] | None = None,
    ) -> None:
        super().__init__()
        self.template = text if subject is not None else None
        self.subject = subject
        self.session = session
        self.setText(self._fill(text, after))
        self.before = before
        self.after = after
        self.merge_key = merge_key
        self.stamp = time.monotonic()
        self._first = True

    def _fill(self, text: str, snap: Snapshot) -> str:
        if self.subject is None:
            return text
        attr, uid = self.subject
        name = _name_in(snap, attr, uid)
        if name is None and self.session.doc is not None:
            index = self.session.doc.index_of(attr, uid)
            name = None if index is None else self.session.doc.item(attr, index).name
        return text.replace("{name}", name or "?")

    def describe(self) -> str:
        """The step's text with its component's current name (the text it was made with when
        the component is gone)."""
        if self.template is None or self.subject is None or self.session.doc is None:
            return self.text()
        attr, uid = self.subject
        index = self.session.doc.index_of(attr, uid)
        if index is None:
            return self.text()
        return self.template.replace("{name}", self.session.doc.item(attr, index).name)

    def id(self) -> int:
        return 1 if self.merge_key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, SnapshotCommand) or other.merge_key != self.merge_key:
            return False
        if other.stamp - self.stamp > MERGE_SECONDS:
            return False
        self.after = other.after
        self.stamp = other.stamp
        if other.template is not None:  # a merged rename: the step says the new name
            self.template, self.subject = other.template, other.subject
        self.setText(other.text())
        return True

    def redo(self) -> None:
        if self._first:  # the editor already shows this state
            self._first = False
            self.session._set(self.after, origin=self.session._origin)
        else:
            self.session._set(self.after, origin=None)

    def undo(self) -> None:
        self.session._set(self.before, origin=None)


class EditSession(QObject):
    changed = Signal(str, object)
    """(attribute, origin): origin is the editor that made the change, None for undo/redo/load."""
    reset = Signal()
    """A different harness (or version) was loaded: every view reloads."""
    dirtyChanged = Signal(bool)
    draftsChanged = Signal()
    stepsChanged = Signal()
    """A step was pushed, undone or redone, after the stack counts it (`change_count`)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.doc: HarnessDocument | None = None
        self.stack = QUndoStack(self)
        self.stack.cleanChanged.connect(self._clean_changed)
        # a pushed step is on the stack only after its redo() has run (and `changed` and
        # `dirtyChanged` with it): a count read then is one short
        self.stack.indexChanged.connect(self._index_changed)
        self._origin: object = None
        self.version_labels: tuple[str, ...] = ()

    def _clean_changed(self, _clean: bool) -> None:
        with contextlib.suppress(RuntimeError):  # the stack is destroyed with the app
            self.dirtyChanged.emit(self.dirty)

    def _index_changed(self, _index: int) -> None:
        with contextlib.suppress(RuntimeError):  # the stack is destroyed with the app
            self.stack.index()
            self.stepsChanged.emit()

    # ------------------------------------------------------------------ state

    @property
    def harness(self) -> Harness:
        assert self.doc is not None
        return self.doc.harness

    @property
    def loaded(self) -> bool:
        return self.doc is not None

    @property
    def dirty(self) -> bool:
        return self.doc is not None and (not self.stack.isClean() or bool(self.doc.drafts))

    def load(self, harness: Harness, version_id: str | None, labels: tuple[str, ...] = ()) -> None:
        from studio.logic.document import HarnessDocument

        self.doc = HarnessDocument(harness, version_id)
        self.version_labels = labels
        self.stack.clear()
        self.stack.setClean()
        self.reset.emit()
        self.dirtyChanged.emit(False)
        self.draftsChanged.emit()

    def mark_saved(self, version_id: str, labels: tuple[str, ...] = ()) -> None:
        assert self.doc is not None
        self.doc.version_id = version_id
        self.version_labels = labels
        self.stack.setClean()
        self.dirtyChanged.emit(self.dirty)

    def change_count(self) -> int:
        """How many unsaved changes there are: the undo steps between the saved version and
        now. The page header and the save dialog both say this number, so they cannot
        disagree. Dirty with no step in between (the saved state was undone past and then
        replaced) counts as one."""
        if self.doc is None or self.stack.isClean():
            return 0
        clean, index = self.stack.cleanIndex(), self.stack.index()
        steps = index if clean < 0 else abs(index - clean)
        return max(steps, 1)

    def change_texts(self) -> list[str]:
        """What the unsaved steps did, oldest first, each once, naming components by their
        current names (a hook renamed after an edit is not named by its old name)."""
        clean, index = self.stack.cleanIndex(), self.stack.index()
        start, end = (0, index) if clean < 0 else (min(clean, index), max(clean, index))
        texts: list[str] = []
        for i in range(start, end):
            command = self.stack.command(i)
            text = command.describe() if isinstance(command, SnapshotCommand) else command.text()
            if text and text not in texts:
                texts.append(text)
        return texts

    # ------------------------------------------------------------------ edits

    def push(
        self,
        after: Snapshot,
        text: str,
        origin: object = None,
        merge_key: Any = None,
        subject: tuple[str, int] | None = None,
    ) -> None:
        """Validate and apply `after` as one undoable step; raises HarnessError if invalid.

        `subject` (attribute, uid): the component the step is about; `text` then holds
        `{name}` for its name (see `SnapshotCommand`)."""
        assert self.doc is not None
        if subject is not None and "{name}" not in text:
            raise ValueError(f"a step with a subject needs '{{name}}' in its text: {text!r}")
        self.doc.validated(after.attr, after.value)  # raise before touching the stack
        before = self.doc.snapshot(after.attr)
        self._origin = origin
        try:
            self.stack.push(SnapshotCommand(self, before, after, text, merge_key, subject))
        finally:
            self._origin = None

    def replace_all(self, harness: Harness, text: str, origin: object = None) -> None:
        """`harness` as one undo step, however many attributes differ (a rename that carries
        to skills, tools, hooks and the prompt); raises HarnessError and changes nothing when
        the result is invalid. Components keep their identities (a refactoring adds and
        removes nothing)."""
        assert self.doc is not None
        from studio.logic.document import FIELDS, LIST_ATTRS, Snapshot

        doc = self.doc
        changed = [f for f in FIELDS if getattr(harness, f) != getattr(doc.harness, f)]
        for attr in changed:
            if attr in LIST_ATTRS and len(getattr(harness, attr)) != len(doc.uids[attr]):
                raise ValueError(f"replace_all keeps the number of {attr}")
        if not changed:
            return
        snaps = [
            Snapshot(a, list(getattr(harness, a)), tuple(doc.uids[a]))
            if a in LIST_ATTRS
            else Snapshot(a, getattr(harness, a))
            for a in changed
        ]
        for snap in snaps:  # raise before the stack changes
            doc.validated(snap.attr, snap.value)
        self.stack.beginMacro(text)
        try:
            for snap in snaps:
                self.push(snap, text, origin=origin)
        finally:
            self.stack.endMacro()

    def _set(self, snap: Snapshot, origin: object) -> None:
        assert self.doc is not None
        self.doc.apply(snap, trusted=True)  # validated by push() when it was first made
        self.changed.emit(snap.attr, origin)
        self.dirtyChanged.emit(self.dirty)

    def set_draft(self, key: str, draft: Draft | None) -> None:
        assert self.doc is not None
        had = key in self.doc.drafts
        old = self.doc.drafts.get(key)
        self.doc.set_draft(key, draft)
        if had or draft is not None:
            if old is None or draft is None or old.problems != draft.problems:
                self.draftsChanged.emit()
            self.dirtyChanged.emit(self.dirty)

    def draft(self, key: str) -> Draft | None:
        return self.doc.drafts.get(key) if self.doc is not None else None

    def discard(self) -> None:
        """Throw away unsaved edits and drafts (back to the loaded version)."""
        if self.doc is None:
            return
        while not self.stack.isClean() and self.stack.canUndo():
            self.stack.undo()
        self.doc.clear_drafts()
        self.stack.clear()
        self.stack.setClean()
        self.reset.emit()
        self.draftsChanged.emit()
        self.dirtyChanged.emit(False)
