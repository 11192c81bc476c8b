"""What `hat doctor` reports: one result per check, each with a status, the problem and a fix.

Statuses, from good to bad: ``ok`` (works), ``info`` (worth knowing, nothing to do: a CPU-only
machine, an optional engine not set up), ``warn`` (works, but something will hurt later: low
disk, migrations pending, the demo model not imported yet) and ``fail`` (a feature is broken
until the fix is applied). Only ``fail`` makes the command exit non-zero, so scripts can gate
on it while warnings stay visible.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GIB = 1024**3


class Status(enum.IntEnum):
    """Ordered so that `max()` over results gives the overall verdict."""

    OK = 0
    INFO = 1
    WARN = 2
    FAIL = 3

    @property
    def label(self) -> str:
        return self.name


@dataclass(frozen=True)
class CheckResult:
    """One line of the report.

    `summary` says what was found in a few words; `details` holds the evidence (versions,
    paths, the error a child process printed); `fix` is the exact command (or action) that
    repairs a `warn`/`fail`, empty when there is nothing to do.
    """

    key: str
    title: str
    status: Status
    summary: str
    details: list[str] = field(default_factory=list)
    fix: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.name.lower()
        data["seconds"] = round(self.seconds, 3)
        return data


@dataclass(frozen=True)
class Report:
    home: Path
    results: list[CheckResult]

    @property
    def status(self) -> Status:
        return max((r.status for r in self.results), default=Status.OK)

    @property
    def failed(self) -> bool:
        return self.status is Status.FAIL

    def get(self, key: str) -> CheckResult:
        """The result of check `key` (KeyError naming the known keys otherwise)."""
        for result in self.results:
            if result.key == key:
                return result
        raise KeyError(f"no check {key!r} (checks: {', '.join(r.key for r in self.results)})")

    def to_json(self) -> dict[str, Any]:
        return {
            "home": str(self.home),
            "status": self.status.name.lower(),
            "ok": not self.failed,
            "checks": [r.to_json() for r in self.results],
        }


@dataclass(frozen=True)
class DoctorOptions:
    """How thorough the checks are and where the limits lie.

    `quick` only locates the packages of each Python environment (well under a second per
    environment); the default imports them for real in a child process, which is what catches
    a broken install (an ABI mismatch, a missing shared library) at the cost of the imports'
    own time (torch + transformers + trl + peft: 10-30 s on a small machine).
    `min_free_bytes`: less free disk in the home folder is a failure; `warn_free_bytes`: less
    is a warning.
    """

    home: Path
    quick: bool = False
    min_free_bytes: int = 2 * GIB
    warn_free_bytes: int = 10 * GIB
    probe_timeout_s: float = 240.0
