"""Markdown lists found and re-rendered (bullets, numbering, order) without touching the
text around them: what the skill-content transforms restyle."""

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

_ITEM = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>[-*+]|\d+[.)])[ \t]+(?P<text>.*)$")


@dataclass
class ListBlock:
    """A run of top-level Markdown list items (with their nested lines) in a text."""

    start: int
    """Index of the first line."""
    end: int
    """Index after the last line."""
    ordered: bool
    items: list[list[str]]
    """Each item's lines: the item line itself (marker removed), then nested lines as they are."""
    indent: str = ""

    @property
    def flat(self) -> bool:
        """Every item is one line (no nested lists or continuation lines)."""
        return all(len(item) == 1 for item in self.items)


def list_blocks(text: str) -> list[ListBlock]:
    """The Markdown lists of `text` whose items all share one marker kind (bullets or
    numbers), outside fenced code; each item keeps its nested lines. (Parsed once per text;
    each call gets its own copies.)"""
    return [
        ListBlock(b.start, b.end, b.ordered, [list(item) for item in b.items], b.indent)
        for b in _list_blocks(text)
    ]


@lru_cache(maxsize=4096)
def _list_blocks(text: str) -> tuple[ListBlock, ...]:
    lines = text.split("\n")
    blocks: list[ListBlock] = []
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fenced = not fenced
            i += 1
            continue
        match = _ITEM.match(line) if not fenced else None
        if match is None:
            i += 1
            continue
        indent = match.group("indent")
        ordered = match.group("marker")[0].isdigit()
        items: list[list[str]] = []
        start = i
        while i < len(lines):
            match = _ITEM.match(lines[i])
            if (
                match is None
                or match.group("indent") != indent
                or match.group("marker")[0].isdigit() != ordered
            ):
                break
            item = [match.group("text")]
            i += 1
            while i < len(lines) and lines[i].strip() and _deeper(lines[i], indent):
                item.append(lines[i])
                i += 1
            items.append(item)
        blocks.append(ListBlock(start, i, ordered, items, indent))
    return tuple(blocks)


def _deeper(line: str, indent: str) -> bool:
    stripped = line[len(indent) :] if line.startswith(indent) else None
    return stripped is not None and stripped[:1] in (" ", "\t")


def render_list(
    block: ListBlock, ordered: bool, bullet: str = "-", number_end: str = "."
) -> list[str]:
    """The block's items as lines: numbered `1.` (or `1)` with `number_end`) or bulleted."""
    lines: list[str] = []
    for n, item in enumerate(block.items, start=1):
        marker = f"{n}{number_end}" if ordered else bullet
        lines.append(f"{block.indent}{marker} {item[0]}")
        lines.extend(item[1:])
    return lines


def replace_blocks(text: str, rewrite: Callable[[ListBlock], list[str] | None]) -> str:
    """`text` with each list block replaced by `rewrite(block)` lines (None: kept)."""
    lines = text.split("\n")
    out: list[str] = []
    pos = 0
    for block in list_blocks(text):
        out.extend(lines[pos : block.start])
        new = rewrite(block)
        out.extend(new if new is not None else lines[block.start : block.end])
        pos = block.end
    out.extend(lines[pos:])
    return "\n".join(out)
