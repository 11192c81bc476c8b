"""`hat hsa …`: Harness-State Augmentation from the command line.

    hat hsa preview --seed 7 --policy heldout --strength heavy [--task test.coupon.0003]
    hat hsa sample -n 20 --out variants/ --policy train --strength medium [--bank-dir DIR]
    hat hsa transforms

`preview` shows what one variant changes — per harness component (canonical files and the
rendered system prompt) and in the task's gold trajectory before and after the remap — plus
the transforms applied, skipped (with the reason) and dropped by verification. `sample`
writes K variant harness folders and a manifest of their seeds and transforms.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.cli.common import (
    TaskFileOpt,
    TrustOpt,
    cell,
    console,
    esc,
    fail,
    open_store,
    print_problems,
)
from core.harness import Harness, HarnessError, export_folder, import_folder
from core.store.harness_ref import DEFAULT_RULE

if TYPE_CHECKING:
    from core.hsa.augment import Augmented
    from core.hsa.policy import Policy
    from core.hsa.transform import Bank
    from core.runtime.trace import Trace
    from core.sim.models import Task
    from core.textdiff import Row

app = typer.Typer(help="Preview and sample harness variants (HSA).", no_args_is_help=True)

BANKS = ("train", "heldout")
STRENGTHS = ("light", "medium", "heavy")

PolicyOpt = Annotated[
    str, typer.Option("--policy", "-p", help="Bank: train | heldout (disjoint name banks).")
]
StrengthOpt = Annotated[str, typer.Option("--strength", "-s", help="light | medium | heavy.")]
HarnessOpt = Annotated[
    Path | None,
    typer.Option(
        "--harness",
        help=f"Harness folder (default: {DEFAULT_RULE}).",
    ),
]
BankDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--bank-dir",
        help="A user bank folder (docs/hsa-banks.md) layered over the policy's bank.",
    ),
]
BankOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--bank-only", help="With --bank-dir: use the user bank instead of the shipped one."
    ),
]
DimsOpt = Annotated[
    list[str] | None,
    typer.Option("--dimension", "-d", help="Limit to a dimension (repeatable)."),
]


def _harness(path: Path | None, trust: bool = False) -> Harness:
    """The folder given, or the one default rule (core/store/harness_ref.py)."""
    if path is None:
        from core.store.harness_ref import resolve_harness

        with open_store() as store:
            return resolve_harness(store, None)[0]
    try:
        return import_folder(path, trust_python_hooks=trust)
    except HarnessError as exc:
        print_problems(exc, path)
        raise typer.Exit(1) from None


def _own_gold(path: Path, task_id: str | None, seed: int, harness: Harness) -> tuple[Any, Trace]:
    """A task-file task (by id, else by seed) and its gold run through the harness's tools."""
    from core.episode.open_world import WorldUnavailable, open_world
    from core.taskfile.models import TaskFileError, load_task_file

    try:
        own = load_task_file(path)
    except TaskFileError as exc:
        fail(str(exc))
    if task_id is None:
        chosen = own[seed % len(own)]
    else:
        found = next((t for t in own if t.id == task_id), None)
        if found is None:
            fail(f"{path}: no task {task_id!r}")
        chosen = found

    async def run() -> Trace:
        async with open_world(harness, task_file=True) as world:
            return await world.gold_trace(chosen, harness)

    try:
        return chosen, asyncio.run(run())
    except WorldUnavailable as exc:
        fail(str(exc))


def _policy(bank: str, strength: str, dimensions: list[str] | None) -> Policy:
    from core.hsa.policy import Policy
    from core.hsa.transform import Dimension

    if bank not in BANKS:
        fail(f"--policy {bank!r}: use {' or '.join(BANKS)}")
    if strength not in STRENGTHS:
        fail(f"--strength {strength!r}: use {', '.join(STRENGTHS)}")
    known = [d.value for d in Dimension]
    for dim in dimensions or []:
        if dim not in known:
            fail(f"--dimension {dim!r}: use one of {', '.join(known)}")
    return Policy(bank, strength, dimensions or None)


