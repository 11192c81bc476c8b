"""The JSONL event stream of a training run, and the stop / cancel flag.

A stage child (`python -m training ...`) appends one JSON object per line to
`<run dir>/events.jsonl`; the launcher, the CLI and the studio read it (and the store keeps a
copy, core/train/runs.py). Every line has `seq` (1, 2, ... over the whole run, resumes
included), `time` (unix seconds) and `event`:

    {"event": "phase", "phase": "loading" | "training" | "saving" | "done" | "failed"
                                | "stopped" | "cancelled", "message"?, "reason"?}
    {"event": "info", ...}                 what was loaded: rows used / dropped, device, precision
    {"event": "log", "step", "total", "epoch", "elapsed_s", "eta_s", "loss"?, "learning_rate"?,
     "grad_norm"?, "tokens_per_s"?, "rewards"?: {component: mean}, "metrics": {every other
     trainer metric}, "gpu_memory"?: [{"device", "used_mb", "total_mb"}]}
    {"event": "checkpoint", "step", "path"}
    {"event": "resume", "from_step", "checkpoint"}   a resumed child starts again after `step`
    {"event": "output", "adapter"?, "merged"?, "model"?}   folders the stage wrote

The resume rule (`Resume`, the one implementation): a `resume` event supersedes the log lines
of steps after its checkpoint that the killed process had already written, so the curve
continues without a gap or a repeated step. The store's copy of the stream
(`core.store.training.ingest_events`, handed `Resume.of` by `core.train.runs.sync`), the live
monitor's series (`core.train.monitor.MonitorState`) and `effective_logs` (the stream read
whole) all apply it; none decides on its own what a resume cuts.

Control: `request_control(run_dir, "stop" | "cancel")` writes `<run dir>/control`; the trainer
callback checks it after every optimizer step. stop = save a checkpoint and the adapter, end
as "stopped" (resumable); cancel = end at once as "cancelled", nothing saved.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

EVENTS_FILE = "events.jsonl"
CONTROL_FILE = "control"
PHASES = ("loading", "training", "saving", "done", "failed", "stopped", "cancelled")
FINAL_PHASES = frozenset({"done", "failed", "stopped", "cancelled"})
Control = Literal["stop", "cancel"]

Event = dict[str, Any]


def events_path(run_dir: Path) -> Path:
    return run_dir / EVENTS_FILE


def read_events(path: Path, offset: int = 0) -> tuple[list[Event], int]:
    """Complete lines from byte `offset` on: (events, offset after the last complete line).

    A torn last line (the writer is mid-write, or was killed) is left for the next read;
    undecodable lines are skipped.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    events: list[Event] = []
    for line in data[:end].splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events, offset + end


def iter_events(run_dir: Path) -> list[Event]:
    return read_events(events_path(run_dir))[0]


@dataclass(frozen=True)
class Resume:
    """What one `resume` event cuts: the resumed process starts again after `from_step`, so
    the log lines of later steps that the killed process wrote are superseded (the new
    process writes those steps again) and the run's progress goes back to `from_step`.

    The one place this rule lives (module doc). It decides one line or one step at a time,
    so the store can apply it to its stored rows and the monitor to its series in memory,
    each incrementally, and both agree (tests/test_resume_rule.py)."""

    from_step: int

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> Resume | None:
        """The resume an event is, or None for any other event. A `from_step` that is not a
        number reads as 0 (a resume from the start supersedes every line with a step)."""
        if event.get("event") != "resume":
            return None
        value = event.get("from_step")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return cls(0)
        return cls(int(value) if math.isfinite(value) else 0)

    def supersedes(self, step: float | None) -> bool:
        """Whether a log line written before this resume at `step` is superseded. A line
        without a step is never superseded: it cannot be placed on the curve's x axis."""
        return step is not None and step > self.from_step

    def rewind(self, step: int) -> int:
        """The run's progress after this resume, given its progress before."""
        return min(step, self.from_step)


def effective_logs(events: Iterable[Event]) -> list[Event]:
    """The `log` events of the run's one metric curve, the stream read whole (`Resume`)."""
    logs: list[Event] = []
    for event in events:
        resume = Resume.of(event)
        if resume is not None:
            logs = [e for e in logs if not resume.supersedes(_step(e))]
        elif event.get("event") == "log":
            logs.append(event)
    return logs


def _step(event: Event) -> float | None:
    step = event.get("step")
    return None if isinstance(step, bool) or not isinstance(step, int | float) else step


def last_phase(events: Iterable[Event]) -> Event | None:
    phase = None
    for event in events:
        if event.get("event") == "phase":
            phase = event
    return phase


class EventWriter:
    """Appends events to a run's stream (the training child's side). Thread-safe."""

    def __init__(self, run_dir: Path) -> None:
        self.path = events_path(run_dir)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        events, _ = read_events(self.path)
        self.seq = max((int(e.get("seq") or 0) for e in events), default=0)
        self._lock = threading.Lock()
        self._handle = self.path.open("a", encoding="utf-8")

    def _repair(self) -> None:
        """Cut a torn last line left by a killed writer, so appends start on a fresh line."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        data = self.path.read_bytes()
        if data.endswith(b"\n"):
            return
        with self.path.open("rb+") as handle:
            handle.truncate(data.rfind(b"\n") + 1)

    def emit(self, event: str, **data: Any) -> Event:
        with self._lock:
            self.seq += 1
            record: Event = {"seq": self.seq, "time": round(time.time(), 3), "event": event}
            record.update(data)
            self._handle.write(json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n")
            self._handle.flush()
            return record

    def phase(self, phase: str, **data: Any) -> Event:
        if phase not in PHASES:
            raise ValueError(f"unknown phase {phase!r}")
        return self.emit("phase", phase=phase, **data)

    def close(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.flush()
                os.fsync(self._handle.fileno())
                self._handle.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):
        try:
            return value.item()
        except (TypeError, ValueError):
            pass
    return str(value)


def follow(
    path: Path, *, poll_s: float = 0.5, stop: threading.Event | None = None
) -> Iterator[Event]:
    """Yield events as they are appended until `stop` is set (a tail -f)."""
    offset = 0
    while True:
        events, offset = read_events(path, offset)
        yield from events
        if stop is not None and stop.is_set():
            events, offset = read_events(path, offset)
            yield from events
            return
        time.sleep(poll_s)


# ----------------------------------------------------------------------------- control flag


def control_path(run_dir: Path) -> Path:
    return run_dir / CONTROL_FILE


def request_control(run_dir: Path, action: Control) -> None:
    """Ask a running stage to stop (save, resumable) or cancel (no save). cancel wins."""
    path = control_path(run_dir)
    if action == "stop" and read_control(run_dir) == "cancel":
        return
    tmp = path.with_name(CONTROL_FILE + ".tmp")
    tmp.write_text(action, encoding="utf-8")
    tmp.replace(path)


def read_control(run_dir: Path) -> Control | None:
    try:
        text = control_path(run_dir).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if text == "cancel":
        return "cancel"
    if text == "stop":
        return "stop"
    return None


def clear_control(run_dir: Path) -> None:
    control_path(run_dir).unlink(missing_ok=True)
