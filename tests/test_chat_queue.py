"""The Chat page's traffic without a window (studio/logic/chat_queue.py): one reply at a time,
the A/B lane that answers first alternating, Stop dropping what waits, and the reasons a lane
cannot take a message. tests/test_studio_chat.py drives the same queue through the page."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from studio.logic.chat_queue import ChatQueue, LaneState, lane_problem


def test_one_reply_at_a_time_in_the_order_asked() -> None:
    queue = ChatQueue()
    assert not queue.busy and queue.start_next() is None
    queue.add("hi", ["A"])
    queue.add("and you?", ["A"], meta="preset")
    assert queue.busy
    first = queue.start_next()
    assert first is not None and first.message == "hi"
    assert queue.start_next() is None  # the first still runs
    queue.finished()
    second = queue.start_next()
    assert second is not None and (second.message, second.meta) == ("and you?", "preset")
    queue.finished()
    assert not queue.busy


@given(st.lists(st.booleans(), min_size=1, max_size=30))
def test_ab_lanes_take_turns_answering_first(ab: list[bool]) -> None:
    """Every A/B message is answered by both lanes, one after the other, and the lane that
    answers first alternates over the A/B messages (single-lane messages in between do not
    count); every job runs exactly once, in the order it was queued."""
    queue = ChatQueue()
    firsts: list[str] = []
    for i, both in enumerate(ab):
        jobs = queue.add(f"m{i}", ["A", "B"] if both else ["A"])
        if both:
            firsts.append(jobs[0].lane)
            assert {j.lane for j in jobs} == {"A", "B"}
    ran = []
    while (job := queue.start_next()) is not None:
        ran.append((job.message, job.lane))
        queue.finished()
    assert len(ran) == sum(2 if both else 1 for both in ab)
    assert [m for m, _ in ran] == sorted((m for m, _ in ran), key=lambda m: int(m[1:]))
    assert all(a != b for a, b in itertools.pairwise(firsts))


def test_stop_drops_what_waits_and_hands_back_what_runs() -> None:
    queue = ChatQueue()
    queue.add("one", ["A", "B"])
    queue.add("two", ["A", "B"])
    running = queue.start_next()
    assert running is not None and len(queue.waiting) == 3
    assert queue.stop() is running and queue.waiting == []
    assert queue.busy  # until the page has cut the reply off
    queue.finished()
    assert not queue.busy and queue.stop() is None


def test_why_a_lane_cannot_take_a_message() -> None:
    assert lane_problem(LaneState(has_endpoint=True)) is None
    assert lane_problem(LaneState(has_endpoint=False)) == (
        "Start a model server (or connect to one) on the left first."
    )
    starting = LaneState(has_endpoint=False, server_state="starting", server_label="model server B")
    assert lane_problem(starting) == "The model server B is still starting."
    assert lane_problem(LaneState(has_endpoint=False, server_state="starting")) == (
        "The model server is still starting."
    )
    assert "restart it" in (lane_problem(LaneState(False, "died")) or "")
    assert lane_problem(LaneState(True, harness_loaded=False)) == (
        "The harness version is still loading."
    )
