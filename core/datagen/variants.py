"""Harness variants for data generation: the hook point for Harness-State Augmentation (HSA).

A job runs each task under the original harness (variant 0) and `K` sampled variants. A
`VariantSampler` is `sampler(harness, seed) -> HarnessVariant`: the variant harness plus what
the oracle and graders need to read it (`skill_roles`, `param_names`, `param_values`, see
core/sim/surface.py) and the transform's JSON-able `mapping`, stored with each row.

Variant seeds are derived from (job seed, task id, variant index) by `variant_seed`, so a task
gets the same variants in every run and a resumed job regenerates exactly what is missing.

Samplers: `hsa` (the default) draws a real Harness-State Augmentation variant from the
**train** bank at medium strength (core/hsa/policy.py) — HSA-SFT data is the original harness
plus K train-bank variants of every task (DESIGN §1, issue 4); `hsa-light` and `hsa-heavy`
the same at the other strengths, and `hsa-heldout` from the held-out bank (for
Harness-Variant QA evaluation data, never for training); `identity` returns the original
harness and records the seed (rows that differ from the original only in their provenance:
the fixed-harness baseline with more samples). HSA variants need no mapping for the oracle and
graders: renamed parameters travel in `Tool.binding_args` and renamed skills carry their role
in `metadata.role` (core/sim/surface.py); the variant's record (policy, seed, transforms
applied and skipped, the mapping chain) is stored as the row's `mapping`. `DEFAULT_SAMPLER`
is the default of `variants_for` (so of `GenerateConfig`) and of `hat data generate
--sampler`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from core.episode.variant import HarnessVariant
from core.harness.models import Harness
from core.hsa.policy import Policy, sample_variant

__all__ = ["HarnessVariant", "VariantSampler"]


VariantSampler = Callable[[Harness, int], HarnessVariant]


def identity_sampler(harness: Harness, seed: int) -> HarnessVariant:
    """The original harness, labelled with the seed it was asked for (a fixed-harness
    baseline with K samples per task)."""
    return HarnessVariant(harness=harness, seed=seed, sampler="identity")


def hsa_sampler(
    bank: str = "train", strength: str = "medium", *, name: str = "hsa"
) -> VariantSampler:
    """A sampler of HSA variants (`core.hsa.policy.sample_variant`) for one policy."""

    def sample(harness: Harness, seed: int) -> HarnessVariant:

        policy = Policy(bank, strength)
        variant = sample_variant(harness, policy, seed)
        return HarnessVariant(
            harness=variant.harness,
            seed=seed,
            sampler=name,
            mapping=variant.record(),
            policy=policy,
            original=harness,
        )

    return sample


SAMPLERS: dict[str, VariantSampler] = {
    "identity": identity_sampler,
    "hsa": hsa_sampler(),
    "hsa-light": hsa_sampler(strength="light", name="hsa-light"),
    "hsa-heavy": hsa_sampler(strength="heavy", name="hsa-heavy"),
    "hsa-heldout": hsa_sampler(bank="heldout", name="hsa-heldout"),
}


DEFAULT_SAMPLER = "hsa"
"""HSA-SFT data: the original harness and K train-bank variants of each task."""


def register_sampler(name: str, sampler: VariantSampler) -> None:
    SAMPLERS[name] = sampler


def get_sampler(name: str) -> VariantSampler:
    try:
        return SAMPLERS[name]
    except KeyError:
        known = ", ".join(sorted(SAMPLERS))
        raise ValueError(f"unknown variant sampler {name!r}; known: {known}") from None


def variant_seed(job_seed: int, task_id: str, index: int) -> int:
    """A stable 31-bit seed for variant `index` of `task_id` in a job seeded `job_seed`."""
    digest = hashlib.sha256(f"{job_seed}:{task_id}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def variants_for(
    harness: Harness,
    task_id: str,
    count: int,
    *,
    job_seed: int = 0,
    sampler: VariantSampler | None = None,
    sampler_name: str | None = None,
) -> list[HarnessVariant]:
    """The original (index 0) and `count` sampled variants of `harness` for one task (by
    default from the `DEFAULT_SAMPLER`)."""
    pick = sampler or SAMPLERS[DEFAULT_SAMPLER]
    out = [HarnessVariant(harness=harness)]
    for index in range(1, count + 1):
        seed = variant_seed(job_seed, task_id, index)
        variant = pick(harness, seed)
        label = sampler_name or variant.sampler
        out.append(
            HarnessVariant(
                harness=variant.harness,
                index=index,
                seed=seed,
                sampler=label,
                skill_roles=dict(variant.skill_roles),
                param_names={k: dict(v) for k, v in variant.param_names.items()},
                param_values={
                    b: {p: dict(vals) for p, vals in m.items()}
                    for b, m in variant.param_values.items()
                },
                mapping=dict(variant.mapping),
                policy=variant.policy,
                original=variant.original,
            )
        )
    return out
