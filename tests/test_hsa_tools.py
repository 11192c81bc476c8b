"""HSA dimension 3 (tool schemas) and the binding_args integration of the simulator.

For every tool-schema transform and both banks, over a loop of seeds, the properties of
tests/test_hsa_skills.py (`check_transform`): valid variant, invertible mapping, remapped gold
valid against the variant's schemas and hooks and exactly invertible, no stale names,
deterministic and pure. Plus what is specific to tools: parameter renames keep the binding's
names through `binding_args`, changed defaults are passed explicitly by the remapped gold and
reach the binding unchanged, optional parameters are never required, distractor tools are
runnable in every LiveRoom; and the oracle, graders and `room_bindings` read a variant from
its `binding_args` alone, without translating anything twice.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.episode.gold import gold_trajectory
from core.harness.models import Harness, SkillKind
from core.hsa.augment import augment_variant
from core.hsa.mapping import MappingChain
from core.hsa.names import tagged_name
from core.hsa.policy import Policy
from core.hsa.references import used_names
from core.hsa.renames import Renames, apply_renames
from core.hsa.transform import BankName, Dimension, Skip, load_bank, transforms
from core.runtime.trajectory import AssistantTurn, ToolCall, Trajectory
from core.sim.graders import grade
from core.sim.oracle import task_harness
from core.sim.room import LiveRoom
from core.sim.surface import HarnessSurface
from tests.test_hsa_skills import (
    SEEDS,
    catalog,
    check_transform,
    demo,
    golds,
    my_transforms,
    rng_for,
    tasks,
)

TOOL_TRANSFORMS = [t.name for t in my_transforms(Dimension.TOOL_SCHEMAS)]


def by_name(name: str):  # type: ignore[no-untyped-def]
    return next(t for t in transforms() if t.name == name)


def test_registered_tool_transforms() -> None:
    assert {
        "tool_rename_semantic",
        "tool_rename_random",
        "tool_name_style",
        "tool_param_rename_semantic",
        "tool_param_rename_random",
        "tool_order",
        "tool_param_order",
        "tool_paraphrase_descriptions",
        "tool_optional_params",
        "tool_distractors",
        "tool_change_defaults",
    } <= set(TOOL_TRANSFORMS)


@pytest.mark.parametrize("bank", list(BankName))
@pytest.mark.parametrize("name", TOOL_TRANSFORMS)
def test_tool_transform_properties(name: str, bank: BankName, tmp_path: Path) -> None:
    applied = check_transform(by_name(name), bank, tmp_path)
    assert applied >= SEEDS * 0.9, f"{name} skipped {SEEDS - applied} of {SEEDS} seeds"


def test_param_renames_keep_binding_names_and_hooks() -> None:
    for name in ("tool_param_rename_semantic", "tool_param_rename_random"):
        for seed in range(20):
            out, mapping = by_name(name)(demo(), rng_for(name, seed), load_bank(BankName.TRAIN))
            assert mapping.params
            for tool_name, renames in mapping.params.items():
                tool = out.tool(mapping.tool(tool_name))
                assert tool is not None
                for old, new in renames.items():
                    assert tool.binding_args.get(new) == old  # demo names are canonical
                # every tool with the same old name got the same new name
            flat = {o: n for r in mapping.params.values() for o, n in r.items()}
            for tool in out.tools:
                assert not set(flat) & set(tool.parameters.get("properties", {}))
            hook = next(h for h in out.hooks if h.name == "link-number-range")
            props = set(hook.params["schema"]["properties"])
            assert props == {flat.get("link_no", "link_no"), flat.get("link_nos", "link_nos")}


def test_param_order_really_reorders() -> None:
    t = by_name("tool_param_order")
    orders = set()
    for seed in range(10):
        out, _ = t(demo(), random.Random(seed), load_bank(BankName.TRAIN))
        tool = out.tool("search_products")
        assert tool is not None
        orders.add(tuple(tool.parameters["properties"]))
        assert any(
            list(a.parameters["properties"]) != list(b.parameters["properties"])
            for a, b in zip(demo().tools, out.tools, strict=True)
        )
    assert len(orders) >= 3


def test_tool_renames_reach_matchers_and_skills() -> None:
    out, mapping = by_name("tool_rename_semantic")(
        demo(), rng_for("x", 3), load_bank(BankName.HELDOUT)
    )
    hook = next(h for h in out.hooks if h.name == "link-number-range")
    for old, new in mapping.tools.items():
        assert hook.matches(new) == next(h for h in demo().hooks if h.name == hook.name).matches(
            old
        )
        mentioned = [s for s in demo().skills if f"`{old}`" in s.body]
        for skill in mentioned:
            variant = next(s for s in out.skills if s.name == skill.name)
            assert f"`{new}`" in variant.body and f"`{old}`" not in variant.body


def test_tool_name_style_keeps_the_words() -> None:
    _, mapping = by_name("tool_name_style")(demo(), random.Random(0), load_bank(BankName.TRAIN))
    assert mapping.tools
    for old, new in mapping.tools.items():
        assert new.replace("-", "_").lower() == old.lower() or new.lower() == old.replace("_", "")


def test_changed_default_is_passed_explicitly_and_reaches_the_binding() -> None:
    t = by_name("tool_change_defaults")
    values = set()
    for seed in range(20):
        out, mapping = t(demo(), random.Random(seed), load_bank(BankName.HELDOUT))
        assert mapping.explicit_defaults == {"search_products": {"limit": 5}}
        tool = out.tool("search_products")
        assert tool is not None
        new = tool.parameters["properties"]["limit"]["default"]
        values.add(new)
        assert new != 5 and str(new) in tool.parameters["properties"]["limit"]["description"]
        chain = MappingChain().then(mapping, "load_skill")
        original = ToolCall(name="search_products", arguments={"query": "hoodie"})
        forward = chain.forward_call(original)
        assert forward.arguments == {"query": "hoodie", "limit": 5}
        assert chain.inverse_call(forward) == original
        before = demo().tool("search_products")
        assert before is not None
        assert tool.binding_arguments(forward.arguments) == before.binding_arguments(
            original.arguments
        )
        explicit = ToolCall(name="search_products", arguments={"query": "hoodie", "limit": 9})
        assert chain.forward_call(explicit) == explicit
    assert len(values) >= 3
    # a second change carries the new value into the description again, not a second note
    once, _ = t(demo(), random.Random(1), load_bank(BankName.TRAIN))
    twice, m2 = t(once, random.Random(2), load_bank(BankName.TRAIN))
    limit = (twice.tool("search_products") or once.tools[0]).parameters["properties"]["limit"]
    assert str(limit["default"]) in limit["description"]
    assert limit["description"].lower().count("default") == 1
    assert m2.explicit_defaults["search_products"]["limit"] != 5


LIMIT_CHOICES = st.sampled_from(["omit", "old", "other"])


@settings(max_examples=60, deadline=None)
@given(
    limits=st.lists(LIMIT_CHOICES, min_size=1, max_size=5),
    seeds=st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=3),
    renames=st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_inverse_is_exact_whatever_the_gold_passes_for_a_changed_default(
    limits: list[str], seeds: list[int], renames: list[bool]
) -> None:
    """A call that relies on the old default and one that passes it explicitly look the same
    after the forward mapping (both pass it); the remap records which defaults it filled in,
    so the inverse gives each back exactly, through chains of default changes and parameter
    renames. Every call still means the same to the binding."""
    harness, chain = demo(), MappingChain()
    change, rename = by_name("tool_change_defaults"), by_name("tool_param_rename_random")
    for i, seed in enumerate(seeds):
        steps = [change, rename] if renames[i] else [change]
        for transform in steps:
            out, mapping = transform(harness, random.Random(seed), load_bank(BankName.TRAIN))
            chain = chain.then(mapping, harness.settings.load_skill_tool)
            harness = out
    values = {"omit": None, "old": 5, "other": 9}
    calls = []
    for n, choice in enumerate(limits):
        args: dict[str, object] = {"query": f"item {n}"}
        if values[choice] is not None:
            args["limit"] = values[choice]
        calls.append(ToolCall(name="search_products", arguments=args))
    gold = Trajectory(viewer_message="any caps?", turns=[AssistantTurn(tool_calls=calls)])
    remapped, fills = chain.remap(gold)
    assert chain.inverse(remapped, fills) == gold
    assert len(fills) == sum(1 for c in limits if c == "omit") or len(seeds) > 1
    before = demo().tool("search_products")
    after = harness.tool(chain.tool("search_products"))
    assert before is not None and after is not None
    for old, new in zip(calls, remapped.turns[0].tool_calls, strict=True):
        assert after.binding_arguments(new.arguments) == before.binding_arguments(old.arguments)


def test_augment_keeps_a_default_change_when_the_gold_passes_the_old_default() -> None:
    """Regression: augment used to drop tool_change_defaults (its inverse check failed) for a
    gold that passes the old default explicitly; now the remap's fills make it exact."""
    reply_skill = next(s.name for s in demo().skills if s.kind is SkillKind.REPLY)
    gold = Trajectory(
        viewer_message="any caps under 20?",
        turns=[
            AssistantTurn(
                tool_calls=[ToolCall(name="load_skill", arguments={"name": reply_skill})]
            ),
            AssistantTurn(
                tool_calls=[
                    ToolCall(name="search_products", arguments={"query": "cap", "limit": 5}),
                    ToolCall(name="search_products", arguments={"query": "hat"}),
                ]
            ),
            AssistantTurn(content="We have a few caps, take a look at the list."),
        ],
    )
    policy = Policy("train", "light", ["tool_schemas"])
    applied = 0
    for seed in range(40):
        out = augment_variant(demo(), gold, policy, seed)
        assert "tool_change_defaults" not in [name for name, _ in out.dropped], out.dropped
        assert out.inverse() == gold
        applied += "tool_change_defaults" in out.variant.applied
    assert applied >= 1


