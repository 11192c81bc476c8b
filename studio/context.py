"""What every page shares: the workspace (home, settings), the store, the edit session, jobs.

The store is opened in a worker thread after the window is on screen (`open`); until
`opened` fires, pages show a loading state. Store operations that may touch the disk go
through `jobs` too, so a slow or locked database never freezes the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Flag, auto
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QSettings, Signal

from studio.jobs import Jobs
from studio.logic.servers import ServerStatus
from studio.session import EditSession
from studio.workspace import OpenedStore, open_store

if TYPE_CHECKING:
    from core.store import Store
    from studio.logic.chat_server import ChatServer


class StoreChange(Flag):
    """What a job wrote to the workspace, so every page that shows it can reload.

    Pages never announce by hand: a job that writes says what it wrote (`run_store(...,
    changes=...)`, or by returning `Wrote`), and the context announces it once, after the job
    succeeded, through `storeChanged` (and `versionsChanged` / `modelsChanged`, which most
    pages want on their own)."""

    NONE = 0
    VERSIONS = auto()
    """Versions or labels of a harness (save, tag, rollback, import)."""
    HARNESSES = auto()
    """The set of harness names (an import brought a new one)."""
    MODELS = auto()
    """The model registry (an import, a finished training run's output)."""
    ROWS = auto()
    """Generated data rows (a dataset file written or extended)."""
    RESULTS = auto()
    """Evaluation runs and their results."""
    SERVING = auto()
    """What a model server answers with (a promotion or a rollback, core/serving/promote.py)."""


@dataclass(frozen=True)
class Wrote:
    """A job's value with what it wrote, where that depends on what the job found (an import
    adds a harness name only when the name is new)."""

    value: Any
    changes: StoreChange


class StudioContext(QObject):
    opened = Signal()
    openFailed = Signal(str)
    storeChanged = Signal(object)
    """A job wrote to the workspace (a `StoreChange`); emitted only by `announce`."""
    versionsChanged = Signal()
    """Versions or labels changed in the store (save, tag, rollback, import)."""
    modelsChanged = Signal()
    """The model registry changed."""
    harnessChanged = Signal(str)
    """The harness being edited changed (name)."""
    message = Signal(str, str)
    """(kind, text): a toast (kind info/success) or an error banner (kind error)."""
    closing = Signal()
    """The workspace is about to close its store: stop timers and worker threads that use it."""
    serversChanged = Signal()
    """A model server card changed state (`servers` holds each card's status)."""
    runHubCreated = Signal(object)
    """The workspace's training run hub was made (studio.run_hub.run_hub)."""
    currentModelChanged = Signal(str)
    """The model the pages share changed (a registered name: a base, merged model or
    adapter): a finished training run's output, or the user's pick on any page."""

    def __init__(
        self,
        home: Path,
        settings: QSettings,
        jobs: Jobs,
        busy_timeout: float = 3.0,
        parent: QObject | None = None,
    ) -> None:
        # The window is the parent: the context and everything hanging off it (the edit
        # session, the run hub and its poller) go when the window goes, at a known point, not
        # whenever Python's cycle collector reaches them.
        super().__init__(parent)
        self.home = Path(home)
        self.settings = settings
        self.jobs = jobs
        self.busy_timeout = busy_timeout
        self.store: Store | None = None
        self.harness_names: list[str] = []
        self.harness_name = ""
        self.session = EditSession(self)
        self.created_demo = False
        self.servers: dict[str, ServerStatus] = {}
        self.chat_servers: dict[str, ChatServer] = {}
        """The Chat page's server of each card (by slot), for pages that act on a running
        server: the Runs page promotes a trained adapter onto it."""
        self.current_model = str(settings.value("current/model", "") or "")
        """The registered model the pages start from (Chat's server card, Evaluate's model);
        "" until one is picked or trained. Shown in the status bar."""

    def set_current_model(self, name: str) -> None:
        """Make `name` the model every page offers first (one place, changeable anywhere)."""
        if name and name != self.current_model:
            self.current_model = name
            self.settings.setValue("current/model", name)
            self.currentModelChanged.emit(name)

    def running_server(self) -> ServerStatus | None:
        """The first running server card's status (what Evaluate offers to reuse)."""
        running = [s for _slot, s in sorted(self.servers.items()) if s.state == "running"]
        return running[0] if running else None

    def set_server(self, slot: str, status: ServerStatus) -> None:
        """What server card `slot` now has (the status bar follows)."""
        if self.servers.get(slot) != status:
            self.servers[slot] = status
            self.serversChanged.emit()

    def open(self) -> None:
        self.jobs.run(
            open_store,
            self.home,
            self.busy_timeout,
            on_done=self._opened,
            on_error=self._failed,
            label="Opening workspace",
        )

    def _opened(self, result: OpenedStore) -> None:
        self.store = result.store
        self.harness_names = result.harness_names
        self.created_demo = result.created_demo
        wanted = str(self.settings.value("harness/name", "") or "")
        self.harness_name = (
            wanted
            if wanted in self.harness_names
            else ("live-host" if "live-host" in self.harness_names else self.harness_names[0])
        )
        self.opened.emit()

    def _failed(self, exc: BaseException) -> None:
        self.openFailed.emit(str(exc))

    def close(self) -> None:
        self.closing.emit()
        if self.store is not None:
            self.store.close()
            self.store = None

    def announce(self, changes: StoreChange) -> None:
        """Tell every page what was written (the one place store changes are announced)."""
        if not changes:
            return
        self.storeChanged.emit(changes)
        if changes & StoreChange.VERSIONS:
            self.versionsChanged.emit()
        if changes & StoreChange.MODELS:
            self.modelsChanged.emit()

    def _announcing(self, changes: StoreChange, on_done: Any, on_error: Any) -> tuple[Any, Any]:
        """(on_done, on_error), each announcing first what the job wrote: the declared
        changes, plus a returned `Wrote`'s. A failed job announces too: a store write that
        failed rolled back (the reload finds nothing new), but a long job (an evaluation, a
        generation run) keeps what it wrote before it failed."""

        def done(value: Any) -> None:
            wrote = changes
            if isinstance(value, Wrote):
                wrote, value = wrote | value.changes, value.value
            self.announce(wrote)
            if on_done is not None:
                on_done(value)

        def failed(exc: BaseException) -> None:
            self.announce(changes)
            if on_error is not None:
                on_error(exc)
            else:
                self.message.emit("error", str(exc))

        return done, failed

    def run(
        self,
        fn: Any,
        *args: Any,
        changes: StoreChange = StoreChange.NONE,
        on_done: Any = None,
        on_error: Any = None,
        label: str = "",
    ) -> None:
        """Run fn(*args) in a worker; what it wrote (`changes`) is announced when it ends;
        errors go to on_error (default: an error banner)."""
        done, failed = self._announcing(changes, on_done, on_error)
        self.jobs.run(fn, *args, on_done=done, on_error=failed, label=label)

    def run_store(
        self,
        fn: Any,
        *args: Any,
        changes: StoreChange = StoreChange.NONE,
        on_done: Any = None,
        on_error: Any = None,
        label: str = "",
    ) -> None:
        """`run` with the store as fn's first argument (nothing runs while no store is open)."""
        store = self.store
        if store is None:
            return
        self.run(fn, store, *args, changes=changes, on_done=on_done, on_error=on_error, label=label)
