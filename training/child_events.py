"""The JSON-lines side of a training child that core reads (core/models/child.py).

One object a line on stdout: `stage` and `progress` for the progress bar, `note` for what
the parent prints after, `error` with a kind for the parent's message, `done` with the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


class ChildFailure(Exception):
    """A failure the child diagnosed: reported as an `error` event of this kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def emit(event: str, **data: Any) -> None:
    print(json.dumps({"event": event, **data}), flush=True)


def stage(name: str, message: str) -> None:
    emit("stage", stage=name, message=message)


def run_main(work: Callable[[], dict[str, Any]], *, bad_input: Callable[[str], bool]) -> int:
    """Run `work()` and report it: its dict as `done` (exit 0), a ChildFailure as `error` of
    its kind (exit 2 when `bad_input(kind)`, the caller's bad file or model, else 1), any
    other exception as `error` of kind "failed" (exit 1)."""
    try:
        info = work()
    except ChildFailure as exc:
        emit("error", kind=exc.kind, message=exc.message)
        return 2 if bad_input(exc.kind) else 1
    except Exception as exc:
        emit("error", kind="failed", message=f"{type(exc).__name__}: {exc}")
        return 1
    emit("done", **info)
    return 0
