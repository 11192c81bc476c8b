"""Typed parameters of each declarative hook kind, so a typo in a hook file fails at load time."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

if TYPE_CHECKING:
    from core.harness.models import HookKind

DEFAULT_NUMBER_PATTERN = r"\d+(?:[.,]\d+)?"


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
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(value)
        except SchemaError as exc:
            raise ValueError(f"invalid JSON Schema: {exc.message}") from None
        return value


class ForbiddenClaimsParams(_Params):
    patterns: list[str] = Field(min_length=1, description="Case-insensitive regexes.")

    @field_validator("patterns")
    @classmethod
    def _check(cls, value: list[str]) -> list[str]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
        return value


class FactCheckParams(_Params):
    number_pattern: str = DEFAULT_NUMBER_PATTERN
    ignore_below: float = Field(default=0.0, description="Numbers below this are not checked.")


class ReplyFormatParams(_Params):
    max_chars: int | None = Field(default=None, ge=1)
    min_chars: int | None = Field(default=None, ge=0)
    forbid_markdown: bool = False
    forbid_patterns: list[str] = Field(default_factory=list)


class PythonParams(_Params):
    model_config = ConfigDict(extra="allow")


def params_model(kind: HookKind) -> type[_Params]:
    from core.harness.models import HookKind

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
    try:
        params_model(kind).model_validate(params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        raise ValueError(f"params.{where}: {first['msg']}") from None


def parse_params(kind: HookKind, params: dict[str, Any]) -> Any:
    return params_model(kind).model_validate(params)
