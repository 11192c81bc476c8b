"""How a child process ended, and what its log said last: the words every launcher's reasons
use (training runs, the pipeline orchestrator, model servers, GGUF import, the doctor's
probes), so a run killed by the out-of-memory killer reads the same on every page.

A ground-floor module: the standard library only.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

_SHELL_SIGNALS = (137, 143)
"""128 + SIGKILL / SIGTERM: how a shell or a container runtime reports a killed child."""


def exit_signal(code: int) -> str | None:
    """The name of the signal that ended a child (`Popen.returncode` is minus the signal; a
    shell says 128 + the signal), None for a plain exit."""
    number = -code if code < 0 else (code - 128 if code in _SHELL_SIGNALS else None)
    if number is None:
        return None
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_words(code: int) -> str:
    """`exit status 3`, `killed by SIGTERM`, or `killed by SIGKILL (the out-of-memory killer,
    or a kill -9)`: on Linux a SIGKILL nobody sent by hand is nearly always the kernel's."""
    name = exit_signal(code)
    if name is None:
        return f"exit status {code}"
    if name == "SIGKILL":
        return "killed by SIGKILL (the out-of-memory killer, or a kill -9)"
    return f"killed by {name}"


def tail_text(path: Path, max_bytes: int) -> str:
    """The last `max_bytes` of a log file, decoded leniently; "" when it cannot be read."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - max_bytes))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def tail_lines(
    path: Path,
    lines: int,
    *,
    max_bytes: int = 64_000,
    noise: Callable[[str], bool] | None = None,
) -> str:
    """A log file's last `lines` non-blank lines that are not `noise`, joined by newlines."""
    kept = [ln for ln in tail_text(path, max_bytes).splitlines() if ln.strip()]
    if noise is not None:
        kept = [ln for ln in kept if not noise(ln)]
    return "\n".join(kept[-lines:])
