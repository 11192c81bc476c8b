"""HSA dimensions 1-2 (skill identifiers, skill content), the text helpers, the banks, and the
oracle on variant harnesses.

For every transform of these dimensions and both banks, over a loop of seeds: the variant
validates (cross_check clean; folder export/import round-trips on a sample), the mapping is
invertible, the demo oracle's gold trajectories remapped forward validate against the
variant (schemas, skills, before_tool hooks) and map back exactly, no stale reference to a
renamed name is left in the variant's folder text, the transform is deterministic and pure,
and it skips (with a reason) on a harness it has nothing to do on. The policy engineer's
tests/test_hsa_invariants.py runs the 1,000-seed replay and grading checks over every
registered transform; this file is the fast, dimension-specific layer.

Helpers here are reused by tests/test_hsa_tools.py.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from core.episode.gold import gold_trajectory
from core.harness.checks import cross_check
from core.harness.demo import load_demo_harness
from core.harness.folder import export_folder, folder_files, import_folder
from core.harness.models import SKILL_NAME_RE, TOOL_NAME_RE, Harness, HookEvent, HookKind
from core.harness.schema import argument_errors
from core.hsa.mapping import MappingChain, SurfaceMapping
from core.hsa.markdown_lists import list_blocks
from core.hsa.phrases import replace_phrases
from core.hsa.references import ROLE_KEY, Renamer, is_identifier_like, stale_references
from core.hsa.renames import Renames, apply_renames
from core.hsa.transform import Bank, BankName, Dimension, Skip, Transform, load_bank, transforms
from core.hsa.transforms.common import rename_or_skip
from core.runtime.hooks import HookInput, check_declarative, hooks_for
from core.runtime.trajectory import AssistantTurn, ToolCall, Trajectory
from core.sim.catalog import load_catalog
from core.sim.graders import grade
from core.sim.models import Catalog, Split, Task
from core.sim.oracle import task_harness
from core.sim.surface import ROLES
from core.sim.tasks import generate_tasks

SEEDS = 40
"""Seeds per (transform, bank) here; the invariant suite runs 1,000."""
MY_DIMENSIONS = (Dimension.SKILL_IDS, Dimension.SKILL_CONTENT, Dimension.TOOL_SCHEMAS)
MY_SECTIONS = ("skills", "tools")


# ----------------------------------------------------------------------------- shared helpers


@cache
def demo() -> Harness:
    return load_demo_harness()


@cache
def catalog() -> Catalog:
    return load_catalog()


@cache
def tasks() -> tuple[Task, ...]:
    return tuple(generate_tasks(Split.TEST, per_category=2, catalog=catalog()))


@cache
def golds() -> tuple[Trajectory, ...]:
    """The oracle's gold under the demo harness for every test task (all 12 categories), plus
    a hand-written search turn (no task searches) that relies on the `limit` default in one
    call and passes it explicitly in another."""

    async def run() -> list[Trajectory]:
        return [(await gold_trajectory(t, demo(), catalog())).trajectory for t in tasks()]

    out = asyncio.run(run())
    search = AssistantTurn(
        tool_calls=[
            ToolCall(name="search_products", arguments={"query": "black hoodie"}),
            ToolCall(
                name="search_products",
                arguments={"query": "earbuds", "category": "electronics", "max_price": 80},
            ),
            # passes the default explicitly: the inverse must keep it (see Fill)
            ToolCall(name="search_products", arguments={"query": "cap", "limit": 5}),
        ]
    )
    out.append(Trajectory(viewer_message="any black hoodies?", turns=[search]))
    return tuple(out)


def my_transforms(*dimensions: Dimension) -> list[Transform]:
    return [t for t in transforms() if t.dimension in (dimensions or MY_DIMENSIONS)]


def rng_for(name: str, seed: int) -> random.Random:
    return random.Random(f"{name}:{seed}")


def old_names(mapping: SurfaceMapping) -> dict[str, str]:
    """Every name the mapping renamed away: old -> new."""
    names = {**mapping.tools, **mapping.skills}
    for params in mapping.params.values():
        names.update(params)
    if mapping.load_skill_tool is not None:
        names[mapping.load_skill_tool[0]] = mapping.load_skill_tool[1]
    return {o: n for o, n in names.items() if o != n}


def model_text(harness: Harness) -> str:
    """The variant's folder text without what keeps canonical names on purpose and the model
    never sees: the harness description, tool bindings and binding_args (x-hat) and skill
    metadata (role stamps)."""
    parts = []
    for path, text in folder_files(harness.model_copy(update={"description": ""})).items():
        if path.startswith("tools/"):
            data = json.loads(text)
            data.pop("x-hat", None)
            text = json.dumps(data, indent=2)
        elif path.endswith("SKILL.md"):
            text = re.sub(r"\nmetadata:\n(?:  .*\n)+", "\n", text)
        parts.append(text)
    return "\n".join(parts)


def call_problems(harness: Harness, call: ToolCall) -> list[str]:
    """Why `call` would not run under `harness`: unknown tool or skill, schema errors, a
    before_tool validate_tool_args hook that blocks."""
    loader = harness.settings.load_skill_tool
    if call.name == loader:
        name = call.arguments.get("name")
        return [] if isinstance(name, str) and harness.skill(name) else [f"no skill {name!r}"]
    tool = harness.tool(call.name)
    if tool is None:
        return [f"no tool {call.name!r}"]
    problems = argument_errors(tool.parameters, call.arguments)
    for hook in hooks_for(harness, HookEvent.BEFORE_TOOL, call.name):
        if hook.kind is HookKind.VALIDATE_TOOL_ARGS:
            data = HookInput(
                HookEvent.BEFORE_TOOL, "t", "", tool=call.name, arguments=call.arguments
            )
            result = check_declarative(hook, data, harness)
            if result.blocks:
                problems.append(f"hook {hook.name}: {result.reason}")
    return [f"{call.name}: {p}" for p in problems]


def variant_problems(before: Harness, after: Harness, mapping: SurfaceMapping) -> list[str]:
    """Everything that must hold for one (variant, mapping), except folder round trips."""
    problems = [f"cross_check: {p}" for p in cross_check(after)]
    mapping.inverse()  # raises MappingError when two names map to one
    renamed = old_names(mapping)
    problems += [f"stale: {s}" for s in stale_references(after, renamed)]
    problems += [f"stale in folder text: {n}" for n in Renamer(renamed).find(model_text(after))]
    chain = MappingChain().then(mapping, before.settings.load_skill_tool)
    for gold in golds():
        forward, fills = chain.remap(gold)
        if chain.inverse(forward, fills) != gold:
            problems.append(f"inverse differs for {gold.viewer_message!r}")
        for turn in forward.turns:
            for call in turn.tool_calls:
                problems += call_problems(after, call)
    for skill in after.skills:
        new = before.skill(skill.name) is None
        if new and ROLE_KEY not in skill.metadata and "distractor" not in skill.metadata:
            problems.append(f"renamed skill {skill.name!r} has no role stamp")
    return problems


def check_transform(transform: Transform, bank_name: BankName, tmp_path: Path) -> int:
    """Run `transform` over SEEDS seeds of one bank on the demo; assert every property;
    return how many seeds applied (the rest skipped with a reason)."""
    bank = load_bank(bank_name)
    before = demo()
    snapshot = before.model_dump_json()
    applied = 0
    for seed in range(SEEDS):
        try:
            after, mapping = transform(before, rng_for(transform.name, seed), bank)
        except Skip as exc:
            assert str(exc), f"{transform.name} skipped without a reason"
            continue
        applied += 1
        assert before.model_dump_json() == snapshot, f"{transform.name} mutated its input"
        assert after.model_dump_json() != snapshot, f"{transform.name} changed nothing"
        problems = variant_problems(before, after, mapping)
        assert not problems, (transform.name, bank_name.value, seed, problems[:5])
        if seed % 10 == 0:
            again, mapping2 = transform(before, rng_for(transform.name, seed), bank)
            assert again.model_dump_json() == after.model_dump_json(), "not deterministic"
            assert mapping2 == mapping, "mapping not deterministic"
        if seed % 25 == 0:
            folder = tmp_path / f"{transform.name}-{bank_name.value}-{seed}"
            export_folder(after, folder)
            back = import_folder(folder)
            assert back == after and folder_files(back) == folder_files(after)
    return applied


def bare_harness() -> Harness:
    """Nothing any transform can work on: no skills, tools, hooks or prompt."""
    return Harness(name="bare")


# ----------------------------------------------------------------------------- dimensions 1-2

SKILL_TRANSFORMS = [t.name for t in my_transforms(Dimension.SKILL_IDS, Dimension.SKILL_CONTENT)]


def test_registered_skill_transforms() -> None:
    assert len(my_transforms(Dimension.SKILL_IDS)) >= 3
    assert len(my_transforms(Dimension.SKILL_CONTENT)) >= 3
    assert {
        "skill_rename_semantic",
        "skill_rename_opaque",
        "skill_name_style",
        "skill_index_order",
        "skill_loader_rename",
        "skill_paraphrase_descriptions",
        "skill_paraphrase_bodies",
        "skill_bullet_shuffle",
        "skill_list_format",
        "skill_distractors",
    } <= set(SKILL_TRANSFORMS)


@pytest.mark.parametrize("bank", list(BankName))
@pytest.mark.parametrize("name", SKILL_TRANSFORMS)
def test_skill_transform_properties(name: str, bank: BankName, tmp_path: Path) -> None:
    transform = next(t for t in transforms() if t.name == name)
    applied = check_transform(transform, bank, tmp_path)
    assert applied >= SEEDS * 0.9, f"{name} skipped {SEEDS - applied} of {SEEDS} seeds"


@pytest.mark.parametrize("name", [t.name for t in my_transforms()])
def test_skips_with_a_reason_on_a_bare_harness(name: str) -> None:
    transform = next(t for t in transforms() if t.name == name)
    with pytest.raises(Skip, match=r"\w"):
        transform(bare_harness(), random.Random(0), load_bank(BankName.TRAIN))


def test_skill_renames_stamp_roles_and_reach_other_skills() -> None:
    h = demo()
    seen_role_stamps = 0
    for seed in range(20):
        out, mapping = next(t for t in transforms() if t.name == "skill_rename_semantic")(
            h, rng_for("stamp", seed), load_bank(BankName.TRAIN)
        )
        for old, new in mapping.skills.items():
            skill = out.skill(new)
            assert skill is not None and skill.metadata[ROLE_KEY] == old
            seen_role_stamps += 1
            assert out.skill(old) is None
        if "product-qa" in mapping.skills:
            # product-qa's body says "answer it with product-qa instead" in chit-chat
            chit = next(s for s in out.skills if s.metadata.get(ROLE_KEY, s.name) == "chit-chat")
            assert mapping.skills["product-qa"] in chit.body
    assert seen_role_stamps > 40


def test_renames_leave_the_harness_description_as_written() -> None:
    """The description is the operator's note, never shown to the model: "after-sales" there
    is English, not the skill of that name, and a rename must not garble it."""
    h = demo()
    assert "after-sales" in h.description
    out = rename_or_skip(h, Renames(skills={"after-sales": "xqz-b52d"}))
    assert out.description == h.description
    assert out.skill("xqz-b52d") is not None and out.skill("after-sales") is None


def test_loader_rename_rewrites_calls_and_prompt() -> None:
    from core.harness.render import render_system_prompt, tool_specs

    t = next(t for t in transforms() if t.name == "skill_loader_rename")
    out, mapping = t(demo(), random.Random(1), load_bank(BankName.HELDOUT))
    assert mapping.load_skill_tool is not None
    old, new = mapping.load_skill_tool
    assert out.settings.load_skill_tool == new and old == "load_skill"
    prompt = render_system_prompt(out)
    assert f"`{new}`" in prompt and not re.search(r"\bload_skill\b", prompt)
    assert tool_specs(out)[0]["function"]["name"] == new
    chain = MappingChain().then(mapping, old)
    call = chain.forward_call(ToolCall(name=old, arguments={"name": "product-qa"}))
    assert call == ToolCall(name=new, arguments={"name": "product-qa"})


def test_skill_distractors_are_roleless_strategy_skills() -> None:
    from core.sim.surface import HarnessSurface

    t = next(t for t in transforms() if t.name == "skill_distractors")
    for seed in range(10):
        out, mapping = t(demo(), random.Random(seed), load_bank(BankName.TRAIN))
        assert mapping.is_identity
        surface = HarnessSurface(out)
        added = [s for s in out.skills if demo().skill(s.name) is None]
        assert 1 <= len(added) <= 3
        for skill in added:
            assert skill.kind.value == "strategy" and surface.role_of(skill.name) is None
            assert ROLE_KEY not in skill.metadata


def test_list_transforms_keep_every_item() -> None:
    """Reordering and reformatting lists loses no item text (markers and punctuation aside)."""
    h = demo()

    def words(text: str) -> list[str]:
        return sorted(re.findall(r"`[^`]+`|[A-Za-z0-9_'-]+", text))

    for name in ("skill_bullet_shuffle",):
        t = next(t for t in transforms() if t.name == name)
        for seed in range(10):
            out, _ = t(h, random.Random(seed), load_bank(BankName.TRAIN))
            for before, after in zip(h.skills, out.skills, strict=True):
                assert words(before.body) == words(after.body)
    t = next(t for t in transforms() if t.name == "skill_list_format")
    out, _ = t(h, random.Random(3), load_bank(BankName.TRAIN))
    for before, after in zip(h.skills, out.skills, strict=True):
        for code in re.findall(r"`[^`]+`|\{[^{}]*\}", before.body):
            assert code in after.body  # identifiers and JSON examples survive


def test_numbered_steps_keep_their_order() -> None:
    t = next(t for t in transforms() if t.name == "skill_bullet_shuffle")
    for seed in range(10):
        out, _ = t(demo(), random.Random(seed), load_bank(BankName.TRAIN))
        for before, after in zip(demo().skills, out.skills, strict=True):
            steps_before = [b.items for b in list_blocks(before.body) if b.ordered]
            steps_after = [b.items for b in list_blocks(after.body) if b.ordered]
            assert [[i[0] for i in s] for s in steps_before] == [
                [i[0] for i in s] for s in steps_after
            ]


def _step_order(body: str, steps: list[str]) -> list[int]:
    lowered = body.lower()  # as prose, a step's first letter may be lowercased
    return [lowered.find(step.strip().lower()[:24]) for step in steps]


@pytest.mark.parametrize("seed", range(40))
def test_numbered_steps_keep_their_order_through_format_then_shuffle(seed: int) -> None:
    """skill_list_format, then skill_bullet_shuffle (as one chain may draw them): a numbered
    list's steps come out in their order, as numbers or as ordered prose (#34 A4: a format
    that turned steps into bullets let the shuffle reorder them)."""
    fmt = next(t for t in transforms() if t.name == "skill_list_format")
    shuffle = next(t for t in transforms() if t.name == "skill_bullet_shuffle")
    bank = load_bank(BankName.TRAIN)
    rng = random.Random(seed)
    formatted, _ = fmt(demo(), rng, bank)
    out, _ = shuffle(formatted, rng, bank)
    checked = 0
    for before, after in zip(demo().skills, out.skills, strict=True):
        for block in (b for b in list_blocks(before.body) if b.ordered and b.flat):
            found = _step_order(after.body, [item[0] for item in block.items])
            assert all(i >= 0 for i in found), (before.name, block.items, after.body)
            assert found == sorted(found), (before.name, after.body)
            checked += 1
    assert checked > 0


def test_a_numbered_list_is_never_rendered_as_bullets() -> None:
    fmt = next(t for t in transforms() if t.name == "skill_list_format")
    seen = 0
    for seed in range(20):
        out, _ = fmt(demo(), random.Random(seed), load_bank(BankName.TRAIN))
        for before, after in zip(demo().skills, out.skills, strict=True):
            bulleted = {
                item[0] for b in list_blocks(after.body) if not b.ordered for item in b.items
            }
            for block in (b for b in list_blocks(before.body) if b.ordered):
                seen += 1
                assert not {item[0] for item in block.items} & bulleted, after.body
    assert seen > 0


# ----------------------------------------------------------------------------- text helpers


def test_renamer_token_boundaries_and_code_contexts() -> None:
    r = Renamer(
        {"check_stock": "inv_probe", "size": "sz_label", "product-qa": "item-facts", "limit": "cap"}
    )
    text = (
        'Call `check_stock` {"size": "M"} for a size. Use product-qa, not check_stock_v2, '
        "pre-check_stock or product-qa-v2. `${load_skill_tool}` up to `limit` matches; "
        "$limit ${limit} and the limit stay."
    )
    out = r.text(text)
    assert out == (
        'Call `inv_probe` {"sz_label": "M"} for a size. Use item-facts, not check_stock_v2, '
        "pre-check_stock or product-qa-v2. `${load_skill_tool}` up to `cap` matches; "
        "$limit ${limit} and the limit stay."
    )
    assert r.find(text) == ["check_stock", "size", "product-qa", "limit"]
    assert r.find(out) == []
    assert is_identifier_like("link_no") and is_identifier_like("maxPrice")
    assert not is_identifier_like("size")


def test_renamer_swaps_in_one_pass() -> None:
    r = Renamer({"size_a": "size_b", "size_b": "size_a"})
    assert r.text("`size_a` then size_b") == "`size_b` then size_a"


def test_matcher_rewrite_and_a_matcher_that_would_change_meaning() -> None:
    r = Renamer({"check_stock": "inventory_probe"})
    assert r.regex(r"get_product_by_link|check_stock|\bcheck_stock\w*") == (
        r"get_product_by_link|inventory_probe|\binventory_probe\w*"
    )
    h = demo().model_copy(deep=True)
    hook = next(x for x in h.hooks if x.kind is HookKind.VALIDATE_TOOL_ARGS)
    hook.matcher = "get_.*|check_stock"
    with pytest.raises(Skip, match="matcher"):
        rename_or_skip(h, Renames(tools={"get_size_chart": "fit_table"}))
    out = rename_or_skip(h, Renames(tools={"check_stock": "inventory_probe"}))
    assert out.hooks[[x.name for x in h.hooks].index(hook.name)].matcher == "get_.*|inventory_probe"


def test_python_hook_naming_a_renamed_tool_skips() -> None:
    from core.harness.models import Hook

    h = demo().model_copy(deep=True)
    source = "def check(payload):\n    return payload['tool'] != 'check_stock'\n"
    h.hooks.append(
        Hook(name="py", event=HookEvent.BEFORE_TOOL, kind=HookKind.PYTHON, source=source)
    )
    with pytest.raises(Skip, match="python hook"):
        rename_or_skip(h, Renames(tools={"check_stock": "inventory_probe"}))
    rename_or_skip(h, Renames(tools={"list_coupons": "voucher_list"}))  # not named: fine


def test_param_rename_must_cover_every_tool_with_the_name() -> None:
    with pytest.raises(Skip, match="link_no"):
        rename_or_skip(demo(), Renames(params={"check_stock": {"link_no": "ref"}}))


def test_phrases_never_touch_code() -> None:
    table = {"Goal:": ["Aim:"], "check": ["verify"]}
    text = 'Goal: check `check` and {"check": 1} and ${check}.'
    out = replace_phrases(text, table, random.Random(0))
    assert out == 'Aim: verify `check` and {"check": 1} and ${check}.'


def test_apply_renames_keeps_binding_names() -> None:
    out = apply_renames(
        demo(),
        Renames(
            tools={"check_stock": "inventory_probe"},
            params={"check_stock": {"size": "size_label", "color": "colour_name"}},
        ),
    )
    tool = out.tool("inventory_probe")
    assert tool is not None and tool.binding == "sim.check_stock"
    assert tool.binding_args == {"size_label": "size", "colour_name": "color"}
    assert tool.binding_arguments({"link_no": 3, "size_label": "M"}) == {"link_no": 3, "size": "M"}
    assert "`inventory_probe`" in (out.skill("product-qa") or demo().skills[0]).body
    again = apply_renames(
        out, Renames(params={"inventory_probe": {"size_label": "size", "colour_name": "tint"}})
    )
    back = again.tool("inventory_probe")
    assert back is not None and back.binding_args == {"tint": "color"}


# ----------------------------------------------------------------------------- banks


def _strings(bank: Bank, sections: tuple[str, ...]) -> set[str]:
    return Bank(bank.name, {k: v for k, v in bank.data.items() if k in sections}).strings()


def test_banks_are_disjoint_distinct_and_new() -> None:
    train, heldout = load_bank(BankName.TRAIN), load_bank(BankName.HELDOUT)
    assert not train.strings() & heldout.strings()
    original = "\n".join(folder_files(demo()).values()).casefold()
    for bank in (train, heldout):
        mine = _strings(bank, MY_SECTIONS)
        assert len(mine) > 250
        assert not [s for s in mine if s.casefold() in original], bank.name
        # a random hex tag can never spell a bank string
        assert not [s for s in mine if re.fullmatch(r"[0-9a-f_-]*", s)]
    # No string of one bank may show up, as a whole word and ignoring case, in a string of
    # the other bank or in any naming style the transforms give it (`product_versus` styled
    # capital_dash is `Product-Versus`, i.e. a skill name `product-versus`).
    for bank, other in ((train, heldout), (heldout, train)):
        mine = _strings(bank, MY_SECTIONS)
        forms = [(o, f) for o in other.strings() for f in _styled_forms(o)]
        for s in bank.strings():
            word = re.compile(rf"(?<!\w){re.escape(s.casefold())}(?!\w)")
            hits = [o for o, f in forms if s.casefold() in f and word.search(f)]
            hits = [o for o in hits if s in mine or o in _strings(other, MY_SECTIONS)]
            assert not hits, (bank.name.value, s, hits[:3])


def _word(text: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")


def _styled_forms(text: str) -> set[str]:
    from core.hsa.names import case_style, name_words

    out = {text}
    if re.fullmatch(r"[A-Za-z0-9_-]+", text):
        words = name_words(text)
        styles = ("snake", "kebab", "camel", "pascal", "screaming_snake", "capital_dash")
        out |= {case_style(words, s) for s in (*styles, "capital_snake", "compact")}
    return {o.casefold() for o in out}


@pytest.mark.parametrize("bank", list(BankName))
def test_bank_tables_are_well_formed(bank: BankName) -> None:
    from core.sim.distractors import DISTRACTOR_TOOLS

    b = load_bank(bank)
    skills, tools = b.section("skills"), b.section("tools")
    assert set(skills["names"]) == set(ROLES)
    for role, names in skills["names"].items():
        assert len(names) >= 8 and all(SKILL_NAME_RE.match(n) and "--" not in n for n in names)
        assert len(skills["descriptions"][role]) >= 5
    assert len(skills["loader_names"]) >= 8
    assert all(TOOL_NAME_RE.match(n) for n in skills["loader_names"])
    assert all(SKILL_NAME_RE.match(d["name"]) for d in skills["distractors"])
    assert len(skills["phrases"]) >= 20
    for binding, names in tools["names"].items():
        assert binding.startswith("sim.") and len(names) >= 8
        assert all(TOOL_NAME_RE.match(n) and is_identifier_like(n) for n in names)
    for canonical, names in tools["params"].items():
        assert len(names) >= 8 and all(is_identifier_like(n) for n in names), canonical
    assert set(tools["distractors"]) == {t.name for t in DISTRACTOR_TOOLS}
    assert all("default" in n.casefold() for n in tools["default_notes"])
    for entry in tools["optional_params"]:
        assert len(entry["schema"]) == 1 and "default" not in next(iter(entry["schema"].values()))


@pytest.mark.parametrize("bank", list(BankName))
def test_no_string_of_the_other_bank_in_variants(bank: BankName) -> None:
    other = load_bank(BankName.HELDOUT if bank is BankName.TRAIN else BankName.TRAIN)
    original = "\n".join(folder_files(demo()).values()).casefold()
    strings = [s.casefold() for s in other.strings() if s.casefold() not in original]
    b = load_bank(bank)
    for t in my_transforms():
        for seed in range(8):
            try:
                out, _ = t(demo(), rng_for(t.name, seed), b)
            except Skip:
                continue
            text = "\n".join(folder_files(out).values()).casefold()
            found = [s for s in strings if s in text and _word(s).search(text)]
            assert not found, (t.name, seed, found[:5])


# ----------------------------------------------------------------------------- oracle


def chained_variant(bank: BankName, seed: int, count: int = 6) -> tuple[Harness, MappingChain]:
    """Several of this file's and test_hsa_tools' transforms, applied in a seeded order."""
    rng = random.Random(f"chain:{bank.value}:{seed}")
    harness, chain = demo(), MappingChain()
    for t in rng.sample(my_transforms(), count):
        try:
            out, mapping = t(harness, rng, load_bank(bank))
        except Skip:
            continue
        chain = chain.then(mapping, harness.settings.load_skill_tool)
        harness = out
    return harness, chain


def test_oracle_on_variants_needs_no_mapping() -> None:
    """The oracle run directly on variant harnesses (tools by binding, parameters by
    binding_args, skills by metadata.role) gets full marks and writes the remapped gold."""
    gold_of = dict(zip([t.id for t in tasks()], golds(), strict=False))

    async def run() -> list[str]:
        failures = []
        for seed in range(16):
            bank = BankName.TRAIN if seed % 2 == 0 else BankName.HELDOUT
            harness, chain = chained_variant(bank, seed, count=8)
            assert len(chain.steps) >= 4
            for task in tasks()[seed % 4 :: 4]:
                trace = await gold_trajectory(task, harness, catalog())
                grades = grade(task, trace, task_harness(task, harness), catalog())
                if not grades.full_marks:
                    failures.append(f"{seed} {task.id}: {grades.scores()}")
                remapped = chain.forward(gold_of[task.id])
                if remapped.turns != trace.trajectory.turns:
                    failures.append(f"{seed} {task.id}: oracle differs from remapped gold")
                if chain.inverse(trace.trajectory) != gold_of[task.id]:
                    failures.append(f"{seed} {task.id}: inverse of the variant's oracle")
        return failures

    assert asyncio.run(run()) == []


def test_chained_variants_have_no_stale_names() -> None:
    for seed in range(20):
        bank = BankName.TRAIN if seed % 2 == 0 else BankName.HELDOUT
        harness, chain = chained_variant(bank, seed, count=10)
        renamed: dict[str, Any] = {}
        for step in chain.steps:
            renamed.update(old_names(step))
        current = {
            *[t.name for t in harness.tools],
            *[s.name for s in harness.skills],
            harness.settings.load_skill_tool,
            *[p for t in harness.tools for p in t.parameters.get("properties", {})],
        }
        gone = {o: n for o, n in renamed.items() if o not in current}
        assert stale_references(harness, gone) == [], seed
        assert cross_check(harness) == []
