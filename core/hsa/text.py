"""Text rewriting for HSA transforms: renaming references, phrase banks, Markdown lists.

A renamed tool, parameter or skill must be renamed **everywhere** the model can read it: other
skills' bodies and descriptions (backticks, JSON examples, prose), tool and parameter
descriptions, prompt templates, hook reminders, hook matchers (regex alternations of tool
names) and hook parameters (`validate_tool_args` schema property names). `Renamer` does it in
one pass, so chains of renames (a -> b, b -> c) or swaps cannot rewrite a name twice.

Where a name is rewritten depends on what it looks like (`is_identifier_like`):

- an identifier-like name (`check_stock`, `link_no`, `product-qa`, `maxPrice`, `v2`): every
  occurrence as a whole token, i.e. not inside a longer run of `[A-Za-z0-9_]` nor joined to one
  by a hyphen (`check_stock` in `check_stock_v2` or `pre-check_stock` is left alone), and never
  a `${template}` / `$template` variable;
- a plain word (`size`, `query`, `limit`): it is English too ("pick a size"), so only where it
  is code: as a token inside a backtick span, or as a whole double-quoted string (a JSON key or
  value: `{"size": "M"}`). Prose mentions of the concept stay as they are.

`stale_references` finds what a rename left behind with the same rules, so tests and transforms
share one definition of "a reference". `apply_renames` applies tool / parameter / skill /
loader renames to a whole harness (names, `binding_args`, role stamps, every text field, hook
matchers and hook schemas) and raises `RenameError` where it cannot do so safely (a hook
matcher whose meaning would change, a Python hook whose source names a renamed thing): a
transform turns that into `Skip`, never a silently wrong harness.
"""

from __future__ import annotations

import json
import random
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from core.harness.errors import FieldValueError
from core.harness.models import (
    Harness,
    Hook,
    HookKind,
    PromptPipeline,
    PromptSection,
    Settings,
    Skill,
    Tool,
    matcher_matches,
)
from core.hsa.build import Edit, assemble, harness_memo, memo

ROLE_KEY = "role"
"""Skill metadata key naming the skill's original identity (see core/sim/surface.py)."""
DISTRACTOR_KEY = "distractor"
"""Skill metadata key marking a distractor skill added by HSA: it has no role to stamp."""

_NAME_RUN = re.compile(r"[A-Za-z0-9_-]+")
_CODE_SPAN = r"`[^`\n]+`"
_QUOTED = r'"[^"\n]*"'


class RenameError(ValueError):
    """A rename that cannot be applied without changing what the harness means."""


def is_identifier_like(name: str) -> bool:
    """True when `name` cannot be an ordinary English word: it has `_`, `-` or a digit, or is
    camelCase. Such names are rewritten wherever they occur; plain words only in code."""
    return (
        any(c in name for c in "_-")
        or any(c.isdigit() for c in name)
        or re.search(r"[a-z][A-Z]", name) is not None
    )


_SPANS = re.compile(rf"(?P<code>{_CODE_SPAN})|(?P<quoted>{_QUOTED})")


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _whole_token(text: str, start: int, end: int, lo: int = 0, hi: int | None = None) -> bool:
    """Whether text[start:end] is a whole token of text[lo:hi] (the piece it is searched in):
    not inside a longer run of word characters, not joined to one by a hyphen
    (`pre-check_stock`, `product-qa-v2`), and not a `$var` or `${var}` template variable."""
    hi = len(text) if hi is None else hi
    if start > lo:
        before = text[start - 1]
        if _word(before) or before == "$":
            return False
        if before == "-" and start > lo + 1 and _word(text[start - 2]):
            return False
        if before == "{" and start > lo + 1 and text[start - 2] == "$":
            return False
    if end < hi:
        after = text[end]
        if _word(after):
            return False
        if after == "-" and end + 1 < hi and _word(text[end + 1]):
            return False
    return True


def _token_hits(text: str, pool: Sequence[str]) -> list[tuple[int, int, str]]:
    """(start, end, name) of every whole-token occurrence of a `pool` name in `text`, in
    order, non-overlapping (the longest name wins where two start together)."""
    hits: list[tuple[int, int, str]] = []
    for name in pool:
        start = text.find(name)
        while start != -1:
            end = start + len(name)
            if _whole_token(text, start, end):
                hits.append((start, end, name))
            start = text.find(name, start + 1)
    hits.sort(key=lambda h: (h[0], -(h[1] - h[0])))
    out: list[tuple[int, int, str]] = []
    for hit in hits:
        if not out or hit[0] >= out[-1][1]:
            out.append(hit)
    return out


@lru_cache(maxsize=8192)
def _segments(text: str) -> tuple[tuple[str, int, int], ...]:
    """(kind, start, end) of the pieces of `text`: `code` (a backtick span), `quoted` (a
    "string") or `prose` (the rest)."""
    out: list[tuple[str, int, int]] = []
    pos = 0
    for match in _SPANS.finditer(text):
        if match.start() > pos:
            out.append(("prose", pos, match.start()))
        kind = "code" if match.group("code") is not None else "quoted"
        out.append((kind, match.start(), match.end()))
        pos = match.end()
    if pos < len(text):
        out.append(("prose", pos, len(text)))
    return tuple(out)


