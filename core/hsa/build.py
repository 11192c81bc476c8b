"""Building HSA variant harnesses fast: copy what a transform changed, share the rest.

An HSA variant differs from its input in a few components (a renamed tool, a reworded skill,
new settings). Dumping and re-validating the whole harness for every variant costs far more
than the change itself, so transforms build variants with `assemble`: every component they
pass as a model instance is the input's own object, kept as it is (it is valid already);
every component they pass as a dict is new and is validated on its own. The harness-level
rules (unique names, the skill loader not clashing with a tool) are then checked on the
result. A variant thus shares every untouched skill, tool, hook and prompt section with its
input, which also lets later steps reuse per-component work (`verify.Reference` reuses the
original's decisions on shared tools and skills; `memo` keeps per-component text).

**Treat harnesses as values.** Shared components are never edited in place by HSA; callers
that edit a harness in place must copy it first (the project's convention, see
core/hsa/transforms/prompt.py).

JSON Schemas: validating a tool meta-checks its `parameters` schema (`jsonschema`, about
10 ms uncached, cached by the schema's canonical JSON). HSA renames parameters at random and
rewords descriptions, which makes nearly every changed schema a new JSON, so a changed schema
is checked on its *skeleton* (`_skeleton`: texts blanked, defaults nulled, properties renamed
p0, p1, ... in a canonical order) — a form with the same validity that every variant of the
schema shares — and the tool then gets its real schema back.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from core.harness.errors import FieldValueError
from core.harness.models import (
    LITERAL_ALTERNATION,
    Harness,
    Hook,
    HookKind,
    PromptPipeline,
    Settings,
    Skill,
    Tool,
    _unique,
)
from core.hsa.schema_text import rename_properties

T = TypeVar("T")

# ----------------------------------------------------------------------------- memo


class Memo:
    """Values computed from an object (a harness component, a harness), remembered while the
    object's `fields` are the same; least recently used entries go first beyond `limit`. An
    entry holds its object, so the object's id cannot be reused while the entry exists."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: OrderedDict[tuple[Hashable, int], tuple[object, tuple[object, ...], object]]
        self._entries = OrderedDict()

    def __call__(
        self, kind: Hashable, obj: object, fields: tuple[object, ...], compute: Callable[[], T]
    ) -> T:
        """`compute()` for `obj`, remembered while `obj`'s `fields` are the same (a field
        assigned anew, e.g. through pydantic's validate_assignment, recomputes unless its
        value is equal; `compute` must depend on the fields' values only)."""
        key = (kind, id(obj))
        entries = self._entries
        entry = entries.get(key)
        if entry is not None and entry[1] == fields:  # tuples compare items by identity first
            entries.move_to_end(key)
            return entry[2]  # type: ignore[return-value]
        value = compute()
        entries[key] = (obj, fields, value)
        entries.move_to_end(key)
        while len(entries) > self.limit:
            entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()


memo = Memo(8192)
"""Per-component values (texts, schema keys): small, many."""
harness_memo = Memo(256)
"""Per-harness values (a variant's used names, a renamed harness): large, few."""


# ----------------------------------------------------------------------------- skeletons

_SCHEMA_TEXT_KEYS = ("description", "title", "$comment")


def _skeleton(schema: Any) -> tuple[Any, dict[str, str]]:
    """A JSON Schema with the same meta-schema validity as `schema`, in a canonical form:
    every description/title/$comment empty, every `default` null, top-level properties named
    p0, p1, ... in the order of their (skeleton) sub-schemas, `required` sorted. None of this
    can change whether a schema is valid (names, texts and defaults are free; the order of
    properties and of `required` is not checked), so HSA variants of one schema (renamed,
    reworded, reordered, new defaults) share one cached meta-schema check."""

    if not isinstance(schema, dict):
        return schema, {}
    blank = _blank(schema)
    props = blank.get("properties")
    if not isinstance(props, dict):
        return blank, {}
    order = sorted(props, key=lambda k: json.dumps(props[k], sort_keys=True, default=str))
    names = {k: f"p{i}" for i, k in enumerate(order)}
    out = rename_properties(blank, names)
    out["properties"] = {names[k]: props[k] for k in order}
    if isinstance(out.get("required"), list):
        out["required"] = sorted(out["required"], key=str)
    return out, names


