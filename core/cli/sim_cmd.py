"""`hat sim`: the live-room simulator's task suites.

    hat sim tasks --split test --stats            per-category counts of the test split
    hat sim tasks --suite robustness --out r.jsonl
    hat sim tasks --split train --seed 7 --per-category 200 --out train.jsonl

Output files are byte-reproducible from (split or suite, seed, per-category).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from core.cli.common import console, describe_os_error, esc, fail
from core.sim.models import IntentKind, TaskCategory

app = typer.Typer(help="Live-room simulator: catalog and task suites.", no_args_is_help=True)


@app.command("tasks")
def tasks_cmd(
    split: Annotated[str, typer.Option("--split", help="train | dev | test")] = "test",
    suite: Annotated[
        str | None,
        typer.Option("--suite", help="ls-qa | robustness (test split; overrides --split)"),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Generation seed (the splits do not depend on it).")
    ] = 0,
    per_category: Annotated[
        int | None,
        typer.Option("--per-category", min=1, help="Tasks per category (default 150/20/45)."),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the tasks as JSONL.")] = None,
    stats: Annotated[bool, typer.Option("--stats", help="Print per-category counts.")] = False,
) -> None:
    """Generate viewer tasks of a split or suite; print counts and/or write JSONL."""
    from core.sim.catalog import CatalogError
    from core.sim.models import Split
    from core.sim.tasks import (
        SUITES,
        build_suite,
        category_counts,
        generate_tasks,
        robustness_tasks,
        write_tasks,
    )

    try:
        if suite is not None:
            if suite not in SUITES:
                fail(f"unknown suite {suite!r}; choose one of: {', '.join(SUITES)}")
            if per_category is None:
                tasks = build_suite(suite, seed=seed)
            else:
                tasks = generate_tasks(Split.TEST, seed=seed, per_category=per_category)
                if suite == "robustness":
                    tasks = robustness_tasks(tasks, seed=seed)
            label = f"suite {suite}"
        else:
            try:
                chosen = Split(split)
            except ValueError:
                fail(f"unknown split {split!r}; choose one of: train, dev, test")
            tasks = generate_tasks(chosen, seed=seed, per_category=per_category)
            label = f"split {chosen.value}"
    except (CatalogError, ValueError) as exc:
        fail(str(exc))

    if out is not None:
        try:
            path = write_tasks(tasks, out)
        except OSError as exc:
            fail(f"cannot write {out}: {describe_os_error(exc)}")
        console.print(f"wrote {len(tasks)} tasks ({esc(label)}, seed {seed}) to {esc(path)}")
    if stats or out is None:
        counts = category_counts(tasks)
        templates = Counter((t.category, t.template_id) for t in tasks)
        products: dict[TaskCategory, set[int]] = defaultdict(set)
        for t in tasks:
            for intent in t.intents:
                if intent.link_no is not None:
                    products[t.category].add(intent.link_no)
                products[t.category].update(intent.link_nos)
                pinned = intent.link_no is None and intent.kind is not IntentKind.CHIT_CHAT
                if pinned and t.room.pinned_link is not None:
                    products[t.category].add(t.room.pinned_link)
        faults = Counter(f.kind.value for t in tasks for f in t.faults)
        table = Table(title=f"{label}, seed {seed}: {len(tasks)} tasks")
        table.add_column("category")
        table.add_column("tasks", justify="right")
        table.add_column("templates", justify="right")
        table.add_column("products", justify="right")
        for category, n in counts.items():
            used = sum(1 for (c, _) in templates if c is category)
            table.add_row(category.value, str(n), str(used), str(len(products.get(category, ()))))
        table.add_row("total", str(len(tasks)), str(len(templates)), "", style="bold")
        console.print(table)
        if faults:
            detail = ", ".join(f"{k} {v}" for k, v in sorted(faults.items()))
            distractors = sum(1 for t in tasks if t.distractor_tools > 0)
            console.print(f"faults: {detail}; tasks with distractor tools: {distractors}")