@lru_cache(maxsize=16384)
def _name_hits(text: str, name: str) -> tuple[tuple[int, int], ...]:
    """Where `text` refers to `name` (start, end), by the rules of the module doc, piece by
    piece (`_segments`): in a backtick span as a token; a double-quoted string that is
    exactly the name as a whole; elsewhere, for an identifier-like name, as a token. Each
    occurrence of the name is located in its piece by bisection, so a long text with few
    mentions costs a few lookups. Cached by (text, name): the same texts (shared skill
    bodies, descriptions) meet the same old names (the harness's current names) over and
    over, whatever subset a variant renames and whatever new names it draws."""
    pos = text.find(name)
    if pos == -1 or not name:
        return ()
    segments = _segments(text)
    starts = _segment_starts(text)
    everywhere = is_identifier_like(name)
    out: list[tuple[int, int]] = []
    last_end = -1
    while pos != -1:
        end = pos + len(name)
        kind, lo, hi = segments[bisect_right(starts, pos) - 1]
        hit = False
        if end <= hi:  # a name split between two pieces is no reference
            if kind == "quoted" and lo + 1 == pos and end == hi - 1:
                hit = True  # the whole quoted string
            elif kind == "code" or everywhere:
                hit = _whole_token(text, pos, end, lo, hi)
            elif kind == "prose":
                hit = _single_quoted(text, pos, end, lo, hi)
        if hit and _literal(text, pos, end, kind, lo, hi):
            hit = False
        if hit and pos >= last_end:
            out.append((pos, end))
            last_end = end
        pos = text.find(name, pos + 1)
    return tuple(out)


_QUOTE_PAIRS = {"'": "'", "\u2018": "\u2019", "\u201c": "\u201d"}


def _single_quoted(text: str, start: int, end: int, lo: int, hi: int) -> bool:
    """Whether text[start:end] is a whole quoted string in prose: `'head'`, `\u2018head\u2019` or
    `\u201chead\u201d` (an apostrophe inside a word, as in "viewer's", opens nothing)."""
    if start - 1 < lo or end >= hi:
        return False
    closer = _QUOTE_PAIRS.get(text[start - 1])
    if closer is None or text[end] != closer:
        return False
    if start - 2 >= lo and _word(text[start - 2]):
        return False
    return not (end + 1 < hi and _word(text[end + 1]))


_SHELL_COMMANDS_TEXT = (
    "npm npx pip pip3 pipx uv uvx poetry yarn pnpm bun deno brew apt apt-get dnf yum "
    "cargo gem go conda mamba python python3 node bash sh zsh curl wget git docker make "
    "soffice libreoffice pandoc cd ls cat mkdir rm cp mv chmod sudo export"
)
SHELL_COMMANDS = frozenset(_SHELL_COMMANDS_TEXT.split())
"""First words of a command line: a name in one is a package, a file or an argument."""
CODE_FENCE_LANGS = frozenset({"", "json", "jsonc", "json5", "text", "txt", "yaml", "yml", "md"})
"""Fenced blocks in which names can be references (tool-call examples); in any other
language (```python, ```bash...) a name is code of that language (`import docx`)."""
_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+-]*)", re.M)
_URL = re.compile(r"[a-z][a-z0-9+.-]*://|www\.", re.I)


def _literal(text: str, start: int, end: int, kind: str, lo: int, hi: int) -> bool:
    """Whether an occurrence of a name at text[start:end] is part of a literal that only
    looks like it: a file name or extension (`file.xlsx`, `xlsx.js`), a path (`/docx/`,
    `~/xlsx`), a package spec (`@scope/docx`, `docx@8`), a URL, a command line (a code span
    or fenced line that starts with a shell command: `npm install -g docx`) or code in a
    fenced block of another language (```python import docx```). Such occurrences are never
    references, whatever the name is (a skill, a tool, a parameter)."""
    before = text[start - 1] if start > 0 else ""
    before2 = text[start - 2] if start > 1 else ""
    after = text[end] if end < len(text) else ""
    after2 = text[end + 1] if end + 1 < len(text) else ""
    if before in "/\\~@" and before:
        return True
    if before in ".:" and before and _word(before2):
        return True
    if after in "/\\@" and after:
        return True
    if after == "." and after2 and (_word(after2) or after2 in "/*"):
        return True
    if after == ":" and after2 == "/":
        return True
    word_start = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start)) + 1
    word_end = min(x for x in (text.find(" ", end), text.find("\n", end), len(text)) if x != -1)
    if _URL.search(text, word_start, word_end):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    fence = _fence_lang(text, start)
    if fence is not None:
        if fence not in CODE_FENCE_LANGS:
            return True
        return _command(text[line_start:start], text[end:line_end])
    if kind == "code":
        return _command(text[lo + 1 : start], text[end : hi - 1])
    return False


def _command(head: str, tail: str) -> bool:
    """Whether a code line (or span) is a command line, the name being between `head` and
    `tail`: it starts with a shell command (`npm install -g docx`), or with the name itself
    followed by arguments (`xlsx report.xlsx --sheet Summary`: a program's name)."""
    words = head.strip().lstrip("$>#").split()
    if words:
        return words[0] in SHELL_COMMANDS
    return not head.strip("$># ") and tail[:1] in (" ", "\t") and bool(tail.strip())


