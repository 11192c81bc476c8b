"""Reading JSON Lines the way the format means them.

A JSONL record ends at "\n" only. `str.splitlines()` also breaks at U+2028, U+2029, U+0085,
form feeds and other separators that JSON allows raw inside a string, so a user's text holding
one (pasted from a web page or a PDF) would split one record into two broken ones. And a line
nested deeper than Python's JSON reader can recurse raises RecursionError, which is not a
ValueError: callers that name bad lines would let it through as a traceback.
"""

from __future__ import annotations

import json
from typing import Any


def jsonl_lines(text: str) -> list[str]:
    """The records of a JSONL text: split at "\\n" only (a "\\r" before it dropped)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


class JsonDepthError(ValueError):
    """A JSON value nested deeper than the reader can follow."""


def loads_line(text: str) -> Any:
    """`json.loads`, with nesting too deep for the reader as a ValueError (JsonDepthError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonDepthError("nested too deeply for the JSON reader") from None
