"""HSA invariants over EVERY registered transform and every policy, >= 1,000 seeds each.

Issue 4's done-when, checked for each (variant harness, mapping chain) on a task whose gold
trajectory was computed once under the original demo harness:

1. the remapped gold validates under the variant (every tool call matches its schema, every
   loaded skill exists) and, replayed through the real agent loop with a ScriptedClient in the
   simulator, the hooks pass it (status ok, no block, no hook error, the same tool outcomes);
2. that replay gets the same four grades as the original gold under the original harness;
3. the inverse mapping (with the defaults the forward mapping filled in, which it records)
   gives the original trajectory exactly;
4. the oracle run under the variant harness alone (no mapping passed: tools by binding,
   parameters through `binding_args`, skills through `metadata.role`) writes exactly the
   remapped gold;
5. no string of the other bank appears in the variant (folder text and rendered prompt), and
   the two banks are disjoint.

Invariants 1-2 are checked on a run of the remapped gold through the real loop: the oracle's
run under the variant, which is that replay whenever invariant 4 holds (same outputs, same
fresh room, deterministic loop), plus a separate ScriptedClient replay on every
`HSA_REPLAY_EVERY`-th seed (default 4) and on every seed where the oracle diverged; where both
run, their messages must be identical (see `invariant_problems`). This halves the loop runs of
the suite without checking less.

Seeds cycle over a fixed set of tasks (ls-qa test tasks of every category plus robustness
tasks with faults and distractor tools); even seeds draw from the train bank, odd seeds from
the held-out bank. The transform list is read from the registry at collection time, so new
transforms are covered with no edit here. `HSA_SEEDS` overrides the seed count (e.g. for a
quick local run); the default is the issue's 1,000.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest

from core.episode.gold import gold_trajectory
from core.harness.demo import load_demo_harness
from core.harness.folder import (
    HARNESS_FILE,
    dump_yaml,
    folder_files,
    hook_text,
    manifest_data,
    skill_text,
    tool_text,
)
from core.harness.models import Harness, HookKind, SectionKind, ToolProtocol
from core.harness.render import render_system_prompt
from core.hsa.mapping import MappingChain
from core.hsa.policy import Policy, Strength, Variant, sample_variant, transform_rng
from core.hsa.transform import Bank, BankName, Skip, load_bank, transforms
from core.hsa.verify import schema_problems
from core.runtime.client import ScriptedClient
from core.runtime.loop import AgentLoop
from core.runtime.trace import Decision, HookStep, ToolCallStep, Trace
from core.runtime.trajectory import Trajectory
from core.sim.catalog import load_catalog
from core.sim.graders import grade
from core.sim.models import Catalog, Split, Task
from core.sim.oracle import room_bindings, task_harness
from core.sim.room import LiveRoom
from core.sim.tasks import generate_tasks, robustness_tasks

SEEDS = int(os.environ.get("HSA_SEEDS", "1000"))
WORKERS = int(os.environ.get("HSA_WORKERS", str(min(4, os.cpu_count() or 1))))
"""Processes per test; CI's two cores halve the wall time."""
REPLAY_EVERY = int(os.environ.get("HSA_REPLAY_EVERY", "4"))
"""Seeds with a separate ScriptedClient replay besides the oracle run (see invariant_problems);
1 replays every seed."""
MAX_REPORTED = 8
"""Failures listed per test (all are counted)."""


# ----------------------------------------------------------------------------- fixtures


@dataclass(frozen=True)
class Case:
    task: Task
    gold: Trace
    scores: dict[str, float]
    tool_outcomes: tuple[str | None, ...]


def _tool_outcomes(trace: Trace) -> tuple[str | None, ...]:
    """The error kind (None: success) of every tool step: faults must hit the variant too."""
    return tuple(s.error_kind for s in trace.steps_of(ToolCallStep))


@cache
def catalog() -> Catalog:
    return load_catalog()


@cache
def demo() -> Harness:
    return load_demo_harness()


@cache
def cases() -> tuple[Case, ...]:
    """~50 tasks with their gold under the original harness, computed once per session."""
    cat = catalog()
    base = generate_tasks(Split.TEST, per_category=4, catalog=cat)
    robust = robustness_tasks(generate_tasks(Split.TEST, per_category=10, catalog=cat), count=12)
    out = []

    async def gold_all() -> None:
        for task in [*base, *robust]:
            trace = await gold_trajectory(task, demo(), cat)
            grades = grade(task, trace, task_harness(task, demo()), cat)
            assert grades.full_marks and trace.ok, (task.id, grades.model_dump())
            out.append(Case(task, trace, grades.scores(), _tool_outcomes(trace)))

    asyncio.run(gold_all())
    return tuple(out)


