"""HSA's invariants on the second example harness (resources/examples/order_desk), whose
tools are Python functions and an MCP server and whose tasks come from a task file.

For every registered transform and every policy (the desk's own bank,
resources/examples/order_desk/hsa, layered over the shipped one), on `OWN_SEEDS` seeds
spread over the task file's tasks (gold runs computed once through the real tools):

1. the remapped gold validates under the variant (schemas, skills) and, replayed through the
   real agent loop with a ScriptedClient against the harness's real tools, the hooks pass it
   (status ok, no block) with the same tool outcomes;
2. that replay gets the same four grades (core/taskfile/grading.py) as the gold under the
   original harness, the task file naming things as the original does;
3. the inverse mapping gives the original trajectory exactly;
4. no string of the shipped live-stream banks that the order desk does not already contain
   appears in a variant (HSA respects the domain).

The live-room invariant "the oracle under the variant writes the remapped gold" has no
counterpart here: a task file has no oracle, only its gold.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from core.episode.gold import gold_trace
from core.episode.task_file import TaskFileWorld
from core.harness.folder import folder_files, import_folder
from core.harness.models import Harness, ToolProtocol
from core.harness.render import render_system_prompt
from core.hsa.banks import layer_bank, read_bank_folder
from core.hsa.domain import LIVE_ROOM
from core.hsa.mapping import MappingChain
from core.hsa.policy import Policy, Strength, sample_variant, transform_rng
from core.hsa.transform import Bank, BankName, Skip, load_bank, transforms
from core.hsa.verify import schema_problems
from core.runtime.client import ScriptedClient
from core.runtime.loop import AgentLoop
from core.runtime.tool_runtime import ToolRuntime
from core.runtime.trace import Decision, HookStep, ToolCallStep, Trace
from core.runtime.trajectory import Trajectory
from core.sim.surface import HarnessSurface
from core.taskfile.grading import grade_own
from core.taskfile.models import OwnTask, load_task_file

EXAMPLE = Path(__file__).parents[1] / "resources/examples/order_desk"
OWN_SEEDS = int(os.environ.get("HSA_OWN_SEEDS", "24"))


@cache
def desk() -> Harness:
    return import_folder(EXAMPLE / "harness", trust_python_hooks=True)


@cache
def tasks() -> tuple[OwnTask, ...]:
    """The tasks graded without a judge (a judge's verdict is not deterministic)."""
    return tuple(t for t in load_task_file(EXAMPLE / "tasks.jsonl") if not t.needs_judge)


def _outcomes(trace: Trace) -> tuple[str | None, ...]:
    return tuple(s.error_kind for s in trace.steps_of(ToolCallStep))


def _turns(trajectory: Trajectory) -> list[dict[str, object]]:
    return [t.model_dump(mode="json") for t in trajectory.turns]


@cache
def live_strings() -> tuple[str, ...]:
    """The shipped banks' live-room strings (both banks) that are not whole words of the
    order desk already: the neutral tables (styles, connectors, headings) may appear."""
    original = "\n".join([*folder_files(desk()).values(), render_system_prompt(desk())]).lower()
    own = set()
    for bank in BankName:  # the desk's own bank may name things as the live room's does
        data = read_bank_folder(EXAMPLE / "hsa" / bank.value)
        own |= {x.lower().strip() for x in Bank(bank, data).strings()}
    out = set()
    for bank in BankName:
        for s in load_bank(bank).domain_strings(LIVE_ROOM):
            low = s.lower().strip()
            if (
                low not in own
                and len(low) >= 4
                and not re.search(rf"(?<!\w){re.escape(low)}(?!\w)", original)
            ):
                out.add(low)
    return tuple(sorted(out))


def live_leaks(harness: Harness) -> list[str]:
    before = folder_files(desk())
    changed = [t for p, t in folder_files(harness).items() if before.get(p) != t]
    text = "\n".join([*changed, render_system_prompt(harness)]).lower()
    return [
        s for s in live_strings() if s in text and re.search(rf"(?<!\w){re.escape(s)}(?!\w)", text)
    ]


async def _problems(
    tools: ToolRuntime, task: OwnTask, gold: Trace, harness: Harness, chain: MappingChain
) -> list[str]:
    problems: list[str] = []
    remapped, fills = chain.remap(gold.trajectory)
    back = chain.inverse(remapped, fills) if chain.steps else remapped
    if _turns(back) != _turns(gold.trajectory):
        problems.append("3: the inverse does not give the original trajectory")
    problems += [f"1: {p}" for p in schema_problems(harness, remapped)]
    native = harness.settings.tool_protocol is ToolProtocol.NATIVE
    bindings = TaskFileWorld(desk(), tools).bindings(task, harness, HarnessSurface(harness))
    loop = AgentLoop(harness, ScriptedClient(remapped.turns, native=native), bindings)
    run = await loop.run(task.message, context={"task": dict(task.context)})
    if not run.ok:
        problems.append(f"1: replay status {run.status.value}: {run.reason}")
    blocked = [s.hook for s in run.steps_of(HookStep) if s.decision is not Decision.ALLOW]
    if blocked:
        problems.append(f"1: hooks blocked the remapped gold: {blocked}")
    if _outcomes(run) != _outcomes(gold):
        problems.append(f"1: tool outcomes {_outcomes(run)} differ from {_outcomes(gold)}")
    want = grade_own(task, gold, desk()).scores()
    got = grade_own(task, run, harness, written_for=desk()).scores()
    if got != want:
        problems.append(f"2: grades {got} differ from the original's {want}")
    leaked = live_leaks(harness)
    if leaked:
        problems.append(f"4: live-stream bank strings in the variant: {leaked[:5]}")
    return problems


def task_index(seed: int) -> int:
    """The task a seed plays: seeds spread evenly over the whole file (its categories are
    grouped), so every category is played, not only the file's first tasks."""
    return seed * len(tasks()) // OWN_SEEDS % len(tasks())


def _check(make_variant: object) -> tuple[list[tuple[int, list[str]]], Counter[str]]:
    """Run every seed: make_variant(seed) -> (harness, chain) or a Skip reason."""
    failures: list[tuple[int, list[str]]] = []
    skipped: Counter[str] = Counter()

    async def run_all() -> None:
        async with ToolRuntime(desk()) as tools:
            golds: dict[int, Trace] = {}
            for seed in range(OWN_SEEDS):
                i = task_index(seed)
                if i not in golds:
                    task = tasks()[i]
                    gold = await gold_trace(task, desk(), tools)
                    assert gold.ok and grade_own(task, gold, desk()).full_marks, task.id
                    golds[i] = gold
                made = make_variant(seed)  # type: ignore[operator]
                if isinstance(made, str):
                    skipped[made] += 1
                    continue
                harness, chain = made
                problems = await _problems(tools, tasks()[i], golds[i], harness, chain)
                if problems:
                    failures.append((seed, problems))

    asyncio.run(run_all())
    return failures, skipped


NEVER_APPLIES = {
    "skill_bullet_shuffle": "the desk's skill bodies have numbered steps, no bulleted list",
    "tool_optional_params": "the desk's bank has no optional parameters (its Python tools take "
    "only their own keyword arguments) and the shipped table is the live room's",
}
"""Transforms that skip on every seed here, and why: any other transform that never applies
fails its test (a test that only skips checks nothing)."""


@pytest.mark.parametrize("name", [t.name for t in transforms()])
def test_transform_invariants_on_the_order_desk(name: str) -> None:
    found = {t.name: t for t in transforms()}[name]
    banks = {b: layer_bank(load_bank(b), EXAMPLE / "hsa") for b in BankName}  # the desk's own
    loader = desk().settings.load_skill_tool

    def make(seed: int) -> tuple[Harness, MappingChain] | str:
        bank = BankName.TRAIN if seed % 2 == 0 else BankName.HELDOUT
        try:
            harness, mapping = found(desk(), transform_rng(seed, name), banks[bank])
        except Skip as exc:
            return str(exc)
        return harness, MappingChain().then(mapping, loader)

    failures, skipped = _check(make)
    if name in NEVER_APPLIES:
        assert sum(skipped.values()) == OWN_SEEDS, f"{name} applies now: drop it from the list"
    else:
        assert sum(skipped.values()) < OWN_SEEDS, f"{name} never applied: {dict(skipped)}"
    assert not failures, f"{name}: {len(failures)} of {OWN_SEEDS} seeds failed: {failures[:4]}"


POLICIES = [Policy(bank, strength) for bank in BankName for strength in Strength]


@pytest.mark.parametrize("policy", POLICIES, ids=[p.label for p in POLICIES])
def test_policy_invariants_on_the_order_desk(policy: Policy) -> None:
    own = layer_bank(load_bank(policy.bank), EXAMPLE / "hsa")  # the desk's own bank on top

    def make(seed: int) -> tuple[Harness, MappingChain]:
        variant = sample_variant(desk(), policy, seed, bank=own)
        return variant.harness, variant.chain

    failures, _ = _check(make)
    assert not failures, f"{policy.label}: {len(failures)} of {OWN_SEEDS} failed: {failures[:4]}"
