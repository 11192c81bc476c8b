"""The replication in a task-file world: which of the file's tasks each step uses.

A `world: task-file` profile (core/experiment/profiles.py) names an operator's harness, its
task file and an edited harness. The replication (core/experiment/replicate.py) then builds
its data from the file's train split, plays HSA-RL on train tasks written out as a task file
of their own, and evaluates the file's test split (`tasks` and `hv-tasks` suites). This module
picks those tasks; nothing here plays them.

    tasks = read_tasks(path)                                  # every task, errors name the line
    chosen = pick_per_category(split(tasks, "train"), 30, seed=0)
    write_tasks(chosen, run_folder / "data" / "rl-tasks.jsonl")
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path

from core.taskfile.models import (
    OwnTask,
    TaskFileError,
    TaskSplit,
    check_against_harness,
    load_task_file,
    task_split,
)


class TaskWorldError(ValueError):
    """The task file cannot drive a replication; the message names the file and why."""


def read_tasks(path: Path) -> list[OwnTask]:
    try:
        return load_task_file(path)
    except TaskFileError as exc:
        raise TaskWorldError(str(exc)) from None


def split(tasks: Sequence[OwnTask], which: str) -> list[OwnTask]:
    return task_split(tasks, TaskSplit(which))


def check_task_file(path: Path, tool_names: set[str], skill_names: set[str]) -> dict[str, int]:
    """{split: task count} of a task file fit for a replication: it has train and test
    tasks, its gold names only the harness's tools and skills, and no test task needs an LLM
    judge (the replication runs none). TaskWorldError listing what is wrong otherwise."""

    tasks = read_tasks(path)
    counts = {s.value: len(split(tasks, s.value)) for s in TaskSplit}
    problems = [f"no task has split {s}" for s, n in counts.items() if n == 0]
    problems += check_against_harness(tasks, tool_names, skill_names)
    judged = [t.id for t in split(tasks, "test") if t.needs_judge]
    if judged:
        shown = ", ".join(judged[:5]) + (f" and {len(judged) - 5} more" if len(judged) > 5 else "")
        problems.append(
            f"test tasks {shown} have only a reference answer; the replication runs no LLM "
            "judge, so give them facts"
        )
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise TaskWorldError(f"{path}: " + "; ".join(problems[:5]) + more)
    return counts


def pick_per_category(tasks: Sequence[OwnTask], per_category: int, *, seed: int) -> list[OwnTask]:
    """At most `per_category` tasks of each category, drawn with `seed` (all of a category
    that has fewer), taken round-robin over the categories in order of first appearance, so
    the first tasks of the list (RL's first groups) span every category."""
    by_category: dict[str, list[OwnTask]] = {}
    for task in tasks:
        by_category.setdefault(task.category, []).append(task)
    rng = random.Random(seed)
    picked: list[list[OwnTask]] = []
    for members in by_category.values():
        if len(members) > per_category:
            chosen = set(rng.sample(range(len(members)), per_category))
            members = [t for i, t in enumerate(members) if i in chosen]
        picked.append(members)
    return [t for row in zip_longest(*picked) for t in row if t is not None]


def write_tasks(tasks: Sequence[OwnTask], path: Path) -> Path:
    """`tasks` as a task file (one JSON line each, defaults left out): what RlConfig.tasks
    reads back as the same tasks."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [t.model_dump_json(exclude_defaults=True) for t in tasks]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
