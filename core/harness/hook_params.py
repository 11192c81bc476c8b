"""Typed parameters of each declarative hook kind, so a typo in a hook file fails at load time."""

from __future__ import annotations

import json
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.harness.errors import FieldValueError


class HookKind(StrEnum):
    """Declarative checks cover the common cases; `python` runs user code in a child process.
    Defined beside the parameters each kind takes (core.harness.models re-exports it)."""

    REQUIRE_REPLY_SKILL = "require_reply_skill"
    VALIDATE_TOOL_ARGS = "validate_tool_args"
    FORBIDDEN_CLAIMS = "forbidden_claims"
    FACT_CHECK = "fact_check"
    REPLY_FORMAT = "reply_format"
    PYTHON = "python"


# Thousands groups first so "1,299,000" is one number, not "1,299" and "000".
DEFAULT_NUMBER_PATTERN = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"


def _check_regexes(patterns: list[str]) -> list[str]:
    from core.harness.patterns import check_pattern  # heavy: regex

    for pattern in patterns:
        check_pattern(pattern)
    return patterns


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RequireReplySkillParams(_Params):
    pass


class ValidateToolArgsParams(_Params):
    schema_: dict[str, Any] = Field(
        default_factory=dict,
        alias="schema",
        description="Extra JSON Schema the arguments of matched tools must also satisfy.",
    )

    @field_validator("schema_")
    @classmethod
    def _check(cls, value: dict[str, Any]) -> dict[str, Any]:
        from core.harness.schema import check_json_schema  # heavy: jsonschema, regex

        check_json_schema(value)
        return value


class ForbiddenClaimsParams(_Params):
    patterns: list[str] = Field(min_length=1, description="Case-insensitive regexes.")

    @field_validator("patterns")
    @classmethod
    def _check(cls, value: list[str]) -> list[str]:
        return _check_regexes(value)


class FactCheckParams(_Params):
    number_pattern: str = DEFAULT_NUMBER_PATTERN
    ignore_below: float = Field(default=0.0, description="Numbers below this are not checked.")

    @field_validator("number_pattern")
    @classmethod
    def _check(cls, value: str) -> str:
        _check_regexes([value])
        return value


class ReplyFormatParams(_Params):
    max_chars: int | None = Field(default=None, ge=1)
    min_chars: int | None = Field(default=None, ge=0)
    forbid_markdown: bool = False
    forbid_patterns: list[str] = Field(default_factory=list)

    @field_validator("forbid_patterns")
    @classmethod
    def _check(cls, value: list[str]) -> list[str]:
        return _check_regexes(value)

    @model_validator(mode="after")
    def _check_range(self) -> ReplyFormatParams:
        if (
            self.max_chars is not None
            and self.min_chars is not None
            and self.min_chars > self.max_chars
        ):
            raise ValueError(f"min_chars ({self.min_chars}) exceeds max_chars ({self.max_chars})")
        return self


class PythonParams(_Params):
    model_config = ConfigDict(extra="allow")


def params_model(kind: HookKind) -> type[_Params]:
    models: dict[HookKind, type[_Params]] = {
        HookKind.REQUIRE_REPLY_SKILL: RequireReplySkillParams,
        HookKind.VALIDATE_TOOL_ARGS: ValidateToolArgsParams,
        HookKind.FORBIDDEN_CLAIMS: ForbiddenClaimsParams,
        HookKind.FACT_CHECK: FactCheckParams,
        HookKind.REPLY_FORMAT: ReplyFormatParams,
        HookKind.PYTHON: PythonParams,
    }
    return models[kind]


def check_hook_params(kind: HookKind, params: dict[str, Any]) -> None:
    """Raise FieldValueError naming the offending key (``params.<key>``) of a hook's params."""
    try:
        params_model(kind).model_validate(params)
    except ValidationError as exc:
        found = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                allowed = ", ".join(sorted(_param_names(kind))) or "none"
                msg = f"unknown parameter for kind {kind.value} (allowed: {allowed})"
            found.append((where, msg))
        if len(found) == 1:
            where, msg = found[0]
            raise FieldValueError(f"params.{where}" if where else "params", msg) from None
        raise FieldValueError(
            "params", "; ".join(f"{w}: {m}" if w else m for w, m in found)
        ) from None


def _param_names(kind: HookKind) -> list[str]:
    fields = params_model(kind).model_fields
    return [info.alias or name for name, info in fields.items()]


def parse_params(kind: HookKind, params: dict[str, Any]) -> Any:
    """Typed params, cached by the params' canonical JSON: the agent loop parses a hook's params
    on every check, and validation (a JSON Schema meta-check, regex compiles) costs far more
    than the check itself. Callers must treat the result as read-only."""
    try:
        key = json.dumps(params, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return params_model(kind).model_validate(params)
    return _parse_cached(kind, key)


@lru_cache(maxsize=1024)
def _parse_cached(kind: HookKind, key: str) -> Any:
    return params_model(kind).model_validate(json.loads(key))