def _blank(value: Any) -> Any:
    """`map_schema_text` to "" plus every `default` set to null."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _SCHEMA_TEXT_KEYS and isinstance(item, str):
                out[key] = ""
            elif key == "default":
                out[key] = None
            elif key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(
                item, dict
            ):
                out[key] = {k: _blank(v) for k, v in item.items()}
            elif key in ("enum", "const", "examples"):
                out[key] = item
            else:
                out[key] = _blank(item)
        return out
    if isinstance(value, list):
        return [_blank(v) for v in value]
    return value


# ----------------------------------------------------------------------------- components


def fields(obj: Skill | Tool | Hook) -> dict[str, Any]:
    """A component's fields as a shallow dict (nested dicts are the component's own: replace,
    never edit them), the cheap start of a changed copy for `assemble`."""
    return {name: getattr(obj, name) for name in type(obj).model_fields}


def changed(obj: Skill | Tool | Hook, **changes: Any) -> Skill | Tool | Hook | dict[str, Any]:
    """`obj` itself when every change equals its current value, else its fields with the
    changes (a dict for `assemble` to validate)."""
    if all(getattr(obj, k) == v for k, v in changes.items()):
        return obj
    return {**fields(obj), **changes}


def unchanged(before: Iterable[object], after: Iterable[object]) -> bool:
    """Whether a component list is its input's components, in the same order."""
    a, b = list(before), list(after)
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class Edit:
    """A component made from a valid `source` component (skill, tool or hook) by one of HSA's
    edits, for `assemble`: `changes` replace fields. `edited` re-checks only what the edit can
    break instead of validating the whole component again; what it relies on:

    - schemas (a tool's `parameters`, a validate_tool_args hook's `params.schema`) change only
      by edits that keep them meta-valid: texts (description / title / $comment) replaced by
      strings, defaults replaced by other values (a default may be any JSON value), top-level
      properties renamed one-to-one or reordered with `required` renamed or reordered alike,
      and optional properties added (`added`: their names; each added sub-schema is
      meta-checked on its own — the meta-schema checks `properties` sub-schemas
      independently of each other). Whatever else can break is checked (`edited`).
    - other fields: the model's own field validators run on every changed field that has one
      (names, skill descriptions, metadata, hook matchers)."""

    source: Skill | Tool | Hook
    changes: dict[str, Any]
    added: tuple[str, ...] = ()


_FIELDS = {model: frozenset(model.model_fields) for model in (Skill, Tool, Hook)}
_STRINGS = {
    Skill: ("description", "body"),
    Tool: ("description", "binding"),
    Hook: ("reminder",),
}
_VALIDATED = {
    Skill: ("name", "description", "metadata", "compatibility"),
    Tool: ("name",),
    Hook: ("name", "matcher"),
}


def edited(edit: Edit) -> Skill | Tool | Hook:
    """The component of an `Edit`, checked (see `Edit`); raises FieldValueError naming the
    field at fault."""
    source, changes = edit.source, edit.changes
    model = type(source)
    unknown = changes.keys() - _FIELDS[model]
    if unknown:
        raise FieldValueError(sorted(unknown)[0], f"not a {model.__name__.lower()} field")
    fixed = [k for k in ("kind", "event", "source") if k in changes and isinstance(source, Hook)]
    if any(changes[k] != getattr(source, k) for k in fixed):
        raise FieldValueError(fixed[0], "an edit cannot change a hook's kind, event or source")
    for key in _STRINGS[model]:
        if not isinstance(changes.get(key, ""), str):
            raise FieldValueError(key, "must be a string")
    for key in _VALIDATED[model]:
        if key in changes and changes[key] != getattr(source, key):
            if key == "matcher" and LITERAL_ALTERNATION.fullmatch(changes[key]):
                continue  # a list of names is a valid regex; no need to compile it
            try:
                getattr(model, f"_check_{key}")(changes[key])
            except ValueError as exc:
                raise FieldValueError(key, str(exc)) from None
    if isinstance(source, Tool):
        params = changes.get("parameters", source.parameters)
        if params is not source.parameters:
            _check_edited_params(source.parameters, params, edit.added, "parameters")
        out = source.model_copy(update=changes)
        if "parameters" in changes or "binding_args" in changes:
            try:
                out._check_binding_args()  # type: ignore[operator]  # the model's own validator
            except ValueError as exc:
                raise FieldValueError("binding_args", str(exc)) from None
        return out
    if isinstance(source, Hook):
        params = changes.get("params", source.params)
        if params is not source.params:
            if not isinstance(params, dict) or set(params) != set(source.params):
                raise FieldValueError("params", "an edit may change the schema only")
            for key, value in params.items():
                if key != "schema" and value is not source.params[key]:
                    raise FieldValueError(f"params.{key}", "an edit may change the schema only")
            if source.kind is not HookKind.VALIDATE_TOOL_ARGS:
                raise FieldValueError("params", "only a validate_tool_args schema can be edited")
            old = source.params.get("schema")
            new = params.get("schema")
            if new is not old:
                if not isinstance(old, dict) or not isinstance(new, dict):
                    raise FieldValueError("params.schema", "must stay an object")
                _check_edited_params(old, new, (), "params.schema")
    return source.model_copy(update=changes)


