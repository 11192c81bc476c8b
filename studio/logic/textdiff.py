"""Side-by-side diffs fitted to a view's width: long lines wrapped into continuation rows
(with their changed-word spans split along), over the one alignment in `core.textdiff`.
"""

from __future__ import annotations

from core.textdiff import DiffStats, Row, side_by_side, stats, word_spans

__all__ = ["DiffStats", "Row", "side_by_side", "stats", "word_spans", "wrap_pieces", "wrap_rows"]
"""The alignment is core's; the studio's views import it from here with the wrapping."""


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
