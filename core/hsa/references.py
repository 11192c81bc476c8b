"""What counts as a reference to a tool, parameter or skill name in a harness, and where the
model can read one.

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

`stale_references` finds what a rename left behind with the same rules, so tests and the
transforms share one definition of "a reference" (`core.hsa.renames` applies renames with
it). `UsedNames` is every name a harness already uses, so fresh names never collide.
"""

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from core.harness.models import (
    Harness,
    Hook,
    HookKind,
    Skill,
    Tool,
)
from core.hsa.build import harness_memo, memo
from core.hsa.schema_text import map_schema_text, map_strings

ROLE_KEY = "role"
"""Skill metadata key naming the skill's original identity (see core/sim/surface.py)."""
DISTRACTOR_KEY = "distractor"
"""Skill metadata key marking a distractor skill added by HSA: it has no role to stamp."""

_NAME_RUN = re.compile(r"[A-Za-z0-9_-]+")
_CODE_SPAN = r"`[^`\n]+`"
_QUOTED = r'"[^"\n]*"'


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


def _json_plain(name: str) -> bool:
    return '"' not in name and "\\" not in name and all(c >= " " for c in name)


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
