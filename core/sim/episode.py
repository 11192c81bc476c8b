"""Playing one task: harness variant + live room + the agent loop + the graders, in one place.

    episode = await play(task, harness, client, catalog, surface=surface)
    episodes = await play_all(jobs, concurrency=16)      # many at once, results in job order

Evaluation (core/eval/runner.py), teacher data (core/datagen), the RL environment's gold
trajectories and rewards (core/train/rl_env.py), the oracle's own play (core/sim/oracle.py) and
the latency bench (core/serving/bench.py) all play tasks through `play`, so every caller gets
the same room, the same canonical-name bindings, the same grading and the same fast path: a
fresh `LiveRoom` per episode (faults seeded by the task), no shared state between episodes, so
`play_all` can keep `concurrency` episodes in flight against one batched server.

Why this lives in core/sim and not core/runtime: an episode is the agent loop *in the live
room*; the loop itself (core/runtime) knows nothing of rooms, tasks or grades.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.harness.models import Harness
from core.runtime.client import ChatClient
from core.runtime.loop import AgentLoop, EventCallback
from core.runtime.trace import Trace
from core.sim.faults import FaultRates
from core.sim.graders import Grades, grade
from core.sim.models import Catalog, Task
from core.sim.room import LiveRoom
from core.sim.surface import HarnessSurface


@dataclass
class Episode:
    """One played task: the harness it ran under, its trace and (when graded) its grades."""

    task: Task
    harness: Harness
    surface: HarnessSurface
    trace: Trace
    grades: Grades | None


async def play(
    task: Task,
    harness: Harness,
    client: ChatClient,
    catalog: Catalog,
    *,
    surface: HarnessSurface | None = None,
    fault_rates: FaultRates | None = None,
    request_id: str | None = None,
    on_event: EventCallback | None = None,
    graded: bool = True,
) -> Episode:
    """Play `task` once under `harness` (already the variant to play, distractors included)
    with `client` as the model, in a fresh live room; grade the trace unless `graded` is
    False. `surface` maps canonical names to the harness's (HSA variants); default: the
    harness's own names."""
    from core.sim.oracle import room_bindings

    surface = surface if surface is not None else HarnessSurface(harness, {}, {}, {})
    room = LiveRoom.for_task(task, catalog, fault_rates=fault_rates)
    loop = AgentLoop(harness, client, room_bindings(room, surface))
    trace = await loop.run(task.viewer_message, request_id=request_id, on_event=on_event)
    grades = grade(task, trace, harness, catalog, surface=surface) if graded else None
    return Episode(task, harness, surface, trace, grades)


async def play_all(
    jobs: Sequence[Callable[[], Awaitable[Any]]], *, concurrency: int = 1
) -> list[Any]:
    """Run `jobs` (zero-argument coroutine functions, typically wrapping `play`) with at most
    `concurrency` in flight; results in job order. An exception in one job is returned in its
    place, never raised, so one bad item cannot end a batch."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[Any]]) -> Any:
        async with gate:
            try:
                return await job()
            except Exception as exc:  # returned to the caller, see the docstring
                return exc

    return list(await asyncio.gather(*(one(j) for j in jobs)))
