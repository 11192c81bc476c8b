"""Background work whose results come back on the GUI thread (Anki's QueryOp, in small).

    jobs.run(store.load, ref, on_done=self.show, on_error=self.fail, label="Loading version")

`run` executes a plain function in a worker thread; `run_async` a coroutine: as an asyncio
task when an asyncio loop is running on the GUI thread (the application runs under qasync),
otherwise with `asyncio.run` in a worker thread (tests, tools without qasync). Either way the
callbacks run on the GUI thread, through a queued Qt signal, and the GUI thread never waits.

`running` counts the jobs in flight (the status bar shows it); `shutdown` cancels what has not
started and every pending asyncio task (the application calls it on aboutToQuit).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot

Callback = Callable[[Any], None]


class Jobs(QObject):
    countChanged = Signal(int)
    _finished = Signal(int, bool, object)

    def __init__(self, parent: QObject | None = None, workers: int = 4) -> None:
        super().__init__(parent)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="studio-job")
        self._ids = itertools.count(1)
        self._callbacks: dict[int, tuple[Callback | None, Callback | None, str]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._finished.connect(self._deliver)

    @property
    def running(self) -> int:
        return len(self._callbacks)

    def labels(self) -> list[str]:
        return [label for _, _, label in self._callbacks.values() if label]

    def _register(self, on_done: Callback | None, on_error: Callback | None, label: str) -> int:
        token = next(self._ids)
        self._callbacks[token] = (on_done, on_error, label)
        self.countChanged.emit(self.running)
        return token

    def run(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_done: Callback | None = None,
        on_error: Callback | None = None,
        label: str = "",
        **kwargs: Any,
    ) -> Future[Any] | None:
        if self._closed:
            return None
        token = self._register(on_done, on_error, label)

        def work() -> None:
            try:
                value = fn(*args, **kwargs)
            except BaseException as exc:  # delivered to on_error on the GUI thread
                self._emit(token, False, exc)
            else:
                self._emit(token, True, value)

        return self._pool.submit(work)

    def run_async(
        self,
        factory: Callable[[], Coroutine[Any, Any, Any]],
        *,
        on_done: Callback | None = None,
        on_error: Callback | None = None,
        label: str = "",
    ) -> asyncio.Task[Any] | None:
        """Run the coroutine `factory()` makes; see the module doc for where it runs.

        Returns its task on a running loop (cancelling it delivers neither callback: the
        caller that cancels says what happened), None where it runs in a worker thread."""
        if self._closed:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:
            self.run(
                lambda: asyncio.run(factory()), on_done=on_done, on_error=on_error, label=label
            )
            return None
        token = self._register(on_done, on_error, label)
        task = loop.create_task(factory())
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            if t.cancelled():
                self._callbacks.pop(token, None)
                self.countChanged.emit(self.running)
                return
            exc = t.exception()
            self._deliver(token, exc is None, exc if exc is not None else t.result())

        task.add_done_callback(done)
        return task

    def _emit(self, token: int, ok: bool, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the Jobs object is gone (quitting)
            self._finished.emit(token, ok, value)

    @Slot(int, bool, object)
    def _deliver(self, token: int, ok: bool, value: Any) -> None:
        entry = self._callbacks.pop(token, None)
        self.countChanged.emit(self.running)
        if entry is None:
            return
        on_done, on_error, _label = entry
        callback = on_done if ok else on_error
        if callback is None:
            if not ok:
                import traceback

                traceback.print_exception(value)
            return
        try:
            callback(value)
        except RuntimeError as exc:  # a widget deleted while its job ran
            if "already deleted" not in str(exc):
                raise

    def shutdown(self) -> None:
        """Cancel queued work and pending asyncio tasks, then wait for running jobs."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        self._tasks.clear()
        self._callbacks.clear()
        # Wait for the jobs already running (a store write finishes its transaction; none of
        # them runs long): a worker thread still alive while Python and Qt tear down could
        # touch Qt objects that are gone.
        self._pool.shutdown(wait=True, cancel_futures=True)


_jobs: Jobs | None = None


def jobs() -> Jobs:
    """The application's job runner (created on first use, on the GUI thread).

    The application is its parent, so Qt owns it and it is destroyed on the GUI thread (a
    Python-owned QObject is destroyed wherever the cycle collector happens to run, which can
    be a worker thread)."""
    global _jobs
    if _jobs is None:
        _jobs = Jobs(QCoreApplication.instance())
    return _jobs


def reset_jobs() -> None:
    """Shut the runner down and forget it (application quit, tests)."""
    global _jobs
    if _jobs is not None:
        _jobs.shutdown()
        _jobs.deleteLater()
        _jobs = None
