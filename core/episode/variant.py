"""A harness variant an episode plays under, with what the worlds need to read and rebuild it.

Data generation, HV-QA and the RL environment draw variants (core/datagen/variants.py holds
the samplers); the worlds (core/episode/world.py) play tasks under them. The variant lives
here, below both, because a world's gold run under a variant needs to know how the variant
was drawn (`policy` and `seed`): a task-file task has no oracle that reads any surface, so its
gold is the original gold run remapped through the variant's own HSA chain, re-drawn with the
same policy and seed (core/hsa/augment.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.harness.models import Harness

if TYPE_CHECKING:
    from core.hsa.policy import Policy


@dataclass(frozen=True)
class HarnessVariant:
    harness: Harness
    index: int = 0
    """0: the original harness; 1..K: sampled variants."""
    seed: int | None = None
    sampler: str = "original"
    skill_roles: dict[str, str] = field(default_factory=dict)
    param_names: dict[str, dict[str, str]] = field(default_factory=dict)
    param_values: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    mapping: dict[str, Any] = field(default_factory=dict)
    """The transform's own record (JSON-able), kept as provenance."""
    policy: Policy | None = None
    """The HSA policy the variant was drawn with (None: not an HSA variant, e.g. identity)."""
    original: Harness | None = None
    """The harness the variant was drawn from (None: `harness` is the original)."""

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "seed": self.seed, "sampler": self.sampler}
        if self.mapping:
            out["mapping"] = self.mapping
        return out