def _fence_lang(text: str, pos: int) -> str | None:
    """The language tag of the fenced block `pos` lies in (`""` when untagged), or None when
    it lies in no fenced block."""
    if "```" not in text and "~~~" not in text:
        return None
    lang: str | None = None
    for match in _FENCE.finditer(text, 0, pos):
        lang = match.group(2).lower() if lang is None else None
    return lang


@lru_cache(maxsize=8192)
def _segment_starts(text: str) -> list[int]:
    return [start for _, start, _ in _segments(text)]


def _text_hits(text: str, names: Iterable[str]) -> list[tuple[int, int, str]]:
    """Where `text` refers to one of `names` (start, end, name), in order, non-overlapping (the
    longest name wins where two start at one place): the union of each name's `_name_hits`,
    which is what one joint scan would find."""
    hits = [(s, e, n) for n in names if n in text for s, e in _name_hits(text, n)]
    if len(hits) < 2:
        return hits
    hits.sort(key=lambda h: (h[0], -(h[1] - h[0])))
    out: list[tuple[int, int, str]] = []
    for hit in hits:
        if not out or hit[0] >= out[-1][1]:
            out.append(hit)
    return out


_NAMED_HERE = re.compile(
    r"(?:skill|load|name|tool|call|param\w*|argument)\w*[\"'`]?\s*[:=(]?\s*[\"'`]?$", re.I
)


def _named_here(text: str, start: int) -> bool:
    """Whether the words just before `start` (same line) name what follows as a skill, tool or
    parameter: `load_skill("xlsx")`, `{"name": "xlsx"}`, "load `xlsx`", "the tool `csv`"."""
    line_start = text.rfind("\n", 0, start) + 1
    return _NAMED_HERE.search(text, max(line_start, start - 40), start) is not None


def harness_values(harness: Harness) -> set[str]:
    """The enum values and string defaults of every tool parameter of `harness` (top level):
    strings that are data, which a name equal to one must not be mistaken for."""
    out: set[str] = set()
    for tool in harness.tools:
        props = tool.parameters.get("properties", {})
        for schema in props.values() if isinstance(props, dict) else ():
            if not isinstance(schema, dict):
                continue
            for value in schema.get("enum", []) if isinstance(schema.get("enum"), list) else []:
                if isinstance(value, str):
                    out.add(value)
            items = schema.get("items")
            if isinstance(items, dict) and isinstance(items.get("enum"), list):
                out.update(v for v in items["enum"] if isinstance(v, str))
            if isinstance(schema.get("default"), str):
                out.add(schema["default"])
    return out


class Renamer:
    """Rewrites references to old names (`names`: old -> new) in harness text, in one pass.

    No regex is compiled per rename: code spans and quoted strings are found by one fixed
    pattern, and names by substring search with the token rules of `_whole_token`, so a
    Renamer costs nothing to build and scanning prose costs a few `str.find` calls."""

    def __init__(self, names: Mapping[str, str], protected: Iterable[str] = ()) -> None:
        self.names = {old: new for old, new in names.items() if old != new}
        self.protected = frozenset(protected) & set(self.names)
        """Old names that are also values of the harness (an enum value or a string default
        of a tool parameter, `format: "xlsx"`): an occurrence of one is a reference only where
        its context says so (`_named_here`)."""
        self.unplain = not all(_json_plain(n) for n in self.names)
        """Some old name has a character JSON escapes (see `_mentions`)."""

    def __bool__(self) -> bool:
        return bool(self.names)

    def text(self, text: str) -> str:
        """`text` with every reference to an old name rewritten (see the module doc)."""
        if not self.names or not text:
            return text
        hits = self._hits(text)
        if not hits:
            return text
        parts: list[str] = []
        pos = 0
        for start, end, name in hits:
            parts.append(text[pos:start])
            parts.append(self.names[name])
            pos = end
        parts.append(text[pos:])
        return "".join(parts)

    def _mentions(self, text: str) -> bool:
        """Cheap pre-check: some old name occurs in `text` at all."""
        return any(name in text for name in self.names)

    def find(self, text: str) -> list[str]:
        """The old names `text` still refers to (same rules as `text`), in order."""
        if not self.names or not text:
            return []
        return [name for _, _, name in self._hits(text)]

    def _hits(self, text: str) -> list[tuple[int, int, str]]:
        hits = _text_hits(text, self.names)
        if self.protected:
            hits = [h for h in hits if h[2] not in self.protected or _named_here(text, h[0])]
        return hits

    def regex(self, pattern: str) -> str:
        """A regex over tool names (a hook matcher) with every old name that is a whole run of
        name characters rewritten; escapes (`\\b`, `\\w`) and metacharacters are kept."""
        if not self._mentions(pattern):
            return pattern
        out: list[str] = []
        i = 0
        while i < len(pattern):
            if pattern[i] == "\\" and i + 1 < len(pattern):
                out.append(pattern[i : i + 2])
                i += 2
                continue
            run = _NAME_RUN.match(pattern, i)
            if run is None:
                out.append(pattern[i])
                i += 1
                continue
            token = run.group(0)
            out.append(self.names.get(token, token))
            i = run.end()
        return "".join(out)

    def regex_names(self, pattern: str) -> list[str]:
        """Old names that occur as whole runs of name characters in a regex."""
        found: list[str] = []
        i = 0
        while i < len(pattern):
            if pattern[i] == "\\":
                i += 2
                continue
            run = _NAME_RUN.match(pattern, i)
            if run is None:
                i += 1
                continue
            if run.group(0) in self.names:
                found.append(run.group(0))
            i = run.end()
        return found


