"""Side-by-side text diffs with word-level highlights, for versions and variants.

`side_by_side(old, new)` aligns the two texts line by line (difflib) and, inside a replaced
block, marks the changed words of each line pair, so a view can paint whole-line backgrounds
and stronger word highlights without any diff logic of its own.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Literal

Tag = Literal["equal", "insert", "delete", "replace"]
_TOKEN_RE = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class Row:
    """One aligned row: a line of each side (None where that side has no line)."""

    tag: Tag
    left: str | None
    right: str | None
    left_no: int | None = None
    right_no: int | None = None
    left_spans: tuple[tuple[int, int], ...] = field(default=())
    right_spans: tuple[tuple[int, int], ...] = field(default=())
    """Character ranges (start, end) of changed words in the line, for replace rows."""


@dataclass(frozen=True)
class DiffStats:
    added: int
    removed: int
    changed: int

    @property
    def total(self) -> int:
        return self.added + self.removed + self.changed


def word_spans(
    old: str, new: str
) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """Changed character ranges of `old` and of `new`, found on word tokens."""
    a = _TOKEN_RE.findall(old)
    b = _TOKEN_RE.findall(new)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    a_pos = [0]
    for tok in a:
        a_pos.append(a_pos[-1] + len(tok))
    b_pos = [0]
    for tok in b:
        b_pos.append(b_pos[-1] + len(tok))
    left: list[tuple[int, int]] = []
    right: list[tuple[int, int]] = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        if i2 > i1:
            left.append((a_pos[i1], a_pos[i2]))
        if j2 > j1:
            right.append((b_pos[j1], b_pos[j2]))
    return tuple(left), tuple(right)


def side_by_side(old: str | None, new: str | None) -> list[Row]:
    """Aligned rows of `old` and `new` (None = the file does not exist on that side)."""
    a = (old or "").splitlines()
    b = (new or "").splitlines()
    rows: list[Row] = []
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            for k in range(i2 - i1):
                rows.append(Row("equal", a[i1 + k], b[j1 + k], i1 + k + 1, j1 + k + 1))
        elif op == "delete":
            for k in range(i1, i2):
                rows.append(Row("delete", a[k], None, k + 1, None))
        elif op == "insert":
            for k in range(j1, j2):
                rows.append(Row("insert", None, b[k], None, k + 1))
        else:
            n = max(i2 - i1, j2 - j1)
            for k in range(n):
                left = a[i1 + k] if i1 + k < i2 else None
                right = b[j1 + k] if j1 + k < j2 else None
                if left is not None and right is not None:
                    ls, rs = word_spans(left, right)
                    rows.append(Row("replace", left, right, i1 + k + 1, j1 + k + 1, ls, rs))
                elif left is not None:
                    rows.append(Row("delete", left, None, i1 + k + 1, None))
                else:
                    rows.append(Row("insert", None, right, None, j1 + k + 1))
    return rows


def stats(rows: list[Row]) -> DiffStats:
    return DiffStats(
        added=sum(r.tag == "insert" for r in rows),
        removed=sum(r.tag == "delete" for r in rows),
        changed=sum(r.tag == "replace" for r in rows),
    )
