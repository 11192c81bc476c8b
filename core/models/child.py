"""A training-side child process that reports as JSON events on stdout.

The GGUF import (`training.gguf_import`) and the export (`training.export`) need the torch
stack, which core never imports: core starts them with the training interpreter and reads
one JSON object a line (`{"event": "stage" | "note" | "error" | "done", ...}`), passing each
to the caller's callback as it comes. The child's own `error` event is its diagnosis and wins;
otherwise a child that exits badly or without `done` is reported with how it ended and the
tail of its stderr, and a missing training extra is named.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.exits import exit_words
from core.pythons import project_root

EventCallback = Callable[[dict[str, Any]], None]


class ChildFailure(Exception):
    """The child failed: `kind` is the child's own (its error event) or "failed"."""

    def __init__(self, message: str, kind: str = "failed") -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


@dataclass
class ChildResult:
    done: dict[str, Any]
    """The child's `done` event."""
    notes: list[str] = field(default_factory=list)
    """The messages of its `note` events, in order."""


def run_event_child(
    argv: list[str],
    *,
    job: str,
    on_event: EventCallback | None,
    timeout_s: float,
) -> ChildResult:
    """Run `argv` (a `python -m training.…` line) to its end; `job` names it in messages
    ("the GGUF import", "the export"). ChildFailure when it fails."""
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    try:
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(project_root()),
        )
    except OSError as exc:
        raise ChildFailure(f"cannot start {job} ({argv[0]}): {exc.strerror}") from None
    done: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    notes: list[str] = []
    stderr_tail: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr_tail.append(line.rstrip())
            del stderr_tail[:-40]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            kind = event.get("event")
            if kind == "done":
                done = event
            elif kind == "error":
                error = event
            elif kind == "note":
                notes.append(str(event.get("message")))
            if on_event is not None:
                on_event(event)
        proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        timer.cancel()
        reader.join(timeout=5)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    if error is not None:
        raise ChildFailure(str(error.get("message")), kind=str(error.get("kind", "failed")))
    if proc.returncode != 0 or done is None:
        tail = "\n".join(stderr_tail[-15:])
        if proc.returncode in (-9, 137):
            reason = f"it was killed (timeout {timeout_s:g} s, or out of memory)"
        else:
            reason = exit_words(proc.returncode)
        hint = ""
        if "No module named" in tail:
            hint = (
                f"\n({job} needs the training extra: pip install -e '.[training]'; set "
                "HAT_TRAINING_PYTHON to an interpreter that has it)"
            )
        raise ChildFailure(f"{job} failed ({reason}):\n{tail}{hint}")
    return ChildResult(done, notes)