# ----------------------------------------------------------------------------- schemas


def rename_properties(schema: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A copy of an object schema with its top-level property names renamed (`properties`,
    `required`, `dependentRequired`, `dependentSchemas`, and the same inside the schema's
    `allOf` / `anyOf` / `oneOf` / `not` / `if` / `then` / `else`). Nested objects' properties
    are other names and are left alone. Property order is kept."""
    if not names:
        return dict(schema)
    out = dict(schema)
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {names.get(k, k): v for k, v in schema["properties"].items()}
    if isinstance(schema.get("required"), list):
        out["required"] = [names.get(k, k) if isinstance(k, str) else k for k in schema["required"]]
    if isinstance(schema.get("dependentRequired"), dict):
        out["dependentRequired"] = {
            names.get(k, k): [names.get(x, x) for x in v] if isinstance(v, list) else v
            for k, v in schema["dependentRequired"].items()
        }
    if isinstance(schema.get("dependentSchemas"), dict):
        out["dependentSchemas"] = {
            names.get(k, k): rename_properties(v, names) if isinstance(v, dict) else v
            for k, v in schema["dependentSchemas"].items()
        }
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            out[key] = [
                rename_properties(s, names) if isinstance(s, dict) else s for s in schema[key]
            ]
    for key in ("not", "if", "then", "else"):
        if isinstance(schema.get(key), dict):
            out[key] = rename_properties(schema[key], names)
    return out


_SCHEMA_TEXT_KEYS = ("description", "title", "$comment")


def map_schema_text(value: Any, fn: Callable[[str], str]) -> Any:
    """A copy of a JSON Schema with `fn` applied to every description / title / $comment."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _SCHEMA_TEXT_KEYS and isinstance(item, str):
                out[key] = fn(item)
            elif key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(
                item, dict
            ):
                out[key] = {k: map_schema_text(v, fn) for k, v in item.items()}
            elif key in ("enum", "const", "default", "examples"):
                out[key] = item
            else:
                out[key] = map_schema_text(item, fn)
        return out
    if isinstance(value, list):
        return [map_schema_text(v, fn) for v in value]
    return value


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """A copy of JSON-like data with `fn` applied to every string value (keys kept)."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [map_strings(v, fn) for v in value]
    return value


# ----------------------------------------------------------------------------- whole harness


def harness_texts(harness: Harness) -> Iterator[tuple[str, str]]:
    """(where, text) of every text field of `harness` a model can read or that names a tool,
    parameter or skill: descriptions, bodies, templates, reminders, schema texts, hook
    matchers (`where` ends in `.matcher`), names. Leaves out what the model never sees: the
    harness description (the operator's note, kept as written: a skill named `after-sales`
    must not turn "comparisons and after-sales" into "comparisons and xqz-b52d" there) and
    what keeps canonical names on purpose: `binding`, `binding_args`, skill metadata."""
    yield "settings.load_skill_tool", harness.settings.load_skill_tool
    yield "settings.reminder_format", harness.settings.reminder_format
    for key, value in harness.prompt.variables.items():
        yield f"prompt.variables.{key}", value
    for section in harness.prompt.sections:
        yield f"prompt/{section.id}.title", section.title
        yield f"prompt/{section.id}.md", section.template
    for skill in harness.skills:
        yield from skill_texts(skill)
    for tool in harness.tools:
        yield from tool_texts(tool)
    for hook in harness.hooks:
        yield from hook_texts(hook)


def skill_texts(skill: Skill) -> Iterator[tuple[str, str]]:
    """`harness_texts` of one skill."""
    where = f"skills/{skill.name}"
    yield f"{where}.name", skill.name
    yield f"{where}.description", skill.description
    yield f"{where}.body", skill.body
    if skill.allowed_tools:
        yield f"{where}.allowed_tools", skill.allowed_tools


def tool_texts(tool: Tool) -> Iterator[tuple[str, str]]:
    """`harness_texts` of one tool."""
    where = f"tools/{tool.name}"
    yield f"{where}.name", tool.name
    yield f"{where}.description", tool.description
    for prop in tool.parameters.get("properties", {}):
        yield f"{where}.parameters", f'"{prop}"'
    texts: list[str] = []
    map_schema_text(tool.parameters, _collect(texts))
    map_strings(tool.annotations, _collect(texts))
    for text in texts:
        yield f"{where}.text", text


def hook_texts(hook: Hook) -> Iterator[tuple[str, str]]:
    """`harness_texts` of one hook."""
    where = f"hooks/{hook.name}"
    yield f"{where}.matcher", hook.matcher
    yield f"{where}.reminder", hook.reminder
    if hook.kind is HookKind.VALIDATE_TOOL_ARGS:
        for schema in _schemas(hook.params.get("schema", {})):
            for prop in schema.get("properties", {}) if isinstance(schema, dict) else {}:
                yield f"{where}.params", f'"{prop}"'
    if hook.source:
        yield f"{where}.source", hook.source


def _collect(into: list[str]) -> Callable[[str], str]:
    def keep(text: str) -> str:
        into.append(text)
        return text

    return keep


def _schemas(schema: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(schema, dict):
        return
    yield schema
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key, []) if isinstance(schema.get(key), list) else []:
            yield from _schemas(sub)
    for key in ("not", "if", "then", "else"):
        yield from _schemas(schema.get(key))


def stale_references(harness: Harness, old_names: Mapping[str, str] | Sequence[str]) -> list[str]:
    """`where: name` for every reference `harness` still makes to one of `old_names` (names a
    transform renamed away), with the rules of `Renamer`. Empty when the rename was complete."""
    names = old_names if isinstance(old_names, Mapping) else {n: f"\0{n}" for n in old_names}
    renamer = Renamer({k: v for k, v in names.items()}, harness_values(harness))
    out: list[str] = []
    for where, text in harness_texts(harness):
        found = renamer.regex_names(text) if where.endswith(".matcher") else renamer.find(text)
        if where.endswith(".name") or where == "settings.load_skill_tool":
            found = [text] if text in renamer.names else []
        out.extend(f"{where}: {name}" for name in found)
    return out


class UsedNames:
    """The names a harness already uses, for picking fresh ones: a name is used when it (or
    a name added here) occurs, ignoring case, anywhere in the harness's texts and names, even
    inside a longer token (conservative: a fresh name clashes with nothing and cannot be
    mistaken for a reference). `in` and `add` take any case.

    Each skill's, tool's and hook's part of the text is memoised on the component
    (`core.hsa.build.memo`), so variants that share components with their input pay only for
    what changed."""

    def __init__(self, harness: Harness) -> None:
        parts = _harness_parts(harness)
        self._text = harness_memo("used-names", harness, parts, lambda: _used(harness))
        self._added: set[str] = set()

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        key = name.casefold()
        return key in self._added or key in self._text

    def add(self, name: str) -> None:
        self._added.add(name.casefold())


def _harness_parts(harness: Harness) -> tuple[object, ...]:
    """What a harness-level memo depends on: its fields and their components (by identity)."""
    return (
        harness.description,
        harness.settings,
        harness.prompt,
        *harness.skills,
        *harness.tools,
        *harness.hooks,
    )


def _used(harness: Harness) -> str:
    parts = [_used_top(harness)]
    parts.extend(_used_text(s) for s in harness.skills)
    parts.extend(_used_text(t) for t in harness.tools)
    parts.extend(_used_text(h) for h in harness.hooks)
    return "\n".join(parts)


def _used_top(harness: Harness) -> str:
    """The harness-level part of `UsedNames` (description, settings, prompt), memoised."""
    settings, prompt = harness.settings, harness.prompt

    def top() -> str:
        texts = [
            harness.description,
            settings.load_skill_tool,
            settings.reminder_format,
            *prompt.variables.values(),
        ]
        for section in prompt.sections:
            texts.append(section.title)
            texts.append(section.template)
        return "\n".join(texts).casefold()

    keys = (harness.description, settings.load_skill_tool, settings.reminder_format, prompt)
    return memo("used-top", prompt, keys, top)


def _used_text(component: Skill | Tool | Hook) -> str:
    """One component's part of `UsedNames`: its `harness_texts`, plus a tool's parameter names
    and binding arguments and a skill's role, casefolded (memoised)."""
    if isinstance(component, Skill):
        skill = component

        def of_skill() -> str:
            texts = [t for _, t in skill_texts(skill)]
            texts.append(skill.metadata.get(ROLE_KEY, ""))
            return "\n".join(texts).casefold()

        keys: tuple[object, ...] = (
            skill.name,
            skill.description,
            skill.body,
            skill.allowed_tools,
            skill.metadata,
        )
        return memo("used", skill, keys, of_skill)
    if isinstance(component, Tool):
        tool = component

        def of_tool() -> str:
            texts = [t for _, t in tool_texts(tool)]
            texts.extend(tool.parameters.get("properties", {}))
            texts.extend(tool.binding_args.values())
            return "\n".join(texts).casefold()

        keys = (tool.name, tool.description, tool.parameters, tool.annotations, tool.binding_args)
        return memo("used", tool, keys, of_tool)
    hook = component

    def of_hook() -> str:
        return "\n".join(t for _, t in hook_texts(hook)).casefold()

    keys = (hook.matcher, hook.reminder, hook.kind, hook.params, hook.source)
    return memo("used", hook, keys, of_hook)


def used_names(harness: Harness) -> UsedNames:
    """`UsedNames(harness)`."""
    return UsedNames(harness)


@dataclass
class Renames:
    """What `apply_renames` renames, keyed by the input harness's names."""

    tools: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict[str, str]] = field(default_factory=dict)
    """tool (input name) -> {parameter -> new parameter}."""
    skills: dict[str, str] = field(default_factory=dict)
    loader: str | None = None
    """New name of the skill loader (settings.load_skill_tool)."""

    def text_names(self, harness: Harness) -> dict[str, str]:
        """One old -> new table for the text, or RenameError when a name would need two
        different rewrites (a parameter renamed in one tool but kept or renamed otherwise in
        another: prose cannot say which tool it means)."""
        names: dict[str, str] = {}

        def add(old: str, new: str, what: str) -> None:
            if old in names and names[old] != new:
                raise RenameError(
                    f"{what} {old!r} would be renamed to both {names[old]!r} and {new!r}"
                )
            names[old] = new

        for old, new in self.tools.items():
            add(old, new, "tool")
        for old, new in self.skills.items():
            add(old, new, "skill")
        if self.loader is not None:
            add(harness.settings.load_skill_tool, self.loader, "skill loader")
        params: dict[str, str] = {}
        for renames in self.params.values():
            for old, new in renames.items():
                if params.setdefault(old, new) != new:
                    raise RenameError(f"parameter {old!r} renamed differently in two tools")
        for tool in harness.tools:
            props = tool.parameters.get("properties", {})
            renames = self.params.get(tool.name, {})
            for old, new in params.items():
                if old in props and renames.get(old) != new:
                    raise RenameError(
                        f"parameter {old!r} is renamed in some tools but not in {tool.name!r}"
                    )
        for old, new in params.items():
            add(old, new, "parameter")
        return {o: n for o, n in names.items() if o != n}