@cache
def leak_strings(bank: BankName) -> tuple[tuple[str, str | None], ...]:
    """The strings of `bank` (lower-cased) that the original harness does not contain already
    as whole words (those cannot leak from the bank), each with one of its words."""
    original = original_text().lower()
    strings = {s.lower() for s in load_bank(bank).strings() if s.strip()}
    fresh = sorted(s for s in strings if not _word_re(s).search(original))
    return tuple((s, _first_word(s)) for s in fresh)


def _first_word(s: str) -> str | None:
    found = re.search(r"\w+", s)
    return found.group(0) if found else None


@cache
def _word_re(s: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(s.lower())}(?![\w])")


def leaks(text: str, bank: BankName) -> list[str]:
    """Strings of `bank` in `text`, as whole words, case-insensitively. Every word of such a
    string is a whole word of the text, so a string is only searched for when its first word
    is one of the text's words (a set lookup), then confirmed with the word-boundary regex."""
    low = text.lower()
    words = set(re.findall(r"\w+", low))
    return [
        s
        for s, word in leak_strings(bank)
        if (word is None or word in words) and s in low and _word_re(s).search(low)
    ]


@cache
def original_files() -> dict[str, str]:
    return folder_files(demo())


@cache
def original_text() -> str:
    return "\n".join([*original_files().values(), render_system_prompt(demo())])


@cache
def _original_components() -> dict[int, tuple[object, str]]:
    h = demo()
    out: dict[int, tuple[object, str]] = {}
    for skill in h.skills:
        out[id(skill)] = (skill, skill_text(skill))
    for tool in h.tools:
        out[id(tool)] = (tool, tool_text(tool))
    for hook in h.hooks:
        out[id(hook)] = (hook, hook_text(hook.model_copy(update={"source": None})))
    return out


def _text(obj: Any, render: Any) -> str:
    hit = _original_components().get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    return str(render(obj))


def harness_files(harness: Harness, *, yaml_manifest: bool = True) -> dict[str, str]:
    """`folder_files(harness)`, reusing the text of components the variant shares with the
    original (transforms copy only what they change); checked against folder_files itself.
    `yaml_manifest=False` writes harness.yaml's data as JSON (the same strings, unfolded, and
    ~20x faster than the YAML emitter) for the leak check."""
    data = manifest_data(harness)
    manifest = dump_yaml(data) if yaml_manifest else json.dumps(data, ensure_ascii=False)
    files = {HARNESS_FILE: manifest}
    for section in harness.prompt.sections:
        if section.kind is SectionKind.TEXT or section.template:
            files[f"prompt/{section.id}.md"] = section.template
    for skill in harness.skills:
        files[f"skills/{skill.name}/SKILL.md"] = _text(skill, skill_text)
    for tool in harness.tools:
        files[f"tools/{tool.name}.json"] = _text(tool, tool_text)
    for hook in harness.hooks:
        files[f"hooks/{hook.name}.yaml"] = _text(
            hook, lambda h: hook_text(h.model_copy(update={"source": None}))
        )
        if hook.kind is HookKind.PYTHON and hook.source is not None:
            files[f"hooks/{hook.name}.py"] = hook.source
    return files


def variant_leaks(harness: Harness, bank: BankName, *, exact: bool = False) -> list[str]:
    """Strings of `bank` in the variant's folder text (files that differ from the original's)
    and its rendered system prompt. `exact`: build the files with folder_files itself."""
    files = folder_files(harness) if exact else harness_files(harness, yaml_manifest=False)
    before = original_files()
    changed = [text for path, text in files.items() if before.get(path) != text]
    return sorted(set(leaks("\n".join([*changed, render_system_prompt(harness)]), bank)))


# ----------------------------------------------------------------------------- the check


def other_bank(bank: BankName) -> BankName:
    return BankName.HELDOUT if bank is BankName.TRAIN else BankName.TRAIN


def _turns(trajectory: Trajectory) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json") for t in trajectory.turns]


async def _replay(case: Case, harness: Harness, remapped: Trajectory) -> Trace:
    task = case.task
    native = harness.settings.tool_protocol is ToolProtocol.NATIVE
    client = ScriptedClient(remapped.turns, native=native)
    room = LiveRoom.for_task(task, catalog())
    loop = AgentLoop(harness, client, room_bindings(room))
    return await loop.run(task.viewer_message, request_id=task.id)


