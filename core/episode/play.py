"""Playing one task: a harness variant, a world, the agent loop and the world's grades.

    world = LiveRoomWorld(catalog)                 # or TaskFileWorld(harness, tools)
    episode = await play(task, harness, client, world, surface=surface)
    episodes = await play_all(jobs, concurrency=16)      # many at once, results in job order

Evaluation (core/eval/items.py), teacher data (core/datagen), the RL environment's rewards
(core/train/rl_env.py), the gold runs (core/episode/gold.py), chat (core/serving/chat.py via
the world's bindings) and the latency bench (core/serving/bench.py) all play tasks through
`play`, so every caller gets the same loop, the same per-episode bindings (fresh world
state: a new live room, the harness's own tools), the same grading and the same fast path: no
shared state between episodes, so `play_all` can keep `concurrency` episodes in flight
against one batched server.

Why this is a package of its own, above core/sim, core/taskfile and core/hsa: an episode is the
agent loop *in a world* (core/episode/world.py) with that world's grades; the loop itself
(core/runtime) knows nothing of rooms, tasks or grades, and the worlds know nothing of each
other. `play` never asks what kind of task it holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from core.episode.world import Request, World
from core.harness.models import Harness
from core.runtime.client import ChatClient
from core.runtime.loop import AgentLoop, EventCallback
from core.runtime.trace import ToolCallStep, Trace
from core.sim.graders import Grades
from core.sim.surface import HarnessSurface


@dataclass
class Episode:
    """One played task: the harness it ran under, its trace and (when graded) its grades."""

    task: Any
    harness: Harness
    surface: HarnessSurface
    trace: Trace
    grades: Grades | None
    request: Request | None = None
    """What the episode asked (with the world's state after the run, where it has state)."""


async def play(
    task: Any,
    harness: Harness,
    client: ChatClient,
    world: World[Any],
    *,
    surface: HarnessSurface | None = None,
    request_id: str | None = None,
    on_event: EventCallback | None = None,
    graded: bool = True,
    retry_crashed: bool = False,
) -> Episode:
    """Play `task` once in `world` under `harness` (already the variant to play, the task's
    distractors included: `world.harness_for`) with `client` as the model; grade the trace
    unless `graded` is False. `surface` reads the harness in canonical names (HSA variants
    with explicit renames; default: the harness's own names).

    `retry_crashed`: when a tool crashed in the run (an MCP server that died mid-call, a
    binding that raised: `ToolCallStep.crashed`), play the episode once more from the start
    (fresh bindings; a dead MCP server restarts on its next call) and keep the second run.
    A client with a `rewind()` (a scripted gold) is rewound before the second run."""
    surface = surface if surface is not None else HarnessSurface(harness, {}, {}, {})
    for attempt in range(2 if retry_crashed else 1):
        if attempt:
            rewind = getattr(client, "rewind", None)
            if rewind is not None:
                rewind()
        loop = AgentLoop(harness, client, world.bindings(task, harness, surface))
        request = world.request(task)
        trace = await loop.run(
            request.message,
            history=request.history or None,
            context=request.context or None,
            request_id=request_id if attempt == 0 else f"{request_id or 'episode'}-retry",
            on_event=on_event,
        )
        if not any(step.crashed for step in trace.steps_of(ToolCallStep)):
            break
    grades = await world.grade(task, trace, harness, surface, request) if graded else None
    return Episode(task, harness, surface, trace, grades, request)


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