def apply_renames(harness: Harness, renames: Renames) -> Harness:
    """`harness` with the renames applied everywhere (see the module doc). Renamed skills get
    `metadata.role` = their original name unless they have a role (or are distractors), and
    renamed parameters keep their binding's name through `binding_args`. Raises RenameError
    (or a pydantic ValidationError / FieldValueError, e.g. a name clash) when the result would
    not hold.

    Only components that mention an old name (a substring test on the component's memoised
    text, see `_blob`) are copied and rewritten; the others are shared with the input. The
    result is memoised on the input harness (the same renames of the same harness, e.g. a
    naming style applied to the original, give the same variant object: harnesses are
    values); a failure is not."""
    key = (
        "renamed",
        tuple(sorted(renames.tools.items())),
        tuple(sorted((t, tuple(sorted(p.items()))) for t, p in renames.params.items())),
        tuple(sorted(renames.skills.items())),
        renames.loader,
    )
    parts = _harness_parts(harness)
    return harness_memo(key, harness, parts, lambda: _apply_renames(harness, renames))


def _apply_renames(harness: Harness, renames: Renames) -> Harness:
    names = renames.text_names(harness)
    renamer = Renamer(names, harness_values(harness))
    for hook in harness.hooks:
        if hook.source and renamer.find(hook.source):
            raise RenameError(f"python hook {hook.name!r} names {renamer.find(hook.source)[0]!r}")
    text = renamer.text
    settings = harness.settings
    setting_changes: dict[str, Any] = {}
    if renames.loader is not None:
        setting_changes["load_skill_tool"] = renames.loader
    reminder_format = text(settings.reminder_format)
    if reminder_format != settings.reminder_format:
        setting_changes["reminder_format"] = reminder_format
    if setting_changes:
        settings = Settings.model_validate({**_model_fields(settings), **setting_changes})
    return assemble(
        harness,
        settings=settings,
        prompt=_renamed_prompt(harness.prompt, text),
        skills=[_renamed_skill(s, renames, names, renamer) for s in harness.skills],
        tools=[_renamed_tool(t, renames, renamer) for t in harness.tools],  # schema edits
        hooks=_renamed_hooks(harness, names, renamer),
    )


