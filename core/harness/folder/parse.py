"""Strict parsing of one harness file's YAML or JSON, collecting problems instead of raising:
duplicate keys, lone surrogates, non-finite numbers and data nested or aliased past the limits
are problems naming the file and field, so no file content can crash import or hang it."""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import ConstructorError

from core.harness.errors import Problem, problems_from_validation
from core.yamlfile import yaml_problem

M = TypeVar("M", bound=BaseModel)

# libyaml's C parser when present (the Python one is ~5x slower on a large harness); the
# constructors below are Python either way.
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that rejects duplicate keys (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue  # unhashable: the base class reports it
            if duplicate:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


_SURROGATE_RE = re.compile("[\ud800-\udfff]")
PARSE_FAILED = object()
"""What `FolderReader.json_value` returns once it has recorded why a file is not JSON."""
MAX_DEPTH = 64
"""How deep the data of one harness file may nest (mappings and lists)."""
MAX_VALUES = 200_000
"""How many values one harness file may hold once YAML aliases are expanded."""


def unknown_field(keys: tuple[str, ...]) -> str:
    """The problem message for a field that is none of `keys`."""
    return f"unknown field (allowed: {', '.join(keys)})"


def _non_text_path(data: Any) -> str | None:
    """Dotted path of the first string (key or value) holding a lone surrogate, if any.

    JSON and YAML escapes such as "\\ud800" decode to code points that are not Unicode text: the
    harness could never be written back to a file, so they are refused on import.
    """
    stack: list[tuple[str, Any]] = [("", data)]
    seen: set[int] = set()
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE_RE.search(value):
                return path
        elif isinstance(value, dict | list):
            if id(value) in seen:  # YAML aliases share objects; visit each once
                continue
            seen.add(id(value))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                sub = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and _SURROGATE_RE.search(key):
                    return sub
                stack.append((sub, item))
    return None


def data_shape_problem(data: Any) -> tuple[str, str] | None:
    """(dotted field, message) of the first place where `data` is nested deeper than
    MAX_DEPTH, expands (through YAML aliases) past MAX_VALUES values, or holds a float that is
    not finite; None when it is fine. Shared sub-trees are visited once per depth, so an alias
    bomb is measured without being expanded."""
    memo: dict[tuple[int, int], int] = {}

    def walk(value: Any, path: str, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise _ShapeError(path, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, float) and not math.isfinite(value):
            raise _ShapeError(path, f"{value} is not a finite number")
        if not isinstance(value, dict | list):
            return 1
        key = (id(value), depth)
        if key in memo:
            return memo[key]
        total = 1
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for name, item in items:
            total += walk(item, f"{path}.{name}" if path else str(name), depth + 1)
            if total > MAX_VALUES:
                raise _ShapeError(
                    path,
                    f"expands to more than {MAX_VALUES:,} values (YAML aliases that repeat data?)",
                )
        memo[key] = total
        return total

    try:
        walk(data, "", 0)
    except _ShapeError as exc:
        return exc.field, exc.message
    return None


class _ShapeError(Exception):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(message)


class FolderReader:
    """Reads a folder given as {relative path: bytes}, collecting problems instead of raising."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.problems: list[Problem] = []

    def add(self, file: str, field: str, message: str) -> None:
        self.problems.append(Problem(file, field, message))

    def text(self, rel: str) -> str | None:
        try:
            return self.files[rel].decode("utf-8")
        except KeyError:
            self.add(rel, "", "missing")
        except UnicodeDecodeError as exc:
            self.add(rel, f"byte {exc.start}", f"not UTF-8 text ({exc.reason})")
        return None

    def exists(self, rel: str) -> bool:
        return rel in self.files

    def children(self, folder: str) -> list[str]:
        """Names directly inside `folder` (files and sub-folders), sorted."""
        prefix = folder.rstrip("/") + "/"
        names = {
            rel[len(prefix) :].split("/", 1)[0] for rel in self.files if rel.startswith(prefix)
        }
        return sorted(names)

    def failed(self, prefix: str) -> bool:
        return any(p.file.startswith(prefix) for p in self.problems)

    def checked_text(self, rel: str, data: Any) -> bool:
        path = _non_text_path(data)
        if path is None:
            return True
        self.add(rel, path, "holds a lone surrogate code point (\\ud800-\\udfff), not Unicode text")
        return False

    def yaml_mapping(
        self, rel: str, text: str, *, where: str = "", line_offset: int = 0
    ) -> dict[str, Any] | None:
        """Parse YAML that must be a mapping; `where`/`line_offset` place it inside its file."""
        try:
            data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
        except yaml.YAMLError as exc:
            pos, problem = yaml_problem(exc, line_offset)
            self.add(rel, ", ".join(p for p in (where, pos) if p), f"malformed YAML: {problem}")
            return None
        except RecursionError:
            self.add(rel, where, f"malformed YAML: nested too deeply (the limit is {MAX_DEPTH})")
            return None
        except (ValueError, OverflowError, MemoryError) as exc:
            # int("9" * 5000) escapes PyYAML's own error types
            self.add(rel, where, f"malformed YAML: {type(exc).__name__}: {exc}"[:300])
            return None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            self.add(rel, where, f"expected a YAML mapping of fields, got {type(data).__name__}")
            return None
        for key in data:
            if not isinstance(key, str):
                self.add(rel, where, f"field names must be strings, got {key!r}")
                return None
        if not self.checked_text(rel, data) or not self.checked_shape(rel, data, where):
            return None
        return data

    def checked_shape(self, rel: str, data: Any, where: str = "") -> bool:
        """Record a problem for data nested too deep, expanding too far (YAML aliases) or
        holding a number that is not finite; such data cannot be stored, rendered or sent."""
        found = data_shape_problem(data)
        if found is None:
            return True
        field, message = found
        self.add(rel, ".".join(p for p in (where, field) if p), message)
        return False

    def json_value(self, rel: str, text: str) -> Any:
        """Parse strict JSON (no duplicate keys, no NaN); PARSE_FAILED after recording a problem."""

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for key, value in items:
                if key in out:
                    raise _DuplicateKeyError(key)
                out[key] = value
            return out

        def constant(name: str) -> Any:
            raise ValueError(f"{name} is not valid JSON")

        def number(literal: str) -> float:
            value = float(literal)
            if not math.isfinite(value):
                raise ValueError(f"the number {literal[:40]} is out of range (not a finite float)")
            return value

        try:
            data = json.loads(
                text, object_pairs_hook=pairs, parse_constant=constant, parse_float=number
            )
        except json.JSONDecodeError as exc:
            self.add(rel, f"line {exc.lineno}, column {exc.colno}", f"malformed JSON: {exc.msg}")
            return PARSE_FAILED
        except _DuplicateKeyError as exc:
            self.add(rel, exc.key, "duplicate key in a JSON object")
            return PARSE_FAILED
        except RecursionError:
            self.add(rel, "", f"malformed JSON: nested too deeply (the limit is {MAX_DEPTH})")
            return PARSE_FAILED
        except (ValueError, MemoryError) as exc:
            self.add(rel, "", f"malformed JSON: {type(exc).__name__}: {exc}"[:300])
            return PARSE_FAILED
        if not self.checked_text(rel, data) or not self.checked_shape(rel, data):
            return PARSE_FAILED
        return data

    def build(
        self,
        model: type[M],
        data: Any,
        rel: str,
        prefix: str = "",
        rename: dict[str, str] | None = None,
    ) -> M | None:
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            self.problems.extend(problems_from_validation(exc, rel, prefix, rename))
            return None


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)