def test_optional_params_are_optional_and_default_free() -> None:
    t = by_name("tool_optional_params")
    for seed in range(20):
        out, mapping = t(demo(), random.Random(seed), load_bank(BankName.TRAIN))
        assert mapping.is_identity
        for before, after in zip(demo().tools, out.tools, strict=True):
            added = set(after.parameters["properties"]) - set(before.parameters["properties"])
            assert after.parameters.get("required", []) == before.parameters.get("required", [])
            for name in added:
                assert "default" not in after.parameters["properties"][name]
                assert after.binding_arguments({}) == before.binding_arguments({})


def test_distractor_tools_run_in_every_room() -> None:
    t = by_name("tool_distractors")
    room = LiveRoom.for_task(tasks()[0], catalog())
    bindings = set(room.bindings())
    for seed in range(20):
        out, _ = t(demo(), random.Random(seed), load_bank(BankName.HELDOUT))
        added = [x for x in out.tools if demo().tool(x.name) is None]
        assert 1 <= len(added) <= 3
        assert all(x.binding in bindings and x.binding.startswith("sim.distractor.") for x in added)


def test_parameter_renames_skip_without_parameters() -> None:
    h = demo().model_copy(deep=True)
    h.tools = [t for t in h.tools if not t.parameters.get("properties")]
    h.hooks = [x for x in h.hooks if x.name != "link-number-range"]
    for name in ("tool_param_rename_semantic", "tool_param_rename_random", "tool_param_order"):
        with pytest.raises(Skip, match=r"\w"):
            by_name(name)(h, random.Random(0), load_bank(BankName.TRAIN))
    with pytest.raises(Skip, match="default"):
        by_name("tool_change_defaults")(h, random.Random(0), load_bank(BankName.TRAIN))


