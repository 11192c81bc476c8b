"""Playing one task: harness variant + live room + the agent loop + the graders, in one place.

    episode = await play(task, harness, client, catalog, surface=surface)
    episodes = await play_all(jobs, concurrency=16)      # many at once, results in job order

Evaluation (core/eval/items.py), teacher data (core/datagen), the RL environment's rewards
(core/train/rl_env.py), the gold runs (core/episode/gold.py) and the latency bench
(core/serving/bench.py) all play tasks through `play`, so every caller gets
the same room, the same canonical-name bindings, the same grading and the same fast path: a
fresh `LiveRoom` per episode (faults seeded by the task), no shared state between episodes, so
`play_all` can keep `concurrency` episodes in flight against one batched server.

A task-file task (core/taskfile) plays the same way in another world: the harness's own tool
bindings (Python callables, MCP servers, HTTP endpoints, through the run's `ToolRuntime`) and
HSA's distractor bindings instead of the live room, graded by `core.taskfile.grading` (facts,
gold calls by binding, skills by role, grounded numbers; a judge for reference answers).

Why this is a package of its own, above core/sim, core/taskfile and core/hsa: an episode is the
agent loop *in a world* (the live room, or the harness's own tools) with that world's grades;
the loop itself (core/runtime) knows nothing of rooms, tasks or grades, and the worlds know
nothing of each other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.harness.models import Harness
from core.runtime.bindings import Bindings
from core.runtime.client import ChatClient
from core.runtime.loop import AgentLoop, EventCallback
from core.runtime.trace import Trace
from core.sim.faults import FaultRates
from core.sim.graders import Grades, grade
from core.sim.models import Catalog, Task
from core.sim.room import LiveRoom
from core.sim.surface import HarnessSurface
from core.taskfile.models import OwnTask

if TYPE_CHECKING:
    from core.runtime.tool_runtime import ToolRuntime
    from core.sim.judge import LLMJudge


@dataclass
class Episode:
    """One played task: the harness it ran under, its trace and (when graded) its grades."""

    task: Task | OwnTask
    harness: Harness
    surface: HarnessSurface
    trace: Trace
    grades: Grades | None


async def play(
    task: Task | OwnTask,
    harness: Harness,
    client: ChatClient,
    catalog: Catalog | None = None,
    *,
    surface: HarnessSurface | None = None,
    fault_rates: FaultRates | None = None,
    request_id: str | None = None,
    on_event: EventCallback | None = None,
    graded: bool = True,
    tools: ToolRuntime | None = None,
    original: Harness | None = None,
    judge: LLMJudge | None = None,
) -> Episode:
    """Play `task` once under `harness` (already the variant to play, distractors included)
    with `client` as the model; grade the trace unless `graded` is False.

    A live-room task plays in a fresh live room of `catalog`; `surface` maps canonical names
    to the harness's (HSA variants; default: the harness's own names). A task-file task plays
    against `tools` (the run's ToolRuntime; None: only HSA distractors are bound), graded in
    the names of `original` (the harness the task file was written for; default `harness`),
    with `judge` for tasks that give only a reference answer."""
    if isinstance(task, OwnTask):
        return await _play_own(
            task,
            harness,
            client,
            tools=tools,
            original=original,
            judge=judge,
            request_id=request_id,
            on_event=on_event,
            graded=graded,
        )
    from core.sim.oracle import room_bindings

    if catalog is None:
        raise ValueError("a live-room task needs the catalog")

    surface = surface if surface is not None else HarnessSurface(harness, {}, {}, {})
    room = LiveRoom.for_task(task, catalog, fault_rates=fault_rates)
    loop = AgentLoop(harness, client, room_bindings(room, surface))
    trace = await loop.run(task.viewer_message, request_id=request_id, on_event=on_event)
    grades = grade(task, trace, harness, catalog, surface=surface) if graded else None
    return Episode(task, harness, surface, trace, grades)


def own_bindings(
    harness: Harness, tools: ToolRuntime | None, bindings: Bindings | None = None
) -> Bindings:
    """What a loop under `harness` can call besides the live room: the run's tools and HSA's
    distractors, registered on `bindings` (default: new ones)."""
    bindings = bindings if bindings is not None else Bindings()
    if tools is not None:
        tools.register(bindings)
    from core.hsa.distractors import register_distractors

    register_distractors(bindings, harness)
    return bindings


async def _play_own(
    task: OwnTask,
    harness: Harness,
    client: ChatClient,
    *,
    tools: ToolRuntime | None,
    original: Harness | None,
    judge: LLMJudge | None,
    request_id: str | None,
    on_event: EventCallback | None,
    graded: bool,
) -> Episode:
    from core.taskfile.grading import grade_own
    from core.taskfile.judge import judge_reference

    loop = AgentLoop(harness, client, own_bindings(harness, tools))
    history = [turn.model_dump() for turn in task.history]
    trace = await loop.run(
        task.message,
        history=history,
        context={"task": dict(task.context), "task_id": task.id},
        request_id=request_id,
        on_event=on_event,
    )
    grades = None
    if graded:
        judged = None
        if task.needs_judge and judge is not None and trace.ok:
            judged = await judge_reference(judge, task, (trace.final_reply or "").strip())
        grades = grade_own(task, trace, harness, written_for=original, judged=judged)
    surface = HarnessSurface(harness, {}, {}, {})
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
