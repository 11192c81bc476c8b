"""Policies: which transforms a harness variant composes, deterministically from a seed.

A `Policy` names a bank (`train` or `heldout`: disjoint names, phrasings and styles), a
strength and the dimensions it may touch. `sample_variant(harness, policy, seed)` picks
transforms from the registry and applies them in a random order, composing their mappings into
one `MappingChain`:

- **light**: one or two transforms from any enabled dimension;
- **medium**: three or four transforms, spread across as many dimensions as possible (one per
  dimension first, then any);
- **heavy**: at least half of each enabled dimension's transforms (and at least one).

A transform that raises `Skip` on the harness it is given (e.g. no tool has parameters to
rename) is recorded with its reason in `Variant.skipped`, and a not-yet-used transform of the
same dimension (light and medium: of any dimension) takes its slot, so a strength means the
same amount of change on most harnesses. Dimensions with no registered transform are ignored.

Parameter renames, train bank: in `PARAM_RENAME_SHARE` of the seeds (half) a plan without a
parameter rename gets one (`tool_param_rename_random` / `_semantic`) at the head of one of its
slots, a tool_schemas slot where there is one, so the variant keeps its size and spread. Tool
parameters are renamed by name across the harness and nearly every gold passes `link_no`:
without this, ~12 % of train variants' gold calls carried a renamed parameter, and a model
learnt the original names by heart. The held-out bank draws as before.

Determinism: the selection draws from `random.Random("hsa:<bank>:<strength>:<dims>:<seed>")`
and each transform from its own `random.Random("<seed>:<transform name>")`, so the same
(harness, policy, seed) always gives the same variant, and leaving a transform out (augment
does, when it fails verification) does not change what the others draw.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property, lru_cache
from typing import Any

from core.harness.models import Harness
from core.hsa.mapping import MappingChain
from core.hsa.transform import (
    REGISTRY,
    Bank,
    BankName,
    Dimension,
    Skip,
    Transform,
    load_bank,
    transforms,
)

DIMENSION_ORDER = tuple(Dimension)


class Strength(StrEnum):
    LIGHT = "light"
    MEDIUM = "medium"
    HEAVY = "heavy"


@dataclass(frozen=True)
class Policy:
    bank: BankName = BankName.TRAIN
    strength: Strength = Strength.MEDIUM
    dimensions: frozenset[Dimension] = frozenset(Dimension)

    def __init__(
        self,
        bank: BankName | str = BankName.TRAIN,
        strength: Strength | str = Strength.MEDIUM,
        dimensions: Iterable[Dimension | str] | None = None,
    ) -> None:
        dims = frozenset(Dimension(d) for d in (dimensions if dimensions is not None else []))
        if dimensions is None:
            dims = frozenset(Dimension)
        if not dims:
            raise ValueError("a policy needs at least one dimension")
        object.__setattr__(self, "bank", BankName(bank))
        object.__setattr__(self, "strength", Strength(strength))
        object.__setattr__(self, "dimensions", dims)

    @property
    def label(self) -> str:
        dims = "" if self.dimensions == frozenset(Dimension) else ":" + ",".join(self._dims())
        return f"{self.bank.value}/{self.strength.value}{dims}"

    def _dims(self) -> list[str]:
        return [d.value for d in DIMENSION_ORDER if d in self.dimensions]

    def to_dict(self) -> dict[str, Any]:
        return {
            "bank": self.bank.value,
            "strength": self.strength.value,
            "dimensions": self._dims(),
        }

    def rng(self, seed: int) -> random.Random:
        return random.Random(f"{self._rng_prefix}{seed}")

    @cached_property
    def _rng_prefix(self) -> str:
        return f"hsa:{self.bank.value}:{self.strength.value}:{self._dims()}:"


@dataclass
class Variant:
    """A sampled harness variant: the harness, the chain that remaps trajectories onto it, and
    what was applied (in order) or skipped (with the reason)."""

    harness: Harness
    chain: MappingChain
    applied: list[str]
    skipped: list[tuple[str, str]]
    seed: int
    policy: Policy
    original: Harness
    stages: list[Harness] = field(default_factory=list, repr=False)
    """The harness after each applied transform (stages[i] is the output of applied[i])."""

    def stage_input(self, index: int) -> Harness:
        return self.original if index == 0 else self.stages[index - 1]

    def record(self) -> dict[str, Any]:
        """JSON-able provenance: policy, seed, transforms applied / skipped, the mapping chain."""
        return {
            "policy": self.policy.to_dict(),
            "seed": self.seed,
            "applied": list(self.applied),
            "skipped": [[name, reason] for name, reason in self.skipped],
            "chain": self.chain.model_dump(mode="json"),
        }


def transform_rng(seed: int, name: str) -> random.Random:
    return random.Random(f"{seed}:{name}")


def _pools(policy: Policy, exclude: frozenset[str]) -> dict[Dimension, list[Transform]]:
    return {d: list(ts) for d, ts in _cached_pools(policy, exclude, len(REGISTRY)).items()}


@lru_cache(maxsize=256)
def _cached_pools(
    policy: Policy, exclude: frozenset[str], registered: int
) -> dict[Dimension, tuple[Transform, ...]]:
    """The transforms each dimension of the policy may use (`registered`: the registry's size,
    so a transform registered later is seen)."""
    pools: dict[Dimension, list[Transform]] = {}
    for t in transforms():
        if t.dimension in policy.dimensions and t.name not in exclude:
            pools.setdefault(t.dimension, []).append(t)
    return {d: tuple(pools[d]) for d in DIMENSION_ORDER if d in pools}


def plan(policy: Policy, seed: int, exclude: Iterable[str] = ()) -> list[list[Transform]]:
    """Slots of the variant, in application order: each slot is a transform and its stand-ins
    (tried in order when the first skips)."""
    rng = policy.rng(seed)
    pools = _pools(policy, frozenset(exclude))
    shuffled = {d: rng.sample(p, len(p)) for d, p in pools.items()}
    everything = [t for d in DIMENSION_ORDER for t in shuffled.get(d, [])]
    if not everything:
        return []
    slots: list[list[Transform]] = []
    if policy.strength is Strength.HEAVY:
        for ts in shuffled.values():
            count = rng.randint(max(1, (len(ts) + 1) // 2), len(ts))
            for i in range(count):
                slots.append([ts[i], *ts[count:]])
    else:
        low, high = (1, 2) if policy.strength is Strength.LIGHT else (3, 4)
        count = min(rng.randint(low, high), len(everything))
        dims = rng.sample(list(shuffled), len(shuffled))
        picked: list[Transform] = []
        if policy.strength is Strength.MEDIUM:
            picked = [shuffled[d][0] for d in dims[:count]]
        rest = [t for t in rng.sample(everything, len(everything)) if t not in picked]
        picked += rest[: count - len(picked)]
        spare = [t for t in rest if t not in picked]
        for t in picked:
            same = [s for s in spare if s.dimension is t.dimension]
            slots.append([t, *same, *[s for s in spare if s not in same]])
    order = rng.sample(range(len(slots)), len(slots))
    return _param_renames_first(policy, seed, [slots[i] for i in order], pools)


PARAM_RENAMES = ("tool_param_rename_random", "tool_param_rename_semantic")
"""The transforms that rename tool parameters (dimension tool_schemas)."""

PARAM_RENAME_SHARE: dict[BankName, float] = {BankName.TRAIN: 0.5, BankName.HELDOUT: 0.0}
"""Per bank: the share of variants in which a parameter rename is put at the head of a slot
when the drawn plan has none (module doc). Train only: a model that sees a tool's parameters
under their original names in nearly every row learns the names by heart instead of reading
them from the schema. The held-out bank (Harness-Variant QA) keeps the plain draw, so its
variants and scores stay comparable with earlier reports."""


def _param_renames_first(
    policy: Policy, seed: int, slots: list[list[Transform]], pools: dict[Dimension, list[Transform]]
) -> list[list[Transform]]:
    """`slots` with a parameter rename at the head of one slot, in `PARAM_RENAME_SHARE` of the
    seeds; drawn from its own `random.Random("params:<policy prefix><seed>")` after the plan, so
    a seed whose coin says no (and every held-out seed) keeps exactly the plan it had. The slot
    taken is a tool_schemas one where there is one, else any one: a variant's size and the
    number of dimensions it touches stay as its strength says. The transform it replaces
    stays in the slot as a stand-in (a harness with no parameters to rename skips to it)."""
    share = PARAM_RENAME_SHARE.get(policy.bank, 0.0)
    renames = [t for t in pools.get(Dimension.TOOL_SCHEMAS, []) if t.name in PARAM_RENAMES]
    if share <= 0 or not renames or not slots:
        return slots
    rng = random.Random(f"params:{policy._rng_prefix}{seed}")
    if rng.random() >= share or any(slot[0] in renames for slot in slots):
        return slots
    first = rng.sample(renames, len(renames))
    same = [i for i, slot in enumerate(slots) if slot[0].dimension is Dimension.TOOL_SCHEMAS]
    index = rng.choice(same or list(range(len(slots))))
    out = list(slots)
    out[index] = [*first, *(t for t in slots[index] if t not in first)]
    return out


def sample_variant(
    harness: Harness,
    policy: Policy,
    seed: int,
    *,
    exclude: Iterable[str] = (),
    bank: Bank | None = None,
) -> Variant:
    """Compose the policy's transforms on `harness` (see the module doc). `exclude`: transform
    names to leave out (augment drops those that failed verification)."""
    bank = bank or load_bank(policy.bank)
    current = harness
    chain = MappingChain()
    applied: list[str] = []
    skipped: list[tuple[str, str]] = []
    stages: list[Harness] = []
    used: set[str] = set()
    for slot in plan(policy, seed, exclude):
        for candidate in slot:
            if candidate.name in used:
                continue
            used.add(candidate.name)
            try:
                out, mapping = candidate(current, transform_rng(seed, candidate.name), bank)
            except Skip as exc:
                skipped.append((candidate.name, str(exc) or "skipped"))
                continue
            chain = chain.then(mapping, current.settings.load_skill_tool)
            applied.append(candidate.name)
            stages.append(out)
            current = out
            break
    return Variant(
        harness=current,
        chain=chain,
        applied=applied,
        skipped=skipped,
        seed=seed,
        policy=policy,
        original=harness,
        stages=stages,
    )


def apply_transform(
    harness: Harness, name: str, seed: int, bank: Bank | BankName | str = BankName.TRAIN
) -> Variant:
    """One registered transform on `harness` as a Variant (light policy of that transform's
    dimension, for records); raises Skip like the transform does."""
    found = {t.name: t for t in transforms()}
    if name not in found:
        raise KeyError(f"unknown transform {name!r}; known: {', '.join(sorted(found))}")
    t = found[name]
    chosen = bank if isinstance(bank, Bank) else load_bank(bank)
    out, mapping = t(harness, transform_rng(seed, name), chosen)
    chain = MappingChain().then(mapping, harness.settings.load_skill_tool)
    policy = Policy(chosen.name, Strength.LIGHT, [t.dimension])
    return Variant(out, chain, [name], [], seed, policy, harness, [out])
