"""Gold runs: a task played by the agent that knows the answer, through the real loop.

A live-room task's gold is the oracle's play (core/sim/oracle.py writes the turns); a
task-file task's gold is the file's own calls and answer (core/taskfile/gold.py writes them).
Both are a World's `gold_trace` (core/episode/world.py), played through `core.episode.play`,
ungraded, so the trace holds what the real loop, hooks and tools did with those turns: the
gold trajectory HSA builds variants from and verifies them against, the teacher rows of `hat
data generate --teacher oracle`, and the ceiling of an evaluation run with `--oracle`. The
functions here are the short forms most callers want.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from core.episode.live_room import LiveRoomWorld
from core.episode.play import play
from core.episode.task_file import TaskFileWorld
from core.harness.models import Harness
from core.runtime.trace import Trace
from core.sim.models import Catalog, Task
from core.sim.oracle import OracleClient, task_harness
from core.sim.surface import ParamNames, ParamValues
from core.taskfile.models import OwnTask

if TYPE_CHECKING:
    from core.runtime.tool_runtime import ToolRuntime


async def gold_trajectory(
    task: Task,
    harness: Harness,
    catalog: Catalog,
    *,
    skill_roles: Mapping[str, str] | None = None,
    param_names: ParamNames | None = None,
    param_values: ParamValues | None = None,
    add_distractors: bool = True,
) -> Trace:
    """The oracle's play of the live-room `task` in a fresh LiveRoom (with the task's
    distractor tools unless `add_distractors` is False); the trace. The mappings describe a
    harness renamed without `binding_args` (core/sim/surface.py)."""

    if add_distractors:
        harness = task_harness(task, harness)
    client = OracleClient(
        task,
        harness,
        catalog,
        skill_roles=skill_roles,
        param_names=param_names,
        param_values=param_values,
    )
    world = LiveRoomWorld(catalog)
    episode = await play(
        task, harness, client, world, surface=client.surface, request_id=task.id, graded=False
    )
    return episode.trace


async def gold_trace(task: OwnTask, harness: Harness, tools: ToolRuntime | None) -> Trace:
    """The gold run of the task-file `task` under `harness` (the harness the file was
    written for) against the run's `tools`; the trace."""
    return await TaskFileWorld(harness, tools).gold_trace(task, harness)
