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

import copy
import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from core.harness.models import Harness, HookKind, Skill, Tool

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


def _token_re(names: Sequence[str]) -> re.Pattern[str] | None:
    if not names:
        return None
    alts = "|".join(re.escape(n) for n in sorted(set(names), key=lambda n: (-len(n), n)))
    return re.compile(rf"(?<![\w$])(?<!\w-)(?<!\$\{{)(?:{alts})(?!\w)(?!-\w)")


class Renamer:
    """Rewrites references to old names (`names`: old -> new) in harness text, in one pass."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = {old: new for old, new in names.items() if old != new}
        everywhere = [n for n in self.names if is_identifier_like(n)]
        self._everywhere = _token_re(everywhere)
        self._all = _token_re(list(self.names))
        parts = [f"(?P<code>{_CODE_SPAN})", f"(?P<quoted>{_QUOTED})"]
        if self._everywhere is not None:
            parts.append(f"(?P<tok>{self._everywhere.pattern})")
        self._scan = re.compile("|".join(parts))

    def __bool__(self) -> bool:
        return bool(self.names)

    def _sub(self, pattern: re.Pattern[str] | None, text: str) -> str:
        if pattern is None:
            return text
        return pattern.sub(lambda m: self.names[m.group(0)], text)

    def _replace(self, match: re.Match[str]) -> str:
        if match.group("code") is not None:
            return self._sub(self._all, match.group("code"))
        quoted = match.group("quoted")
        if quoted is not None:
            inner = quoted[1:-1]
            if inner in self.names:
                return f'"{self.names[inner]}"'
            return self._sub(self._everywhere, quoted)
        return self.names[match.group(0)]

    def text(self, text: str) -> str:
        """`text` with every reference to an old name rewritten (see the module doc)."""
        if not self.names or not text or not self._mentions(text):
            return text
        return self._scan.sub(self._replace, text)

    def _mentions(self, text: str) -> bool:
        """Cheap pre-check: some old name occurs in `text` at all."""
        return any(name in text for name in self.names)

    def find(self, text: str) -> list[str]:
        """The old names `text` still refers to (same rules as `text`), in order."""
        found: list[str] = []
        if not self.names or not text or not self._mentions(text):
            return found
        for match in self._scan.finditer(text):
            if match.group("code") is not None and self._all is not None:
                found.extend(m.group(0) for m in self._all.finditer(match.group("code")))
            elif match.group("quoted") is not None:
                inner = match.group("quoted")[1:-1]
                if inner in self.names:
                    found.append(inner)
                elif self._everywhere is not None:
                    found.extend(m.group(0) for m in self._everywhere.finditer(inner))
            elif match.group("tok") is not None:
                found.append(match.group(0))
        return found

    def regex(self, pattern: str) -> str:
        """A regex over tool names (a hook matcher) with every old name that is a whole run of
        name characters rewritten; escapes (`\\b`, `\\w`) and metacharacters are kept."""
        if not self.names:
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
    matchers (`where` ends in `.matcher`), names. Leaves out what the model never sees and
    that keeps canonical names on purpose: `binding`, `binding_args`, skill metadata."""
    yield "harness.description", harness.description
    yield "settings.load_skill_tool", harness.settings.load_skill_tool
    yield "settings.reminder_format", harness.settings.reminder_format
    for key, value in harness.prompt.variables.items():
        yield f"prompt.variables.{key}", value
    for section in harness.prompt.sections:
        yield f"prompt/{section.id}.title", section.title
        yield f"prompt/{section.id}.md", section.template
    for skill in harness.skills:
        where = f"skills/{skill.name}"
        yield f"{where}.name", skill.name
        yield f"{where}.description", skill.description
        yield f"{where}.body", skill.body
        if skill.allowed_tools:
            yield f"{where}.allowed_tools", skill.allowed_tools
    for tool in harness.tools:
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
    for hook in harness.hooks:
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
    renamer = Renamer({k: v for k, v in names.items()})
    out: list[str] = []
    for where, text in harness_texts(harness):
        found = renamer.regex_names(text) if where.endswith(".matcher") else renamer.find(text)
        if where.endswith(".name") or where == "settings.load_skill_tool":
            found = [text] if text in renamer.names else []
        out.extend(f"{where}: {name}" for name in found)
    return out


