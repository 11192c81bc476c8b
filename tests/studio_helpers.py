"""Helpers for the studio's GUI tests (offscreen Qt).

`wait_until` spins a real QEventLoop. QTest.qWait (and so pytest-qt's waitUntil) keeps the GIL
while it waits, which starves the studio's worker threads about a hundredfold; a QEventLoop
releases it, so background jobs run at full speed while the test waits for their results.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

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