# ----------------------------------------------------------------------------- binding_args


def swapped() -> Harness:
    """check_stock's `size` and `color` swapped (the binding still gets its own names), every
    `link_no` renamed, and a tool renamed: only `binding_args` says what is what."""
    h = demo()
    params = {
        t.name: {
            **({"size": "color", "color": "size"} if t.name == "check_stock" else {}),
            **({"link_no": "item_ref"} if "link_no" in t.parameters["properties"] else {}),
        }
        for t in h.tools
    }
    params = {k: v for k, v in params.items() if v}
    return apply_renames(h, Renames(tools={"check_stock": "inventory"}, params=params))


def test_surface_reads_parameter_names_from_binding_args() -> None:
    h = swapped()
    surface = HarnessSurface(h)
    assert surface.tool_name("sim.check_stock") == "inventory"
    assert surface.param("sim.check_stock", "size") == "color"
    assert surface.param("sim.get_product_by_link", "link_no") == "item_ref"
    args = {"link_no": 4, "size": "M", "color": "black"}
    current = surface.to_current("sim.check_stock", args)
    assert current == {"item_ref": 4, "color": "M", "size": "black"}
    assert surface.to_canonical("sim.check_stock", current) == args
    received = (h.tool("inventory") or h.tools[0]).binding_arguments(current)
    assert received == args
    assert surface.received_to_canonical("sim.check_stock", received, "inventory") == args
    explicit = HarnessSurface.from_original(
        h,
        demo(),
        skill_name=lambda n: n,
        param_name=lambda t, p: surface.param((demo().tool(t) or demo().tools[0]).binding, p),
    )
    assert explicit.current_names == surface.current_names