def used_names(harness: Harness) -> set[str]:
    """Every run of name characters in the harness's texts and names, casefolded: a name
    outside this set is fresh (it clashes with nothing and cannot be mistaken for a
    reference)."""
    out: set[str] = set()
    for _, text in harness_texts(harness):
        out.update(_NAME_RUN.findall(text.casefold()))
    for tool in harness.tools:
        out.update(k.casefold() for k in tool.parameters.get("properties", {}))
        out.update(v.casefold() for v in tool.binding_args.values())
    out.update(s.metadata.get(ROLE_KEY, "").casefold() for s in harness.skills)
    out.discard("")
    return out


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
    (or a pydantic ValidationError, e.g. a name clash) when the result would not hold."""
    names = renames.text_names(harness)
    renamer = Renamer(names)
    for hook in harness.hooks:
        if hook.source and renamer.find(hook.source):
            raise RenameError(f"python hook {hook.name!r} names {renamer.find(hook.source)[0]!r}")
    text = renamer.text
    data = harness.model_dump()
    data["description"] = text(data["description"])
    settings = data["settings"]
    if renames.loader is not None:
        settings["load_skill_tool"] = renames.loader
    settings["reminder_format"] = text(settings["reminder_format"])
    prompt = data["prompt"]
    prompt["variables"] = {k: text(v) for k, v in prompt["variables"].items()}
    for section in prompt["sections"]:
        section["title"] = text(section["title"])
        section["template"] = text(section["template"])
    for skill in data["skills"]:
        old = skill["name"]
        if old in renames.skills:
            skill["name"] = renames.skills[old]
            meta = dict(skill["metadata"])
            if ROLE_KEY not in meta and DISTRACTOR_KEY not in meta:
                meta[ROLE_KEY] = old
            skill["metadata"] = meta
        skill["description"] = text(skill["description"])
        skill["body"] = text(skill["body"])
        if skill.get("allowed_tools"):
            skill["allowed_tools"] = " ".join(
                names.get(t, t) for t in skill["allowed_tools"].split()
            )
    for tool, source in zip(data["tools"], harness.tools, strict=True):
        old = tool["name"]
        params = renames.params.get(old, {})
        tool["name"] = renames.tools.get(old, old)
        tool["description"] = text(tool["description"])
        schema = map_schema_text(tool["parameters"], text)
        tool["parameters"] = rename_properties(schema, params)
        tool["annotations"] = map_strings(tool["annotations"], text)
        binding_args: dict[str, str] = {}
        for prop in source.parameters.get("properties", {}):
            target = tool["binding_args"].get(prop, prop)
            new = params.get(prop, prop)
            if new != target:
                binding_args[new] = target
        tool["binding_args"] = binding_args
    old_tools = [t.name for t in harness.tools] + [harness.settings.load_skill_tool]
    for hook, original in zip(data["hooks"], harness.hooks, strict=True):
        hook["reminder"] = text(hook["reminder"])
        if hook["matcher"] != "*":
            hook["matcher"] = renamer.regex(hook["matcher"])
            if any(t in names for t in old_tools):
                _check_matcher(original.matcher, hook["matcher"], old_tools, names)
        if original.kind is HookKind.VALIDATE_TOOL_ARGS and "schema" in hook["params"]:
            params_table = {o: n for o, n in names.items() if _is_param(harness, o)}
            schema = map_schema_text(hook["params"]["schema"], text)
            hook["params"] = {**hook["params"], "schema": rename_properties(schema, params_table)}
    return build_harness(data)


def _skeleton(schema: Any) -> tuple[Any, dict[str, str]]:
    """A JSON Schema with the same meta-schema validity as `schema`, in a canonical form:
    top-level property names p0, p1, ... and every description/title/$comment empty.
    Renaming properties and rewording descriptions cannot change whether a schema is valid,
    so HSA variants of one schema share one (cached) meta-schema check."""
    if not isinstance(schema, dict):
        return schema, {}
    props = schema.get("properties")
    names = {k: f"p{i}" for i, k in enumerate(props)} if isinstance(props, dict) else {}
    return rename_properties(map_schema_text(schema, lambda _: ""), names), names


def build_harness(data: dict[str, Any]) -> Harness:
    """`Harness.model_validate(data)` with every validator run, but fast for HSA variants.

    Validating a tool or a `validate_tool_args` hook meta-checks its JSON Schema (milliseconds,
    cached by the schema's JSON), and every renamed parameter or reworded description makes
    a new JSON. The harness is therefore validated with each tool and hook schema replaced by
    its skeleton (same validity, see `_skeleton`; `binding_args` keys renamed alike, so their
    checks hold too), and the validated tools and hooks then get their real schemas back."""
    tools: list[Any] = []
    real_tools: list[tuple[dict[str, Any], dict[str, str]] | None] = []
    for raw in data.get("tools", []):
        if not isinstance(raw, dict) or not isinstance(raw.get("parameters"), dict):
            tools.append(raw)
            real_tools.append(None)
            continue
        skeleton, names = _skeleton(raw["parameters"])
        binding_args = dict(raw.get("binding_args") or {})
        renamed = {names.get(k, k): v for k, v in binding_args.items()}
        tools.append({**raw, "parameters": skeleton, "binding_args": renamed})
        real_tools.append((raw["parameters"], binding_args))
    hooks: list[Any] = []
    real_hooks: list[dict[str, Any] | None] = []
    for raw in data.get("hooks", []):
        params = raw.get("params") if isinstance(raw, dict) else None
        kind = raw.get("kind") if isinstance(raw, dict) else None
        if kind != HookKind.VALIDATE_TOOL_ARGS or not isinstance(params, dict):
            hooks.append(raw)
            real_hooks.append(None)
            continue
        skeleton, _ = _skeleton(params.get("schema"))
        hooks.append({**raw, "params": {**params, "schema": skeleton}})
        real_hooks.append(params)
    probe = Harness.model_validate({**data, "tools": tools, "hooks": hooks})
    final_tools = [
        tool
        if real is None
        else tool.model_copy(
            update={"parameters": copy.deepcopy(real[0]), "binding_args": dict(real[1])}
        )
        for tool, real in zip(probe.tools, real_tools, strict=True)
    ]
    final_hooks = [
        hook if real is None else hook.model_copy(update={"params": copy.deepcopy(real)})
        for hook, real in zip(probe.hooks, real_hooks, strict=True)
    ]
    return probe.model_copy(update={"tools": final_tools, "hooks": final_hooks})


def _is_param(harness: Harness, name: str) -> bool:
    return any(name in t.parameters.get("properties", {}) for t in harness.tools)


def _check_matcher(old: str, new: str, tools: Sequence[str], names: Mapping[str, str]) -> None:
    for tool in tools:
        before = re.fullmatch(old, tool) is not None
        after = re.fullmatch(new, names.get(tool, tool)) is not None
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
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[\s_-]+", spaced) if w]


def hex_tag(rng: random.Random, digits: int = 4) -> str:
    """Random lowercase hex digits. Bank strings all contain a letter beyond `f`, so a hex tag
    can never spell one."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(digits))


# ----------------------------------------------------------------------------- phrases


def split_code(text: str) -> list[tuple[str, bool]]:
    """`text` as (segment, is_code) pieces: fenced blocks, backtick spans and `{...}` JSON-ish
    objects on one line are code; the rest is prose."""
    pattern = re.compile(r"```.*?```|`[^`\n]+`|\{[^{}\n]*\}|\$\{\w+\}", re.DOTALL)
    out: list[tuple[str, bool]] = []
    pos = 0
    for match in pattern.finditer(text):
        if match.start() > pos:
            out.append((text[pos : match.start()], False))
        out.append((match.group(0), True))
        pos = match.end()
    if pos < len(text):
        out.append((text[pos:], False))
    return out


def replace_phrases(
    text: str,
    table: Mapping[str, Sequence[str]],
    rng: random.Random,
    probability: float = 1.0,
) -> str:
    """Each occurrence of a table key in the prose of `text` (never in code) replaced, with
    `probability`, by one of its alternatives; longest keys first, one pass. Keys match at
    word boundaries where they start or end with a word character."""
    if not text:
        return text
    keys = [k for k in table if k and table[k] and k in text]
    if not keys:
        return text
    pattern = _phrase_re(tuple(sorted(keys, key=lambda k: (-len(k), k))))

    def pick(match: re.Match[str]) -> str:
        if rng.random() >= probability:
            return match.group(0)
        return rng.choice(list(table[match.group(0)]))

    return "".join(
        segment if code else pattern.sub(pick, segment) for segment, code in split_code(text)
    )


@lru_cache(maxsize=4096)
def _phrase_re(keys: tuple[str, ...]) -> re.Pattern[str]:
    alts = []
    for key in keys:
        head = r"(?<!\w)" if key[0].isalnum() or key[0] == "_" else ""
        tail = r"(?!\w)" if key[-1].isalnum() or key[-1] == "_" else ""
        alts.append(f"{head}{re.escape(key)}{tail}")
    return re.compile("|".join(alts))


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
    numbers), outside fenced code; each item keeps its nested lines."""
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
    return blocks


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
    except (RenameError, ValidationError) as exc:
        raise Skip(f"rename not applicable: {exc}") from None


def rebuild_or_skip(data: dict[str, Any]) -> Harness:
    """`build_harness(data)`, a failure turned into `Skip`."""
    from pydantic import ValidationError

    from core.hsa.transform import Skip

    try:
        return build_harness(data)
    except ValidationError as exc:
        raise Skip(f"the transformed harness does not validate: {exc}") from None


def pick_fresh(
    rng: random.Random, options: Sequence[str], used: set[str], exclude: str = ""
) -> str | None:
    """A random option not in `used` (casefolded) and not `exclude`; records it as used."""
    free = [o for o in options if o.casefold() not in used and o != exclude]
    if not free:
        return None
    choice = rng.choice(free)
    used.add(choice.casefold())
    return choice


def shuffled(rng: random.Random, items: Sequence[Any]) -> list[Any]:
    """A permutation of `items` that differs from the input when it can (len >= 2 with two
    distinct items): a shuffle that gives back the input is redrawn a few times."""
    out = list(items)
    for _ in range(8):
        rng.shuffle(out)
        if out != list(items):
            break
    return out
