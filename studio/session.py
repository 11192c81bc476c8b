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


class SnapshotCommand(QUndoCommand):
    def __init__(
        self, session: EditSession, before: Snapshot, after: Snapshot, text: str, merge_key: Any
    ) -> None:
        super().__init__(text)
        self.session = session
        self.before = before
        self.after = after
        self.merge_key = merge_key
        self.stamp = time.monotonic()
        self._first = True

    def id(self) -> int:
        return 1 if self.merge_key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, SnapshotCommand) or other.merge_key != self.merge_key:
            return False
        if other.stamp - self.stamp > MERGE_SECONDS:
            return False
        self.after = other.after
        self.stamp = other.stamp
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

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.doc: HarnessDocument | None = None
        self.stack = QUndoStack(self)
        self.stack.cleanChanged.connect(self._clean_changed)
        self._origin: object = None
        self.version_labels: tuple[str, ...] = ()

    def _clean_changed(self, _clean: bool) -> None:
        with contextlib.suppress(RuntimeError):  # the stack is destroyed with the app
            self.dirtyChanged.emit(self.dirty)

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

    # ------------------------------------------------------------------ edits

    def push(
        self, after: Snapshot, text: str, origin: object = None, merge_key: Any = None
    ) -> None:
        """Validate and apply `after` as one undoable step; raises HarnessError if invalid."""
        assert self.doc is not None
        self.doc.validated(after.attr, after.value)  # raise before touching the stack
        before = self.doc.snapshot(after.attr)
        self._origin = origin
        try:
            self.stack.push(SnapshotCommand(self, before, after, text, merge_key))
        finally:
            self._origin = None

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
