"""The Chat page's traffic, without a window: which lane answers next, in which order A/B
lanes take a message, what Stop drops, and why a lane cannot take a message yet.

The page (studio/pages/chat/page.py) is a view over this: it asks the queue for the next job,
runs it on the lane's server, and tells the queue when it ended. One reply runs at a time (the
lanes share the machine, and a latency readout of two replies at once would measure neither).
In A/B modes the lane that answers first alternates message by message, so neither side always
gets the warm server or the empty queue.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ChatJob:
    """One message for one lane: `task` is a live-room task (a preset) or None, `fresh` asks
    without the lane's history, `meta` is the line shown above the turn."""

    lane: str
    message: str
    task: Any = None
    fresh: bool = False
    meta: str = ""


@dataclass(frozen=True)
class LaneState:
    """What the page knows of a lane when a message comes: its server (`has_endpoint`, the
    server card's `server_state`, `server_label` in messages) and its harness."""

    has_endpoint: bool
    server_state: str = "stopped"
    server_label: str = "a model server"
    harness_loaded: bool = True


def lane_problem(state: LaneState) -> str | None:
    """Why the lane cannot take a message now (None when it can), said as the banner says it."""
    if not state.has_endpoint:
        if state.server_state == "starting":
            return f"The {state.server_label.removeprefix('a ')} is still starting."
        if state.server_state == "died":
            return "The model server stopped: restart it on the left to go on."
        return f"Start {state.server_label} (or connect to one) on the left first."
    if not state.harness_loaded:
        return "The harness version is still loading."
    return None


class ChatQueue:
    """Messages waiting for their lane, the one running, and the A/B order."""

    def __init__(self) -> None:
        self._waiting: deque[ChatJob] = deque()
        self.running: ChatJob | None = None
        self._flip = False

    @property
    def busy(self) -> bool:
        return self.running is not None or bool(self._waiting)

    @property
    def waiting(self) -> list[ChatJob]:
        return list(self._waiting)

    def add(
        self,
        message: str,
        lanes: list[str],
        *,
        task: Any = None,
        fresh: bool = False,
        meta: str = "",
    ) -> list[ChatJob]:
        """Queue `message` for every lane in `lanes`; with two or more, the first lane to
        answer alternates from one message to the next. Returns the jobs in answer order."""
        order = list(lanes)
        if len(order) > 1:
            self._flip = not self._flip
            if not self._flip:
                order.reverse()
        jobs = [ChatJob(lane, message, task, fresh, meta) for lane in order]
        self._waiting.extend(jobs)
        return jobs

    def start_next(self) -> ChatJob | None:
        """The next job, now running; None while one runs or none waits."""
        if self.running is not None or not self._waiting:
            return None
        self.running = self._waiting.popleft()
        return self.running

    def finished(self) -> None:
        """The running job ended (answered, failed or stopped)."""
        self.running = None

    def stop(self) -> ChatJob | None:
        """Stop: every waiting job is dropped; the running one is returned for the page to
        cut off (it calls `finished` once it has)."""
        self._waiting.clear()
        return self.running
