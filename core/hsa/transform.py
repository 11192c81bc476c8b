"""The transform interface, the registry of transforms, and the phrase banks they draw from.

A transform is a pure function of (harness, rng, bank): same inputs, same output. It returns the
new harness and the SurfaceMapping that rewrites trajectories, or raises `Skip` with a reason
when it cannot preserve the task on this harness (e.g. no tool has parameters to rename) — never
a silently wrong gold.

Banks: `train` and `heldout` draw names, phrasings and styles from disjoint files under
resources/hsa/<bank>/ (one YAML file per dimension), so Harness-Variant QA measures
generalisation, not memorised augmentations. Tables are neutral (any harness) or scoped to a
domain (`domains:` in a file; core/hsa/domain.py decides a harness's domain); a user bank
folder can be layered over a shipped bank or replace it (`core.hsa.banks.layer_bank`). The
format is documented in docs/hsa-banks.md.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.harness.models import Harness
from core.hsa.dimensions import Dimension as Dimension
from core.hsa.mapping import SurfaceMapping


class BankName(StrEnum):
    TRAIN = "train"
    HELDOUT = "heldout"


class Skip(Exception):
    """The transform cannot preserve the task on this harness; the reason is recorded."""


DOMAINS_KEY = "domains"
"""Top-level key of a bank file holding tables that apply to one domain only (see
`core.hsa.domain`): `domains: {live-room: {<table>: ...}}`."""


def merge_tables(base: Any, over: Any) -> Any:
    """`over` layered on `base`: mappings merged key by key (recursively), lists extended
    with the items `base` lacks, anything else replaced by `over`."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = merge_tables(base[key], value) if key in base else value
        return out
    if isinstance(base, list) and isinstance(over, list):
        return [*base, *(v for v in over if v not in base)]
    return over


@dataclass(frozen=True)
class Bank:
    """Phrase banks of one policy bank, by dimension file: bank.section("tools")["names"].

    `data` holds each file as written: neutral tables at the top level (they apply to every
    harness) and domain tables under `domains: {<domain>: {...}}`. A bank with `domain=None`
    is unscoped: `section` merges every domain's tables in (what tests and tools that list
    the bank see). `for_harness(harness)` scopes it to the harness's domain
    (`core.hsa.domain.harness_domain`): neutral tables plus that domain's tables, nothing
    else; every registered transform is called with the scoped bank. `sources` names the
    folders the tables came from (shipped, then user layers), for Skip reasons."""

    name: BankName
    data: dict[str, dict[str, Any]]
    domain: str | None = None
    sources: tuple[str, ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def section(self, dimension: str) -> dict[str, Any]:
        key = f"section:{dimension}"
        if key not in self._cache:
            raw = self.data.get(dimension, {})
            out = {k: v for k, v in raw.items() if k != DOMAINS_KEY}
            domains = raw.get(DOMAINS_KEY) or {}
            if isinstance(domains, dict):
                for name, tables in domains.items():
                    if (self.domain is None or name == self.domain) and isinstance(tables, dict):
                        out = merge_tables(out, tables)
            self._cache[key] = out
        section: dict[str, Any] = self._cache[key]
        return section

    def domains(self) -> set[str]:
        """The domains some file of the bank has tables for."""
        out: set[str] = set()
        for raw in self.data.values():
            found = raw.get(DOMAINS_KEY)
            if isinstance(found, dict):
                out.update(str(d) for d in found)
        return out

    def scoped(self, domain: str) -> Bank:
        """The bank as a harness of `domain` sees it (neutral tables + `domain`'s)."""
        if self.domain == domain:
            return self
        key = f"scoped:{domain}"
        if key not in self._cache:
            self._cache[key] = Bank(self.name, self.data, domain, self.sources)
        scoped: Bank = self._cache[key]
        return scoped

    def for_harness(self, harness: Harness) -> Bank:
        """`scoped` to the domain of `harness` (an already scoped bank is kept as it is)."""
        if self.domain is not None:
            return self
        from core.hsa.domain import harness_domain

        return self.scoped(harness_domain(harness))

    def label(self) -> str:
        """How Skip reasons name this bank: `train` or `train + /my/banks`."""
        return " + ".join([self.name.value, *self.sources[1:]])

    def strings(self) -> set[str]:
        """Every string value in the bank. Mapping keys are left out: synonym tables are keyed
        by the original names they replace, which are not text the bank contributes."""
        return _strings(list(self.data.values()))

    def domain_strings(self, domain: str) -> set[str]:
        """String values of the tables only harnesses of `domain` see, minus those a neutral
        table also has: what must never show up in a harness of another domain."""
        neutral = _strings(
            [{k: v for k, v in raw.items() if k != DOMAINS_KEY} for raw in self.data.values()]
        )
        scoped = _strings(
            [
                (raw.get(DOMAINS_KEY) or {}).get(domain, {})
                for raw in self.data.values()
                if isinstance(raw.get(DOMAINS_KEY), dict)
            ]
        )
        return scoped - neutral


def _strings(values: list[Any]) -> set[str]:
    out: set[str] = set()
    stack: list[Any] = list(values)
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
    """The policy bank `name` from `root` (default: the shipped banks, resources/hsa/), each
    `<dimension>.yaml` of `root/<name>/` validated (`core.hsa.banks`; BankError names the
    file and the table)."""
    from core.hsa.banks import read_bank_folder

    bank = BankName(name)
    folder = (root or banks_root()) / bank.value
    return Bank(bank, read_bank_folder(folder), None, (str(folder),))


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
    import core.hsa.transforms  # noqa: F401  (registers every transform)

    return [t for _, t in sorted(REGISTRY.items()) if dimension is None or t.dimension is dimension]
