"""`augment`: a harness variant and the gold trajectory remapped onto it, verified.

    harness2, gold2 = augment(harness, gold, Policy("train", "medium"), seed=7)

Steps:

1. **Bad input** is refused with `AugmentError` (its `problems` say why): a trajectory that
   calls a tool or loads a skill the harness does not have, or holds output whose tool calls
   could not be parsed (its raw text would keep the old names). Remapping such a trajectory
   could only produce a silently wrong gold.
2. A variant is sampled (`sample_variant`) and the trajectory remapped through its chain.
3. **Verification** (core/hsa/verify.py): the inverse gives the original exactly; the variant
   makes the same decision on every output as the original did (calls run, skills load,
   replies accepted or blocked alike: schemas, `validate_tool_args`, `require_reply_skill`,
   `forbidden_claims`, `reply_format`); the retry budget covers the trajectory's hook blocks
   (and, for a trajectory that did not end in an accepted reply, budget and turn limit are
   unchanged); hooks that blocked it are still on.
4. A transform whose remap fails verification is **dropped** — the culprit is found by
   checking the chain one transform at a time — and the variant re-sampled without it; the
   reason is kept in `Augmented.dropped`. The result is never a gold the checks reject.

Pass the `Trace` instead of its trajectory when you have it: its hook steps say exactly which
hooks blocked and how many blocks the budget must cover (a bare trajectory shows blocked
replies but not blocked tool calls, nor which check blocked them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from core.harness.models import Harness, HookEvent, HookKind
from core.hsa.mapping import Fill, MappingChain, Remapped
from core.hsa.policy import Policy, Variant, sample_variant
from core.hsa.transform import Bank, transforms
from core.hsa.verify import (
    Decision,
    Reference,
    blocks_needed,
    compare,
    decisions,
    ends_accepted,
    input_problems,
    inverse_problem,
)
from core.runtime.trace import Decision as HookDecision
from core.runtime.trace import HookStep, Trace
from core.runtime.trajectory import Trajectory


class AugmentError(ValueError):
    """The trajectory cannot be remapped onto any variant of this harness (bad input)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("cannot augment: " + "; ".join(problems))


@dataclass
class Augmented:
    variant: Variant
    trajectory: Trajectory
    dropped: list[tuple[str, str]] = field(default_factory=list)
    """Transforms left out because their remap failed verification, with the reason."""
    fills: tuple[Fill, ...] = ()
    """Old defaults the remap passed explicitly (turn, call, step, parameter): with them,
    `variant.chain.inverse(trajectory, fills)` gives the original trajectory exactly."""

    @property
    def harness(self) -> Harness:
        return self.variant.harness

    def inverse(self) -> Trajectory:
        """The original trajectory, exactly (mapped back with the recorded fills)."""
        return self.variant.chain.inverse(self.trajectory, self.fills)

    def record(self) -> dict[str, Any]:
        out = self.variant.record()
        out["dropped"] = [[name, reason] for name, reason in self.dropped]
        out["fills"] = [list(fill) for fill in self.fills]
        return out


@dataclass(frozen=True)
class _Requirements:
    """What any variant must satisfy for this trajectory, computed once from the original."""

    original: Harness
    trajectory: Trajectory
    decisions: list[Decision]
    blocks: int
    accepted_end: bool
    blocked_hooks: frozenset[str]
    hidden_reply_blocks: bool

    @property
    def reference(self) -> Reference:
        return Reference(self.original, self.trajectory, self.decisions)


def _requirements(
    harness: Harness, trajectory: Trajectory, trace: Trace | None, base: list[Decision]
) -> _Requirements:
    blocks = blocks_needed(trajectory, base)
    blocked_hooks: frozenset[str] = frozenset()
    if trace is not None:
        blocks = max(blocks, trace.counts.hook_blocks)
        blocked_hooks = frozenset(
            s.hook for s in trace.steps_of(HookStep) if s.decision is HookDecision.BLOCK
        )
    replies = [d for d in base if d.where.endswith("reply")]
    # A reply that was asked again although no static check blocks it: a fact_check or python
    # hook did. Without a trace we cannot tell which, so all of them must stay on.
    hidden = any(d.what == "accepted" for d in replies[:-1])
    return _Requirements(
        original=harness,
        trajectory=trajectory,
        decisions=base,
        blocks=blocks,
        accepted_end=ends_accepted(trajectory, base),
        blocked_hooks=blocked_hooks,
        hidden_reply_blocks=hidden and trace is None,
    )


def _dynamic_reply_hooks(harness: Harness) -> set[str]:
    return {
        h.name
        for h in harness.active_hooks
        if h.event is HookEvent.BEFORE_REPLY and h.kind in (HookKind.FACT_CHECK, HookKind.PYTHON)
    }


def check(
    req: _Requirements,
    harness: Harness,
    chain: MappingChain,
    source: Trajectory,
    remapped: Remapped,
) -> str | None:
    """Why `remapped` (= chain.remap(source)) is not a valid gold under `harness`, or None."""
    problem = inverse_problem(chain, source, remapped.trajectory, remapped.fills)
    if problem is not None:
        return problem
    problem = compare(req.decisions, decisions(harness, remapped.trajectory, req.reference))
    if problem is not None:
        return problem
    return _limits_problem(req, harness, remapped.trajectory)


