"""HSA dimensions 4-5 one by one: what each prompt and hook transform changes, what it keeps,
when it skips, and that the loop and the oracle really see the change."""

from __future__ import annotations

import asyncio
import random
from functools import cache

import pytest

from core.episode.gold import gold_trajectory
from core.harness.demo import load_demo_harness
from core.harness.models import Harness, HookKind, PromptStyle, ReminderRole, SectionKind
from core.harness.render import render_system_prompt
from core.hsa.mapping import SurfaceMapping
from core.hsa.transform import BankName, Skip, load_bank, transforms
from core.hsa.transforms.prompt import replace_mentions, section_role
from core.runtime.client import ScriptedClient
from core.runtime.loop import AgentLoop
from core.runtime.trajectory import AssistantTurn
from core.sim.catalog import load_catalog
from core.sim.models import Split
from core.sim.oracle import room_bindings
from core.sim.reply import reply_limits
from core.sim.room import LiveRoom
from core.sim.tasks import generate_tasks

T = {t.name: t for t in transforms()}
SEEDS = range(40)


@cache
def demo() -> Harness:
    return load_demo_harness()


def run(name: str, seed: int, bank: BankName = BankName.TRAIN, harness: Harness | None = None):
    return T[name](harness or demo(), random.Random(seed), load_bank(bank))


def test_registered() -> None:
    prompt = [t.name for t in transforms() if t.dimension.value == "prompt"]
    hooks = [t.name for t in transforms() if t.dimension.value == "hooks"]
    assert len(prompt) >= 3 and len(hooks) >= 3
    assert set(prompt) >= {
        "prompt.section_order",
        "prompt.style",
        "prompt.headings",
        "prompt.placement",
        "prompt.variables",
    }
    assert set(hooks) >= {
        "hooks.reminder_wording",
        "hooks.reminder_format",
        "hooks.reminder_role",
        "hooks.retry_budget",
        "hooks.active",
    }


@pytest.mark.parametrize("name", [n for n in T if n.startswith(("prompt.", "hooks."))])
def test_identity_mapping_pure_and_visible(name: str) -> None:
    """Prompt and hook transforms rename nothing a trajectory names; they never mutate their
    input; prompt transforms change the rendered prompt (the model sees it)."""
    before = demo().model_dump(mode="json")
    for seed in SEEDS:
        for bank in BankName:
            harness, mapping = run(name, seed, bank)
            assert mapping == SurfaceMapping() and mapping.is_identity
            assert harness != demo()
            if name.startswith("prompt."):
                assert render_system_prompt(harness) != render_system_prompt(demo())
    assert demo().model_dump(mode="json") == before


# ----------------------------------------------------------------------------- prompt


def test_section_order_and_placement() -> None:
    ids = [s.id for s in demo().prompt.sections]
    for seed in SEEDS:
        shuffled, _ = run("prompt.section_order", seed)
        new = [s.id for s in shuffled.prompt.sections]
        assert sorted(new) == sorted(ids) and new != ids
        placed, _ = run("prompt.placement", seed)
        order = [s.id for s in placed.prompt.sections]
        assert order != ids
        generated = {s.id for s in demo().prompt.sections if s.kind is not SectionKind.TEXT}
        assert [i for i in order if i not in generated] == [i for i in ids if i not in generated]


def test_style_combinations_per_bank() -> None:
    seen: dict[BankName, set[tuple[PromptStyle, str]]] = {b: set() for b in BankName}
    for seed in SEEDS:
        for bank in BankName:
            harness, _ = run("prompt.style", seed, bank)
            title = harness.prompt.sections[0].title
            seen[bank].add((harness.prompt.style, title))
            if bank is BankName.TRAIN:
                assert harness.prompt.style in (PromptStyle.XML, PromptStyle.PLAIN)
            else:
                assert harness.prompt.style in (PromptStyle.JSON, PromptStyle.MARKDOWN)
                if harness.prompt.style is PromptStyle.MARKDOWN:
                    assert title != demo().prompt.sections[0].title  # wrapped: new to training
    assert len(seen[BankName.TRAIN]) >= 3 and len(seen[BankName.HELDOUT]) >= 3
    rendered = render_system_prompt(run("prompt.style", 1, BankName.HELDOUT)[0])
    assert rendered


