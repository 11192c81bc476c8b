"""The transform interface and the registry of transforms (the phrase banks they draw from
are `core.hsa.banks`; their names are re-exported here for the transforms' convenience).

A transform is a pure function of (harness, rng, bank): same inputs, same output. It returns the
new harness and the SurfaceMapping that rewrites trajectories, or raises `Skip` with a reason
when it cannot preserve the task on this harness (e.g. no tool has parameters to rename) — never
a silently wrong gold.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from core.harness.models import Harness
from core.hsa.banks import DOMAINS_KEY as DOMAINS_KEY
from core.hsa.banks import Bank as Bank
from core.hsa.banks import BankName as BankName
from core.hsa.banks import banks_root as banks_root
from core.hsa.banks import load_bank as load_bank
from core.hsa.banks import merge_tables as merge_tables
from core.hsa.dimensions import Dimension as Dimension
from core.hsa.mapping import SurfaceMapping


class Skip(Exception):
    """The transform cannot preserve the task on this harness; the reason is recorded."""


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
        """The transform on `harness`, drawing from `bank` as scoped to the harness's domain
        (`Bank.for_harness`): a harness outside the live room never sees live-room tables."""
        return self.fn(harness, rng, bank.for_harness(harness))


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
    import core.hsa.transforms  # noqa: F401  # cycle: the transform modules import this one

    return [t for _, t in sorted(REGISTRY.items()) if dimension is None or t.dimension is dimension]
