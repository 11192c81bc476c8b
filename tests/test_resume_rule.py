"""#36 item 5: one resume rule (`core.train.events.Resume`) for every reader of a run's stream.

A `resume` event supersedes the log lines of later steps. The store's copy of the stream
(`core.train.runs.sync` -> `core.store.training.ingest_events`, incremental in SQL) and the
live monitor (`core.train.monitor.RunFollower` + `MonitorState`, incremental in memory) both
apply `Resume`; these tests fail when one of them decides on its own:

* on random streams with resumes, read in random pieces, the store's curve, the monitor's
  series and `effective_logs` (the stream read whole) are one curve, with one progress;
* with the rule swapped for another, both readers follow the swap (a reader that went around
  `Resume` keeps the old rule and disagrees).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.store import Store
from core.store.training import RunRecord, add_run, get_run, run_events
from core.train.events import Event, Resume, effective_logs
from core.train.monitor import MonitorState, RunFollower
from core.train.runs import sync

Curve = list[tuple[int, float]]


@st.composite
def streams(draw: st.DrawFn) -> list[Event]:
    """A run's events as training children write them: processes that log increasing steps
    (sometimes without a loss) and checkpoints, each after the first starting with a
    `resume` from a step the run reached (or a checkpoint a little past its last log)."""
    events: list[Event] = []
    top = step = 0

    def emit(kind: str, **data: Any) -> None:
        events.append({"seq": len(events) + 1, "time": float(len(events)), "event": kind, **data})

    for process in range(draw(st.integers(1, 5))):
        if process:
            step = draw(st.integers(0, top + 2))
            emit("resume", from_step=step, checkpoint=f"checkpoint-{step}")
        emit("phase", phase="training", total=100)
        for _ in range(draw(st.integers(0, 7))):
            step += draw(st.integers(1, 3))
            top = max(top, step)
            line: dict[str, Any] = {"step": step, "total": 100, "learning_rate": 1e-4}
            if draw(st.integers(0, 5)):
                line["loss"] = draw(st.integers(0, 999)) / 100
            emit("log", **line)
            if not draw(st.integers(0, 3)):
                emit("checkpoint", step=step, path=f"checkpoint-{step}")
    return events


def _pieces(events: list[Event], cuts: list[int]) -> list[list[Event]]:
    """The stream as a follower meets it: appended in pieces between reads."""
    bounds = sorted({0, len(events), *(c % (len(events) + 1) for c in cuts)})
    return [events[a:b] for a, b in itertools.pairwise(bounds)]


def _curve(logs: list[Event]) -> Curve:
    return [(e["step"], e["loss"]) for e in logs if "loss" in e]


def _monitor_curve(state: MonitorState) -> Curve:
    series = state.series.get("loss")
    if series is None:
        return []
    return [(int(x), y) for x, y in zip(series.xs, series.ys, strict=True)]


def _read(store: Store, run_dir: Path, pieces: list[list[Event]]) -> tuple[Curve, Curve, int, int]:
    """Append the pieces to a fresh run's events.jsonl; after each, the store syncs and the
    monitor follows (the studio's poll). (store curve, monitor curve, store step, monitor step)."""
    run_dir.mkdir(parents=True)
    run = add_run(store, RunRecord(id=run_dir.name, stage="sft", status="running",
                                   config="model: m\n", run_dir=str(run_dir)))  # fmt: skip
    follower, state = RunFollower(run_dir), MonitorState()
    with (run_dir / "events.jsonl").open("a", encoding="utf-8") as handle:
        for piece in pieces:
            handle.writelines(json.dumps(event) + "\n" for event in piece)
            handle.flush()
            sync(store, run.id)
            state.apply(follower.read()[0])
    stored = _curve(run_events(store, run.id, kind="log"))
    return stored, _monitor_curve(state), get_run(store, run.id).step, state.step


def test_the_store_and_the_monitor_draw_one_curve(tmp_path: Path) -> None:
    runs = itertools.count()
    with Store.open(tmp_path / "hat.db") as store:

        @settings(max_examples=60, deadline=None)
        @given(streams(), st.lists(st.integers(0, 200), max_size=6))
        def check(events: list[Event], cuts: list[int]) -> None:
            run_dir = tmp_path / "runs" / f"sft-{next(runs)}"
            stored, shown, stored_step, shown_step = _read(store, run_dir, _pieces(events, cuts))
            whole = _curve(effective_logs(events))
            assert stored == shown == whole
            assert stored_step == shown_step
            steps = [x for x, _ in whole]
            assert steps == sorted(set(steps))  # no gap filled twice, no step repeated

        check()


def test_both_readers_apply_the_one_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Swap the rule (a resume also drops its own step, progress one before it): the store
    and the monitor both follow, so neither keeps a resume rule of its own."""

    def supersedes(self: Resume, step: float | None) -> bool:
        return step is not None and step >= self.from_step

    def rewind(self: Resume, step: int) -> int:
        return min(step, self.from_step - 1)

    monkeypatch.setattr(Resume, "supersedes", supersedes)
    monkeypatch.setattr(Resume, "rewind", rewind)
    events: list[Event] = [
        {"seq": s, "time": float(s), "event": "log", "step": s, "loss": s / 10}
        for s in (1, 2, 3, 4)
    ]
    events.append({"seq": 5, "time": 5.0, "event": "resume", "from_step": 3})
    with Store.open(tmp_path / "hat.db") as store:
        stored, shown, stored_step, shown_step = _read(store, tmp_path / "sft-x", [events])
    assert stored == shown == [(1, 0.1), (2, 0.2)]
    assert stored_step == shown_step == 2