def _model_fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in type(obj).model_fields}


def _renamed_prompt(prompt: PromptPipeline, text: Callable[[str], str]) -> PromptPipeline:
    variables = {k: text(v) for k, v in prompt.variables.items()}
    sections: list[PromptSection] = []
    for section in prompt.sections:
        title, template = text(section.title), text(section.template)
        if title == section.title and template == section.template:
            sections.append(section)
        else:
            sections.append(section.model_copy(update={"title": title, "template": template}))
    if variables == prompt.variables and all(
        a is b for a, b in zip(sections, prompt.sections, strict=True)
    ):
        return prompt
    return prompt.model_copy(update={"variables": variables, "sections": sections})


def _mentions(blob: str, renamer: Renamer) -> bool:
    """Whether the component whose `_blob` is `blob` may need rewriting. A name with a
    character that JSON escapes could hide in the blob's JSON part, so it always counts."""
    return renamer.unplain or any(name in blob for name in renamer.names)


def _json_plain(name: str) -> bool:
    return '"' not in name and "\\" not in name and all(c >= " " for c in name)


def _blob(component: Skill | Tool | Hook) -> str:
    """Every string of a component that `apply_renames` may rewrite or that names it, in one
    text (JSON for schemas and params: keys and values), memoised on the component."""
    if isinstance(component, Skill):
        skill = component
        keys: tuple[object, ...] = (
            skill.name,
            skill.description,
            skill.body,
            skill.allowed_tools,
        )
        texts = (skill.name, skill.description, skill.body, skill.allowed_tools or "")
        return memo("blob", skill, keys, lambda: "\n".join(texts))
    if isinstance(component, Tool):
        tool = component

        def of_tool() -> str:
            return "\n".join(
                (
                    tool.name,
                    tool.description,
                    json.dumps(tool.parameters, ensure_ascii=False, default=str),
                    json.dumps(tool.annotations, ensure_ascii=False, default=str),
                )
            )

        keys = (tool.name, tool.description, tool.parameters, tool.annotations)
        return memo("blob", tool, keys, of_tool)
    hook = component

    def of_hook() -> str:
        params = json.dumps(hook.params, ensure_ascii=False, default=str)
        return "\n".join((hook.matcher, hook.reminder, params, hook.source or ""))

    return memo("blob", hook, (hook.matcher, hook.reminder, hook.params, hook.source), of_hook)


