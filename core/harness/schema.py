"""JSON Schema checks for tool parameters (function-calling schemas are JSON Schema objects).

A tool schema comes from a harness folder, so it is untrusted input:

- references are local only: every ``$ref`` / ``$dynamicRef`` must be a fragment of the same
  schema (``#/$defs/x``, ``#anchor``) that points at something; ``$id`` (which would move the
  base URI elsewhere) is refused. Validators are built with an empty ``referencing`` registry,
  so even a schema that skipped these checks can never make the product fetch a URL;
- a reference cycle that never descends into the arguments (``{"$ref": "#"}``, two ``$defs``
  that point at each other through ``allOf``) is refused: it would recurse forever;
- nesting is bounded (``MAX_SCHEMA_DEPTH``), and so is the longest chain of references and
  in-place subschemas (``allOf``, ``not``, ...) one value passes through, so neither the
  meta-schema check nor validation can exhaust the stack;
- its regexes (``pattern``, the names of ``patternProperties``) must compile under ``re`` and
  the ``regex`` engine, and arguments are matched against them on the ``regex`` engine under
  one time limit per call (`argument_errors`' ``timeout_s``: `ARGUMENT_CHECK_TIMEOUT_S` for the
  loop's own check, the hook's ``timeout`` for ``validate_tool_args``), never by jsonschema's
  untimed ``re``: a pattern that backtracks past the limit rejects the call with the reason.
  ``unevaluatedProperties`` next to ``patternProperties`` is refused, since jsonschema matches
  those names inside its own code, out of reach of the limit.

Every check raises ValueError with the JSON path of the offending keyword; `argument_errors`
never raises (a schema that still fails to apply becomes one error line).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError, ValidationError
from referencing import Registry

from core.harness.patterns import Deadline, PatternTimeout, TimedPattern, check_pattern

MAX_SCHEMA_DEPTH = 48
"""How deep a tool schema may nest (objects and arrays)."""

_REF_KEYS = ("$ref", "$dynamicRef")
# keywords whose subschemas apply to the same instance (a reference cycle through only these
# never ends); properties, items and the like descend into the instance and so terminate.
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas",)
# mappings whose keys are names (not keywords), and keywords whose values are data
_NAME_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
_NO_NETWORK: Registry[Any] = Registry()

ARGUMENT_CHECK_TIMEOUT_S = 2.0
"""Limit for all of a tool schema's patterns against one call's arguments (the agent loop's
own check; a `validate_tool_args` hook uses its `timeout`)."""

_DEADLINE: ContextVar[Deadline | None] = ContextVar("schema_pattern_deadline", default=None)


def _search(pattern: str, text: str) -> bool:
    """`pattern` found in `text`, on the `regex` engine under the current check's deadline."""
    deadline = _DEADLINE.get() or Deadline(ARGUMENT_CHECK_TIMEOUT_S)
    return TimedPattern(pattern, deadline).search(text) is not None


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance[:200]!r} does not match {pattern[:200]!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, allowed: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in properties and not any(_search(p, key) for p in patterns)
    ]
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        shown = ", ".join(repr(e) for e in sorted(extras, key=str))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            listed = ", ".join(repr(p) for p in sorted(patterns))
            yield ValidationError(f"{shown} {verb} not match any of the regexes: {listed}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({shown} {verb} unexpected)"
            )


_TimedValidator: Any = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)


def _key(schema: dict[str, Any]) -> str | None:
    try:
        return json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _where(path: tuple[str, ...]) -> str:
    return "/".join(path) or "(root)"


