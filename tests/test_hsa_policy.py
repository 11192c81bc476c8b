"""Policies and `augment`: composition by strength, determinism, skips, verification that
drops a transform rather than return a wrong gold, bad input, and the datagen sampler."""

from __future__ import annotations

import asyncio
import random
from functools import cache

import pytest

from core.datagen.variants import get_sampler
from core.episode.gold import gold_trajectory
from core.harness.demo import load_demo_harness
from core.harness.folder import export_folder, import_folder
from core.harness.models import Harness
from core.hsa import transform as registry
from core.hsa.augment import AugmentError, augment, augment_many, augment_variant
from core.hsa.mapping import SurfaceMapping
from core.hsa.policy import Policy, Strength, sample_variant
from core.hsa.transform import Bank, BankName, Dimension, Transform, transforms
from core.runtime.client import ScriptedClient
from core.runtime.loop import AgentLoop
from core.runtime.trace import HookStep, Trace
from core.runtime.trajectory import AssistantTurn, ToolCall, Trajectory
from core.sim.catalog import load_catalog
from core.sim.models import Catalog, Split, Task
from core.sim.oracle import room_bindings
from core.sim.room import LiveRoom
from core.sim.tasks import generate_tasks


@cache
def demo() -> Harness:
    return load_demo_harness()


@cache
def catalog() -> Catalog:
    return load_catalog()


@cache
def price_task() -> Task:
    return next(t for t in generate_tasks(Split.TEST, per_category=2) if t.category == "price")


@cache
def gold() -> Trace:
    return asyncio.run(gold_trajectory(price_task(), demo(), catalog()))


def dims_of(names: list[str]) -> set[Dimension]:
    found = {t.name: t.dimension for t in transforms()}
    return {found[n] for n in names}


# ----------------------------------------------------------------------------- policies


def test_same_seed_same_variant() -> None:
    for policy in (Policy("train", "heavy"), Policy("heldout", "medium")):
        a, b = sample_variant(demo(), policy, 11), sample_variant(demo(), policy, 11)
        assert a.harness == b.harness and a.applied == b.applied and a.chain == b.chain
        assert a.skipped == b.skipped
    c = sample_variant(demo(), Policy("train", "heavy"), 12)
    assert c.harness != sample_variant(demo(), Policy("train", "heavy"), 11).harness


def test_strengths() -> None:
    all_dims = {t.dimension for t in transforms()}
    for seed in range(60):
        light = sample_variant(demo(), Policy("train", "light"), seed)
        assert 1 <= len(light.applied) <= 2
        medium = sample_variant(demo(), Policy("train", "medium"), seed)
        assert 3 <= len(medium.applied) <= 4
        # medium spreads over dimensions: as many as it has transforms (up to all)
        assert len(dims_of(medium.applied)) >= min(3, len(all_dims))
        heavy = sample_variant(demo(), Policy("train", "heavy"), seed)
        assert dims_of(heavy.applied) == all_dims
        assert len(heavy.applied) >= len(medium.applied) - 1


def test_dimensions_limit_the_transforms() -> None:
    for seed in range(30):
        variant = sample_variant(demo(), Policy("heldout", "heavy", [Dimension.PROMPT]), seed)
        assert dims_of(variant.applied) == {Dimension.PROMPT}
        # prompt.variables may rewrite a skill's mention of the host, nothing else of skills
        assert [s.name for s in variant.harness.skills] == [s.name for s in demo().skills]
        assert variant.harness.tools == demo().tools
        assert variant.harness.hooks == demo().hooks


def test_policy_label_and_record() -> None:
    policy = Policy("train", "light", ["hooks"])
    assert policy.label == "train/light:hooks"
    assert Policy().label == "train/medium"
    variant = sample_variant(demo(), policy, 3)
    record = variant.record()
    assert record["policy"] == {"bank": "train", "strength": "light", "dimensions": ["hooks"]}
    assert record["applied"] == variant.applied and record["seed"] == 3
    with pytest.raises(ValueError):
        Policy("train", "light", [])
    with pytest.raises(ValueError):
        Policy("nope", "light")


