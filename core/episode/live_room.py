"""The live room: the demo's simulated e-commerce live stream as a World.

Tools run against a fresh `LiveRoom` per episode (the task's room state, its fault specs and
seed, plus `fault_rates` when the world injects random faults: the RL environment does);
the harness's own non-simulator tools (a mixed harness in chat) through `tools`, and HSA's
distractors, are bound beside it. Grades are core/sim/graders.py against the simulator's
truth; the gold is the oracle (core/sim/oracle.py), which reads any variant's surface, so a
gold under a variant needs no remapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from core.episode.play import play
from core.episode.world import GoldRun, Request, TaskInfo, World, surface_of
from core.harness.models import Harness
from core.hsa.distractors import register_distractors
from core.runtime.bindings import Bindings
from core.sim.catalog import load_catalog
from core.sim.faults import FaultRates
from core.sim.graders import Grades, grade
from core.sim.models import Catalog, Split, Task
from core.sim.oracle import OracleClient, task_harness
from core.sim.room import LiveRoom, room_bindings
from core.sim.surface import HarnessSurface
from core.sim.tasks import generate_tasks

if TYPE_CHECKING:
    from core.episode.variant import HarnessVariant
    from core.runtime.tool_runtime import ToolRuntime
    from core.runtime.trace import Trace


class LiveRoomWorld(World[Task]):
    """The simulated live room (module doc)."""

    kind: ClassVar[str] = "live-room"

    def __init__(
        self,
        catalog: Catalog | None = None,
        *,
        fault_rates: FaultRates | None = None,
        tools: ToolRuntime | None = None,
        chat_seed: int = 0,
    ) -> None:
        self.catalog = catalog if catalog is not None else load_catalog()
        self.fault_rates = fault_rates
        self.tools = tools
        self.chat_seed = chat_seed
        """The room a free chat request (no task) runs in: the first dev task's at this seed."""

    def harness_for(self, task: Task, harness: Harness) -> Harness:
        return task_harness(task, harness)

    def task_info(self, task: Task) -> TaskInfo:
        return TaskInfo(task.id, task.split.value, task.category.value, task.template_id)

    def chat_task(self) -> Task:
        """The task whose room a free chat request runs in."""

        return generate_tasks(Split.DEV, seed=self.chat_seed, per_category=1)[0]

    def bindings(self, task: Task | None, harness: Harness, surface: HarnessSurface) -> Bindings:
        room = LiveRoom.for_task(
            task if task is not None else self.chat_task(),
            self.catalog,
            fault_rates=self.fault_rates,
        )
        bindings = room_bindings(room, surface)
        if self.tools is not None:
            self.tools.register(bindings)
        register_distractors(bindings, harness)
        return bindings

    def request(self, task: Task) -> Request:
        return Request(task.viewer_message)

    async def grade(
        self,
        task: Task,
        trace: Trace,
        harness: Harness,
        surface: HarnessSurface,
        request: Request | None = None,
    ) -> Grades:
        return grade(task, trace, harness, self.catalog, surface=surface)

    async def gold_trace(self, task: Task, harness: Harness) -> Trace:

        client = OracleClient(task, harness, self.catalog)
        episode = await play(
            task, harness, client, self, surface=client.surface, request_id=task.id,
            graded=False,
        )  # fmt: skip
        return episode.trace

    async def gold(self, task: Task, variant: HarnessVariant) -> GoldRun:
        harness = task_harness(task, variant.harness)
        surface = surface_of(variant, harness)
        client = OracleClient(task, harness, self.catalog, surface=surface)
        return GoldRun(harness, surface, client, variant)
