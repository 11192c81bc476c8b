"""Where a generation's files go: the rows file the operator names, and its rejects beside it.

One spelling for the companion file, read by data generation (what a rerun skips), the CLI's
help, the studio's dataset list (which hides the companions) and its generation form.
"""

from __future__ import annotations

from pathlib import Path

REJECTS_SUFFIX = ".rejects.jsonl"


def rejects_of(out: Path) -> Path:
    """The rejected jobs' file of the rows file `out`: `<out>.rejects.jsonl`."""
    return out.with_name(out.name + REJECTS_SUFFIX)