def _limits_problem(req: _Requirements, harness: Harness, remapped: Trajectory) -> str | None:
    """Budget, turn limit and the hooks the trajectory needs on (the part of `check` that
    does not compare decisions)."""
    settings, before = harness.settings, req.original.settings
    if settings.retry_budget < req.blocks:
        return (
            f"retry budget {settings.retry_budget} is below the {req.blocks} hook block(s) "
            "the trajectory spends"
        )
    if not req.accepted_end and (
        settings.retry_budget != before.retry_budget or settings.max_turns != before.max_turns
    ):
        return "the trajectory ends without an accepted reply, so its limits must not change"
    if settings.max_turns < len(remapped.turns):
        return f"max_turns {settings.max_turns} is below the trajectory's {len(remapped.turns)}"
    active = {h.name for h in harness.active_hooks}
    off = sorted(req.blocked_hooks - active)
    if off:
        return f"hook(s) {', '.join(off)} blocked the trajectory but are off in the variant"
    if req.hidden_reply_blocks:
        off = sorted(_dynamic_reply_hooks(req.original) - active)
        if off:
            return (
                f"a reply was blocked by a fact_check/python hook, and {', '.join(off)} "
                "is off in the variant"
            )
    return None


def forward(chain: MappingChain, trajectory: Trajectory) -> Remapped:
    """`chain.remap`, skipping the copies when every step is the identity."""
    if chain.is_identity:
        return Remapped(trajectory.model_copy(), ())
    return chain.remap(trajectory)


def _culprit(req: _Requirements, variant: Variant) -> tuple[str, str]:
    """The first transform of the chain whose own step fails verification."""
    source = req.trajectory
    for i, name in enumerate(variant.applied):
        step = MappingChain(steps=[variant.chain.steps[i]], loaders=[variant.chain.loaders[i]])
        remapped = forward(step, source)
        problem = check(req, variant.stages[i], step, source, remapped)
        if problem is not None:
            return name, problem
        source = remapped.trajectory
    # Every step passes alone but the chain does not: blame the last transform.
    chained = forward(variant.chain, req.trajectory)
    problem = check(req, variant.harness, variant.chain, req.trajectory, chained)
    return variant.applied[-1], problem or "the composed chain fails verification"


def prepare(harness: Harness, trajectory: Trajectory | Trace) -> _Requirements:
    """Check the input and compute what every variant must satisfy (once per trajectory);
    raises AugmentError on bad input."""
    trace = trajectory if isinstance(trajectory, Trace) else None
    gold = trajectory.trajectory if isinstance(trajectory, Trace) else trajectory
    base = decisions(harness, gold)
    problems = input_problems(base)
    if problems:
        raise AugmentError(problems)
    req = _requirements(harness, gold, trace, base)
    problem = _limits_problem(req, harness, gold)
    if problem is not None:
        raise AugmentError([f"the trajectory does not hold under its own harness: {problem}"])
    return req


def augment_prepared(
    req: _Requirements, policy: Policy, seed: int, *, bank: Bank | None = None
) -> Augmented:
    """One verified variant for a `prepare`d trajectory (module doc, steps 2-4); `bank`: the
    bank to draw from instead of the policy's shipped one (e.g. `core.hsa.banks.layer_bank`
    with a user bank)."""
    gold = req.trajectory
    dropped: list[tuple[str, str]] = []
    for _ in range(len(transforms()) + 1):
        excluded = [n for n, _ in dropped]
        variant = sample_variant(req.original, policy, seed, exclude=excluded, bank=bank)
        remapped = forward(variant.chain, gold)
        if check(req, variant.harness, variant.chain, gold, remapped) is None:
            return Augmented(variant, remapped.trajectory, dropped, remapped.fills)
        dropped.append(_culprit(req, variant))
    # Unreachable: with every transform dropped the variant is the original, which passes.
    raise AssertionError("every transform was dropped")  # pragma: no cover


def augment_variant(
    harness: Harness,
    trajectory: Trajectory | Trace,
    policy: Policy,
    seed: int,
    *,
    bank: Bank | None = None,
) -> Augmented:
    """`augment` with the variant, its record and the dropped transforms (module doc)."""
    return augment_prepared(prepare(harness, trajectory), policy, seed, bank=bank)


def augment_many(
    harness: Harness,
    trajectory: Trajectory | Trace,
    policy: Policy,
    seeds: Iterable[int],
    *,
    bank: Bank | None = None,
) -> Iterator[Augmented]:
    """Several variants of one trajectory (the data pipeline's N variants per task): the input
    is checked once. Each equals `augment_variant(harness, trajectory, policy, seed)`."""
    req = prepare(harness, trajectory)
    for seed in seeds:
        yield augment_prepared(req, policy, seed, bank=bank)


def augment(
    harness: Harness,
    trajectory: Trajectory | Trace,
    policy: Policy,
    seed: int,
    *,
    bank: Bank | None = None,
) -> tuple[Harness, Trajectory]:
    """(variant harness, remapped trajectory), verified; raises AugmentError on bad input."""
    out = augment_variant(harness, trajectory, policy, seed, bank=bank)
    return out.harness, out.trajectory