def _bank(policy: Policy, folder: Path | None, only: bool) -> Bank | None:
    """The policy's shipped bank with the user bank in `folder` layered over it (or instead
    of it with `only`); None without a folder. A bad bank file is a clear error."""
    from core.hsa.banks import BankError, layer_bank
    from core.hsa.transform import load_bank

    if folder is None:
        if only:
            fail("--bank-only needs --bank-dir")
        return None
    try:
        return layer_bank(load_bank(policy.bank), folder, replace=only)
    except BankError as exc:
        fail(str(exc))


def _task(task_id: str | None, seed: int) -> Task:
    from core.sim.models import Split
    from core.sim.tasks import SUITES, generate_tasks, load_suite

    if task_id is None:
        tasks = generate_tasks(Split.TEST, per_category=1)
        return tasks[seed % len(tasks)]
    head = task_id.split(".", 1)[0]
    pools: list[Callable[[], list[Task]]] = []
    if head in {s.value for s in Split}:
        pools.append(lambda: generate_tasks(Split(head)))
    pools += [partial(load_suite, name) for name in SUITES]
    for pool in pools:
        found = next((t for t in pool() if t.id == task_id), None)
        if found is not None:
            return found
    fail(f"no task {task_id!r} in the train/dev/test splits or the suites ({', '.join(SUITES)})")


# ----------------------------------------------------------------------------- preview


_STYLE = {"replace": "yellow", "delete": "red", "insert": "green", "skip": "dim", "equal": ""}


def _width() -> int:
    """Side-by-side needs room: the terminal's width, or 160 columns when not a terminal."""
    return console.width if console.is_terminal else 160


def _side_by_side(rows: list[Row], left: str, right: str) -> Table:
    table = Table(show_header=True, header_style="bold", expand=True)
    table.add_column(left, ratio=1, overflow="fold")
    table.add_column(right, ratio=1, overflow="fold")
    for row in rows:
        style = _STYLE.get(row.tag, "")
        mark_l = "- " if row.tag in ("replace", "delete") else "  "
        mark_r = "+ " if row.tag in ("replace", "insert") else "  "
        table.add_row(
            Text(mark_l + row.left if row.left else "", style=style),
            Text(mark_r + row.right if row.right else "", style=style),
        )
    return table


def _print_unified(lines: list[str]) -> None:
    for line in lines:
        style = ""
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        console.print(Text(line, style=style))


def _print_diff(
    before: list[str],
    after: list[str],
    name: str,
    *,
    unified: bool,
    context: int,
    width: int | None,
) -> None:
    from core.hsa.preview import side_by_side
    from core.hsa.preview import unified as unified_diff

    if unified:
        _print_unified(unified_diff(before, after, name, context=context))
    else:
        table = _side_by_side(side_by_side(before, after, context=context), "original", "variant")
        wide = width or _width()
        if wide == console.width:
            console.print(table)
        else:  # Console.print clamps its width to the console's, so a wider one prints it
            Console(width=wide, highlight=False, emoji=False, no_color=console.no_color).print(
                table
            )


def _summary(result: Augmented) -> None:
    variant = result.variant
    console.print(
        f"[bold]policy[/bold] {variant.policy.label}  [bold]seed[/bold] {variant.seed}  "
        f"[bold]applied[/bold] {esc(', '.join(variant.applied) or '(none)')}"
    )
    for name, reason in variant.skipped:
        console.print(f"  [dim]skipped[/dim] {esc(name)}: {esc(reason)}")
    for name, reason in result.dropped:
        console.print(f"  [yellow]dropped[/yellow] {esc(name)}: {esc(reason)}")


