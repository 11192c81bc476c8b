"""Fresh names for renamed tools, parameters and skills: a name's words, its case style
(snake, kebab, camel, ...), and a tagged variant (`name-3f2a`) that no part of the harness
uses yet."""

import random
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from core.hsa.references import UsedNames


def case_style(words: Sequence[str], style: str) -> str:
    """Join lowercase words in a naming style: snake (`get_stock`), kebab (`get-stock`), camel
    (`getStock`), pascal (`GetStock`), screaming_snake (`GET_STOCK`), capital_dash
    (`Get-Stock`), capital_snake (`Get_Stock`), compact (`getstock`)."""
    if style == "snake":
        return "_".join(words)
    if style == "kebab":
        return "-".join(words)
    if style == "camel":
        return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])
    if style == "pascal":
        return "".join(w[:1].upper() + w[1:] for w in words)
    if style == "screaming_snake":
        return "_".join(w.upper() for w in words)
    if style == "capital_dash":
        return "-".join(w[:1].upper() + w[1:] for w in words)
    if style == "capital_snake":
        return "_".join(w[:1].upper() + w[1:] for w in words)
    if style == "compact":
        return "".join(words)
    raise ValueError(f"unknown naming style {style!r}")


def name_words(name: str) -> list[str]:
    """Lowercase words of a snake / kebab / camel / Pascal name."""
    return list(_name_words(name))


@lru_cache(maxsize=4096)
def _name_words(name: str) -> tuple[str, ...]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return tuple(w.lower() for w in re.split(r"[\s_-]+", spaced) if w)


def hex_tag(rng: random.Random, digits: int = 4) -> str:
    """Random lowercase hex digits. Bank strings all contain a letter beyond `f`, so a hex tag
    can never spell one."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(digits))


def tagged_name(
    rng: random.Random,
    prefix: str,
    sep: str,
    used: UsedNames,
    *,
    digits: int = 4,
    valid: Callable[[str], bool] | None = None,
    tries: int = 16,
) -> str | None:
    """A fresh opaque name `<prefix><sep><hex tag>` (`zqk-7f3a`) not in `used` and `valid`,
    recorded as used; None after `tries` draws that clash."""
    for _ in range(tries):
        new = f"{prefix}{sep}{hex_tag(rng, digits)}"
        if new not in used and (valid is None or valid(new)):
            used.add(new)
            return new
    return None