def _pointer_target(root: Any, fragment: str, anchors: dict[str, Any]) -> Any:
    """The subschema a local reference names, or raise KeyError."""
    if fragment in ("", "#"):
        return root
    body = fragment[1:]
    if not body.startswith("/"):
        return anchors[body]
    node = root
    for raw in body[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(part)
    return node


def _check_patterns(path: tuple[str, ...], node: dict[str, Any]) -> None:
    """Raise ValueError for a regex of `node` that `re` or `regex` cannot compile, or an
    ``unevaluatedProperties`` beside ``patternProperties`` (see the module doc)."""
    found: list[tuple[str, Any]] = [("pattern", node.get("pattern"))]
    names = node.get("patternProperties")
    if isinstance(names, dict):
        found += [(f"patternProperties/{name}", name) for name in names]
        if "unevaluatedProperties" in node:
            raise ValueError(
                f"invalid JSON Schema at {_where(path)}: unevaluatedProperties beside "
                "patternProperties is not supported in tool schemas (use additionalProperties)"
            )
    for where, pattern in found:
        if isinstance(pattern, str):
            try:
                check_pattern(pattern)
            except ValueError as exc:
                raise ValueError(
                    f"invalid JSON Schema at {_where((*path, where))}: {exc}"
                ) from None


def check_schema_references(schema: Any) -> None:
    """Raise ValueError for a remote or dangling reference, an ``$id``, a non-terminating
    reference cycle, nesting deeper than MAX_SCHEMA_DEPTH, or a chain of more than
    MAX_SCHEMA_DEPTH references and in-place subschemas (``$defs`` d0 -> d1 -> ... -> d5000
    is flat, yet validating it recurses 5,000 levels)."""
    nodes: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    anchors: dict[str, Any] = {}
    stack: list[tuple[tuple[str, ...], Any, int]] = [((), schema, 0)]
    while stack:
        path, node, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise ValueError(
                f"schema nested more than {MAX_SCHEMA_DEPTH} levels deep at {_where(path)}"
            )
        if isinstance(node, dict) and path[-1:] and path[-1] in _NAME_MAPS:
            for key, value in node.items():  # keys are names here, not keywords
                stack.append(((*path, str(key)), value, depth + 1))
        elif isinstance(node, dict):
            nodes.append((path, node))
            if "$id" in node:
                raise ValueError(
                    f"invalid JSON Schema at {_where(path)}: $id is not supported in tool "
                    "schemas (references must stay inside the schema)"
                )
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    anchors[node[key]] = node
            _check_patterns(path, node)
            for key, value in node.items():
                if key not in _DATA_KEYWORDS:
                    stack.append(((*path, str(key)), value, depth + 1))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                stack.append(((*path, str(i)), value, depth + 1))
    targets: dict[int, list[Any]] = {}
    for path, node in nodes:
        edges: list[Any] = []
        for key in _REF_KEYS:
            if key not in node:
                continue
            ref = node[key]
            where = _where((*path, key))
            if not isinstance(ref, str):
                continue  # the meta-schema check reports the type
            if not ref.startswith("#"):
                raise ValueError(
                    f"invalid JSON Schema at {where}: {ref[:80]!r} is not a local reference; "
                    "only references inside the schema (#/$defs/...) are allowed"
                )
            try:
                edges.append(_pointer_target(schema, ref, anchors))
            except (KeyError, IndexError):
                raise ValueError(
                    f"invalid JSON Schema at {where}: {ref[:80]!r} points at nothing in the schema"
                ) from None
        for key in _IN_PLACE_LISTS:
            if isinstance(node.get(key), list):
                edges.extend(node[key])
        for key in _IN_PLACE_ONE:
            if key in node:
                edges.append(node[key])
        for key in _IN_PLACE_MAPS:
            if isinstance(node.get(key), dict):
                edges.extend(node[key].values())
        targets[id(node)] = [e for e in edges if isinstance(e, dict)]
    where_of = {id(node): path for path, node in nodes}
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    chain: dict[int, int] = {}  # done nodes: the longest in-place chain that starts there
    for _, start in nodes:
        if state.get(id(start)):
            continue
        work: list[tuple[dict[str, Any], int]] = [(start, 0)]
        state[id(start)] = 1
        while work:
            node, i = work[-1]
            out = targets.get(id(node), [])
            if i < len(out):
                work[-1] = (node, i + 1)
                nxt = out[i]
                mark = state.get(id(nxt))
                if mark == 1:
                    raise ValueError(
                        f"invalid JSON Schema at {_where(where_of.get(id(node), ()))}: a "
                        "reference cycle that never descends into the arguments (it would "
                        "recurse forever)"
                    )
                if mark is None:
                    state[id(nxt)] = 1
                    work.append((nxt, 0))
            else:
                state[id(node)] = 2
                chain[id(node)] = max((1 + chain.get(id(n), 0) for n in out), default=0)
                if chain[id(node)] > MAX_SCHEMA_DEPTH:
                    raise ValueError(
                        f"invalid JSON Schema at {_where(where_of.get(id(node), ()))}: a "
                        f"chain of more than {MAX_SCHEMA_DEPTH} references (and allOf/anyOf/"
                        "oneOf/not/if subschemas) applied in place; validation would run out "
                        "of stack"
                    )
                work.pop()


@lru_cache(maxsize=4096)
def _meta_error(key: str) -> str | None:
    """Meta-schema and reference checks, cached by canonical JSON: every load of a version
    re-validates the same schemas, and the check costs milliseconds each."""
    schema = json.loads(key)
    try:
        check_schema_references(schema)
    except ValueError as exc:
        return str(exc)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"invalid JSON Schema at {where}: {exc.message}"
    except RecursionError:
        return "invalid JSON Schema: nested too deeply to check"
    return None


@lru_cache(maxsize=4096)
def _validator(key: str) -> Any:
    return _TimedValidator(json.loads(key), registry=_NO_NETWORK)


def check_json_schema(schema: dict[str, Any]) -> None:
    """Raise ValueError naming the bad keyword when `schema` is not a valid JSON Schema."""
    key = _key(schema)
    if key is None:
        check_schema_references(schema)
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise ValueError(f"invalid JSON Schema: {exc.message}") from None
        except RecursionError:
            raise ValueError("invalid JSON Schema: nested too deeply to check") from None
        return
    error = _meta_error(key)
    if error is not None:
        raise ValueError(error)


def check_parameters_schema(schema: dict[str, Any]) -> None:
    """Raise ValueError naming the bad keyword when `schema` cannot describe tool arguments."""
    check_json_schema(schema)
    if schema.get("type") != "object":
        raise ValueError('tool parameters must be a JSON Schema with "type": "object"')
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise ValueError('"properties" must be an object')
    for name in schema.get("required", []):
        if name not in props:
            raise ValueError(f"required parameter {name!r} is not in properties")


def argument_errors(
    schema: dict[str, Any],
    arguments: dict[str, Any],
    *,
    timeout_s: float = ARGUMENT_CHECK_TIMEOUT_S,
) -> list[str]:
    """Human-readable validation errors of `arguments` against `schema`, sorted by path.

    Never raises: a schema that cannot be applied (a reference that does not resolve, runaway
    recursion, patterns that run past `timeout_s` together) is one error line. No reference is
    ever fetched from the network.
    """
    token = _DEADLINE.set(Deadline(timeout_s))
    try:
        key = _key(schema)
        validator = (
            _validator(key) if key is not None else _TimedValidator(schema, registry=_NO_NETWORK)
        )
        found = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except PatternTimeout as exc:
        return [f"the arguments could not be checked in time: {exc}"]
    except RecursionError:
        return ["the tool's schema could not be applied: it recurses without end"]
    except Exception as exc:  # referencing/jsonschema errors of a schema that skipped the checks
        return [f"the tool's schema could not be applied: {type(exc).__name__}: {exc}"[:300]]
    finally:
        _DEADLINE.reset(token)
    errors = []
    for err in found:
        where = ".".join(str(p) for p in err.absolute_path)
        errors.append(f"{where}: {err.message}" if where else err.message)
    return errors


MAX_LISTED_PARAMETERS = 8
"""How many parameters a rejected call's "takes:" list names (required ones first)."""
MAX_LISTED_NAME = 48
"""Longer parameter names are cut in that list (a schema is untrusted input)."""


def _type_text(schema: Any) -> str:
    """A parameter's JSON type in a few characters: `integer`, `string|null`,
    `array of integer`; `any` when the schema names none."""
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind) and kind:
        text = "|".join(kind)
    elif isinstance(kind, str):
        text = kind
    elif "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        kinds = sorted({type(v).__name__ for v in values}) if isinstance(values, list) else []
        names = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
        text = "|".join(names.get(k, "any") for k in kinds) or "any"
    else:
        text = "any"
    items = schema.get("items")
    if text == "array" and isinstance(items, dict) and isinstance(items.get("type"), str):
        text = f"array of {items['type']}"
    return text[:40]


