"""How the studio and the CLI write a duration (core/durations.py): seconds under a minute,
h:mm:ss from there."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from core.durations import format_duration


def test_short_jobs_read_in_seconds_and_long_ones_as_a_clock() -> None:
    assert format_duration(None) == "—"
    assert format_duration(0.31) == "0.3 s"  # an oracle job: it used to read 0:00:00
    assert format_duration(9.94) == "9.9 s"
    assert format_duration(9.96) == "10 s"
    assert format_duration(42.4) == "42 s"
    assert format_duration(59.6) == "0:01:00"
    assert format_duration(245) == "0:04:05"
    assert format_duration(3 * 3600 + 7) == "3:00:07"
    assert format_duration(-0.5) == "0.0 s"  # a clock that stepped back is not a negative time


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_every_duration_reads_back_to_its_rounded_value(seconds: float) -> None:
    text = format_duration(seconds)
    clock = re.fullmatch(r"(\d+):(\d\d):(\d\d)", text)
    if clock:
        h, m, s = (int(x) for x in clock.groups())
        assert m < 60 and s < 60 and h * 3600 + m * 60 + s == round(seconds) >= 60
    else:
        value = float(text.removesuffix(" s"))
        assert abs(value - seconds) <= 0.5 and seconds < 59.5
