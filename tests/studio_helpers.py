"""Helpers for the studio's GUI tests (offscreen Qt).

`wait_until` spins a real QEventLoop. QTest.qWait (and so pytest-qt's waitUntil) keeps the GIL
while it waits, which starves the studio's worker threads about a hundredfold; a QEventLoop
releases it, so background jobs run at full speed while the test waits for their results.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QTimer


def spin(ms: int = 20) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def wait_until(predicate: Callable[[], object], timeout: float = 15.0, step_ms: int = 15) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        spin(step_ms)


def idle(timeout: float = 60) -> None:
    """Let queued timers start their jobs, then wait for every job to finish."""
    from studio.jobs import jobs

    for _ in range(2):
        spin(10)
        wait_until(lambda: jobs().running == 0, timeout=timeout)
    spin(10)


def open_studio(  # type: ignore[no-untyped-def]
    home: Path,
    busy_timeout: float = 3.0,
    size: tuple[int, int] | None = (1280, 820),
    theme_name: str | None = "light",
    timeout: float = 90,
    settle: float = 60,
):
    """A real studio window on the workspace `home`, its store open and its jobs finished
    (within `settle` seconds)."""
    from studio.app import create_window
    from studio.workspace import InstanceGuard

    guard = InstanceGuard(home)
    guard.acquire()
    win = create_window(home, theme_name=theme_name, guard=guard, busy_timeout=busy_timeout)
    if size is not None:
        win.resize(*size)
    win.show()
    wait_until(lambda: win.ctx.session.doc is not None, timeout=timeout)
    idle(settle)
    return win


def shut(win, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    """Close the window as a user would once its jobs are done, and forget the job runner."""
    from studio.jobs import reset_jobs

    idle(timeout)
    win._closing_ok = True
    win.close()
    reset_jobs()
    win.deleteLater()
    spin(5)
    # Free the closed window's Python side now, between tests, rather than whenever the cycle
    # collector next runs (which may be inside a later test's event processing).
    gc.collect()


def layout_problems(root) -> list[str]:  # type: ignore[no-untyped-def]
    """What a window too small for its layouts shows, as readable lines: inputs and buttons
    squeezed below the height they need (text cut through), widgets of one layout drawn over
    each other, and form pages that scroll sideways."""
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractSpinBox,
        QComboBox,
        QLayout,
        QLineEdit,
        QScrollArea,
        QWidget,
    )

    def name(w: QWidget) -> str:
        text = getattr(w, "text", None)
        shown = text() if callable(text) and isinstance(text(), str) else ""
        return f"{type(w).__name__}({w.objectName() or shown[:30]!r})"

    def laid_out(layout: QLayout) -> list[QWidget]:
        out: list[QWidget] = []
        for i in range(layout.count()):
            item = layout.itemAt(i)
            if item.widget() is not None:
                out.append(item.widget())
            elif item.layout() is not None:
                out.extend(laid_out(item.layout()))
        return out

    problems: list[str] = []
    widgets = [w for w in root.findChildren(QWidget) if w.isVisible()]
    for w in widgets:
        inner = isinstance(w.parentWidget(), QLineEdit | QComboBox | QAbstractSpinBox)
        if not inner and isinstance(w, QLineEdit | QComboBox | QAbstractSpinBox | QAbstractButton):
            need = w.minimumSizeHint().height()
            if w.height() < need - 1:
                problems.append(f"{name(w)} is {w.height()} px high, needs {need}")
            text_width = w.sizeHint().width()
            if isinstance(w, QAbstractButton) and w.text() and w.width() < text_width - 2:
                problems.append(f"{name(w)} is {w.width()} px wide, its text needs {text_width}")
        if isinstance(w, QScrollArea) and w.horizontalScrollBar().isVisible():
            problems.append(f"{name(w)} scrolls sideways")
        layout = w.layout()
        if layout is None:
            continue
        shown = [c for c in laid_out(layout) if c.isVisible()]
        for i, a in enumerate(shown):
            for b in shown[i + 1 :]:
                both = a.geometry().intersected(b.geometry())
                if both.width() > 2 and both.height() > 2:
                    problems.append(f"{name(a)} and {name(b)} overlap")
    return problems


def run_qasync(qapp: Any, scenario: Callable[[], Any], timeout: float) -> None:
    """Run the scenario on a qasync loop: the studio's chat requests become asyncio tasks
    on the GUI thread, exactly as in the application."""
    import asyncio

    import qasync

    loop = qasync.QEventLoop(qapp, already_running=False)
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(asyncio.wait_for(scenario(), timeout))
    finally:
        asyncio.set_event_loop(None)
        loop.close()
