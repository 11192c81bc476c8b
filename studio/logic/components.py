"""Build components from what an editor holds, with problems that name the field at fault.

Form input goes through the core models (`Skill`, `Tool`, `Hook`), raw text (a SKILL.md, a
tool's JSON file) through the folder importer itself (`harness_from_files` on a one-component
folder), so the studio accepts exactly what `hat harness import` accepts and reports problems
with the same file + field wording.

Tool parameters have a form model: one `ParamRow` per property (name, type, description,
required, enum, default, and the schema keywords the form has no field for, kept as they are).
`schema_from_rows` turns rows back into a JSON Schema and returns the problems per row, so the
form shows each error under the property it belongs to.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import ValidationError

from core.harness import Harness, HarnessError, Hook, Problem, Skill, Tool
from core.harness.errors import problems_from_validation
from core.harness.folder import dump_yaml, harness_from_files, hook_text, skill_text, tool_text
from core.harness.folder.components import split_front_matter

TYPES = ("string", "integer", "number", "boolean", "array", "object")
CUSTOM = "(custom)"
_SKILL_RENAME = {"allowed_tools": "allowed-tools"}
_NAME_RE = re.compile(r"^name:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)
_PROP_PATH_RE = re.compile(r"at properties/([^/\s:]+)")


def problems_of(
    exc: ValidationError, file: str, rename: dict[str, str] | None = None
) -> list[Problem]:
    return problems_from_validation(exc, file, rename=rename)


# ----------------------------------------------------------------------------- skills


def skill_from_fields(
    *, name: str, description: str, body: str, kind: str, enabled: bool, base: Skill | None = None
) -> Skill:
    """A skill from the form's fields; keeps the base skill's other front-matter fields."""
    data: dict[str, Any] = base.model_dump() if base is not None else {}
    data.update(name=name, description=description, body=body, kind=kind, enabled=enabled)
    try:
        return Skill.model_validate(data)
    except ValidationError as exc:
        raise HarnessError(problems_of(exc, f"skills/{name}/SKILL.md", _SKILL_RENAME)) from None


def _minimal(harness: Harness, extra: dict[str, str]) -> dict[str, bytes]:
    manifest = {
        "name": harness.name,
        "settings": harness.settings.model_dump(mode="json"),
        "prompt": {
            "style": "markdown",
            "variables": {},
            "sections": [
                {"id": "skills", "title": "Skills", "kind": "skill_index"},
                {"id": "tools", "title": "Tools", "kind": "tool_block"},
            ],
        },
    }
    files = {"harness.yaml": dump_yaml(manifest), **extra}
    return {p: t.encode("utf-8") for p, t in files.items()}


def parse_skill_text(text: str, harness: Harness, file: str | None = None) -> Skill:
    """Parse a whole SKILL.md (front matter + body) exactly as folder import does; problems
    name `file` (the skill's own path) when given."""
    parts = split_front_matter(text)
    match = _NAME_RE.search(parts[0]) if parts is not None else None
    folder = match.group(1) if match else "skill"
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", folder):
        folder = "skill"
    rel = f"skills/{folder}/SKILL.md"
    try:
        built = harness_from_files(_minimal(harness, {rel: text}), name=harness.name)
    except HarnessError as exc:
        if file is None:
            raise
        raise HarnessError(
            [Problem(file if p.file == rel else p.file, p.field, p.message) for p in exc.problems]
        ) from None
    return built.skills[0]


def skill_file_text(skill: Skill) -> str:
    return skill_text(skill)


# ----------------------------------------------------------------------------- tools


def parse_tool_text(text: str, harness: Harness) -> Tool:
    """Parse a tool's JSON file exactly as folder import does (name from the JSON itself)."""
    name = "tool"
    try:
        data = json.loads(text)
        candidate = data.get("function", data).get("name") if isinstance(data, dict) else None
        if isinstance(candidate, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", candidate):
            name = candidate
    except (ValueError, AttributeError, RecursionError):
        pass
    built = harness_from_files(_minimal(harness, {f"tools/{name}.json": text}), name=harness.name)
    return built.tools[0]


def tool_file_text(tool: Tool) -> str:
    return tool_text(tool)


@dataclass
class ParamRow:
    name: str = ""
    type: str = "string"
    description: str = ""
    required: bool = False
    enum: str = ""
    """Comma-separated values, or a JSON array."""
    default: str = ""
    """Empty for no default; otherwise text read by the type (JSON for array/object)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Schema keywords the form has no field for (minimum, items, ...), kept unchanged."""
    keys: tuple[str, ...] = ()
    """The property's keyword order as loaded, kept so an edit does not reorder the file."""


def _text_of(value: Any, type_: str) -> str:
    if type_ == "string" and isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def rows_from_schema(schema: dict[str, Any]) -> list[ParamRow]:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    rows = []
    for name, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        raw_type = prop.get("type")
        type_ = raw_type if isinstance(raw_type, str) and raw_type in TYPES else CUSTOM
        extra = {k: v for k, v in prop.items() if k not in ("description", "enum", "default")}
        if type_ != CUSTOM:
            extra.pop("type", None)
        enum = prop.get("enum")
        rows.append(
            ParamRow(
                name=name,
                type=type_,
                description=str(prop.get("description", "")),
                required=name in required,
                enum=", ".join(_text_of(v, type_) for v in enum) if isinstance(enum, list) else "",
                default=_text_of(prop["default"], type_) if "default" in prop else "",
                extra=extra,
                keys=tuple(prop),
            )
        )
    return rows


def _coerce(text: str, type_: str) -> Any:
    text = text.strip()
    if type_ == "string":
        return text
    if type_ == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
    if type_ == "number":
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        return int(value) if value.is_integer() and "." not in text else value
    if type_ == "boolean":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ValueError(f"{text!r} is not true or false")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None


def _enum_values(text: str, type_: str) -> list[Any]:
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            values = json.loads(stripped)
        except ValueError as exc:
            raise ValueError(f"enum is not a valid JSON array ({exc})") from None
        if not isinstance(values, list):
            raise ValueError("enum must be a list")
        return values
    parts = [p.strip() for p in stripped.split(",")]
    if any(not p for p in parts):
        raise ValueError("enum has an empty value (write values separated by commas)")
    out = []
    for part in parts:
        try:
            out.append(_coerce(part, type_ if type_ != CUSTOM else "json"))
        except ValueError as exc:
            raise ValueError(f"enum value {exc}") from None
    return out


@dataclass
class SchemaResult:
    schema: dict[str, Any]
    row_errors: dict[int, list[str]]
    errors: list[str]
    """Problems of the schema as a whole (not tied to one property)."""

    @property
    def ok(self) -> bool:
        return not self.row_errors and not self.errors


def schema_from_rows(rows: list[ParamRow], base: dict[str, Any] | None = None) -> SchemaResult:
    """The JSON Schema the rows describe (other keywords of `base` kept), and its problems."""
    base = base or {}
    props: dict[str, Any] = {}
    required: list[str] = []
    errors: dict[int, list[str]] = {}
    seen: dict[str, int] = {}

    def err(i: int, msg: str) -> None:
        errors.setdefault(i, []).append(msg)

    for i, row in enumerate(rows):
        name = row.name.strip()
        if not name:
            err(i, "name: a parameter needs a name")
            continue
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}", name):
            err(i, f"name: {name!r} must start with a letter or _ and use letters, digits, _ . -")
        if name in seen:
            err(i, f"name: duplicate parameter {name!r}")
            continue
        seen[name] = i
        prop: dict[str, Any] = {}
        if row.type != CUSTOM:
            prop["type"] = row.type
        prop.update(row.extra)
        if row.description.strip():
            prop["description"] = row.description
        if row.enum.strip():
            try:
                prop["enum"] = _enum_values(row.enum, row.type)
            except ValueError as exc:
                err(i, f"enum: {exc}")
        if row.default.strip() or (row.type == "string" and row.default):
            try:
                prop["default"] = _coerce(row.default, row.type if row.type != CUSTOM else "json")
            except ValueError as exc:
                err(i, f"default: {exc}")
        if i not in errors:
            try:
                Draft202012Validator.check_schema(prop)
            except SchemaError as exc:
                where = "/".join(str(p) for p in exc.absolute_path)
                err(i, f"schema{(' at ' + where) if where else ''}: {exc.message}")
            else:
                if "default" in prop:
                    bad = [
                        e.message for e in Draft202012Validator(prop).iter_errors(prop["default"])
                    ]
                    if bad:
                        err(i, f"default: {bad[0]}")
        props[name] = _ordered(prop, row.keys)
        if row.required:
            required.append(name)
    fresh: dict[str, Any] = {"type": "object", "properties": props}
    if required or "required" in base:
        fresh["required"] = required
    schema = {k: fresh.get(k, v) for k, v in base.items() if k in fresh or k not in ("required",)}
    schema.update({k: v for k, v in fresh.items() if k not in schema})
    whole: list[str] = []
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        match = _PROP_PATH_RE.search(f"at {where}")
        if match and match.group(1) in seen:
            err(seen[match.group(1)], exc.message)
        else:
            whole.append(f"invalid JSON Schema at {where}: {exc.message}")
    return SchemaResult(schema, errors, whole)


def _ordered(prop: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = {k: prop[k] for k in keys if k in prop}
    out.update({k: v for k, v in prop.items() if k not in out})
    return out


def tool_from_fields(
    *,
    name: str,
    description: str,
    binding: str,
    enabled: bool,
    parameters: dict[str, Any],
    base: Tool | None = None,
) -> Tool:
    data: dict[str, Any] = base.model_dump() if base is not None else {}
    data.update(
        name=name, description=description, binding=binding, enabled=enabled, parameters=parameters
    )
    if base is not None:
        props = parameters.get("properties", {})
        data["binding_args"] = {k: v for k, v in base.binding_args.items() if k in props}
    try:
        tool = Tool.model_validate(data)
    except ValidationError as exc:
        raise HarnessError(problems_of(exc, f"tools/{name}.json")) from None
    problem = binding_form_problem(tool.binding)
    if problem is not None:
        raise HarnessError([Problem(f"tools/{name}.json", "x-hat.binding", problem)])
    return tool


def binding_form_problem(binding: str) -> str | None:
    """Why a binding typed in the tool editor is not one the runtime can read (a malformed
    python:, mcp: or http(s) binding), or None. Binding a tool is typing it here: the same
    rules as `hat harness bind`; whether the module imports is checked once trusted."""
    from core.runtime.tool_runtime import parse_binding

    # A name that is no binding form at all (an imported tool keeps its own name until it
    # is bound) is not an error here: validate lists such a tool as having no implementation.
    return parse_binding(binding).problem


def param_field(index: int, rows: list[ParamRow]) -> str:
    """The field a problem of parameter row `index` names: `parameters.<name>`, the way an
    operator knows the parameter (not its position, which they never see). A row without a
    name, or repeating an earlier row's name, also says which row it is."""
    if not 0 <= index < len(rows):
        raise IndexError(f"no parameter row {index} (the tool has {len(rows)})")
    name = rows[index].name.strip()
    if not name:
        return f"parameters (row {index + 1}, no name)"
    if any(r.name.strip() == name for r in rows[:index]):
        return f"parameters.{name} (row {index + 1})"
    return f"parameters.{name}"


def param_row_of_field(field: str, rows: list[ParamRow]) -> int | None:
    """The row a `param_field` names (None when the field names no row of `rows`)."""
    for i in range(len(rows)):
        if param_field(i, rows) == field:
            return i
    return None


def param_row_of_problem(message: str, rows: list[ParamRow]) -> int | None:
    """The row a whole-schema message (`... at properties/<name>/...`) points at."""
    match = _PROP_PATH_RE.search(message)
    if not match:
        return None
    for i, row in enumerate(rows):
        if row.name.strip() == match.group(1):
            return i
    return None


# ----------------------------------------------------------------------------- hooks


def hook_from_fields(data: dict[str, Any]) -> Hook:
    """A hook from the form (`params` already parsed); problems name params.<key> etc."""
    try:
        return Hook.model_validate(data)
    except ValidationError as exc:
        raise HarnessError(problems_of(exc, f"hooks/{data.get('name', 'hook')}.yaml")) from None


def hook_file_text(hook: Hook) -> str:
    return hook_text(hook.model_copy(update={"source": None}))
