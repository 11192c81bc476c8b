"""Line-by-line text diffs with word-level highlights: the one alignment behind every
side-by-side view (the studio's version and variant diffs, `hat hsa preview --side-by-side`).

`side_by_side(old, new)` aligns two texts line by line (difflib) and, inside a replaced block,
marks the changed words of each line pair, so a view can paint whole-line backgrounds and
stronger word highlights without any diff logic of its own; `elide` cuts long unchanged runs
for a terminal. A ground-floor module: the standard library only.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

Tag = Literal["equal", "insert", "delete", "replace", "skip"]
"""`skip` stands for unchanged lines `elide` left out (its text on the left says how many)."""
_TOKEN_RE = re.compile(r"\w+(?:-\w+)*|\s+|[^\w\s]")
"""Words (a hyphenated name such as `product-qa` is one), runs of spaces, single marks."""


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
    return align((old or "").splitlines(), (new or "").splitlines())


def align(a: Sequence[str], b: Sequence[str]) -> list[Row]:
    """Aligned rows of two lists of lines, every line kept (`elide` shortens the unchanged
    runs); a replaced line pair carries its changed words."""
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


def elide(rows: Sequence[Row], context: int) -> list[Row]:
    """`rows` with each run of unchanged rows longer than 2 x `context` + 1 cut to `context`
    rows on each side of a change and one `skip` row saying how many were left out (none
    before the first change, none after the last)."""
    out: list[Row] = []
    i = 0
    while i < len(rows):
        if rows[i].tag != "equal":
            out.append(rows[i])
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j].tag == "equal":
            j += 1
        run = rows[i:j]
        if len(run) > 2 * context + 1:
            head = run[:context] if out else []
            tail = run[-context:] if j < len(rows) else []
            skipped = len(run) - len(head) - len(tail)
            out += [*head, Row("skip", f"... {skipped} unchanged lines", None), *tail]
        else:
            out += run
        i = j
    return out