def test_headings_by_role() -> None:
    bank = load_bank(BankName.HELDOUT).section("prompt")["headings"]
    for seed in SEEDS:
        harness, _ = run("prompt.headings", seed, BankName.HELDOUT)
        for section in harness.prompt.sections:
            role = section_role(section)
            assert role is not None
            original = next(s for s in demo().prompt.sections if s.id == section.id)
            assert section.title in (original.title, *bank[role])
        titles = [s.title for s in harness.prompt.sections]
        assert len(set(titles)) == len(titles)


def test_headings_skip_without_known_roles() -> None:
    sections = [
        s.model_copy(update={"id": f"part{i}", "kind": SectionKind.TEXT})
        for i, s in enumerate(demo().prompt.sections)
    ]
    odd = demo().model_copy(
        update={"prompt": demo().prompt.model_copy(update={"sections": sections})}
    )
    with pytest.raises(Skip, match="no prompt section has a role"):
        run("prompt.headings", 0, harness=odd)
    with pytest.raises(Skip, match="no skill index or tool block"):
        run("prompt.placement", 0, harness=odd)


def test_variables_change_host_and_room_everywhere_but_not_currency() -> None:
    bank = load_bank(BankName.TRAIN).section("prompt")["variables"]
    for seed in SEEDS:
        harness, _ = run("prompt.variables", seed)
        values = harness.prompt.variables
        assert values["currency"] == "USD" and values["brand"] == "Luma"
        changed = {k for k in ("host_name", "room_name") if values[k] != "Mia" and k == "host_name"}
        changed |= {k for k in ("room_name",) if values[k] != "Luma Weekend Live"}
        assert changed
        for key in changed:
            assert values[key] in bank[key]
        if "host_name" in changed:
            chit = harness.skill("chit-chat") or next(
                s for s in harness.skills if s.metadata.get("role") == "chit-chat"
            )
            host = values["host_name"]
            assert f"hi {host}!" in chit.body and f"hiii {host.lower()} from texas" in chit.body
            assert "Mia" not in render_system_prompt(harness)


def test_replace_mentions() -> None:
    assert replace_mentions("hi mia! MIA, Mia.", "Mia", "Ines") == "hi ines! INES, Ines."
    assert replace_mentions("Miami and mia-style", "Mia", "Ines") == "Miami and mia-style"
    text = "Luma Weekend Live, the luma weekend live-shopping room"
    assert replace_mentions(text, "Luma Weekend Live", "Luma Night Market") == (
        "Luma Night Market, the luma weekend live-shopping room"
    )


def test_variables_skip_without_variables() -> None:
    bare = demo().model_copy(
        update={"prompt": demo().prompt.model_copy(update={"variables": {"currency": "USD"}})}
    )
    with pytest.raises(Skip, match="host_name"):
        run("prompt.variables", 0, harness=bare)


# ----------------------------------------------------------------------------- hooks


def test_reminder_wording_keeps_reason_and_comes_from_the_bank() -> None:
    for bank in BankName:
        strings = load_bank(bank).strings()
        for seed in SEEDS:
            harness, _ = run("hooks.reminder_wording", seed, bank)
            changed = [(a, b) for a, b in zip(demo().hooks, harness.hooks, strict=True) if a != b]
            assert changed
            for before, after in changed:
                assert after.reminder in strings and "${reason}" in after.reminder
                assert after.model_copy(update={"reminder": before.reminder}) == before