def _renamed_skill(
    skill: Skill, renames: Renames, names: Mapping[str, str], renamer: Renamer
) -> Skill | Edit:
    new_name = renames.skills.get(skill.name)
    if new_name is None and not _mentions(_blob(skill), renamer):
        return skill
    out: dict[str, Any] = {}
    if new_name is not None:
        out["name"] = new_name
        meta = dict(skill.metadata)
        if ROLE_KEY not in meta and DISTRACTOR_KEY not in meta:
            meta[ROLE_KEY] = skill.name
        out["metadata"] = meta
    out["description"] = renamer.text(skill.description)
    out["body"] = renamer.text(skill.body)
    if skill.allowed_tools:
        out["allowed_tools"] = " ".join(names.get(t, t) for t in skill.allowed_tools.split())
    out = {k: v for k, v in out.items() if v != getattr(skill, k)}
    return Edit(skill, out) if out else skill


def _renamed_tool(tool: Tool, renames: Renames, renamer: Renamer) -> Tool | Edit:
    params = renames.params.get(tool.name, {})
    new_name = renames.tools.get(tool.name, tool.name)
    if new_name == tool.name and not params and not _mentions(_blob(tool), renamer):
        return tool
    text = renamer.text
    schema = tool.parameters
    if any(text(t) != t for t in _schema_texts(tool)):
        schema = map_schema_text(schema, text)
    if params:
        schema = rename_properties(schema, params)
        schema = _retitled_params(schema, tool.parameters, params)
    changes: dict[str, Any] = {}
    if new_name != tool.name:
        changes["name"] = new_name
        title = schema.get("title")
        followed = follow_title(title, tool.name, new_name) if isinstance(title, str) else None
        if followed is not None:
            schema = {**schema, "title": followed}
        if tool.title is not None:
            followed = follow_title(tool.title, tool.name, new_name)
            if followed is not None and followed != tool.title:
                changes["title"] = followed
    description = text(tool.description)
    if description != tool.description:
        changes["description"] = description
    if schema is not tool.parameters:
        changes["parameters"] = schema
    if tool.annotations:
        annotations = map_strings(tool.annotations, text)
        if not _same(annotations, tool.annotations):
            changes["annotations"] = annotations
    binding_args: dict[str, str] = {}
    for prop in tool.parameters.get("properties", {}):
        target = tool.binding_args.get(prop, prop)
        new = params.get(prop, prop)
        if new != target:
            binding_args[new] = target
    if binding_args != tool.binding_args:
        changes["binding_args"] = binding_args
    return Edit(tool, changes) if changes else tool


def _title_styles(name: str) -> list[str]:
    """The titles a schema generator or a person derives from a name, most literal first:
    `context_lines` -> `context_lines`, `Context Lines`, `Context lines`, `context lines`,
    `ContextLines`."""
    words = name_words(name) or [name]
    spaced = " ".join(words)
    return [
        name,
        " ".join(w[:1].upper() + w[1:] for w in words),
        spaced[:1].upper() + spaced[1:],
        spaced,
        "".join(w[:1].upper() + w[1:] for w in words),
    ]


def follow_title(title: str, old: str, new: str) -> str | None:
    """A JSON-Schema / MCP `title` that is derived from the name `old` (`Context Lines` for
    `context_lines`), derived the same way from `new` (`Wkj Ba4` for `wkj_ba4`); None when the
    title is not derived from `old` (a free title such as "Lines of context" stays as written).
    Renaming back derives the original title again, so a variant's inverse rename restores
    it."""
    for style, derived in enumerate(_title_styles(old)):
        if title == derived:
            return _title_styles(new)[style]
    return None


def _retitled_params(
    schema: dict[str, Any], original: dict[str, Any], params: Mapping[str, str]
) -> dict[str, Any]:
    """`schema` (properties already renamed) with each renamed property's `title` following
    its rename where the original title was derived from the old name (`follow_title`)."""
    props = schema.get("properties")
    before = original.get("properties")
    if not isinstance(props, dict) or not isinstance(before, dict):
        return schema
    out = dict(props)
    for old, new in params.items():
        source = before.get(old)
        if not isinstance(source, dict) or not isinstance(source.get("title"), str):
            continue
        followed = follow_title(source["title"], old, new)
        if followed is not None and isinstance(out.get(new), dict):
            out[new] = {**out[new], "title": followed}
    return {**schema, "properties": out}


def _schema_texts(tool: Tool) -> list[str]:
    """The description / title / $comment texts of a tool's schema (memoised)."""

    def collect() -> list[str]:
        texts: list[str] = []
        map_schema_text(tool.parameters, _collect(texts))
        return texts

    return memo("schema-texts", tool, (tool.parameters,), collect)