def test_a_skip_is_recorded_and_the_chain_continues() -> None:
    """No non-critical hook: hooks.active skips with its reason, a stand-in takes its slot."""
    harness = demo().model_copy(
        update={"hooks": [h.model_copy(update={"task_critical": True}) for h in demo().hooks]}
    )
    seen = False
    for seed in range(40):
        variant = sample_variant(harness, Policy("train", "heavy", ["hooks"]), seed)
        assert "hooks.active" not in variant.applied
        if variant.skipped:
            seen = True
            assert variant.skipped == [
                ("hooks.active", "the harness has no enabled hook marked task_critical: false")
            ]
        assert variant.applied  # the chain went on
    assert seen


def test_variants_survive_export_and_import(tmp_path: object) -> None:
    """Every variant is a valid harness folder: export, import, equal."""
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    for seed in range(12):
        policy = Policy("train" if seed % 2 else "heldout", "heavy")
        variant = sample_variant(demo(), policy, seed)
        folder = tmp_path / f"v{seed}"
        export_folder(variant.harness, folder)
        assert import_folder(folder) == variant.harness


# ----------------------------------------------------------------------------- augment


def replay(task: Task, harness: Harness, trajectory: Trajectory) -> Trace:
    loop = AgentLoop(
        harness,
        ScriptedClient(trajectory.turns),
        room_bindings(LiveRoom.for_task(task, catalog())),
    )
    return asyncio.run(loop.run(task.viewer_message, request_id=task.id))


def test_augment_remaps_and_verifies() -> None:
    for seed in range(20):
        harness, remapped = augment(demo(), gold().trajectory, Policy("train", "heavy"), seed)
        trace = replay(price_task(), harness, remapped)
        assert trace.ok and not trace.counts.hook_blocks
    # a Trace is accepted too, and many variants of one trajectory equal single calls
    many = list(augment_many(demo(), gold(), Policy("heldout", "medium"), range(5)))
    for seed, item in enumerate(many):
        single = augment_variant(demo(), gold(), Policy("heldout", "medium"), seed)
        assert item.harness == single.harness and item.trajectory == single.trajectory


def _retry_gold(long_replies: int) -> Trajectory:
    """The price gold with `long_replies` over-long replies (blocked by the non-critical
    reply-length hook) before the accepted one: a hook-retry trajectory."""
    turns = list(gold().trajectory.turns)
    final = turns[-1]
    long_reply = AssistantTurn(content=" ".join([final.content] * 8))
    return gold().trajectory.model_copy(
        update={"turns": [*turns[:-1], *[long_reply] * long_replies, final]}
    )


def test_hook_retry_trajectory_keeps_the_hook_it_needs() -> None:
    """Switching the reply-length hook off would let the long reply through: augment drops
    hooks.active for this trajectory (with the reason) instead of returning a wrong gold."""
    trajectory = _retry_gold(1)
    original = replay(price_task(), demo(), trajectory)
    assert original.ok and original.counts.hook_blocks == 1
    dropped_seen = 0
    for seed in range(40):
        out = augment_variant(demo(), trajectory, Policy("train", "heavy", ["hooks"]), seed)
        assert "hooks.active" not in out.variant.applied
        reasons = dict(out.dropped)
        if "hooks.active" in reasons:
            dropped_seen += 1
            assert "blocked under the original, accepted" in reasons["hooks.active"]
        trace = replay(price_task(), out.harness, out.trajectory)
        assert trace.ok and trace.counts.hook_blocks == 1
        assert trace.trajectory.turns == out.trajectory.turns
    assert dropped_seen