def test_oracle_and_graders_on_a_swapped_variant() -> None:
    """Full marks with no mapping, and with explicit param_names that repeat what binding_args
    say (room_bindings must not translate a second time: size and color are swapped)."""
    h = swapped()
    names = HarnessSurface(h).current_names
    stock_tasks = [
        t
        for t, g in zip(tasks(), golds(), strict=False)
        if any(
            c.name == "check_stock" and ({"size", "color"} & set(c.arguments))
            for turn in g.turns
            for c in turn.tool_calls
        )
    ]
    assert stock_tasks

    async def run() -> list[str]:
        failures = []
        for task in tasks():
            for mapping in ({}, {"param_names": names}):
                trace = await gold_trajectory(task, h, catalog(), **mapping)  # type: ignore[arg-type]
                grades = grade(task, trace, task_harness(task, h), catalog(), **mapping)  # type: ignore[arg-type]
                if not grades.full_marks:
                    failures.append(f"{task.id} {bool(mapping)}: {grades.scores()}")
        return failures

    assert asyncio.run(run()) == []


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32), prefix=st.sampled_from(["zqv", "kx", "Tool"]))
def test_tagged_names_are_fresh_and_recorded(seed: int, prefix: str) -> None:
    """The opaque names of the random renames: `<prefix>_<hex>`, never a name the harness
    uses (in any case), recorded so the next draw cannot repeat it; None when every draw is
    refused."""
    harness = demo()
    used = used_names(harness)
    first = tagged_name(random.Random(seed), prefix, "_", used, digits=3)
    assert first is not None and first.startswith(prefix + "_")
    assert len(first) == len(prefix) + 4 and set(first[-3:]) <= set("0123456789abcdef")
    assert first.upper() in used and first not in used_names(harness)
    again = tagged_name(random.Random(seed), prefix, "_", used, digits=3)  # same draws
    assert again != first and (again is None or again in used)
    refused = tagged_name(random.Random(seed), prefix, "_", used, valid=lambda _: False)
    assert refused is None
