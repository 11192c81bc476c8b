"""The world an episode plays in: what the tools run against, how a run is graded, the gold.

An episode is the agent loop *in a world* (DESIGN §2, "Worlds"). The loop (core/runtime)
knows prompts, skills, tool calls and hooks; a world supplies the rest:

- `bindings`: what the harness's tools run against, fresh for every episode (the live room
  builds a new room with the task's faults; a task file binds the harness's own tools);
- `request`: the user's message, earlier turns and the session data the tools receive;
- `grade`: the four grades (accuracy, effectiveness, tool rationality, skill selection);
- `gold_trace` and `gold`: the run of the agent that knows the answer, under the harness and
  under any HSA variant of it (what HSA builds variants from, what the oracle teacher writes,
  what RL finishes a sampled turn with).

Every caller that plays a task (`core.episode.play.play`: evaluation, teacher data, HSA
verification, RL rewards, chat, the latency bench) takes a World and never asks what kind of
task it holds. Two worlds ship: `LiveRoomWorld` (core/episode/live_room.py, the demo's
simulated live room) and `TaskFileWorld` (core/episode/task_file.py, an operator's harness
and task file). A third (a replay of recorded traffic, a staging API) is one more subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from core.harness.models import Harness
from core.sim.surface import HarnessSurface

if TYPE_CHECKING:
    from core.episode.variant import HarnessVariant
    from core.runtime.bindings import Bindings
    from core.runtime.client import ChatClient
    from core.runtime.trace import Trace
    from core.sim.graders import Grades

TaskT = TypeVar("TaskT")


@dataclass(frozen=True)
class Request:
    """What one episode asks the agent: the message, earlier turns, the tools' session data."""

    message: str
    history: list[dict[str, Any]] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    """Reaches every binding as `ToolContext.context`; a world with state puts this episode's
    own fresh copy of it under `"state"`, which the tools change and the grades read."""


@dataclass(frozen=True)
class TaskInfo:
    """What rows and reports record of a task, whatever its world."""

    id: str
    split: str
    category: str
    template_id: str | None = None


@dataclass
class GoldRun:
    """How the agent that knows the answer plays one task under one variant."""

    harness: Harness
    """The harness the gold plays under (the variant; with the task's distractors where the
    world adds them; HSA transforms the gold cannot survive left out)."""
    surface: HarnessSurface
    client: ChatClient
    variant: HarnessVariant
    """What a row records of the variant actually played."""


class GoldUnavailable(ValueError):
    """The task's gold cannot be played under this harness or variant; the message says why
    (naming the task, and the tool where one failed)."""


class World(ABC, Generic[TaskT]):
    """One kind of world (module doc). Subclasses hold what every episode shares (a catalog,
    the run's tool runtime, a judge) and build what each episode owns (`bindings`)."""

    kind: ClassVar[str]
    """Short name shown in messages and reports (`live-room`, `task-file`)."""

    def harness_for(self, task: TaskT, harness: Harness) -> Harness:
        """The harness `task` plays under when the caller gives `harness` (a world may add
        the task's own distractor tools). Default: `harness` unchanged."""
        return harness

    @abstractmethod
    def task_info(self, task: TaskT) -> TaskInfo: ...

    @abstractmethod
    def bindings(self, task: TaskT | None, harness: Harness, surface: HarnessSurface) -> Bindings:
        """Fresh bindings for one episode of `task` (None: a free chat request) under
        `harness`; nothing in them is shared with another episode's."""

    @abstractmethod
    def request(self, task: TaskT) -> Request: ...

    @abstractmethod
    async def grade(
        self,
        task: TaskT,
        trace: Trace,
        harness: Harness,
        surface: HarnessSurface,
        request: Request | None = None,
    ) -> Grades:
        """The four grades of `trace` answering `task` under `harness` (read through
        `surface`: renamed tools by binding, renamed skills by role); `request` is the one
        the episode ran (its state after the run, where the world has state)."""

    @abstractmethod
    async def gold_trace(self, task: TaskT, harness: Harness) -> Trace:
        """The gold run of `task` under `harness` (as `harness_for` returned it), ungraded."""

    @abstractmethod
    async def gold(self, task: TaskT, variant: HarnessVariant) -> GoldRun:
        """The gold of `task` under `variant` (index 0: the original harness); raises
        GoldUnavailable with the reason when it cannot be played."""

    async def unplayable_golds(self, tasks: list[TaskT]) -> dict[str, str]:
        """Task id -> why its gold cannot be played, for the tasks of `tasks` whose gold
        fails (checked before a run that needs golds starts). Default: none fails."""
        return {}


def surface_of(variant: HarnessVariant, harness: Harness | None = None) -> HarnessSurface:
    """The surface that reads `harness` (default: the variant's) in canonical names."""
    return HarnessSurface(
        harness if harness is not None else variant.harness,
        variant.skill_roles,
        variant.param_names,
        variant.param_values,
    )