async def invariant_problems(
    case: Case,
    harness: Harness,
    chain: MappingChain,
    bank: BankName,
    *,
    replay: bool = True,
    check_leaks: bool = True,
    exact_files: bool = False,
) -> list[str]:
    """Every invariant (module doc) for one variant; the list of what failed.

    The oracle runs first (invariant 4). When it wrote exactly the remapped gold, its run IS a
    replay of the remapped gold: the loop is deterministic in the model's outputs, and the
    oracle's outputs are the ones a ScriptedClient of the remapped turns writes (the same
    `<tool_call>` blocks, the same replies) in the same fresh LiveRoom. So invariants 1-2 are
    checked on that run, and `replay=False` skips the separate ScriptedClient replay; with
    `replay=True` (every REPLAY_EVERY-th seed, and always when the oracle diverged) the replay
    runs too and must give the oracle run's very messages, which keeps the shortcut honest.
    """
    problems: list[str] = []
    task, gold = case.task, case.gold.trajectory
    remapped, fills = chain.remap(gold)
    run_harness = task_harness(task, harness)

    # 3. inverse (exact with the fills the remap recorded)
    back = chain.inverse(remapped, fills) if chain.steps else remapped
    if _turns(back) != _turns(gold):
        problems.append("3: the inverse does not give the original trajectory")

    # 1. static: schemas and skills
    problems += [f"1: {p}" for p in schema_problems(run_harness, remapped)]

    # 4. oracle equivalence (the variant harness alone)
    oracle = await gold_trajectory(task, harness, catalog())
    same = _turns(oracle.trajectory) == _turns(remapped)
    if not same:
        problems.append(
            "4: the oracle under the variant wrote "
            f"{_turns(oracle.trajectory)[:3]}..., the remapped gold is {_turns(remapped)[:3]}..."
        )

    # 1 + 2. the remapped gold in the simulator, through the real loop
    run = oracle
    if replay or not same:
        run = await _replay(case, run_harness, remapped)
        if same and run.messages != oracle.messages:
            problems.append("1: the ScriptedClient replay differs from the oracle's run")
    if not run.ok:
        problems.append(f"1: replay status {run.status.value}: {run.reason}")
    bad_hooks = [
        f"{s.hook} {s.decision.value}: {s.reason}"
        for s in run.steps_of(HookStep)
        if s.decision is not Decision.ALLOW
    ]
    if bad_hooks:
        problems.append(f"1: hooks did not pass the remapped gold: {bad_hooks}")
    if _turns(run.trajectory) != _turns(remapped):
        problems.append("1: the replay's trajectory differs from the remapped gold")
    if _tool_outcomes(run) != case.tool_outcomes:
        problems.append(
            f"1: tool outcomes {_tool_outcomes(run)} differ from the original's "
            f"{case.tool_outcomes}"
        )
    scores = grade(task, run, run_harness, catalog()).scores()
    if scores != case.scores:
        problems.append(f"2: grades {scores} differ from the original's {case.scores}")

    # 5. no string of the other bank
    if check_leaks:
        found = variant_leaks(harness, other_bank(bank), exact=exact_files)
        if found:
            problems.append(f"5: {other_bank(bank).value} bank strings in the variant: {found}")
    if exact_files and harness_files(harness) != folder_files(harness):
        problems.append("test helper: harness_files differs from folder_files")
    return problems


def _report(failures: list[tuple[int, list[str]]], counts: Counter[str], what: str) -> str:
    lines = [f"{what}: {len(failures)} of {SEEDS} seeds failed; {dict(counts)}"]
    for seed, problems in failures[:MAX_REPORTED]:
        lines.append(f"  seed {seed} ({cases()[seed % len(cases())].task.id}): {problems[:3]}")
    return "\n".join(lines)


def bank_of(seed: int) -> BankName:
    return BankName.TRAIN if seed % 2 == 0 else BankName.HELDOUT


# ----------------------------------------------------------------------------- tests

TRANSFORM_NAMES = [t.name for t in transforms()]


def test_every_dimension_has_transforms() -> None:
    by_dim = Counter(t.dimension.value for t in transforms())
    for dim in ("prompt", "hooks"):
        assert by_dim[dim] >= 3, by_dim


def test_cases_cover_every_category_and_faults() -> None:
    categories = {c.task.category for c in cases()}
    assert len(categories) == 12
    assert sum(1 for c in cases() if c.task.faults) >= 10
    assert sum(1 for c in cases() if c.task.distractor_tools) >= 10


