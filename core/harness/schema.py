"""JSON Schema checks for tool parameters (function-calling schemas are JSON Schema objects)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError


def _key(schema: dict[str, Any]) -> str | None:
    try:
        return json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


@lru_cache(maxsize=4096)
def _meta_error(key: str) -> str | None:
    """Meta-schema check, cached by canonical JSON: every load of a version re-validates the
    same schemas, and the check costs milliseconds each."""
    try:
        Draft202012Validator.check_schema(json.loads(key))
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        return f"invalid JSON Schema at {where}: {exc.message}"
    return None


@lru_cache(maxsize=4096)
def _validator(key: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(key))


def check_json_schema(schema: dict[str, Any]) -> None:
    """Raise ValueError naming the bad keyword when `schema` is not a valid JSON Schema."""
    key = _key(schema)
    if key is None:
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            raise ValueError(f"invalid JSON Schema: {exc.message}") from None
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


def argument_errors(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Human-readable validation errors of `arguments` against `schema`, sorted by path."""
    key = _key(schema)
    validator = _validator(key) if key is not None else Draft202012Validator(schema)
    errors = []
    for err in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path)
        errors.append(f"{where}: {err.message}" if where else err.message)
    return errors
