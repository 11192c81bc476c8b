"""Viewer messages for the chat: presets from the task generator, a live-room replay schedule,
and the simulated room each message is answered in.

    presets = viewer_presets(per_category=2)                 # dev split, every category
    stream = live_stream(12, seed=3)                         # a shuffled stream of messages
    replay = ReplaySchedule(stream, pace_s=4.0)
    replay.start(now)
    replay.arrived(now)          # messages whose time has come, now waiting in the queue
    item = replay.take(now)      # the next one to answer (FIFO), with how long it waited
    replay.answered()            # the host finished it

Messages come from the dev split (the chat is for trying things out: the test split stays for
evaluation), each with its task, so a preset is answered in that task's room (pinned product,
promotions, coupons, clock) and what the host says can be checked against it. A free-typed
message is answered in the room of the last preset, or of the first dev task.

The replay is a live room: messages arrive every `pace_s` seconds whether or not the host has
finished the previous one, and wait in a queue; the host answers one at a time, in arrival
order. `pace_s = 0` delivers the whole stream at once (back-to-back answering). The schedule
is plain arithmetic on the times it is given, so it is tested without a clock.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from functools import cache

from core.sim.models import Split, Task, TaskCategory
from core.sim.tasks import generate_tasks

CATEGORY_TITLES = {
    TaskCategory.PRICE: "price",
    TaskCategory.SPEC: "spec",
    TaskCategory.STOCK: "stock",
    TaskCategory.COUPON: "coupon",
    TaskCategory.SHIPPING: "shipping",
    TaskCategory.SIZE_ADVICE: "size advice",
    TaskCategory.COMPARISON: "comparison",
    TaskCategory.CHIT_CHAT: "chit-chat",
    TaskCategory.PURCHASE_INTENT: "purchase",
    TaskCategory.AFTER_SALES: "after-sales",
    TaskCategory.MULTI_INTENT: "multi-intent",
    TaskCategory.ADVERSARIAL: "adversarial",
}


@dataclass(frozen=True)
class ViewerPreset:
    """A viewer message and the task it comes from."""

    task: Task

    @property
    def message(self) -> str:
        return self.task.viewer_message

    @property
    def category(self) -> str:
        return CATEGORY_TITLES.get(self.task.category, self.task.category.value)

    @property
    def task_id(self) -> str:
        return self.task.id


@cache
def _tasks(split: Split, seed: int, per_category: int) -> tuple[Task, ...]:
    return tuple(generate_tasks(split, seed=seed, per_category=per_category))


def viewer_presets(
    *, per_category: int = 2, seed: int = 0, split: Split = Split.DEV
) -> list[ViewerPreset]:
    """`per_category` messages of every category, interleaved (one of each category, then the
    next of each), so the first screenful shows every kind of question."""
    if per_category < 1:
        raise ValueError("per_category must be at least 1")
    tasks = _tasks(split, seed, per_category)
    by_category: dict[TaskCategory, list[Task]] = {}
    for task in tasks:
        by_category.setdefault(task.category, []).append(task)
    out: list[ViewerPreset] = []
    for i in range(per_category):
        for category_tasks in by_category.values():
            if i < len(category_tasks):
                out.append(ViewerPreset(category_tasks[i]))
    return out


def live_stream(count: int, *, seed: int = 0, split: Split = Split.DEV) -> list[ViewerPreset]:
    """`count` viewer messages in a shuffled order (deterministic in `seed`)."""
    if count < 1:
        raise ValueError("a live stream needs at least one message")
    per_category = max(1, -(-count // len(TaskCategory)))
    pool = [ViewerPreset(t) for t in _tasks(split, seed, per_category)]
    random.Random(f"live:{seed}").shuffle(pool)
    return pool[:count]


# ----------------------------------------------------------------------------- replay


@dataclass(frozen=True)
class Arrival:
    """A message of the stream: its position, when it arrived and (once taken) how long it
    waited for the host."""

    index: int
    preset: ViewerPreset
    arrived_s: float
    waited_s: float = 0.0


class ReplaySchedule:
    """Arrivals every `pace_s` seconds into a FIFO queue; the host answers one at a time."""

    def __init__(self, presets: list[ViewerPreset], pace_s: float) -> None:
        if pace_s < 0:
            raise ValueError("the pace cannot be negative")
        if not presets:
            raise ValueError("nothing to replay")
        self.presets = list(presets)
        self.pace_s = float(pace_s)
        self.started_s: float | None = None
        self.next_index = 0
        self.queue: deque[Arrival] = deque()
        self.current: Arrival | None = None
        self.done_count = 0
        self.stopped = False

    @property
    def total(self) -> int:
        return len(self.presets)

    @property
    def waiting(self) -> int:
        return len(self.queue)

    @property
    def busy(self) -> bool:
        return self.current is not None

    @property
    def finished(self) -> bool:
        return self.stopped or (
            self.next_index >= self.total and not self.queue and self.current is None
        )

    def start(self, now: float) -> None:
        self.started_s = now

    def arrival_time(self, index: int) -> float:
        if self.started_s is None:
            raise RuntimeError("the replay has not started")
        return self.started_s + index * self.pace_s

    def arrived(self, now: float) -> list[Arrival]:
        """Move every message whose arrival time has come into the queue; returns them."""
        out: list[Arrival] = []
        if self.stopped or self.started_s is None:
            return out
        while self.next_index < self.total and self.arrival_time(self.next_index) <= now:
            arrival = Arrival(
                self.next_index,
                self.presets[self.next_index],
                self.arrival_time(self.next_index),
            )
            self.queue.append(arrival)
            out.append(arrival)
            self.next_index += 1
        return out

    def seconds_to_next(self, now: float) -> float | None:
        """Seconds until the next arrival (0 when overdue), None when all have arrived."""
        if self.stopped or self.started_s is None or self.next_index >= self.total:
            return None
        return max(0.0, self.arrival_time(self.next_index) - now)

    def take(self, now: float) -> Arrival | None:
        """The next message to answer, when the host is free and one is waiting."""
        if self.current is not None or not self.queue or self.stopped:
            return None
        head = self.queue.popleft()
        self.current = Arrival(
            head.index, head.preset, head.arrived_s, max(0.0, now - head.arrived_s)
        )
        return self.current

    def answered(self) -> None:
        """The host finished the current message (whatever the outcome)."""
        if self.current is not None:
            self.current = None
            self.done_count += 1

    def stop(self) -> None:
        """No more arrivals; the waiting messages are dropped (the current one may finish)."""
        self.stopped = True
        self.queue.clear()