@dataclass
class Chunk:
    """What one worker found on its share of the seeds."""

    failures: list[tuple[int, list[str]]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    applied: Counter[str] = field(default_factory=Counter)
    sizes: Counter[int] = field(default_factory=Counter)
    mutated: bool = False
    reused: int = 0

    def add(self, other: Chunk) -> None:
        self.failures += other.failures
        self.counts.update(other.counts)
        self.skipped.update(other.skipped)
        self.applied.update(other.applied)
        self.sizes.update(other.sizes)
        self.mutated = self.mutated or other.mutated
        self.reused += other.reused

    def fail(self, seed: int, problems: list[str]) -> None:
        if problems:
            self.failures.append((seed, problems))
            self.counts.update(p.split(":", 1)[0] for p in problems)


def _transform_chunk(name: str, seeds: range) -> Chunk:
    found = {t.name: t for t in transforms()}[name]
    banks: dict[BankName, Bank] = {b: load_bank(b) for b in BankName}
    original = demo()
    before = original.model_dump(mode="json")
    loader = original.settings.load_skill_tool
    out = Chunk()
    checked: dict[tuple[int, BankName, str, str], list[str]] = {}
    """(task, bank, variant, mapping) -> problems: a seed whose variant and task were already
    checked (a transform with few outcomes, e.g. hooks.reminder_role) reuses the result, since
    every check is deterministic in them."""

    async def run_all() -> None:
        for seed in seeds:
            case = cases()[seed % len(cases())]
            bank = bank_of(seed)
            try:
                harness, mapping = found(original, transform_rng(seed, name), banks[bank])
            except Skip as exc:
                out.skipped[str(exc)] += 1
                continue
            problems: list[str] = []
            if seed % 10 == 0:  # determinism: same seed, same variant and mapping
                again, mapping2 = found(original, transform_rng(seed, name), banks[bank])
                if again != harness or mapping2 != mapping:
                    problems.append("determinism: the same seed gave another variant")
            if harness == original:
                problems.append("the transform changed nothing")
            chain = MappingChain().then(mapping, loader)
            key = (seed % len(cases()), bank, harness.model_dump_json(), mapping.model_dump_json())
            if key not in checked:
                checked[key] = await invariant_problems(
                    case,
                    harness,
                    chain,
                    bank,
                    replay=seed % REPLAY_EVERY == 0,
                    exact_files=seed % 50 == 0,
                )
            else:
                out.reused += 1
            out.fail(seed, problems + checked[key])

    asyncio.run(run_all())
    out.mutated = original.model_dump(mode="json") != before
    return out


def _policy_chunk(policy: Policy, seeds: range) -> Chunk:
    original = demo()
    out = Chunk()

    checked: dict[tuple[int, str, str], list[str]] = {}

    async def run_all() -> None:
        for seed in seeds:
            case = cases()[seed % len(cases())]
            variant: Variant = sample_variant(original, policy, seed)
            out.applied.update(variant.applied)
            out.sizes[len(variant.applied)] += 1
            key = (
                seed % len(cases()),
                variant.harness.model_dump_json(),
                variant.chain.model_dump_json(),
            )
            if key not in checked:
                checked[key] = await invariant_problems(
                    case,
                    variant.harness,
                    variant.chain,
                    policy.bank,
                    replay=seed % REPLAY_EVERY == 0,
                    exact_files=seed % 50 == 0,
                )
            else:
                out.reused += 1
            out.fail(seed, checked[key])

    asyncio.run(run_all())
    return out


def run_seeds(fn: Callable[[Any, range], Chunk], arg: Any) -> Chunk:
    """Run `fn(arg, seeds)` over SEEDS seeds, split between WORKERS forked processes (the
    golds are computed once, before the fork, and inherited)."""
    cases()
    original_files()
    leak_strings(BankName.TRAIN)
    leak_strings(BankName.HELDOUT)
    workers = max(1, min(WORKERS, SEEDS))
    if workers == 1:
        return fn(arg, range(SEEDS))
    bounds = [SEEDS * i // workers for i in range(workers + 1)]
    chunks = [range(bounds[i], bounds[i + 1]) for i in range(workers)]
    context = multiprocessing.get_context("fork")
    total = Chunk()
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for part in pool.map(fn, [arg] * workers, chunks):
            total.add(part)
    total.failures.sort()
    return total


@pytest.mark.parametrize("name", TRANSFORM_NAMES)
def test_transform_invariants(name: str) -> None:
    """One transform, SEEDS seeds, every invariant; also purity and determinism."""
    result = run_seeds(_transform_chunk, name)
    assert not result.mutated, "the transform mutated its input"
    skipped = sum(result.skipped.values())
    assert skipped < SEEDS, f"{name} skipped on every seed: {dict(result.skipped)}"
    assert not result.failures, _report(result.failures, result.counts, name)


POLICIES = [
    Policy(bank, strength) for bank in (BankName.TRAIN, BankName.HELDOUT) for strength in Strength
]


@pytest.mark.parametrize("policy", POLICIES, ids=[p.label for p in POLICIES])
def test_policy_invariants(policy: Policy) -> None:
    """A policy's composed variants, SEEDS seeds, every invariant (leaks against the other
    bank on every seed)."""
    result = run_seeds(_policy_chunk, policy)
    assert not result.failures, _report(result.failures, result.counts, policy.label)
    # every transform of the registry shows up under every policy (given enough seeds: a light
    # policy applies ~1.5 of 31 transforms a seed)
    missing = sorted(set(TRANSFORM_NAMES) - set(result.applied))
    assert SEEDS < 500 or not missing, f"{policy.label} never applied {missing}"
    if policy.strength is Strength.LIGHT:
        assert max(result.sizes) <= 2, result.sizes
    if policy.strength is Strength.HEAVY:
        assert min(result.sizes) >= len({t.dimension for t in transforms()}), result.sizes


def test_banks_are_disjoint() -> None:
    train, heldout = (load_bank(b).strings() for b in BankName)
    assert train and heldout
    assert not (train & heldout), sorted(train & heldout)[:20]
    # no string of one bank occurs, as whole words, inside a string of the other
    for ours, other in ((train, BankName.HELDOUT), (heldout, BankName.TRAIN)):
        inside = sorted({hit for s in ours for hit in leaks(s, other)})
        assert not inside, inside[:20]


def test_bank_tables_are_split() -> None:
    """Styles (with their heading wrappers) and prompt variable values are split between the
    banks, so a held-out style or host name is new to a trained model."""
    train, heldout = (load_bank(b).section("prompt") for b in BankName)
    combos = {
        name: {(s, w) for s, ws in bank["styles"].items() for w in (ws or [None])}
        for name, bank in (("train", train), ("heldout", heldout))
    }
    assert not combos["train"] & combos["heldout"]
    assert set(heldout["styles"]) - set(train["styles"]), "held-out has no style train lacks"
    for key in ("host_name", "room_name"):
        assert not set(train["variables"][key]) & set(heldout["variables"][key])


def test_leak_check_catches_a_leak() -> None:
    """The leak check itself: a held-out host name in a train variant is reported."""
    case = cases()[0]
    heldout_host = load_bank(BankName.HELDOUT).section("prompt")["variables"]["host_name"][0]
    harness = demo().model_copy(deep=True)
    harness.prompt.variables["host_name"] = heldout_host
    problems = asyncio.run(invariant_problems(case, harness, MappingChain(), BankName.TRAIN))
    assert any(p.startswith("5:") and heldout_host.lower() in p for p in problems), problems


def test_invariant_check_catches_a_wrong_gold() -> None:
    """The check itself: a chain that renames a tool the variant does not rename fails 1-4."""
    from core.hsa.mapping import SurfaceMapping

    case = next(c for c in cases() if any(t.tool_calls for t in c.gold.trajectory.turns[1:]))
    called = next(
        call.name
        for turn in case.gold.trajectory.turns
        for call in turn.tool_calls
        if call.name != "load_skill"
    )
    chain = MappingChain().then(SurfaceMapping(tools={called: "renamed_tool"}), "load_skill")
    problems = asyncio.run(invariant_problems(case, demo(), chain, BankName.TRAIN))
    kinds = {p.split(":", 1)[0] for p in problems}
    assert {"1", "2", "4"} <= kinds, problems


SINGLE_CHOICE_ON_DEMO = {"hooks.active", "hooks.reminder_role"}
"""Transforms with one possible outcome on the demo: it has one non-critical hook, and its
reminders go to the user role, so the only other role is system."""


def test_seeded_variety() -> None:
    """Different seeds give different variants (the transforms really use their rng)."""
    for name in TRANSFORM_NAMES:
        if name in SINGLE_CHOICE_ON_DEMO:
            continue
        found = {t.name: t for t in transforms()}[name]
        seen = set()
        for seed in range(40):
            try:
                harness, _ = found(demo(), random.Random(seed), load_bank(BankName.TRAIN))
            except Skip:
                continue
            seen.add(harness.model_dump_json())
        assert len(seen) >= 2, f"{name} gave one variant for 40 seeds"
