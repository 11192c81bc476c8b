"""Writing one file so that it is never half-written and never written through a link: the
data goes to a hidden sibling opened O_NOFOLLOW, then a rename replaces the name (export, the
export manifest, adding a component, the CLI's --out files)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from core.harness.errors import HarnessError, Problem


def write_new(target: Path, data: bytes) -> None:
    """Write `data` to `target` through a temporary sibling: never through a link, never half."""
    os.replace(stage_file(target, data), target)  # replaces a name, never what a link points at


def make_dirs(root: Path, rel_dir: str) -> None:
    current = root
    for part in rel_dir.split("/"):
        current = current / part
        try:
            os.mkdir(current)
        except FileExistsError:
            if current.is_symlink() or not current.is_dir():
                raise HarnessError(
                    [Problem(str(current), "", "is not a real folder; export will not use it")]
                ) from None


def stage_file(target: Path, data: bytes) -> Path:
    """`data` in a hidden temporary sibling of `target` (opened O_NOFOLLOW), to be renamed
    over it once every file of the export is staged."""
    tmp = target.with_name(f".{target.name}.hat-export")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp
