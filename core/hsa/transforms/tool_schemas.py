"""HSA transforms, dimension 3: tool schemas (after Hammer's function masking and RoTBench).

Renames go through `core.hsa.renames.apply_renames`, so a renamed tool or parameter is renamed in
every skill, template, hook matcher, hook schema and description that mentions it. A renamed
parameter keeps its binding's name in `Tool.binding_args` (the agent loop translates before
it calls the binding), so a variant harness needs no side mapping: the oracle and the graders
read parameter names from `binding_args`, tools by `binding`.

Parameter renames are by name across the whole harness: `link_no` gets one new name in every
tool that has it. Prose and hook schemas cannot say which tool they mean, so one name per
parameter is the only rename that can be carried into them exactly.

Enum values are never renamed (the simulator's handlers read canonical values). Changed
defaults are only made on parameters that have one, and the trajectory mapping passes the old
default explicitly where a call relied on it (`SurfaceMapping.explicit_defaults`), as Hammer
does; the new value is carried into the parameter's description. (Hammer also rewrites the
user query; our viewer messages never state a default, so there is nothing to carry there.)

Bank section `tools` (resources/hsa/<bank>/tools.yaml):
- `names`: binding -> semantic snake_case tool names; `name_styles`: naming styles of this
  bank (`core.hsa.names.case_style`; snake is always allowed);
- `random_prefixes` / `param_random_prefixes`: prefixes of masked names `<prefix>_<hex>`;
- `params`: canonical parameter -> semantic snake_case names; `param_styles`;
- `descriptions`: binding -> tool descriptions with `{param:<canonical>}` placeholders;
- `param_descriptions`: `<binding>/<canonical>` or `<canonical>` -> parameter descriptions;
- `phrases`: phrase -> alternatives for descriptions without bank rewrites;
- `default_notes`: sentences with `{value:default}`, carrying a changed default;
- `optional_params`: [{name, description, schema}] optional parameters no gold uses;
- `distractors`: distractor tool (core/sim/distractors.py name) -> [{name, description}]
  (live-room harnesses only);
- `distractor_tools`: [{name, description, parameters, result}] distractor tools for a
  harness outside the live room, bound to `hsa.distractor.<name>` (core/hsa/distractors.py).

The shipped banks' synonym, description, phrase, optional-parameter and distractor tables sit
under `domains: {live-room: ...}`: a harness outside the live room never sees them
(core/hsa/domain.py, docs/hsa-banks.md).
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from core.harness.models import TOOL_NAME_RE, Harness, Tool
from core.harness.schema import argument_errors
from core.hsa.build import Edit, unchanged
from core.hsa.distractors import bank_tool, disabled_tool_distractor
from core.hsa.domain import LIVE_ROOM, harness_domain
from core.hsa.mapping import SurfaceMapping
from core.hsa.names import case_style, name_words, tagged_name
from core.hsa.phrases import fill_placeholders, replace_phrases
from core.hsa.references import used_names
from core.hsa.renames import Renames
from core.hsa.transform import Bank, Dimension, Skip, transform
from core.hsa.transforms.common import (
    assemble_or_skip,
    canonical_param,
    current_param,
    pick_fresh,
    rename_or_skip,
    shuffled,
    skill_role,
)
from core.sim.distractors import DISTRACTOR_TOOLS

PHRASE_PROBABILITY = 0.75
DESCRIPTION_PROBABILITY = 0.7
PARAM_DESCRIPTION_PROBABILITY = 0.6


def _subset(rng: random.Random, items: list[str]) -> list[str]:
    """At least half of `items` (at least one), in their original order."""
    k = rng.randint((len(items) + 1) // 2, len(items))
    chosen = set(rng.sample(items, k))
    return [i for i in items if i in chosen]


def _props(tool: Tool) -> dict[str, Any]:
    props = tool.parameters.get("properties", {})
    return props if isinstance(props, dict) else {}


@lru_cache(maxsize=4096)
def _styled(name: str, style: str) -> str:
    return case_style(name_words(name), style)


def _valid_tool_name(name: str, harness: Harness) -> bool:
    return _tool_name_syntax(name) and name != harness.settings.load_skill_tool


@lru_cache(maxsize=8192)
def _tool_name_syntax(name: str) -> bool:
    """Cached: every call checks a whole bank list of candidates."""
    return bool(TOOL_NAME_RE.match(name))


# ----------------------------------------------------------------------------- tool names


def _rename_tools(harness: Harness, renames: dict[str, str]) -> tuple[Harness, SurfaceMapping]:
    if not renames:
        raise Skip("no fresh tool name found")
    return rename_or_skip(harness, Renames(tools=renames)), SurfaceMapping(tools=renames)


@transform("tool_rename_semantic", Dimension.TOOL_SCHEMAS)
def tool_rename_semantic(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Rename at least half of the tools whose binding has bank synonyms
    (`check_stock` -> e.g. `inventory_probe`), in one naming style for the call (snake, or
    one of the bank's styles: `inventoryProbe`, `inventory-probe`...)."""
    section = bank.section("tools")
    table = section.get("names", {})
    eligible = [t.name for t in harness.tools if table.get(t.binding)]
    if not eligible:
        raise Skip("no tool has a binding with synonyms in the bank")
    style = rng.choice(["snake", *section.get("name_styles", [])])
    bindings = {t.name: t.binding for t in harness.tools}
    used = used_names(harness)
    renames: dict[str, str] = {}
    for name in _subset(rng, eligible):
        options = [_styled(n, style) for n in table[bindings[name]]]
        options = [o for o in options if _valid_tool_name(o, harness)]
        new = pick_fresh(rng, options, used, exclude=name)
        if new is not None:
            renames[name] = new
    return _rename_tools(harness, renames)


