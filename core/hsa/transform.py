"""The transform interface, the registry of transforms, and the phrase banks they draw from.

A transform is a pure function of (harness, rng, bank): same inputs, same output. It returns the
new harness and the SurfaceMapping that rewrites trajectories, or raises `Skip` with a reason
when it cannot preserve the task on this harness (e.g. no tool has parameters to rename) — never
a silently wrong gold.

Banks: `train` and `heldout` draw names, phrasings and styles from disjoint files under
resources/hsa/<bank>/ (one YAML file per dimension), so Harness-Variant QA measures
generalisation, not memorised augmentations.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from core.harness.models import Harness
from core.hsa.mapping import SurfaceMapping


class Dimension(StrEnum):
    SKILL_IDS = "skill_ids"
    SKILL_CONTENT = "skill_content"
    TOOL_SCHEMAS = "tool_schemas"
    PROMPT = "prompt"
    HOOKS = "hooks"


class BankName(StrEnum):
    TRAIN = "train"
    HELDOUT = "heldout"


class Skip(Exception):
    """The transform cannot preserve the task on this harness; the reason is recorded."""


@dataclass(frozen=True)
class Bank:
    """Phrase banks of one policy bank, by dimension file: bank.section("tools")["names"]."""

    name: BankName
    data: dict[str, dict[str, Any]]

    def section(self, dimension: str) -> dict[str, Any]:
        return self.data.get(dimension, {})

    def strings(self) -> set[str]:
        """Every string value in the bank. Mapping keys are left out: synonym tables are keyed
        by the original names they replace, which are not text the bank contributes."""
        out: set[str] = set()
        stack: list[Any] = list(self.data.values())
        while stack:
            value = stack.pop()
            if isinstance(value, str):
                out.add(value)
            elif isinstance(value, list):
                stack.extend(value)
            elif isinstance(value, dict):
                stack.extend(value.values())
        return out


def banks_root() -> Path:
    import resources

    return Path(resources.__file__).parent / "hsa"


@lru_cache(maxsize=4)
def load_bank(name: BankName | str, root: Path | None = None) -> Bank:
    bank = BankName(name)
    folder = (root or banks_root()) / bank.value
    data: dict[str, dict[str, Any]] = {}
    for file in sorted(folder.glob("*.yaml")):
        loaded = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{file}: expected a mapping of bank tables")
        data[file.stem] = loaded
    return Bank(bank, data)


TransformFn = Callable[[Harness, random.Random, Bank], tuple[Harness, SurfaceMapping]]


@dataclass(frozen=True, eq=False)
class Transform:
    """A registered transform. Compared by identity (each name is registered once), which keeps
    the policy's list operations cheap."""

    name: str
    dimension: Dimension
    fn: TransformFn
    doc: str = ""

    def __call__(
        self, harness: Harness, rng: random.Random, bank: Bank
    ) -> tuple[Harness, SurfaceMapping]:
        return self.fn(harness, rng, bank)


REGISTRY: dict[str, Transform] = {}


def transform(name: str, dimension: Dimension) -> Callable[[TransformFn], TransformFn]:
    """Register a transform function under `name` (decorator)."""

    def register(fn: TransformFn) -> TransformFn:
        if name in REGISTRY:
            raise ValueError(f"transform {name!r} registered twice")
        REGISTRY[name] = Transform(name, dimension, fn, (fn.__doc__ or "").strip())
        return fn

    return register


def transforms(dimension: Dimension | None = None) -> list[Transform]:
    """Registered transforms (all modules loaded), in a stable order."""
    import core.hsa.transforms  # noqa: F401  (registers every transform)

    return [t for _, t in sorted(REGISTRY.items()) if dimension is None or t.dimension is dimension]
