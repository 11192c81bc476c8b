"""JSON Schema rewriting for HSA: renamed properties (with `required` and nested schemas
following), and a function mapped over a schema's human-readable strings (descriptions,
titles, comments) or over every string. Apart from the renames so the harness builder
(core/hsa/build.py) can use it without importing them."""

from collections.abc import Callable, Mapping
from typing import Any


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