def _renamed_hooks(
    harness: Harness, names: Mapping[str, str], renamer: Renamer
) -> list[Hook | Edit]:
    old_tools = [t.name for t in harness.tools] + [harness.settings.load_skill_tool]
    tools_renamed = any(t in names for t in old_tools)
    params_table: dict[str, str] | None = None
    out: list[Hook | Edit] = []
    for hook in harness.hooks:
        if hook.matcher != "*" and tools_renamed:
            matcher = renamer.regex(hook.matcher)
            # an unchanged matcher can only change its verdict on the renamed tools
            pairs = tuple(
                (t, names.get(t, t)) for t in old_tools if matcher != hook.matcher or t in names
            )
            _check_matcher(hook.matcher, matcher, pairs)
        if not _mentions(_blob(hook), renamer):
            out.append(hook)
            continue
        new: dict[str, Any] = {"reminder": renamer.text(hook.reminder), "matcher": hook.matcher}
        if hook.matcher != "*":
            new["matcher"] = renamer.regex(hook.matcher)
        new["params"] = hook.params
        if hook.kind is HookKind.VALIDATE_TOOL_ARGS and "schema" in hook.params:
            if params_table is None:
                params_table = {o: n for o, n in names.items() if _is_param(harness, o)}
            schema = map_schema_text(hook.params["schema"], renamer.text)
            new["params"] = {**hook.params, "schema": rename_properties(schema, params_table)}
        if _same(new["params"], hook.params):
            new["params"] = hook.params
        unchanged = new["reminder"] == hook.reminder and new["matcher"] == hook.matcher
        out.append(hook if unchanged and new["params"] is hook.params else Edit(hook, new))
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal data *and* the same order of every dict's keys (a reordered schema is a change,
    though `==` says the dicts are equal), and the same types (`1` is not `True`)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _is_param(harness: Harness, name: str) -> bool:
    return any(name in t.parameters.get("properties", {}) for t in harness.tools)


@lru_cache(maxsize=4096)
def _check_matcher(old: str, new: str, tools: tuple[tuple[str, str], ...]) -> None:
    """RenameError unless the renamed matcher `new` matches the renamed tools exactly where
    `old` matched the old names (`tools`: (old name, new name)). A list of names is checked
    without compiling a regex."""
    for tool, renamed in tools:
        before = matcher_matches(old, tool)
        after = matcher_matches(new, renamed)
        if before != after:
            raise RenameError(f"hook matcher {old!r} would change meaning for tool {tool!r}")


# ----------------------------------------------------------------------------- fresh names


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


# ----------------------------------------------------------------------------- phrases


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


# ----------------------------------------------------------------------------- Markdown lists

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


def render_list(block: ListBlock, ordered: bool, bullet: str = "-") -> list[str]:
    lines: list[str] = []
    for n, item in enumerate(block.items, start=1):
        marker = f"{n}." if ordered else bullet
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


# ----------------------------------------------------------------------------- transform helpers


def skill_role(skill: Skill) -> str | None:
    """A skill's original identity: `metadata.role`, else its name; None for distractors."""
    if DISTRACTOR_KEY in skill.metadata:
        return None
    return skill.metadata.get(ROLE_KEY, skill.name)


def canonical_param(tool: Tool, name: str) -> str:
    """The binding's name of a tool parameter (what `binding_args` maps it to)."""
    return tool.binding_args.get(name, name)


def current_param(tool: Tool, canonical: str) -> str | None:
    """The tool's parameter whose binding name is `canonical`, or None."""
    for name in tool.parameters.get("properties", {}):
        if canonical_param(tool, name) == canonical:
            return str(name)
    return None


def rename_or_skip(harness: Harness, renames: Renames) -> Harness:
    """`apply_renames`, with every reason it cannot be done turned into `Skip`."""
    from pydantic import ValidationError

    from core.hsa.transform import Skip

    try:
        return apply_renames(harness, renames)
    except (RenameError, ValidationError, FieldValueError) as exc:
        raise Skip(f"rename not applicable: {exc}") from None


def assemble_or_skip(base: Harness, **parts: Any) -> Harness:
    """`core.hsa.build.assemble(base, **parts)`, a failure turned into `Skip`."""
    from pydantic import ValidationError

    from core.hsa.transform import Skip

    try:
        return assemble(base, **parts)
    except (ValidationError, FieldValueError) as exc:
        raise Skip(f"the transformed harness does not validate: {exc}") from None


def pick_fresh(
    rng: random.Random, options: Sequence[str], used: UsedNames, exclude: str = ""
) -> str | None:
    """A random option not in `used` and not `exclude`; records it as used."""
    for choice in rng.sample(list(options), len(options)):
        if choice != exclude and choice not in used:
            used.add(choice)
            return choice
    return None


def shuffled(rng: random.Random, items: Sequence[Any]) -> list[Any]:
    """A permutation of `items` that differs from the input whenever it can (two or more
    distinct items): a shuffle that gives back the input gets two distinct items swapped."""
    out = list(items)
    rng.shuffle(out)
    if out == list(items):
        first = rng.randrange(len(out)) if out else 0
        others = [j for j in range(len(out)) if out[j] != out[first]]
        if others:
            second = rng.choice(others)
            out[first], out[second] = out[second], out[first]
    return out