def _cut(name: str) -> str:
    return name if len(name) <= MAX_LISTED_NAME else name[: MAX_LISTED_NAME - 1] + "…"


def parameter_summary(schema: dict[str, Any], *, limit: int = MAX_LISTED_PARAMETERS) -> str:
    """What a tool takes, in one short line: `pqz_12f (integer, required), color (string)`,
    in the schema's order; past `limit` parameters the required ones are kept first and the
    rest counted (`... and 3 more`)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        return "no parameters"
    listed = schema.get("required")
    required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
    names = [str(n) for n in props]
    chosen = [n for n in names if n in required] + [n for n in names if n not in required]
    shown = set(chosen[:limit])
    parts = []
    for name in names:
        if name not in shown:
            continue
        flag = ", required" if name in required else ""
        parts.append(f"{_cut(name)} ({_type_text(props[name])}{flag})")
    more = len(names) - len(shown)
    if more:
        parts.append(f"... and {more} more")
    return ", ".join(parts)


def invalid_arguments_message(
    tool: str, schema: dict[str, Any], arguments: dict[str, Any], problems: list[str]
) -> str:
    """The agent loop's rejection of a call whose arguments fail the tool's schema: the
    schema's problem lines (`argument_errors`), each argument name the tool does not have
    (where the schema itself did not already say so), and, when a name is wrong or missing,
    what the tool takes (`parameter_summary`), so the model can write the call again."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    known = props if isinstance(props, dict) else {}
    lines = list(problems)
    unknown = [k for k in arguments if k not in known] if isinstance(arguments, dict) else []
    for name in unknown:
        flagged = any(f"{name!r}" in p and "unexpected" in p for p in problems)
        if not flagged:
            lines.append(f"{_cut(name)!r} is not a parameter of {tool}")
    missing = any(p.endswith("is a required property") for p in problems)
    if unknown or missing:
        lines.append(f"{tool} takes: {parameter_summary(schema)}")
    return f"invalid arguments for {tool}: " + "; ".join(lines)
