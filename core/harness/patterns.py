"""Regular expressions a harness declares (hook matchers, forbidden claims, number patterns,
reply-format patterns), matched with a time limit.

A pattern comes from a harness folder, so it is untrusted: `(a|aa)+$` backtracks
exponentially, and Python's `re` has no way to stop it. These patterns are therefore matched
with the `regex` package (a superset of `re`'s syntax with a `timeout` on every match), and a
match that runs past its deadline raises `PatternTimeout` instead of blocking the agent loop.
A pattern must compile under both `re` and `regex`, so code that still uses `re` on it (the
simulator's graders) cannot fail on a pattern the harness accepted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

import regex

MATCHER_TIMEOUT_S = 0.5
"""Limit for one hook matcher against one tool name."""


class PatternTimeout(Exception):
    """A harness pattern ran past its time limit (catastrophic backtracking)."""

    def __init__(self, pattern: str, timeout_s: float) -> None:
        self.pattern = pattern
        self.timeout_s = timeout_s
        super().__init__(
            f"pattern {pattern[:80]!r} ran past its {timeout_s:g} s limit (nested repetition "
            "such as (a|aa)+ backtracks exponentially; simplify it)"
        )


MAX_PATTERN_CHARS = 2000
"""The longest pattern a harness may declare. Real matchers and claims are a few dozen
characters; compiling a crafted one of 200,000 (a run of '[') took `regex` 5-11 s with no way
to stop it, so a longer one is refused before it is compiled."""


def check_pattern(pattern: str) -> None:
    """Raise ValueError when `pattern` is not a valid regex (for `re` and `regex` alike), or
    is longer than MAX_PATTERN_CHARS."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(
            f"pattern {pattern[:40]!r}... is {len(pattern):,} characters long; a harness "
            f"pattern may have at most {MAX_PATTERN_CHARS:,}"
        )
    try:
        re.compile(pattern)
        compiled(pattern, False)
    except (re.error, regex.error) as exc:
        raise ValueError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
    except (RecursionError, OverflowError, MemoryError, ValueError) as exc:
        raise ValueError(f"pattern {pattern[:80]!r} is not a usable regex: {exc}") from None


@lru_cache(maxsize=4096)
def compiled(pattern: str, ignore_case: bool) -> Any:
    return regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)


class Deadline:
    """A time limit shared by the matches one check makes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self, pattern: str) -> float:
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise PatternTimeout(pattern, self.seconds)
        return remaining


class TimedPattern:
    """A compiled harness pattern whose matches share one `Deadline`; `finditer` and `search`
    raise PatternTimeout past it. Duck-compatible with `re.Pattern` for those two methods."""

    def __init__(self, pattern: str, deadline: Deadline, *, ignore_case: bool = False) -> None:
        self.pattern = pattern
        self._compiled = compiled(pattern, ignore_case)
        self._deadline = deadline

    def search(self, text: str) -> Any:
        try:
            return self._compiled.search(text, timeout=self._deadline.left(self.pattern))
        except TimeoutError:
            raise PatternTimeout(self.pattern, self._deadline.seconds) from None

    def finditer(self, text: str) -> Iterator[Any]:
        try:
            found = list(self._compiled.finditer(text, timeout=self._deadline.left(self.pattern)))
        except TimeoutError:
            raise PatternTimeout(self.pattern, self._deadline.seconds) from None
        return iter(found)

    def fullmatch(self, text: str) -> Any:
        try:
            return self._compiled.fullmatch(text, timeout=self._deadline.left(self.pattern))
        except TimeoutError:
            raise PatternTimeout(self.pattern, self._deadline.seconds) from None


GRADE_TIMEOUT_S = 2.0
"""Limit for all of one harness's patterns against one reply, where the simulator grades or
the oracle composes a reply (the hooks use their own `timeout`)."""


class PatternSet:
    """Harness patterns (deduplicated, case-insensitive) searched together in one text under
    one time limit, for callers outside the agent loop: the graders and the oracle read the
    same untrusted patterns the hooks do, and must not hang on them either."""

    def __init__(self, patterns: Iterable[str], *, timeout_s: float = GRADE_TIMEOUT_S) -> None:
        self.patterns = tuple(dict.fromkeys(patterns))
        self.timeout_s = timeout_s

    def matches(self, text: str) -> list[str]:
        """The matched text of each pattern that matches, in pattern order.

        Raises PatternTimeout when the patterns together run past the limit."""
        deadline = Deadline(self.timeout_s)
        found: list[str] = []
        for pattern in self.patterns:
            match = TimedPattern(pattern, deadline, ignore_case=True).search(text)
            if match:
                found.append(str(match.group(0)))
        return found
