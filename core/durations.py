"""How a duration reads, in the studio and in the `hat` command alike."""

from __future__ import annotations


def format_duration(seconds: float | None) -> str:
    """Seconds under a minute (0.4 s, 12 s), 0:04:05 from a minute on, "—" when unknown: a
    job of the oracle ends in well under a second, and 0:00:00 said nothing about it."""
    if seconds is None:
        return "—"
    seconds = max(0.0, seconds)
    if seconds < 9.95:
        return f"{seconds:.1f} s"
    if seconds < 59.5:
        return f"{round(seconds)} s"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
