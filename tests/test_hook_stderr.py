"""A Python hook that fails without printing a result: its last debug line, even one it did
not end with a newline, is in the reason the run gets (#34 B11: the worker flushes stderr
before it exits). A real hook worker process, no stand-ins."""

from __future__ import annotations

import asyncio

from core.harness.models import Hook
from core.runtime import Decision, run_python_hook

SOURCE = """
import os, sys

def check(event):
    sys.stderr.write("debug: the stock lookup said 0 for link 12")  # no newline
    os.close(1)  # the result line cannot be written: the worker ends without one
    return {"decision": "allow"}
"""


def test_an_unfinished_debug_line_reaches_the_reason() -> None:
    hook = Hook(name="py", event="before_reply", kind="python", source=SOURCE, timeout=20)
    result = asyncio.run(run_python_hook(hook, {"reply": "hi"}))
    assert result.decision is Decision.ERROR, result
    assert "printed no result" in result.reason
    assert "debug: the stock lookup said 0 for link 12" in result.reason, result.reason
