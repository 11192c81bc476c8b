"""The Data page's task browser: the simulator's tasks by split or suite, filtered, described,
and played by the oracle (the gold behaviour) under the harness being edited.

Task lists come from the seeded generator (`core.sim.tasks`), the same one training data and
evaluation use, so what the page lists is exactly what `hat data generate --tasks <source>`
and `hat eval run --suite <suite>` run.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from core.harness import Harness
from core.sim.models import Task
from studio.logic.data_turns import TurnItem, turns_from_trace

SOURCES: tuple[tuple[str, str], ...] = (
    ("train", "Train split"),
    ("dev", "Dev split"),
    ("test", "Test split"),
    ("ls-qa", "Live-Stream QA suite"),
    ("robustness", "Robustness suite"),
)
SPLIT_SOURCES = ("train", "dev", "test")


def category_label(category: str) -> str:
    return category.replace("_", " ")


@lru_cache(maxsize=8)
def load_tasks(source: str, seed: int = 0, per_category: int | None = None) -> tuple[Task, ...]:
    """Every task of a split (generated with `seed`) or of a bundled suite."""
    from core.taskfile.sources import load_live_source

    if source not in {k for k, _ in SOURCES}:
        known = ", ".join(k for k, _ in SOURCES)
        raise ValueError(f"unknown task source {source!r}; use one of {known}")
    return tuple(load_live_source(source, seed=seed, per_category=per_category))


@dataclass(frozen=True)
class TaskFilter:
    category: str = ""
    """'' = every category."""
    text: str = ""
    """Case-insensitive match on the id, the viewer message or the template."""
    faults_only: bool = False


def filter_tasks(tasks: tuple[Task, ...] | list[Task], f: TaskFilter) -> list[Task]:
    needle = f.text.strip().lower()
    out = []
    for task in tasks:
        if f.category and task.category.value != f.category:
            continue
        if f.faults_only and not task.faults and not task.distractor_tools:
            continue
        if needle and not (
            needle in task.id.lower()
            or needle in task.viewer_message.lower()
            or needle in task.template_id.lower()
        ):
            continue
        out.append(task)
    return out


def category_counts(tasks: tuple[Task, ...] | list[Task]) -> list[tuple[str, int]]:
    """(category, count) in the generator's category order, zero counts left out."""
    from core.sim.tasks import CATEGORIES

    counts = Counter(t.category.value for t in tasks)
    return [(c.value, counts[c.value]) for c in CATEGORIES if counts[c.value]]


def intent_text(task: Task) -> str:
    """The intents in a line: `price(link 7) + coupon(pinned)`."""
    parts = []
    for intent in task.intents:
        bits: list[str] = []
        if intent.link_nos:
            bits.append("links " + ", ".join(str(n) for n in intent.link_nos))
        elif intent.link_no is not None:
            bits.append(f"link {intent.link_no}")
        elif intent.kind.value not in ("chit_chat",):
            bits.append("pinned")
        for name in ("size", "color", "region", "topic", "spec_key", "claim"):
            value = getattr(intent, name)
            if value:
                bits.append(str(value))
        if intent.height_cm is not None:
            bits.append(f"{intent.height_cm} cm / {intent.weight_kg} kg")
        parts.append(f"{category_label(intent.kind.value)}({', '.join(bits)})")
    return " + ".join(parts)


def conditions_text(task: Task) -> str:
    """Faults and distractors in a line ('' when the task runs clean)."""
    bits = [f"{f.kind.value} on {f.binding.removeprefix('sim.')}" for f in task.faults]
    if task.distractor_tools:
        n = task.distractor_tools
        bits.append(f"{n} distractor tool{'s' if n != 1 else ''}")
    return "; ".join(bits)


def task_facts(task: Task) -> list[tuple[str, str]]:
    """(label, value) lines describing a task, for the detail panel."""
    room = task.room
    facts = [
        ("Task", task.id),
        ("Split", task.split.value),
        ("Category", category_label(task.category.value)),
        ("Template", task.template_id),
        ("Intents", intent_text(task)),
        ("Pinned", f"link {room.pinned_link}" if room.pinned_link is not None else "nothing"),
        ("Clock", room.clock.replace("T", " ").replace("+00:00", " UTC")),
    ]
    if room.promotions:
        facts.append(("Promotions", "; ".join(p.name for p in room.promotions)))
    if room.room_coupons:
        facts.append(
            (
                "Room coupons",
                "; ".join(
                    f"{c.code} ({c.amount:g} off {c.threshold:g}, "
                    f"until {c.expires[5:16].replace('T', ' ')})"
                    for c in room.room_coupons
                ),
            )
        )
    conditions = conditions_text(task)
    if conditions:
        facts.append(("Conditions", conditions))
    facts.append(("Seed", str(task.seed)))
    return facts


@dataclass
class GoldView:
    """The oracle's play of one task under one harness, graded."""

    task_id: str
    turns: list[TurnItem] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    problem: str = ""
    e2e_ms: float = 0.0


def gold_view(task: Task, harness: Harness) -> GoldView:
    """Play `task` with the oracle under `harness` and grade it. Never raises: a harness the
    oracle cannot play (an author renamed what the simulator relies on) gives `problem`."""
    from core.episode.gold import gold_trajectory
    from core.sim.catalog import load_catalog
    from core.sim.graders import grade
    from core.sim.oracle import task_harness

    try:
        catalog = load_catalog()
        trace = asyncio.run(gold_trajectory(task, harness, catalog))
        grades = grade(task, trace, task_harness(task, harness), catalog)
    except Exception as exc:  # shown in the panel, never a traceback
        return GoldView(task.id, problem=f"{type(exc).__name__}: {exc}")
    scores = grades.scores()
    reasons: dict[str, list[str]] = {name: list(getattr(grades, name).reasons) for name in scores}
    return GoldView(task.id, turns_from_trace(trace), scores, reasons, e2e_ms=trace.e2e_s * 1000)


def task_row(task: Task) -> dict[str, Any]:
    """What the task table shows for one task."""
    return {
        "id": task.id,
        "category": category_label(task.category.value),
        "message": task.viewer_message,
        "intents": intent_text(task),
        "conditions": conditions_text(task),
        "task": task,
    }
