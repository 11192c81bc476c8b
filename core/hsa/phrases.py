"""Phrase banks applied to prose: text split from its code (backtick spans, fenced blocks,
JSON examples and template variables are never rewritten), phrases replaced as whole words,
and `{kind:name}` placeholders filled."""

import random
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from core.hsa.references import _word

_CODE = re.compile(r"```.*?```|`[^`\n]+`|\{[^{}\n]*\}|\$\{\w+\}", re.DOTALL)


def split_code(text: str) -> list[tuple[str, bool]]:
    """`text` as (segment, is_code) pieces: fenced blocks, backtick spans and `{...}` JSON-ish
    objects on one line are code; the rest is prose."""
    return list(_split_code(text))


@lru_cache(maxsize=4096)
def _split_code(text: str) -> tuple[tuple[str, bool], ...]:
    out: list[tuple[str, bool]] = []
    pos = 0
    for match in _CODE.finditer(text):
        if match.start() > pos:
            out.append((text[pos : match.start()], False))
        out.append((match.group(0), True))
        pos = match.end()
    if pos < len(text):
        out.append((text[pos:], False))
    return tuple(out)


def replace_phrases(
    text: str,
    table: Mapping[str, Sequence[str]],
    rng: random.Random,
    probability: float = 1.0,
) -> str:
    """Each occurrence of a table key in the prose of `text` (never in code) replaced, with
    `probability`, by one of its alternatives; leftmost first, the longest key where two start
    together, one pass. A key that starts (ends) with a word character only matches where the
    text has no word character before (after) it."""
    if not text:
        return text
    keys = [k for k in table if k and table[k] and k in text]
    if not keys:
        return text
    parts: list[str] = []
    for segment, code in split_code(text):
        present = [k for k in keys if k in segment] if not code else []
        hits: list[tuple[int, int, str]] = []
        for key in present:
            start = segment.find(key)
            while start != -1:
                end = start + len(key)
                head_ok = not _word(key[0]) or start == 0 or not _word(segment[start - 1])
                tail_ok = not _word(key[-1]) or end == len(segment) or not _word(segment[end])
                if head_ok and tail_ok:
                    hits.append((start, end, key))
                start = segment.find(key, start + 1)
        if not hits:
            parts.append(segment)
            continue
        hits.sort(key=lambda h: (h[0], -(h[1] - h[0])))
        pos = 0
        for start, end, key in hits:
            if start < pos:
                continue
            parts.append(segment[pos:start])
            if rng.random() < probability:
                parts.append(rng.choice(list(table[key])))
            else:
                parts.append(key)
            pos = end
        parts.append(segment[pos:])
    return "".join(parts)


_PLACEHOLDER = re.compile(r"\{(\w+):([^{}\s]+)\}")


def fill_placeholders(template: str, resolve: Callable[[str, str], str | None]) -> str | None:
    """`{kind:key}` placeholders of a bank text resolved by `resolve(kind, key)`; None when one
    cannot be resolved (the caller then picks another text or skips)."""
    missing = False

    def sub(match: re.Match[str]) -> str:
        nonlocal missing
        value = resolve(match.group(1), match.group(2))
        if value is None:
            missing = True
            return match.group(0)
        return value

    out = _PLACEHOLDER.sub(sub, template)
    return None if missing else out
