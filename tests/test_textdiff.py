"""The one line alignment (core/textdiff.py) behind the studio's diffs and `hat hsa preview
--side-by-side`: property tests over random texts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.textdiff import align, elide, side_by_side

lines = st.lists(st.sampled_from(["a", "b", "c", "the quick fox", "the slow fox", ""]), max_size=30)


@given(lines, lines)
def test_the_rows_hold_both_texts_in_order(a: list[str], b: list[str]) -> None:
    rows = align(a, b)
    assert [r.left for r in rows if r.left is not None] == a
    assert [r.right for r in rows if r.right is not None] == b
    assert [r.left_no for r in rows if r.left_no is not None] == list(range(1, len(a) + 1))
    for row in rows:
        assert (row.tag == "equal") == (row.left == row.right and row.left is not None)


@given(lines, lines, st.integers(min_value=0, max_value=3))
def test_elision_keeps_every_change_and_context_around_it(
    a: list[str], b: list[str], context: int
) -> None:
    rows = align(a, b)
    short = elide(rows, context)
    assert [r for r in short if r.tag not in ("equal", "skip")] == [
        r for r in rows if r.tag != "equal"
    ]
    skipped = sum(int(r.left.split()[1]) for r in short if r.tag == "skip" and r.left)
    assert skipped + sum(r.tag == "equal" for r in short) == sum(r.tag == "equal" for r in rows)
    assert all(r.tag != "skip" or r.left for r in short)


def test_a_replaced_line_marks_its_changed_words() -> None:
    (row,) = side_by_side("the quick fox", "the slow fox")
    assert row.tag == "replace" and row.left_spans == ((4, 9),) and row.right_spans == ((4, 8),)
    unchanged = elide(align(["x"] * 10, ["x"] * 10), 2)
    assert [(r.tag, r.left) for r in unchanged] == [("skip", "... 10 unchanged lines")]
