"""Errors that name the file and field at fault, so users can fix a harness without a traceback."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError


@dataclass(frozen=True)
class Problem:
    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"


class HarnessError(Exception):
    """One or more problems found while reading or validating a harness."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems) or "invalid harness")


class FieldValueError(ValueError):
    """A ValueError from a model-level validator that knows which field is at fault.

    Pydantic reports model validators at the model's own location; raising this instead lets
    `problems_from_validation` still point at the field (e.g. ``event`` of a hook).
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(message)


def problems_from_validation(
    exc: ValidationError,
    file: str,
    prefix: str = "",
    rename: dict[str, str] | None = None,
) -> list[Problem]:
    """Flatten pydantic errors into problems whose field path reads like the file's keys.

    `rename` maps a model field (the first element of the error location) to where that value
    sits in the file, e.g. ``{"kind": "metadata.kind"}`` for a skill's front matter.
    """
    out = []
    for err in exc.errors():
        parts = [str(p) for p in err["loc"]]
        cause = (err.get("ctx") or {}).get("error")
        if isinstance(cause, FieldValueError):
            parts.append(cause.field)
        if parts and rename and parts[0] in rename:
            parts[0] = rename[parts[0]]
        field = ".".join(p for p in (prefix, *parts) if p)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "missing":
            msg = "required field is missing"
        out.append(Problem(file, field, msg))
    return out