@transform("tool_rename_random", Dimension.TOOL_SCHEMAS)
def tool_rename_random(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Hammer-style masking: rename at least half of the tools to `<prefix>_<4 hex>`
    (`zqv_3a9c`), so only the descriptions tell the tools apart."""
    if not harness.tools:
        raise Skip("the harness has no tools")
    prefixes = bank.section("tools").get("random_prefixes", [])
    if not prefixes:
        raise Skip("the bank has no random prefixes")
    prefix = rng.choice(prefixes)
    used = used_names(harness)
    renames: dict[str, str] = {}
    for name in _subset(rng, [t.name for t in harness.tools]):
        new = tagged_name(rng, prefix, "_", used, valid=lambda n: _valid_tool_name(n, harness))
        if new is not None:
            renames[name] = new
    return _rename_tools(harness, renames)


@transform("tool_name_style", Dimension.TOOL_SCHEMAS)
def tool_name_style(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Restyle every multi-word tool name with one of the bank's naming styles, keeping the
    words (`get_product_by_link` -> `getProductByLink`, `GET-PRODUCT-BY-LINK`...)."""
    styles = bank.section("tools").get("name_styles", [])
    if not styles or not harness.tools:
        raise Skip("no tools or no naming styles in the bank")
    style = rng.choice(styles)
    used = used_names(harness)
    renames: dict[str, str] = {}
    for tool in harness.tools:
        words = name_words(tool.name)
        if len(words) < 2:
            continue
        new = case_style(words, style)
        same = new.casefold() == tool.name.casefold()  # a case change clashes with nothing
        fresh = same or new.casefold() not in used
        if new != tool.name and fresh and _valid_tool_name(new, harness):
            used.add(new.casefold())
            renames[tool.name] = new
    if not renames:
        raise Skip(f"no tool name changes in the {style} style")
    return _rename_tools(harness, renames)


# ----------------------------------------------------------------------------- parameter names


def _param_groups(harness: Harness) -> dict[str, str]:
    """Current parameter name -> its canonical (binding) name, for names that mean the same
    binding argument in every tool that has them (others cannot be renamed by name)."""
    groups: dict[str, str | None] = {}
    for tool in harness.tools:
        for name in _props(tool):
            canonical = canonical_param(tool, name)
            if groups.setdefault(name, canonical) != canonical:
                groups[name] = None
    return {n: c for n, c in groups.items() if c is not None}


def _rename_params(harness: Harness, names: dict[str, str]) -> tuple[Harness, SurfaceMapping]:
    if not names:
        raise Skip("no fresh parameter name found")
    params: dict[str, dict[str, str]] = {}
    for tool in harness.tools:
        renamed = {p: names[p] for p in _props(tool) if p in names}
        if renamed:
            params[tool.name] = renamed
    out = rename_or_skip(harness, Renames(params=params))
    return out, SurfaceMapping(params=params)


@transform("tool_param_rename_semantic", Dimension.TOOL_SCHEMAS)
def tool_param_rename_semantic(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Rename at least half of the parameter names with bank synonyms of their canonical
    name (`link_no` -> e.g. `listing_number`, in every tool), in snake case or a bank style;
    `binding_args` keeps each binding's own argument name."""
    section = bank.section("tools")
    table = section.get("params", {})
    groups = {n: c for n, c in _param_groups(harness).items() if table.get(c)}
    if not groups:
        raise Skip("no tool has a parameter with synonyms in the bank")
    style = rng.choice(["snake", *section.get("param_styles", [])])
    used = used_names(harness)
    names: dict[str, str] = {}
    for name in _subset(rng, sorted(groups)):
        options = [_styled(o, style) for o in table[groups[name]]]
        new = pick_fresh(rng, options, used, exclude=name)
        if new is not None:
            names[name] = new
    return _rename_params(harness, names)


@transform("tool_param_rename_random", Dimension.TOOL_SCHEMAS)
def tool_param_rename_random(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Hammer-style masking of parameter names: at least half become `<prefix>_<3 hex>`."""
    groups = _param_groups(harness)
    if not groups:
        raise Skip("no tool has parameters to rename")
    prefixes = bank.section("tools").get("param_random_prefixes", [])
    if not prefixes:
        raise Skip("the bank has no parameter prefixes")
    prefix = rng.choice(prefixes)
    used = used_names(harness)
    names: dict[str, str] = {}
    for name in _subset(rng, sorted(groups)):
        new = tagged_name(rng, prefix, "_", used, digits=3)
        if new is not None:
            names[name] = new
    return _rename_params(harness, names)


# ----------------------------------------------------------------------------- order


@transform("tool_order", Dimension.TOOL_SCHEMAS)
def tool_order(harness: Harness, rng: random.Random, bank: Bank) -> tuple[Harness, SurfaceMapping]:
    """Shuffle the tool list (the order of the tool block and of native tool specs)."""
    if len(harness.tools) < 2:
        raise Skip("fewer than two tools to reorder")
    tools = shuffled(rng, harness.tools)
    return harness.model_copy(update={"tools": tools}), SurfaceMapping()


@transform("tool_param_order", Dimension.TOOL_SCHEMAS)
def tool_param_order(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Shuffle the parameter order of every tool with two or more parameters, and the order
    of its `required` list on its own (hand-written schemas list them in any order)."""
    tools: list[Any] = []
    reordered = False
    for tool in harness.tools:
        props = tool.parameters.get("properties", {})
        if not isinstance(props, dict) or len(props) < 2:
            tools.append(tool)
            continue
        order = shuffled(rng, list(props))
        reordered = reordered or order != list(props)
        params = {**tool.parameters, "properties": {k: props[k] for k in order}}
        required = params.get("required")
        if isinstance(required, list) and len(set(required)) >= 2:
            params["required"] = shuffled(rng, required)
        tools.append(Edit(tool, {"parameters": params}))
    if not reordered:
        raise Skip("no tool has two or more parameters")
    return assemble_or_skip(harness, tools=tools), SurfaceMapping()


# ----------------------------------------------------------------------------- descriptions


def _tool_resolver(harness: Harness, tool: Tool) -> Callable[[str, str], str | None]:
    tools: dict[str, str] = {}
    for other in harness.tools:
        tools.setdefault(other.binding, other.name)
    skills = {skill_role(s): s.name for s in harness.skills}

    def resolve(kind: str, key: str) -> str | None:
        if kind == "param":
            return current_param(tool, key)
        if kind == "tool":
            return tools.get(key)
        if kind == "skill":
            return skills.get(key)
        return None

    return resolve


def _value_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _default_note(bank: Bank, rng: random.Random, value: Any) -> str | None:
    notes = bank.section("tools").get("default_notes", [])
    if not notes:
        return None
    text = _value_text(value)
    return fill_placeholders(rng.choice(notes), lambda k, _: text if k == "value" else None)


def _join(text: str, note: str) -> str:
    text = text.rstrip()
    if text and text[-1] not in ".!?":
        text += "."
    return f"{text} {note}".strip()


@transform("tool_paraphrase_descriptions", Dimension.TOOL_SCHEMAS)
def tool_paraphrase_descriptions(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Reword tool and parameter descriptions: bank rewrites per binding and per parameter
    (placeholders name the current parameters), else phrase-level paraphrases. A parameter
    with a default keeps it stated in its new description."""
    section = bank.section("tools")
    descriptions = section.get("descriptions", {})
    param_descriptions = section.get("param_descriptions", {})
    phrases = section.get("phrases", {})
    tools: list[Any] = []
    for source in harness.tools:
        resolve = _tool_resolver(harness, source)
        options = descriptions.get(source.binding, [])
        text = None
        if options and rng.random() < DESCRIPTION_PROBABILITY:
            usable = [t for t in (fill_placeholders(o, resolve) for o in options) if t]
            text = rng.choice(usable) if usable else None
        description = text or replace_phrases(source.description, phrases, rng, PHRASE_PROBABILITY)
        props: dict[str, Any] = dict(source.parameters.get("properties", {}))
        for name, schema in list(props.items()):
            if not isinstance(schema, dict):
                continue
            canonical = canonical_param(source, name)
            specific = param_descriptions.get(f"{source.binding}/{canonical}")
            pool = specific or param_descriptions.get(canonical, [])
            if not pool or rng.random() >= PARAM_DESCRIPTION_PROBABILITY:
                continue
            new = fill_placeholders(rng.choice(pool), resolve)
            if new is None:
                continue
            if "default" in schema:
                note = _default_note(bank, rng, schema["default"])
                if note is None:
                    continue
                new = _join(new, note)
            props[name] = {**schema, "description": new}
        params = source.parameters
        if props != params.get("properties", {}):
            params = {**params, "properties": props}
        if description != source.description or params is not source.parameters:
            tools.append(Edit(source, {"description": description, "parameters": params}))
        else:
            tools.append(source)
    if unchanged(harness.tools, tools):
        raise Skip("no tool description has a bank paraphrase")
    return assemble_or_skip(harness, tools=tools), SurfaceMapping()


# ----------------------------------------------------------------------------- additions


def _optional_schema(entry: dict[str, Any]) -> dict[str, Any] | None:
    """A bank optional parameter's JSON Schema: `schema` is {<JSON type>: {constraints}} (the
    type is a key so that type names are not bank text); a default is never kept."""
    spec = entry.get("schema", {})
    if not isinstance(spec, dict) or len(spec) != 1:
        return None
    ((kind, constraints),) = spec.items()
    schema: dict[str, Any] = {"type": kind}
    schema.update({k: v for k, v in dict(constraints or {}).items() if k != "default"})
    schema["description"] = str(entry.get("description", ""))
    return schema


@transform("tool_optional_params", Dimension.TOOL_SCHEMAS)
def tool_optional_params(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Add an optional parameter from the bank (never required, no default, so the binding
    never sees it unless a model passes it) to one to three tools; no gold call uses it."""
    pool = bank.section("tools").get("optional_params", [])
    targets = [i for i, t in enumerate(harness.tools) if t.parameters.get("type") == "object"]
    if not pool or not targets:
        raise Skip("no optional parameters in the bank or no tool to add them to")
    used = used_names(harness)
    tools: list[Any] = list(harness.tools)
    added = 0
    for index in rng.sample(targets, min(len(targets), rng.randint(1, 3))):
        source = harness.tools[index]
        params = dict(source.parameters)
        props = params.setdefault("properties", {})
        free = [e for e in pool if str(e.get("name", "")).casefold() not in used]
        if not free:
            break
        entry = rng.choice(free)
        schema = _optional_schema(entry)
        if schema is None:
            continue
        name = str(entry["name"])
        used.add(name.casefold())
        items = list(props.items())
        items.insert(rng.randint(0, len(items)), (name, copy.deepcopy(schema)))
        params["properties"] = dict(items)
        tools[index] = Edit(source, {"parameters": params}, added=(name,))
        added += 1
    if not added:
        raise Skip("every bank optional parameter is already in use")
    return assemble_or_skip(harness, tools=tools), SurfaceMapping()


@transform("tool_distractors", Dimension.TOOL_SCHEMAS)
def tool_distractors(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Add one to three distractor tools no task needs, at random places. A live-room harness
    gets core/sim/distractors.py tools (which every LiveRoom can run) under bank names and
    descriptions; any other harness gets the bank's `distractor_tools` (a user bank) and its
    own disabled tools, bound to `hsa.distractor.*` (core/hsa/distractors.py), never the live
    room's. A call to one costs tool-rationality marks."""
    if not harness.active_tools:
        raise Skip("the harness has no tools, so no tool list to add distractors to")
    if harness_domain(harness) != LIVE_ROOM:
        return _own_tool_distractors(harness, rng, bank)
    table = bank.section("tools").get("distractors", {})
    bindings = {t.binding for t in harness.tools}
    used = used_names(harness)
    pool = [t for t in DISTRACTOR_TOOLS if table.get(t.name) and t.binding not in bindings]
    if not pool:
        raise Skip("no distractor tool with bank names is free to add")
    tools: list[Any] = list(harness.tools)
    added = 0
    for base in rng.sample(pool, min(len(pool), rng.randint(1, 3))):
        entries = [e for e in table[base.name] if str(e.get("name", "")).casefold() not in used]
        entries = [e for e in entries if _valid_tool_name(str(e["name"]), harness)]
        if not entries:
            continue
        entry = rng.choice(entries)
        used.add(str(entry["name"]).casefold())
        tool = _distractor(base.name, str(entry["name"]), str(entry["description"]))
        tools.insert(rng.randint(0, len(tools)), tool)
        added += 1
    if not added:
        raise Skip("every distractor name in the bank is already in use")
    return assemble_or_skip(harness, tools=tools), SurfaceMapping()


def _own_tool_distractors(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """`tool_distractors` outside the live room: bank `distractor_tools` entries and the
    harness's disabled tools (module doc of core/hsa/distractors.py)."""
    used = used_names(harness)
    entries = [
        e
        for e in bank.section("tools").get("distractor_tools", [])
        if str(e.get("name", "")).casefold() not in used
        and _valid_tool_name(str(e.get("name", "")), harness)
    ]
    disabled = [i for i, t in enumerate(harness.tools) if not t.enabled]
    if not entries and not disabled:
        raise Skip(
            f"no distractor tools for a harness outside the live room: the {bank.label()} "
            "bank has no `distractor_tools` table in tools.yaml (write one in a user bank, "
            "docs/hsa-banks.md) and the harness has no disabled tool"
        )
    options: list[tuple[str, Any]] = [("bank", e) for e in entries]
    options += [("disabled", i) for i in disabled]
    tools: list[Any] = list(harness.tools)
    inserted: list[Tool] = []
    for kind, item in rng.sample(options, min(len(options), rng.randint(1, 3))):
        if kind == "disabled":
            tools[item] = disabled_tool_distractor(harness.tools[item])
            continue
        name = str(item["name"])
        if name.casefold() in used:
            continue
        used.add(name.casefold())
        inserted.append(bank_tool(item))
    for tool in inserted:
        tools.insert(rng.randint(0, len(tools)), tool)
    return assemble_or_skip(harness, tools=tools), SurfaceMapping()


@lru_cache(maxsize=256)
def _distractor(base: str, name: str, description: str) -> Tool:
    """A distractor tool under a bank name and description (validated once, then shared by
    every variant that draws it: harnesses are values)."""
    (tool,) = [t for t in DISTRACTOR_TOOLS if t.name == base]
    return Tool.model_validate({**tool.model_dump(), "name": name, "description": description})


# ----------------------------------------------------------------------------- defaults


def _valid(schema: dict[str, Any], value: Any) -> bool:
    wrapper = {"type": "object", "properties": {"v": schema}}
    return not argument_errors(wrapper, {"v": value})


_COUNT_WORDS_TEXT = (
    "count counts limit limits lines line max top num number results result items item "
    "depth retries attempts rows columns cols hits matches pages page size length len "
    "width height context days hours minutes seconds tokens batch chunk k n"
)
COUNT_WORDS = frozenset(_COUNT_WORDS_TEXT.split())
"""Words of a parameter name that make it a count, a limit or a size: without a `minimum`
of its own, its default stays >= 1 (`context_lines`, `max_results`, `top_k`, `page_size`)."""


def _count_like(*names: str) -> bool:
    return any(w in COUNT_WORDS for name in names for w in name_words(name))


def _int_bounds(schema: dict[str, Any], old: int, count: bool) -> tuple[int, int]:
    """The range a new integer default is drawn from: the schema's bounds (`minimum`,
    `exclusiveMinimum`, `maximum`, `exclusiveMaximum`) where it has them; else never below 1
    for a count-like name, never below 0 for a default that is not negative, and at most ten
    above the old value."""
    low: float | None = None
    if isinstance(schema.get("minimum"), int | float):
        low = math.ceil(schema["minimum"])
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        excl = math.floor(schema["exclusiveMinimum"]) + 1
        low = excl if low is None else max(low, excl)
    if low is None:
        low = 1 if count and old >= 1 else (0 if old >= 0 else old - 5)
    high: float | None = None
    if isinstance(schema.get("maximum"), int | float):
        high = math.floor(schema["maximum"])
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        excl = math.ceil(schema["exclusiveMaximum"]) - 1
        high = excl if high is None else min(high, excl)
    if high is None:
        high = old + 10
    return int(low), int(high)


def _new_default(schema: dict[str, Any], rng: random.Random, *names: str) -> Any:
    """Another value valid for `schema` that makes sense as a default of a parameter named
    `names` (its current and canonical names), or None. The schema's `enum`, `type` and
    bounds hold; a count-like name (`COUNT_WORDS`) keeps a default >= 1 and a non-negative
    default stays non-negative unless the schema's `minimum` allows less."""
    old = schema["default"]
    count = _count_like(*names)
    options: list[Any] = []
    if isinstance(schema.get("enum"), list):
        options = [v for v in schema["enum"] if v != old]
    elif isinstance(old, bool):
        options = [not old]
    elif isinstance(old, int):
        low, high = _int_bounds(schema, old, count)
        options = [v for v in range(low, high + 1) if v != old][:64]
    elif isinstance(old, float):
        options = [round(old * f, 2) for f in (0.5, 0.75, 1.5, 2.0)]
        if old >= 0 and "minimum" not in schema and "exclusiveMinimum" not in schema:
            floor = 1.0 if count and old >= 1 else 0.0
            options = [v for v in options if v >= floor and (v > 0 or old == 0)]
    options = [v for v in options if v != old and _valid(schema, v)]
    return rng.choice(options) if options else None


_DEFAULT_RE = r"(?i)\bdefault(?:s|ed)?\b[^.;\n]*?(?<![\w.]){old}(?!\w)(?!\.\d)"


def _carry(text: str, old: Any, new: Any) -> str | None:
    """`text` with a stated old default replaced by the new one; None when it states none."""
    pattern = re.compile(_DEFAULT_RE.format(old=re.escape(_value_text(old))))
    match = pattern.search(text)
    if match is None:
        return None
    stated = match.group(0)
    return (
        text[: match.start()]
        + stated[: -len(_value_text(old))]
        + _value_text(new)
        + text[match.end() :]
    )


@transform("tool_change_defaults", Dimension.TOOL_SCHEMAS)
def tool_change_defaults(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Change the default of parameters that have one (demo: search_products.limit 5 -> e.g.
    8); the new value goes into the parameter's description, and a gold call that relied on
    the old default passes it explicitly (explicit_defaults)."""
    explicit: dict[str, dict[str, Any]] = {}
    tools: list[Any] = []
    for source in harness.tools:
        props: dict[str, Any] = dict(source.parameters.get("properties", {}))
        tool = {"name": source.name, "description": source.description}
        for name, schema in list(props.items()):
            if not isinstance(schema, dict) or "default" not in schema:
                continue
            new = _new_default(schema, rng, name, canonical_param(source, name))
            if new is None:
                continue
            old = schema["default"]
            schema = props[name] = {**schema, "default": new}
            description = str(schema.get("description", ""))
            carried = _carry(description, old, new)
            if carried is None:
                note = _default_note(bank, rng, new)
                if note is None:
                    raise Skip("the bank has no default notes")
                carried = _join(description, note)
            schema["description"] = carried
            tool_text = _carry(tool["description"], old, new)
            if tool_text is not None:
                tool["description"] = tool_text
            explicit.setdefault(tool["name"], {})[name] = copy.deepcopy(old)
        if source.name not in explicit:
            tools.append(source)
            continue
        params = {**source.parameters, "properties": props}
        tools.append(Edit(source, {"description": tool["description"], "parameters": params}))
    if not explicit:
        raise Skip("no tool parameter has a default that can change")
    return assemble_or_skip(harness, tools=tools), SurfaceMapping(explicit_defaults=explicit)
