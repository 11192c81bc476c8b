"""Reading a harness folder off disk without trusting it: regular files only, no link ever
followed, sizes checked before anything is read, so a hostile folder can neither reach outside
itself nor exhaust the process (docs/architecture.md, "Trust boundaries")."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core.harness.errors import HarnessError, Problem
from core.harness.models import MAX_SKILL_FILE_BYTES

MAX_FOLDER_FILE_BYTES = MAX_SKILL_FILE_BYTES
"""The largest file a harness folder may hold (a skill's extra files are the largest there
are); a larger one is a problem found by its size, before any of it is read."""
MAX_FOLDER_BYTES = 256 * 1024 * 1024
"""All files of a harness folder together; files past it are not read."""


class FileRefused(Exception):
    """A file of a harness folder that is not read (too large, or hard-linked)."""


def entry_kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def link_note(path: Path) -> str:
    try:
        return f" (to {os.readlink(path)})"
    except OSError:
        return ""


def _utf8_name(name: str) -> bool:
    """A file name the store can hold: no undecodable bytes (surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def scan_folder(path: Path) -> tuple[dict[str, bytes], list[Problem]]:
    """Every regular file of a harness folder as {relative posix path: bytes}, and a problem
    for every entry that is not a regular file or folder (symbolic links, dangling or not,
    FIFOs, sockets, device files) or cannot be read. Hidden entries (".git", ".DS_Store") are
    neither read nor entered. No link is ever followed, so nothing outside the folder is read;
    a regular file with more than one hard link is a problem too (it may be any file of the
    system under a name inside the folder), as is one larger than MAX_FOLDER_FILE_BYTES (found
    by its size, before it is read) or past MAX_FOLDER_BYTES for the whole folder.
    """
    files: dict[str, bytes] = {}
    problems: list[Problem] = []
    total = 0
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        folder = path / rel_dir if rel_dir else path
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(rel_dir or str(path), "", f"cannot read: {exc.strerror}"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not _utf8_name(entry.name):
                shown = entry.name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                where = f"{rel_dir}/{shown}" if rel_dir else shown
                problems.append(
                    Problem(
                        where,
                        "",
                        "its name is not UTF-8 text (bytes "
                        f"{os.fsencode(entry.name)!r}); rename it: a stored harness names "
                        "its files in UTF-8",
                    )
                )
                continue
            try:
                if entry.is_symlink():
                    note = link_note(Path(entry.path))
                    problems.append(
                        Problem(
                            rel,
                            "",
                            f"is a symbolic link{note}: a harness folder holds only regular "
                            "files and folders (copy the file in instead)",
                        )
                    )
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(rel)
                elif entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size
                    if size <= MAX_FOLDER_FILE_BYTES and total + size > MAX_FOLDER_BYTES:
                        problems.append(
                            Problem(
                                rel,
                                "",
                                f"not read: the folder's files together pass {MAX_FOLDER_BYTES:,}"
                                " bytes",
                            )
                        )
                        continue
                    data = read_regular(entry.path, limit=MAX_FOLDER_FILE_BYTES)
                    if data is None:
                        problems.append(Problem(rel, "", "changed into a non-regular file"))
                    else:
                        files[rel] = data
                        total += len(data)
                else:
                    kind = entry_kind(entry.stat(follow_symlinks=False).st_mode)
                    problems.append(
                        Problem(rel, "", f"is {kind}: a harness folder holds only regular files")
                    )
            except FileRefused as exc:
                problems.append(Problem(rel, "", str(exc)))
            except OSError as exc:
                problems.append(Problem(rel, "", f"cannot read: {exc.strerror or exc}"))
    return dict(sorted(files.items())), sorted(problems, key=lambda p: p.file)


def read_regular(file: str, *, limit: int | None = None) -> bytes | None:
    """The bytes of a regular file, opened without following a link or blocking on a FIFO.

    With `limit` (a harness folder's files), a file larger than `limit` bytes, or one with
    more than one hard link (it may be a file from anywhere else, /etc/passwd, under a name
    inside the folder), raises FileRefused naming the cause; nothing of it is read then."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(file, flags)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        if limit is None:
            return fh.read()
        if st.st_nlink > 1:
            raise FileRefused(
                f"has {st.st_nlink} hard links: it may be a file from outside the folder under "
                "a name inside it, so it is not read (copy the file in instead of linking it)"
            )
        if st.st_size > limit:
            raise FileRefused(f"is {st.st_size:,} bytes; a harness file may hold at most {limit:,}")
        data = fh.read(limit + 1)
        if len(data) > limit:
            raise FileRefused(f"grew past {limit:,} bytes while it was read")
        return data


def read_files(path: Path) -> dict[str, bytes]:
    """Every file of a harness folder as {relative posix path: bytes} (hidden files skipped).

    Raise HarnessError naming every link, FIFO, device file or unreadable entry.
    """
    files, problems = scan_folder(Path(path))
    if problems:
        raise HarnessError(problems)
    return files
