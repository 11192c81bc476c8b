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
        super().__init__("\n".join(str(p) for p in problems))


def problems_from_validation(exc: ValidationError, file: str, prefix: str = "") -> list[Problem]:
    """Flatten pydantic errors into problems whose field path reads like the file's keys."""
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        field = ".".join(p for p in (prefix, loc) if p)
        msg = err["msg"].removeprefix("Value error, ")
        out.append(Problem(file, field, msg))
    return out
