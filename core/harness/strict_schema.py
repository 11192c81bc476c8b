"""What OpenAI's structured outputs require of a tool declared `"strict": true`.

A strict tool's arguments are decoded under its schema, so the API refuses, at request time, a
schema it cannot enforce: the operator would learn it from a 400 in production. These are the
rules of OpenAI's structured-outputs guide ("Supported schemas"), checked where the schema is
written (the editor's Problems panel and `hat harness validate`):

- the root is an object (`"type": "object"`), not `anyOf`;
- every object sets `"additionalProperties": false`;
- every property is listed in `required` (an optional field is a union with `null`);
- no keyword the guide lists as unsupported (`allOf`, `not`, `if`/`then`/`else`,
  `dependentRequired`, `dependentSchemas`, `patternProperties`, `unevaluatedProperties`,
  `propertyNames`, `minProperties`, `maxProperties`, `unevaluatedItems`, `contains`,
  `minContains`, `maxContains`, `uniqueItems`);
- at most 5,000 properties in all and 10 levels of object nesting.

A tool without `strict` (or `strict: false`) is not checked: the API accepts any schema then.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

UNSUPPORTED_KEYWORDS = (
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
)
MAX_PROPERTIES = 5000
MAX_NESTING = 10
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_SUBSCHEMAS = ("items", "additionalItems")


def strict_schema_problems(schema: Any) -> list[str]:
    """Why OpenAI would refuse `schema` as a strict tool's parameters, one line per cause,
    each naming where in the schema (a JSON-pointer-like path, `/` for the root)."""
    if not isinstance(schema, dict):
        return ["/: the parameters must be a JSON object schema"]
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append('/: the root must be "type": "object"')
    if "anyOf" in schema:
        problems.append("/: the root must not be anyOf")
    properties = 0
    for path, node, depth in _nodes(schema, "", 0):
        where = path or "/"
        if _is_object(node):
            props = node.get("properties")
            props = props if isinstance(props, dict) else {}
            properties += len(props)
            if node.get("additionalProperties") is not False:
                problems.append(f'{where}: an object needs "additionalProperties": false')
            required = node.get("required")
            listed = set(required) if isinstance(required, list) else set()
            missing = [name for name in props if name not in listed]
            if missing:
                names = ", ".join(repr(n) for n in missing)
                problems.append(
                    f"{where}: every property must be required ({names} "
                    "optional: make it required and allow null instead)"
                )
            if depth > MAX_NESTING:
                problems.append(f"{where}: objects nested more than {MAX_NESTING} levels deep")
        for keyword in UNSUPPORTED_KEYWORDS:
            if keyword in node:
                problems.append(f"{where}: {keyword!r} is not supported in strict mode")
    if properties > MAX_PROPERTIES:
        problems.append(f"/: {properties:,} properties, past strict mode's {MAX_PROPERTIES:,}")
    return problems


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return (
        kind == "object"
        or (isinstance(kind, list) and "object" in kind)
        or (kind is None and isinstance(node.get("properties"), dict))
    )


def _nodes(
    node: dict[str, Any], path: str, depth: int
) -> Iterator[tuple[str, dict[str, Any], int]]:
    """Every schema node under `node` (itself first) with its path and its object depth."""
    here = depth + 1 if _is_object(node) else depth
    yield path, node, here
    for key in _SUBSCHEMA_MAPS:
        children = node.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                if isinstance(child, dict):
                    yield from _nodes(child, f"{path}/{key}/{name}", here)
    for key in _SUBSCHEMA_LISTS:
        children = node.get(key)
        if isinstance(children, list):
            for i, child in enumerate(children):
                if isinstance(child, dict):
                    yield from _nodes(child, f"{path}/{key}/{i}", here)
    for key in _SUBSCHEMAS:
        child = node.get(key)
        if isinstance(child, dict):
            yield from _nodes(child, f"{path}/{key}", here)