@app.command()
def preview(
    seed: Annotated[int, typer.Option("--seed", help="Variant seed.")] = 0,
    policy: PolicyOpt = "train",
    strength: StrengthOpt = "medium",
    task: Annotated[
        str | None, typer.Option("--task", help="Task id (default: a test task by seed).")
    ] = None,
    harness: HarnessOpt = None,
    dimension: DimsOpt = None,
    unified: Annotated[
        bool, typer.Option("--unified", "-u", help="Unified diff instead of side by side.")
    ] = False,
    context: Annotated[int, typer.Option("--context", "-C", min=0)] = 2,
    prompt: Annotated[
        bool, typer.Option("--prompt/--no-prompt", help="Include the rendered system prompt.")
    ] = True,
    width: Annotated[int | None, typer.Option("--width", help="Table width (columns).")] = None,
    bank_dir: BankDirOpt = None,
    bank_only: BankOnlyOpt = False,
    tasks: TaskFileOpt = None,
    trust: TrustOpt = False,
) -> None:
    """Show one variant: per-component harness diff, gold trajectory before/after the remap,
    transforms applied / skipped / dropped. With --tasks, the task comes from a task file and
    its gold runs through the harness's own tools (--trust lets a folder's code run)."""
    from core.hsa.augment import AugmentError, augment_variant
    from core.hsa.preview import component_diffs, renamed_paths, trajectory_lines

    chosen = _policy(policy, strength, dimension)
    bank = _bank(chosen, bank_dir, bank_only)
    base = _harness(harness, trust)
    if tasks is not None:
        the_task, gold = _own_gold(tasks, task, seed, base)
    else:
        from core.episode.gold import gold_trajectory
        from core.sim.catalog import load_catalog

        if not any(t.binding.startswith("sim.") for t in base.active_tools):
            fail(
                f"{base.name} binds no live-room tool, so the live room's tasks do not belong to "
                "it; give its own tasks with --tasks FILE (a task file, docs/task-files.md)"
            )
        the_task = _task(task, seed)
        gold = asyncio.run(gold_trajectory(the_task, base, load_catalog(), add_distractors=False))
    try:
        result = augment_variant(base, gold, chosen, seed, bank=bank)
    except AugmentError as exc:
        fail(str(exc))
    _summary(result)
    renames = renamed_paths(base, result.variant.chain)
    diffs = component_diffs(base, result.harness, renames=renames, system_prompt=prompt)
    console.print(f"\n[bold]harness[/bold]: {len(diffs)} component(s) changed")
    for diff in diffs:
        where = f"{diff.old_path} -> {diff.path}" if diff.old_path else diff.path
        console.rule(f"{diff.change.value} {diff.kind}: {where}")
        _print_diff(
            diff.before, diff.after, diff.path, unified=unified, context=context, width=width
        )
    console.rule(f"gold trajectory: {the_task.id} ({gold.status.value})")
    before, after = trajectory_lines(gold.trajectory), trajectory_lines(result.trajectory)
    if before == after:
        console.print("(unchanged: the variant renames nothing the trajectory names)")
        for line in before:
            console.print(Text(line))
    else:
        _print_diff(before, after, "trajectory", unified=unified, context=10**6, width=width)


# ----------------------------------------------------------------------------- sample


@app.command()
def sample(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the variant folders.")],
    count: Annotated[int, typer.Option("-n", "--count", min=1, help="Variants to write.")] = 10,
    seed: Annotated[int, typer.Option("--seed", help="First seed; variant i uses seed + i.")] = 0,
    policy: PolicyOpt = "train",
    strength: StrengthOpt = "medium",
    harness: HarnessOpt = None,
    dimension: DimsOpt = None,
    bank_dir: BankDirOpt = None,
    bank_only: BankOnlyOpt = False,
) -> None:
    """Write K variant harness folders (variant-0001, …) and manifest.json (seeds and
    transforms of each)."""
    from core.hsa.policy import sample_variant

    chosen = _policy(policy, strength, dimension)
    bank = _bank(chosen, bank_dir, bank_only)
    base = _harness(harness)
    if out.exists() and any(out.iterdir()):
        fail(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    width = max(4, len(str(count)))
    entries = []
    for i in range(count):
        variant = sample_variant(base, chosen, seed + i, bank=bank)
        folder = f"variant-{i + 1:0{width}d}"
        export_folder(variant.harness, out / folder)
        entries.append({"folder": folder, **variant.record()})
    manifest = {
        "harness": base.name,
        "policy": chosen.to_dict(),
        "bank_dir": str(bank_dir) if bank_dir is not None else None,
        "bank_only": bank_only,
        "count": count,
        "seeds": [seed + i for i in range(count)],
        "variants": entries,
    }
    (out / "manifest.json").write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    console.print(
        f"wrote {count} variant(s) of {esc(base.name)} ({esc(chosen.label)}) to {esc(out)}"
    )


@app.command("transforms")
def list_transforms() -> None:
    """List the registered transforms by dimension."""
    from core.hsa.transform import transforms

    table = Table("dimension", "transform", "what it does")
    for t in transforms():
        table.add_row(t.dimension.value, cell(t.name), cell(t.doc.splitlines()[0] if t.doc else ""))
    console.print(table)
