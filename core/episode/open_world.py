"""Opening the world a command plays in, from what the command was given.

A command knows its world from its task source, not from the tasks' types: a task file
(core/taskfile/sources.py `source_is_task_file`) plays in a `TaskFileWorld` over the harness's
own tools, everything else in the `LiveRoomWorld`. The task-file world needs its tools open
for the whole run (MCP servers started once, shared by the episodes in flight), so this is an
async context manager; a harness whose bindings the runtime cannot run is refused before
anything starts, naming each binding.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from core.episode.live_room import LiveRoomWorld
from core.episode.task_file import TaskFileWorld
from core.episode.world import World
from core.harness.models import Harness
from core.runtime.tool_runtime import ToolRuntime, binding_problems

if TYPE_CHECKING:
    from core.sim.faults import FaultRates
    from core.sim.judge import LLMJudge
    from core.sim.models import Catalog


class WorldUnavailable(ValueError):
    """The world cannot open (a binding the runtime cannot run); the message lists why."""


@asynccontextmanager
async def open_world(
    harness: Harness,
    *,
    task_file: bool,
    catalog: Catalog | None = None,
    judge: LLMJudge | None = None,
    fault_rates: FaultRates | None = None,
) -> AsyncIterator[World[Any]]:
    """The task-file world of `harness` (its tools open until the block ends) when
    `task_file`, else the live room of `catalog`."""
    if not task_file:
        yield LiveRoomWorld(catalog, fault_rates=fault_rates)
        return

    problems = binding_problems(harness)
    if problems:
        listed = "; ".join(p.message for p in problems)
        raise WorldUnavailable(f"the harness has bindings the runtime cannot run: {listed}")
    async with ToolRuntime(harness) as tools:
        yield TaskFileWorld(harness, tools, judge=judge)


async def chat_world(
    harness: Harness,
    stack: AsyncExitStack,
    *,
    catalog: Catalog | None = None,
    seed: int = 0,
) -> World[Any]:
    """The world a chat request plays in, its tools open on `stack` (an MCP session must not
    outlive the loop it was opened on, so a chat opens one per request): the live room when
    the harness binds simulator tools (its own tools bound beside the room's), else the
    harness's own world. `seed`: the room a free chat request runs in."""

    tools = None
    if any(not t.binding.startswith(("sim.", "hsa.")) for t in harness.active_tools):
        tools = await stack.enter_async_context(ToolRuntime(harness))
    if any(t.binding.startswith("sim.") for t in harness.active_tools):
        return LiveRoomWorld(catalog, tools=tools, chat_seed=seed)
    return TaskFileWorld(harness, tools)