def test_retry_budget_never_below_the_blocks() -> None:
    trajectory = _retry_gold(2)  # two blocks; the demo's budget is 2
    seen = 0
    for seed in range(60):
        out = augment_variant(demo(), trajectory, Policy("heldout", "light", ["hooks"]), seed)
        assert out.harness.settings.retry_budget >= 2
        reasons = dict(out.dropped)
        if "hooks.retry_budget" in reasons:
            seen += 1
            assert "below the 2 hook block(s)" in reasons["hooks.retry_budget"]
        trace = replay(price_task(), out.harness, out.trajectory)
        assert trace.ok and trace.counts.hook_blocks == 2
    assert seen


def test_trace_tells_which_hook_blocked() -> None:
    trajectory = _retry_gold(1)
    trace = replay(price_task(), demo(), trajectory)
    for seed in range(20):
        out = augment_variant(demo(), trace, Policy("train", "heavy", ["hooks"]), seed)
        assert "reply-length" in {h.name for h in out.harness.active_hooks}


def test_bad_input_is_refused_with_a_reason() -> None:
    base = gold().trajectory
    unknown_tool = base.model_copy(
        update={"turns": [AssistantTurn(tool_calls=[ToolCall(name="no_such_tool")]), *base.turns]}
    )
    with pytest.raises(AugmentError, match="no_such_tool"):
        augment(demo(), unknown_tool, Policy(), 0)
    unknown_skill = base.model_copy(
        update={
            "turns": [
                AssistantTurn(tool_calls=[ToolCall(name="load_skill", arguments={"name": "nope"})]),
                *base.turns,
            ]
        }
    )
    with pytest.raises(AugmentError, match="skill the harness lacks"):
        augment(demo(), unknown_skill, Policy(), 0)
    unparsed = base.model_copy(
        update={"turns": [AssistantTurn(content="<tool_call>{", parse_errors=["bad"]), *base.turns]}
    )
    with pytest.raises(AugmentError, match="unparseable"):
        augment(demo(), unparsed, Policy(), 0)


def test_a_wrong_transform_is_dropped_never_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    """A buggy transform that renames a tool but reports no rename: verification catches it on
    every seed where it is drawn, drops it with the reason, and the gold stays right."""

    def sneaky(harness: Harness, rng: random.Random, bank: Bank) -> tuple[Harness, SurfaceMapping]:
        tools = [
            t.model_copy(update={"name": t.name + "_x"}) if t.name == "get_product_by_link" else t
            for t in harness.tools
        ]
        return harness.model_copy(update={"tools": tools}), SurfaceMapping()

    monkeypatch.setitem(
        registry.REGISTRY, "zz.sneaky", Transform("zz.sneaky", Dimension.HOOKS, sneaky)
    )
    dropped = 0
    for seed in range(30):
        out = augment_variant(demo(), gold(), Policy("train", "heavy", ["hooks"]), seed)
        assert "zz.sneaky" not in out.variant.applied
        if "zz.sneaky" in dict(out.dropped):
            dropped += 1
            assert "unknown_tool" in dict(out.dropped)["zz.sneaky"]
        trace = replay(price_task(), out.harness, out.trajectory)
        assert trace.ok and not [s for s in trace.steps_of(HookStep) if s.decision != "allow"]
    assert dropped


# ----------------------------------------------------------------------------- datagen


def test_hsa_sampler_for_datagen() -> None:
    sampler = get_sampler("hsa")
    a, b = sampler(demo(), 5), sampler(demo(), 5)
    assert a.harness == b.harness and a.harness != demo()
    assert a.sampler == "hsa" and a.mapping["policy"]["bank"] == "train"
    assert a.mapping["applied"]
    held = get_sampler("hsa-heldout")(demo(), 5)
    assert held.mapping["policy"]["bank"] == "heldout"
    assert get_sampler("hsa-heavy")(demo(), 5).mapping["policy"]["strength"] == Strength.HEAVY


def test_registry_lists_every_bank() -> None:
    assert {b.value for b in BankName} == {"train", "heldout"}