def test_reminder_format_and_role() -> None:
    formats = load_bank(BankName.HELDOUT).section("hooks")["reminder_formats"]
    for seed in SEEDS:
        harness, _ = run("hooks.reminder_format", seed, BankName.HELDOUT)
        assert harness.settings.reminder_format in formats
        role, _ = run("hooks.reminder_role", seed)
        assert role.settings.reminder_role is ReminderRole.SYSTEM
    system = demo().model_copy(
        update={"settings": demo().settings.model_copy(update={"reminder_role": "system"})}
    )
    assert run("hooks.reminder_role", 0, harness=system)[0].settings.reminder_role == "user"


def test_retry_budget_changes_by_at_least_one_never_below_one() -> None:
    budgets = set()
    for seed in SEEDS:
        harness, _ = run("hooks.retry_budget", seed)
        budget = harness.settings.retry_budget
        assert budget != demo().settings.retry_budget and budget >= 1
        budgets.add(budget)
    assert budgets == {1, 3, 4, 5}


def test_active_switches_off_only_non_critical_hooks() -> None:
    for seed in SEEDS:
        harness, _ = run("hooks.active", seed)
        off = [h for h in harness.hooks if not h.enabled]
        assert off and all(not h.task_critical for h in off)
        assert {h.name for h in off} == {"reply-length"}
    critical = demo().model_copy(
        update={"hooks": [h.model_copy(update={"task_critical": True}) for h in demo().hooks]}
    )
    with pytest.raises(Skip, match="task_critical: false"):
        run("hooks.active", 0, harness=critical)


def test_the_loop_uses_the_new_reminder_wrapper_role_and_wording() -> None:
    """A blocked reply under a hook variant: the reminder the model gets is the variant's."""
    task = generate_tasks(Split.TEST, per_category=1)[0]
    catalog = load_catalog()
    gold = asyncio.run(gold_trajectory(task, demo(), catalog)).trajectory
    long = AssistantTurn(content=" ".join([gold.turns[-1].content] * 8))
    turns = [*gold.turns[:-1], long, gold.turns[-1]]
    harness = demo()
    for name, seed in (
        ("hooks.reminder_format", 1),
        ("hooks.reminder_role", 0),
        ("hooks.reminder_wording", 2),
    ):
        harness, _ = T[name](harness, random.Random(seed), load_bank(BankName.HELDOUT))
    loop = AgentLoop(
        harness, ScriptedClient(turns), room_bindings(LiveRoom.for_task(task, catalog))
    )
    trace = asyncio.run(loop.run(task.viewer_message))
    assert trace.ok and trace.counts.hook_blocks == 1
    reminder = trace.messages[-2]
    assert reminder["role"] == "system"
    hook = next(h for h in harness.hooks if h.kind is HookKind.REPLY_FORMAT)
    wrapper = harness.settings.reminder_format.split("${reminder}")
    assert reminder["content"].startswith(wrapper[0]) and reminder["content"].endswith(wrapper[1])
    lead = hook.reminder.split("${reason}")[0]
    assert lead and lead in reminder["content"]


def test_oracle_keeps_the_limit_of_a_switched_off_reply_hook() -> None:
    """reply_limits counts a non-critical reply_format hook even when HSA switched it off, so
    the oracle writes the same reply under the variant (invariant 4) with a tight limit."""
    tight = demo().model_copy(
        update={
            "hooks": [
                h.model_copy(update={"params": {**h.params, "max_chars": 150}})
                if h.kind is HookKind.REPLY_FORMAT
                else h
                for h in demo().hooks
            ]
        }
    )
    off, _ = run("hooks.active", 0, harness=tight)
    assert reply_limits(off).max_chars == reply_limits(tight).max_chars == 150
    catalog = load_catalog()
    for task in generate_tasks(Split.TEST, per_category=1):
        a = asyncio.run(gold_trajectory(task, tight, catalog)).trajectory
        b = asyncio.run(gold_trajectory(task, off, catalog)).trajectory
        assert a == b
        assert a.final_reply is not None and len(a.final_reply) <= 150
