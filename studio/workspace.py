"""A workspace is a HAT home folder: its database, its settings and its single-instance lock.

- `InstanceGuard` takes `studio.lock` in the home folder (QLockFile). A second studio on the
  same folder gets `AnotherInstance` with a message naming the process that holds it; a lock
  left by a crashed studio is stale (its process is gone) and is taken over.
- `settings(home)` is a QSettings INI file in the home folder (`studio.ini`): window geometry,
  page, theme, selected item and recent workspaces live with the workspace they describe.
- `open_store(home)` runs in a worker thread (it imports SQLAlchemy and alembic, ~1 s cold):
  it opens `hat.db` and, when the store holds no harness yet, imports the demo harness as the
  first version (labelled production), so a first launch opens a working demo workspace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QLockFile, QSettings

if TYPE_CHECKING:
    from core.store import Store

LOCK_FILE = "studio.lock"
SETTINGS_FILE = "studio.ini"
DEMO_MESSAGE = "Demo workspace: the live-stream host harness"


def default_home() -> Path:
    from core.paths import home

    return home()


class AnotherInstance(Exception):
    """Another studio holds this home folder."""


class InstanceGuard:
    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        self._lock = QLockFile(str(self.home / LOCK_FILE))
        self._lock.setStaleLockTime(0)  # only a dead owner makes the lock stale

    def acquire(self) -> None:
        if self._lock.tryLock(200):
            return
        if self._lock.error() == QLockFile.LockError.LockFailedError:
            info = self._lock.getLockInfo()
            pid = info[1] if isinstance(info, tuple) and len(info) > 1 and info[0] else None
            who = f" (process {pid})" if pid else ""
            raise AnotherInstance(
                f"HAT Studio is already open on this workspace{who}:\n{self.home}\n\n"
                "Switch to that window, or open a different workspace folder. Two studios on "
                "one workspace could overwrite each other's unsaved work."
            )
        raise AnotherInstance(
            f"Cannot create the workspace lock in {self.home} "
            f"(is the folder writable?). Lock error: {self._lock.error().name}"
        )

    def release(self) -> None:
        if self._lock.isLocked():
            self._lock.unlock()

    @property
    def locked(self) -> bool:
        return self._lock.isLocked()


def settings(home: Path) -> QSettings:
    return QSettings(str(Path(home) / SETTINGS_FILE), QSettings.Format.IniFormat)


@dataclass
class OpenedStore:
    store: Store
    harness_names: list[str]
    created_demo: bool


def open_store(home: Path, busy_timeout: float = 3.0) -> OpenedStore:
    """Open the workspace's database (worker thread); seed the demo harness when empty."""
    from core.harness.demo import load_demo_harness
    from core.store import Store

    store = Store.open(Path(home) / "hat.db", busy_timeout=busy_timeout)
    try:
        names = store.harness_names()
        created = False
        if not names:
            harness = load_demo_harness()
            info = store.commit(harness, DEMO_MESSAGE)
            store.tag("production", info.id)
            names = store.harness_names()
            created = True
        # Warm the modules the editor needs, off the GUI thread.
        import core.harness.checks  # noqa: F401
        import studio.logic.components
        import studio.logic.document  # noqa: F401
    except BaseException:
        store.close()
        raise
    return OpenedStore(store, names, created)


def describe_home(home: Path) -> str:
    """A short name for the workspace switcher: the folder, with ~ for the user's home."""
    text = str(home)
    user = os.path.expanduser("~")
    if text.startswith(user + os.sep):
        text = "~" + text[len(user) :]
    return text
