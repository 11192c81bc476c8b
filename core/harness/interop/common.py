"""What every outside format is read with: a JSON file or pasted text, parsed exactly as
strictly as a harness folder's files (and bounded in size), so a tool list or settings file
cannot do what a harness folder cannot."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from core.harness.errors import HarnessError, Problem
from core.harness.folder.parse import PARSE_FAILED, FolderReader
from core.harness.folder.safe_read import read_regular

MAX_INPUT_BYTES = 20 * 1024 * 1024
"""The largest tool list or settings file read (a list of hundreds of tools is ~1 MB)."""


def dotted(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def read_json_file(path: Path) -> Any:
    """Parse a JSON file strictly (no duplicate keys, NaN, lone surrogates; nesting and size
    bounded like a harness file); HarnessError naming the file and place otherwise. A link,
    FIFO or device file is refused, as in a harness folder."""
    where = str(path)
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise HarnessError([Problem(where, "", f"cannot read: {exc.strerror or exc}")]) from None
    if stat.S_ISLNK(st.st_mode):
        raise HarnessError([Problem(where, "", "is a symbolic link; give the file itself")])
    if not stat.S_ISREG(st.st_mode):
        raise HarnessError([Problem(where, "", "is not a regular file")])
    if st.st_size > MAX_INPUT_BYTES:
        msg = f"is {st.st_size:,} bytes; the limit is {MAX_INPUT_BYTES:,}"
        raise HarnessError([Problem(where, "", msg)])
    try:
        data = read_regular(str(path))
    except OSError as exc:
        raise HarnessError([Problem(where, "", f"cannot read: {exc.strerror or exc}")]) from None
    if data is None:
        raise HarnessError([Problem(where, "", "is not a regular file")])
    reader = FolderReader({where: data})
    text = reader.text(where)
    if text is None:
        raise HarnessError(reader.problems)
    value = reader.json_value(where, text.removeprefix("\ufeff"))
    if value is PARSE_FAILED:
        raise HarnessError(reader.problems)
    return value


def json_from_text(text: str, where: str) -> Any:
    """Parse JSON given as text (pasted into the studio) exactly as strictly as
    `read_json_file` parses a file; HarnessError naming `where` and the line and column."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
        raise HarnessError([Problem(where, "", f"is over {MAX_INPUT_BYTES:,} bytes")])
    reader = FolderReader({where: text.encode("utf-8", "surrogatepass")})
    value = reader.json_value(where, text.removeprefix("\ufeff"))
    if value is PARSE_FAILED:
        raise HarnessError(reader.problems)
    return value
