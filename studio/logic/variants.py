"""The Variants screen's computation: a task, a policy and a seed -> what to show side by side.

`compute_variant` plays the task with the oracle under the original harness (its gold
trajectory), then asks HSA for a verified variant and the gold remapped onto it
(`core.hsa.augment.augment_variant`). Each side is turned into texts a person can compare:
the rendered system prompt, the skills, the tools and the hooks, and the trajectory one step
per line. When the oracle cannot play the task on this harness (an author renamed what the
simulator relies on), the variant is still sampled and shown, with the reason for the gold.

It takes tens of milliseconds on the demo harness; the studio still runs it in a worker.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.harness import (
    Harness,
    HarnessError,
    Skill,
    export_folder,
    render_system_prompt,
    tool_specs,
)
from core.harness.folder import hook_text
from core.hsa.mapping import MappingChain
from core.hsa.policy import Policy, Strength, Variant, sample_variant
from core.hsa.preview import trajectory_lines
from core.hsa.transform import BankName, Dimension
from core.runtime.trajectory import Trajectory
from core.sim.models import Split, Task
from core.sim.surface import ROLE_METADATA_KEY

VIEWS = ("System prompt", "Skills", "Tools", "Hooks")


@lru_cache(maxsize=4)
def task_choices(split: str = "test", per_category: int = 6) -> tuple[Task, ...]:
    """A short, varied list of tasks (a few per category) from the seeded generator."""
    from core.sim.tasks import generate_tasks

    return tuple(generate_tasks(Split(split), per_category=per_category))


def task_label(task: Task) -> str:
    category = task.category.value.replace("_", " ")
    return f"{category}: {task.viewer_message}"


@dataclass(frozen=True)
class VariantRequest:
    task_id: str
    bank: str = BankName.TRAIN.value
    strength: str = Strength.MEDIUM.value
    dimensions: tuple[str, ...] = tuple(d.value for d in Dimension)
    seed: int = 1
    version_id: str = ""
    """The stored version the previewed harness was loaded from ("" when it has none)."""
    unsaved: bool = False
    """The harness holds edits that are not in that version (the editor's current state)."""

    def policy(self) -> Policy:
        return Policy(self.bank, self.strength, self.dimensions)


@dataclass
class VariantView:
    request: VariantRequest
    task: Task
    original: Harness
    variant: Harness
    applied: list[str]
    skipped: list[tuple[str, str]]
    dropped: list[tuple[str, str]] = field(default_factory=list)
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    gold_before: str = ""
    gold_after: str = ""
    gold_problem: str = ""
    """Why there is no gold trajectory (empty when there is one)."""
    record: dict[str, Any] = field(default_factory=dict)
    trajectory: Trajectory | None = None


def _skill_block(skill: Skill, note: str = "") -> str:
    return (
        f"### {skill.name}  [{skill.kind.value}{'' if skill.enabled else ', off'}]{note}\n"
        f"{skill.description}\n\n{skill.body.strip()}"
    )


def _spec_block(function: dict[str, Any], note: str = "") -> str:
    return f"# {function.get('name', '?')}{note}\n" + json.dumps(
        function, indent=2, ensure_ascii=False
    )


def _order_line(what: str, names: list[str]) -> list[str]:
    return [f"{what} order: {', '.join(names)}"] if len(names) > 1 else []


def harness_views(harness: Harness) -> dict[str, str]:
    """The texts compared side by side, one per entry of VIEWS, in the harness's own order."""
    try:
        prompt = render_system_prompt(harness)
    except HarnessError as exc:
        prompt = f"(the prompt does not render: {exc})"
    skills = "\n\n".join(
        [*_order_line("skill", [s.name for s in harness.skills])]
        + [_skill_block(s) for s in harness.skills]
    )
    specs = [spec["function"] for spec in tool_specs(harness)]
    tools = "\n\n".join(
        [*_order_line("tool", [f["name"] for f in specs])] + [_spec_block(f) for f in specs]
    )
    hooks = "\n".join(
        f"# {h.name}\n{hook_text(h.model_copy(update={'source': None}))}" for h in harness.hooks
    )
    settings = harness.settings
    hooks = (
        f"# settings\nretry_budget: {settings.retry_budget}\nreminder_role: "
        f"{settings.reminder_role.value}\n"
        f"reminder_format: {settings.reminder_format}\n\n{hooks}"
    )
    return dict(zip(VIEWS, (prompt, skills, tools, hooks), strict=True))


def _reordered(function: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """The function spec with its properties (and `required`) in `order` first: the variant's
    parameters beside the original parameters they were renamed from."""
    params = function.get("parameters")
    if not isinstance(params, dict) or not isinstance(params.get("properties"), dict):
        return function
    props = params["properties"]
    keys = [k for k in order if k in props] + [k for k in props if k not in order]
    new_params = dict(params, properties={k: props[k] for k in keys})
    if isinstance(params.get("required"), list):
        req = params["required"]
        new_params["required"] = [k for k in keys if k in req] + [k for k in req if k not in keys]
    return dict(function, parameters=new_params)


def _role(skill: Skill, by_name: bool) -> str | None:
    role = skill.metadata.get(ROLE_METADATA_KEY)
    return role or (skill.name if by_name else None)


def paired_views(original: Harness, variant: Harness, chain: MappingChain) -> dict[str, str]:
    """The variant's texts with each skill and tool placed beside the original component it
    came from, found through the variant's mapping chain (renames are keyed by name, so
    position means nothing after a rename and a reorder). The variant's real order is the
    first line of the view, and components the variant added come last."""
    views = harness_views(variant)

    # ---- skills: original order, each paired with its renamed self
    by_name = {s.name: s for s in variant.skills}
    by_role = {s.metadata[ROLE_METADATA_KEY]: s for s in variant.skills if _role(s, False)}
    blocks = _order_line("skill", [s.name for s in variant.skills])
    used: set[str] = set()
    for skill in original.skills:
        mine = by_name.get(chain.skill(skill.name))
        if mine is None:  # a rename the chain does not know: the role HSA stamps on skills
            mine = by_role.get(_role(skill, True) or "")
        if mine is None or mine.name in used:
            blocks.append(f"### {skill.name}  (not in the variant)")
            continue
        used.add(mine.name)
        note = f"  (was {skill.name})" if mine.name != skill.name else ""
        blocks.append(_skill_block(mine, note))
    blocks += [
        _skill_block(s, "  (added by the variant)") for s in variant.skills if s.name not in used
    ]
    views["Skills"] = "\n\n".join(blocks)

    # ---- tools: the loader first (as the model sees it), then the original's tools in order
    specs = {f["name"]: f for f in (spec["function"] for spec in tool_specs(variant))}
    variant_order = list(specs)
    loader, new_loader = original.settings.load_skill_tool, variant.settings.load_skill_tool
    blocks = _order_line("tool", variant_order)
    used = set()
    if new_loader in specs and original.active_skills:
        used.add(new_loader)
        note = f"  (was {loader})" if new_loader != loader else ""
        blocks.append(_spec_block(specs[new_loader], note))
    for tool in original.active_tools:
        new = chain.tool(tool.name)
        function = specs.get(new)
        if function is None:
            blocks.append(f"# {tool.name}  (not in the variant)")
            continue
        used.add(new)
        params = list(tool.parameters.get("properties", {}) or {})
        paired = [chain.param(tool.name, name) for name in params]
        shown = list(function.get("parameters", {}).get("properties", {}) or {})
        notes = []
        if new != tool.name:
            notes.append(f"was {tool.name}")
        renamed = [f"{a} → {b}" for a, b in zip(params, paired, strict=True) if a != b]
        if renamed:
            notes.append("parameters " + ", ".join(renamed))
        if [k for k in shown if k in paired] != [k for k in paired if k in shown]:
            notes.append("parameter order in the variant: " + ", ".join(shown))
        note = f"  ({'; '.join(notes)})" if notes else ""
        blocks.append(_spec_block(_reordered(function, paired), note))
    blocks += [
        _spec_block(f, "  (added by the variant)") for n, f in specs.items() if n not in used
    ]
    views["Tools"] = "\n\n".join(blocks)
    return views


def _gold(task: Task, harness: Harness) -> Any:
    from core.episode.gold import gold_trajectory
    from core.sim.catalog import load_catalog

    return asyncio.run(gold_trajectory(task, harness, load_catalog(), add_distractors=False))


def compute_variant(harness: Harness, request: VariantRequest) -> VariantView:
    """Sample the variant of `harness` for `request` and remap the task's gold onto it."""
    from core.hsa.augment import AugmentError, augment_variant

    tasks = {t.id: t for t in task_choices()}
    task = tasks.get(request.task_id)
    if task is None:
        raise ValueError(f"unknown task {request.task_id!r}")
    policy = request.policy()
    gold_problem = ""
    trace = None
    try:
        trace = _gold(task, harness)
    except Exception as exc:  # the oracle needs the simulator's tools; say why, show the variant
        gold_problem = (
            f"the oracle cannot play this task on this harness ({type(exc).__name__}: {exc})"
        )
    dropped: list[tuple[str, str]] = []
    remapped: Trajectory | None = None
    variant: Variant
    if trace is not None and not gold_problem:
        try:
            augmented = augment_variant(harness, trace, policy, request.seed)
        except AugmentError as exc:
            gold_problem = "; ".join(exc.problems)
            variant = sample_variant(harness, policy, request.seed)
        else:
            variant, remapped, dropped = augmented.variant, augmented.trajectory, augmented.dropped
    else:
        variant = sample_variant(harness, policy, request.seed)
    view = VariantView(
        request=request,
        task=task,
        original=harness,
        variant=variant.harness,
        applied=list(variant.applied),
        skipped=list(variant.skipped),
        dropped=dropped,
        before=harness_views(harness),
        after=paired_views(harness, variant.harness, variant.chain),
        gold_problem=gold_problem,
        trajectory=remapped,
    )
    record = variant.record()
    record["dropped"] = [[n, r] for n, r in dropped]
    record["task"] = task.id
    record["harness"] = {
        "name": harness.name,
        "version": request.version_id or None,
        "unsaved_edits": request.unsaved,
    }
    view.record = record
    if trace is not None and not gold_problem:
        view.gold_before = "\n".join(trajectory_lines(trace.trajectory))
        view.gold_after = "\n".join(trajectory_lines(remapped)) if remapped is not None else ""
    return view


def export_variant(view: VariantView, folder: Path) -> Path:
    """Write the variant harness as a folder, and its provenance (policy, seed, transforms,
    mapping chain, remapped gold) next to it as `<folder>.variant.json`. Returns that file."""
    export_folder(view.variant, folder)
    sidecar = folder.with_name(folder.name + ".variant.json")
    data = dict(view.record)
    if view.trajectory is not None:
        data["gold"] = view.trajectory.model_dump(mode="json")
    sidecar.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return sidecar


def transform_label(name: str) -> str:
    """`tool_rename_semantic` -> "tool rename semantic"; `prompt.style` -> "prompt style"."""
    return name.replace(".", " ").replace("_", " ")