def _check_edited_params(
    before: dict[str, Any], params: Any, added: tuple[str, ...], where: str
) -> None:
    """What a meta-valid-by-construction edit of an object schema can still break: it must stay
    an object schema (where it was one) whose `required` names its properties, no two
    properties merged by a rename (as many as before plus the added ones), and each added
    property's schema must be valid."""
    from core.harness.schema import check_json_schema  # heavy: jsonschema, regex

    if not isinstance(params, dict) or params.get("type") != before.get("type"):
        raise FieldValueError(where, "an edit must keep the schema's type")
    props = params.get("properties", {})
    if not isinstance(props, dict):
        raise FieldValueError(where, '"properties" must be an object')
    old = before.get("properties", {})
    if len(props) != (len(old) if isinstance(old, dict) else 0) + len(added):
        raise FieldValueError(where, "two properties would get the same name")
    required = params.get("required", [])
    for name in required if isinstance(required, list) else []:
        if name not in props:
            raise FieldValueError(where, f"required property {name!r} is not in properties")
    for name in added:
        if name not in props or not isinstance(props[name], dict):
            raise FieldValueError(where, f"added property {name!r} has no schema")
        try:
            check_json_schema(props[name])
        except ValueError as exc:
            raise FieldValueError(f"{where}.properties.{name}", str(exc)) from None


def _tool(raw: dict[str, Any], base: Tool | None) -> Tool:
    params = raw.get("parameters")
    if not isinstance(params, dict) or (base is not None and params is base.parameters):
        return Tool.model_validate(raw)  # an unchanged schema: its check is cached
    skeleton, names = _skeleton(params)
    binding_args = raw.get("binding_args") or {}
    renamed = (
        {names.get(k, k): v for k, v in binding_args.items()}
        if isinstance(binding_args, dict)
        else binding_args
    )
    probe = Tool.model_validate({**raw, "parameters": skeleton, "binding_args": renamed})
    return probe.model_copy(update={"parameters": params, "binding_args": dict(binding_args)})


def _hook(raw: dict[str, Any], base: Hook | None) -> Hook:
    params = raw.get("params")
    if (
        raw.get("kind") != HookKind.VALIDATE_TOOL_ARGS
        or not isinstance(params, dict)
        or (base is not None and params is base.params)
    ):
        return Hook.model_validate(raw)
    skeleton, _ = _skeleton(params.get("schema"))
    probe = Hook.model_validate({**raw, "params": {**params, "schema": skeleton}})
    return probe.model_copy(update={"params": params})


def _skill(raw: dict[str, Any], base: Skill | None) -> Skill:
    return Skill.model_validate(raw)


def _components(
    items: Iterable[Any], model: type[Any], build: Callable[[dict[str, Any], Any], Any], base: Any
) -> list[Any]:
    by_name = {c.name: c for c in base} if base is not None else {}
    out: list[Any] = []
    for item in items:
        if isinstance(item, model):
            out.append(item)
        elif isinstance(item, Edit):
            out.append(edited(item))
        elif isinstance(item, dict):
            out.append(build(item, by_name.get(item.get("name"))))
        else:
            out.append(model.model_validate(item))  # let pydantic say what is wrong
    return out


def assemble(
    base: Harness,
    *,
    description: str | None = None,
    settings: Settings | None = None,
    prompt: PromptPipeline | None = None,
    skills: Iterable[Skill | Edit | dict[str, Any]] | None = None,
    tools: Iterable[Tool | Edit | dict[str, Any]] | None = None,
    hooks: Iterable[Hook | Edit | dict[str, Any]] | None = None,
) -> Harness:
    """`base` with the given parts replaced (see the module doc): instances are kept as they
    are, dicts are validated as new components (tools and validate_tool_args hooks on their
    schema's skeleton), `Edit`s are checked by `edited`. Raises pydantic's
    ValidationError for a bad component and FieldValueError for a bad edit or a
    harness-level clash, as `Harness.model_validate` would."""
    update: dict[str, Any] = {}
    if description is not None and description != base.description:
        update["description"] = description
    if settings is not None and settings is not base.settings:
        update["settings"] = settings
    if prompt is not None and prompt is not base.prompt:
        update["prompt"] = prompt
    if skills is not None:
        update["skills"] = _components(skills, Skill, _skill, base.skills)
    if tools is not None:
        update["tools"] = _components(tools, Tool, _tool, base.tools)
    if hooks is not None:
        update["hooks"] = _components(hooks, Hook, _hook, base.hooks)
    if not update:
        return base
    out = base.model_copy(update=update)
    check_harness(out, skills="skills" in update, tools="tools" in update, hooks="hooks" in update)
    return out


def check_harness(harness: Harness, *, skills: bool, tools: bool, hooks: bool) -> None:
    """The harness-level rules of `Harness` (unique names ignoring case, no tool named like the
    skill loader) for the parts that changed."""
    if skills:
        _unique("skill", [s.name for s in harness.skills])
    if tools:
        _unique("tool", [t.name for t in harness.tools])
    if hooks:
        _unique("hook", [h.name for h in harness.hooks])
    loader = harness.settings.load_skill_tool
    if any(t.name == loader for t in harness.tools):
        raise FieldValueError(
            "settings.load_skill_tool",
            f"tool {loader!r} clashes with the built-in skill loader name",
        )
