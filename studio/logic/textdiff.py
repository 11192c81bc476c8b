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


def _continuation_indent(line: str, width: int) -> str:
    """The indentation repeated before a long line's continuations: the line's own, unless
    it would leave less than half the width for text."""
    indent = line[: len(line) - len(line.lstrip(" "))]
    return indent if len(indent) < width // 2 else ""


def wrap_pieces(line: str, width: int) -> list[tuple[int, int]]:
    """(start, end) of the visual lines of `line` re-flowed at word boundaries to `width`
    columns; continuation lines are shown after the line's own indentation (which they do
    not include). Spaces at a break are dropped; a word longer than a line is cut."""
    if len(line) <= width:
        return [(0, len(line))]
    indent = len(_continuation_indent(line, width))
    pieces: list[tuple[int, int]] = []
    pos = 0
    while pos < len(line):
        room = max(1, width - (indent if pieces else 0))
        if len(line) - pos <= room:
            pieces.append((pos, len(line)))
            break
        cut = line.rfind(" ", pos + 1, pos + room + 1)
        if cut <= pos or not line[pos:cut].strip():
            cut = pos + room  # no break inside the line: cut the word
            following = cut
        else:
            following = cut
            while following < len(line) and line[following] == " ":
                following += 1
            while cut > pos and line[cut - 1] == " ":
                cut -= 1
        pieces.append((pos, cut))
        pos = following
    return pieces


def wrap_rows(rows: list[Row], width: int) -> list[Row]:
    """`rows` with long lines re-flowed to `width` columns for display. The diff itself stays
    on the whole lines: re-flowing first would make a word pushed to the next visual line
    by an insertion look changed on both sides. A row becomes as many rows as its longer
    side needs (the shorter side padded with None), its word spans cut to each piece."""
    out: list[Row] = []
    for row in rows:
        left = _wrapped(row.left, row.left_spans, width)
        right = _wrapped(row.right, row.right_spans, width)
        for k in range(max(len(left), len(right))):
            lt, ls = left[k] if k < len(left) else (None, ())
            rt, rs = right[k] if k < len(right) else (None, ())
            first = k == 0
            out.append(
                Row(
                    row.tag,
                    lt,
                    rt,
                    row.left_no if first and lt is not None else None,
                    row.right_no if first and rt is not None else None,
                    ls,
                    rs,
                )
            )
    return out


def _wrapped(
    line: str | None, spans: tuple[tuple[int, int], ...], width: int
) -> list[tuple[str | None, tuple[tuple[int, int], ...]]]:
    if line is None:
        return [(None, ())]
    indent = _continuation_indent(line, width)
    out: list[tuple[str | None, tuple[tuple[int, int], ...]]] = []
    for k, (start, end) in enumerate(wrap_pieces(line, width)):
        prefix = indent if k else ""
        cut = tuple(
            (max(s, start) - start + len(prefix), min(e, end) - start + len(prefix))
            for s, e in spans
            if s < end and e > start
        )
        out.append((prefix + line[start:end], cut))
    return out
