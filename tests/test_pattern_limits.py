"""A harness pattern is refused by its length before it is compiled: the fuzzer's 200,009-
character Claude hooks matcher (a run of '[') took `regex` 5-11 s to compile, with no way to
stop it (benchmarks/fuzz_inputs.py --seed 7, case 493)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.harness.patterns import MAX_PATTERN_CHARS, check_pattern


@settings(max_examples=30, deadline=None)
@given(
    unit=st.sampled_from(["[", "(", "a*", "(a|aa)+", "\\d", "x"]),
    extra=st.integers(1, 200_000),
)
def test_a_pattern_past_the_cap_is_refused_at_once(unit: str, extra: int) -> None:
    pattern = unit * (MAX_PATTERN_CHARS // len(unit) + 1) + "y" * extra
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"characters long; a harness pattern may have at most"):
        check_pattern(pattern)
    assert time.perf_counter() - start < 0.5


def test_a_pattern_at_the_cap_is_still_a_pattern() -> None:
    check_pattern("a" * MAX_PATTERN_CHARS)
    check_pattern("(refund|return)s? (policy|window)")


def test_the_fuzzers_matcher_is_a_clear_import_error() -> None:
    from core.harness.errors import HarnessError
    from core.harness.interop import hooks_from_claude_settings

    matcher = '"1e30' + "[" * 200_004
    data = {"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [
        {"type": "command", "command": "true"}]}]}}  # fmt: skip
    start = time.perf_counter()
    with pytest.raises(HarnessError) as err:
        hooks_from_claude_settings(data, "settings.json", tool_names=["Bash"])
    assert "200,009 characters long" in str(err.value) and "settings.json" in str(err.value)
    assert time.perf_counter() - start < 1.0
