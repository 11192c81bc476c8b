"""JSON Schema checks for tool parameters (function-calling schemas are JSON Schema objects)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError


def check_parameters_schema(schema: dict[str, Any]) -> None:
    """Raise ValueError naming the bad keyword when `schema` cannot describe tool arguments."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ValueError(f"invalid JSON Schema at {where}: {exc.message}") from None
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
    validator = Draft202012Validator(schema)
    errors = []
    for err in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path)
        errors.append(f"{where}: {err.message}" if where else err.message)
    return errors
