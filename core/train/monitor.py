"""Following a training run for a live view: incremental reads, the run's state, list rows.

    follower = RunFollower(Path(run.run_dir))
    events, log = follower.read()          # only what was appended since the last read
    state = MonitorState(); state.apply(events); state.add_log(log)
    state.series["loss"].xs / .ys          # one series per chart curve, resumes applied

The studio polls in a worker thread (`poll`): new bytes of `events.jsonl` and `child.log` are
read from the last offsets, the store is brought up to date (`runs.refresh`, or `finalize`
with the exit status of a child this process started), and the GUI thread only applies the
new events. Nothing here re-reads a whole file after the first read, and nothing imports Qt.

Metric series (x = optimizer step): `loss`, `learning_rate`, `grad_norm`, `tokens_per_s`,
`reward` (the total) and `reward/<component>`, `completion_length`. A `resume` event cuts
every series by the one resume rule (`events.Resume`, which the store's copy applies too), so
the curve continues without a gap or a repeated step.

Re-attaching (`attach_runs`, when the studio opens a workspace): a run still marked running
whose process is alive keeps running (the caller follows it); one whose process vanished is
finalized as failed with the reason (`runs.finalize`: exit status, last log lines), so the
view can offer Resume. A run that was prepared but whose process never started is failed too.
"""

from __future__ import annotations

import math
import subprocess
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from core.exits import tail_lines
from core.store import Store
from core.store.training import RunRecord, get_run, list_runs, run_events, update_run
from core.store.types import utcnow
from core.train.events import Event, Resume, events_path, read_events
from core.train.pipeline import PIPELINE_LOG
from core.train.runs import (
    LOG_FILE,
    describe_exit,
    finalize,
    latest_checkpoint,
    process_alive,
    refresh,
    sync,
)

LOG_TAIL_BYTES = 64_000
"""How much of an existing log the first read shows (the view is a tail, not an archive)."""
LOG_LINES = 1_000
"""Log lines a state keeps."""
LONG_LINE = 16_000
"""Bytes of a line without its newline yet that are shown anyway."""
NEVER_STARTED_AFTER = timedelta(minutes=10)

LENGTH_KEYS = ("completions/mean_length", "completion_length", "completions/mean_terminated_length")


# ----------------------------------------------------------------------------- reading


class RunFollower:
    """Reads what a run's stream and log gained since the last call (one reader per run)."""

    def __init__(self, run_dir: Path, *, log_tail_bytes: int = LOG_TAIL_BYTES) -> None:
        self.run_dir = Path(run_dir)
        self.events_offset = 0
        self.log_offset: int | None = None  # None: not read yet (start at the tail)
        self.log_tail_bytes = log_tail_bytes

    def read(self) -> tuple[list[Event], str]:
        events, self.events_offset = read_events(events_path(self.run_dir), self.events_offset)
        return events, self._read_log()

    def _read_log(self) -> str:
        path = self.run_dir / LOG_FILE
        try:
            size = path.stat().st_size
        except OSError:
            return ""
        first = self.log_offset is None
        start = max(0, size - self.log_tail_bytes) if first else (self.log_offset or 0)
        if size < start:  # the log was replaced: start again
            start = 0
        if size == start:
            self.log_offset = start
            return ""
        try:
            with path.open("rb") as handle:
                handle.seek(start)
                data = handle.read(size - start)
        except OSError:
            return ""
        skip = 0
        if first and start > 0:  # drop the partial first line of a tail
            cut = data.find(b"\n")
            skip = cut + 1 if cut >= 0 else len(data)
        end = data.rfind(b"\n") + 1  # whole lines only: no split characters
        if end <= skip and len(data) - skip > LONG_LINE:
            end = len(data)  # a very long line without its end yet: show it anyway
        if end <= skip:
            self.log_offset = start + skip
            return ""
        self.log_offset = start + end
        return data[skip:end].decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------- state


@dataclass
class Series:
    """One chart curve: x = step, y = value; `version` grows with every change."""

    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    version: int = 0

    def add(self, x: float, y: float) -> None:
        if self.xs and x <= self.xs[-1]:
            # a repeated step without a resume event: a chart's x must grow, so read it as a
            # resume from the step before (the store keeps both lines; the stream's writer
            # never repeats a step within one process)
            self.cut(Resume(math.ceil(x) - 1))
        self.xs.append(x)
        self.ys.append(y)
        self.version += 1

    def cut(self, resume: Resume) -> None:
        """Drop the points the resume supersedes (`Resume.supersedes`)."""
        keep = len(self.xs)
        while keep and resume.supersedes(self.xs[keep - 1]):
            keep -= 1
        if keep != len(self.xs):
            del self.xs[keep:], self.ys[keep:]
            self.version += 1


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def log_values(event: Event) -> dict[str, float]:
    """The chart values of one `log` event (series name -> value)."""
    out: dict[str, float] = {}
    for key in ("loss", "learning_rate", "grad_norm", "tokens_per_s"):
        number = _number(event.get(key))
        if number is not None:
            out[key] = number
    rewards = event.get("rewards")
    if isinstance(rewards, dict):
        for name, value in rewards.items():
            number = _number(value)
            if number is not None:
                out[f"reward/{name}"] = number
    metrics = event.get("metrics")
    if isinstance(metrics, dict):
        total = _number(metrics.get("reward"))
        if total is not None:
            out["reward"] = total
        for key in LENGTH_KEYS:
            number = _number(metrics.get(key))
            if number is not None:
                out["completion_length"] = number
                break
    return out


@dataclass
class MonitorState:
    """What a live view shows of one run, built from its events in stream order."""

    phase: str | None = None
    message: str | None = None
    reason: str | None = None
    step: int = 0
    total: int | None = None
    epoch: float | None = None
    tokens_per_s: float | None = None
    gpu_memory: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: list[int] = field(default_factory=list)
    resumes: list[int] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    series: dict[str, Series] = field(default_factory=dict)
    events: int = 0
    version: int = 0
    log_lines: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    log_total: int = 0
    """Log lines ever added (a view appends the ones it has not shown)."""
    _elapsed_before: float = 0.0
    _elapsed: float | None = None
    _eta: float | None = None
    _at: float | None = None  # wall time of the last progress event

    def apply(self, events: list[Event], *, now: float | None = None) -> set[str]:
        """Fold new events in; the names of the series that changed."""
        changed: set[str] = set()
        for event in events:
            self.events += 1
            kind = event.get("event")
            at = _number(event.get("time")) or (now if now is not None else time.time())
            if kind == "log":
                self._log(event, at, changed)
            elif kind == "phase":
                self.phase = str(event.get("phase") or "") or None
                self.message = event.get("message")
                if event.get("reason"):
                    self.reason = str(event["reason"])
                if self.phase == "training":
                    step = _number(event.get("step"))
                    total = _number(event.get("total"))
                    self.step = int(step) if step is not None else self.step
                    self.total = int(total) if total else self.total
                    self._at = at
                if self.phase == "loading":  # a new process: an earlier failure is history
                    self.reason = None
            elif (resume := Resume.of(event)) is not None:
                self.resumes.append(resume.from_step)
                self._elapsed_before += self._elapsed or 0.0
                self._elapsed, self._eta = None, None
                for name, series in self.series.items():
                    before = series.version
                    series.cut(resume)
                    if series.version != before:
                        changed.add(name)
                self.step = resume.rewind(self.step)
            elif kind == "checkpoint":
                step = _number(event.get("step"))
                if step is not None and int(step) not in self.checkpoints:
                    self.checkpoints.append(int(step))
            elif kind == "output":
                for key in ("adapter", "merged", "model"):
                    if event.get(key):
                        self.outputs[key] = str(event[key])
            elif kind == "info":
                self.info.update({k: v for k, v in event.items() if k not in ("seq", "time")})
        if events:
            self.version += 1
        return changed

    def _log(self, event: Event, at: float, changed: set[str]) -> None:
        step = _number(event.get("step"))
        if step is None:
            return
        self.step = int(step)
        total = _number(event.get("total"))
        if total:
            self.total = int(total)
        self.epoch = _number(event.get("epoch"))
        self._elapsed = _number(event.get("elapsed_s"))
        self._eta = _number(event.get("eta_s"))
        self._at = at
        speed = _number(event.get("tokens_per_s"))
        if speed is not None:
            self.tokens_per_s = speed
        memory = event.get("gpu_memory")
        if isinstance(memory, list):
            self.gpu_memory = [m for m in memory if isinstance(m, dict)]
        for name, value in log_values(event).items():
            self.series.setdefault(name, Series()).add(step, value)
            changed.add(name)

    def add_log(self, text: str) -> int:
        """Append log text (whole lines); the number of lines added."""
        if not text:
            return 0
        # A carriage return redraws a line (progress bars): keep what was drawn last.
        lines = [_last_draw(line) for line in text.split("\n")]
        if lines and lines[-1] == "":
            lines.pop()
        self.log_lines.extend(lines)
        self.log_total += len(lines)
        return len(lines)

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return max(0.0, min(1.0, self.step / self.total))

    def elapsed(self, *, running: bool, now: float | None = None) -> float | None:
        """Training seconds over every process of the run (ticks on while it runs)."""
        if self._elapsed is None and not self._elapsed_before:
            return None
        current = self._elapsed or 0.0
        if running and self._at is not None:
            current += max(0.0, (now if now is not None else time.time()) - self._at)
        return self._elapsed_before + current

    def remaining(self, *, running: bool, now: float | None = None) -> float | None:
        if self._eta is None:
            return None
        if not running:
            return self._eta if self.phase in (None, "loading", "training") else 0.0
        since = max(0.0, (now if now is not None else time.time()) - (self._at or 0.0))
        return max(0.0, self._eta - since)


def _last_draw(line: str) -> str:
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-1] if parts else ""


# ----------------------------------------------------------------------------- polling


@dataclass
class RunUpdate:
    """What one poll found for a run (built in a worker, applied on the GUI thread)."""

    run: RunRecord
    events: list[Event]
    log: str
    source: str
    """Whose stream the events are from: the run, or a pipeline's current stage."""
    children: list[RunRecord] = field(default_factory=list)
    reset: bool = False
    """The events start a new stream (first read, or the pipeline moved to another stage)."""


class RunTracker:
    """A run being followed: its follower (of the run or a pipeline's current stage)."""

    def __init__(self, run_id: str, proc: subprocess.Popen[bytes] | None = None) -> None:
        self.run_id = run_id
        self.proc = proc
        self.follower: RunFollower | None = None
        self.source: str | None = None

    def poll(self, store: Store) -> RunUpdate:
        """Bring the run's row up to date and read what its stream gained (worker thread)."""
        run = get_run(store, self.run_id)
        if run.status == "running":
            run = self._settle(store, run)
        elif run.status == "created" and self.proc is not None and self.proc.poll() is not None:
            run = self._never_ran(store, run, self.proc.returncode)
        children: list[RunRecord] = []
        source = run
        if run.stage == "pipeline":
            children = list_runs(store, parent=run.id)
            for index, child in enumerate(children):
                if child.status == "running" and not process_alive(child):
                    children[index] = refresh(store, child.id)
            if children:
                source = children[-1]
        reset = False
        if self.follower is None or self.source != source.id:
            self.follower = RunFollower(Path(source.run_dir))
            self.source = source.id
            reset = True
            if not events_path(Path(source.run_dir)).is_file() and source.finished:
                # the run folder is gone: its history is still in the store
                return RunUpdate(run, run_events(store, source.id), "", source.id, children, True)
        events, log = self.follower.read()
        return RunUpdate(run, events, log, source.id, children, reset)

    def _never_ran(self, store: Store, run: RunRecord, code: int) -> RunRecord:
        """The process this studio started ended before the run began (a pipeline's
        orchestrator that could not start): failed, with its exit status and last lines."""
        run = get_run(store, run.id)  # it may have moved on meanwhile
        if run.status != "created":
            return run
        tail = ""
        for name in (PIPELINE_LOG, LOG_FILE):
            path = Path(run.run_dir) / name
            if path.is_file():
                tail = tail_lines(path, 10, max_bytes=4000)
                break
        reason = describe_exit(code) + (f"\n{tail}" if tail else "")
        return update_run(
            store, run.id, status="failed", reason=reason, exit_code=code, ended_at=utcnow()
        )

    def _settle(self, store: Store, run: RunRecord) -> RunRecord:
        code = self.proc.poll() if self.proc is not None else None
        if code is not None and run.stage != "pipeline":
            sync(store, run.id)
            return finalize(store, run.id, code)
        return refresh(store, run.id)


def poll_all(store: Store, trackers: list[RunTracker]) -> list[RunUpdate | BaseException]:
    """Poll several runs; a run that cannot be read gives its exception, not a stop."""
    out: list[RunUpdate | BaseException] = []
    for tracker in trackers:
        try:
            out.append(tracker.poll(store))
        except Exception as exc:  # reported per run
            out.append(exc)
    return out


def attach_runs(store: Store, *, now: datetime | None = None) -> list[RunRecord]:
    """Every run, with the ones marked running settled (module doc); newest first."""
    moment = now or utcnow()
    out: list[RunRecord] = []
    for run in list_runs(store):
        if run.status == "running":
            run = refresh(store, run.id)
        elif (
            run.status == "created"
            and run.pid is None
            and run.created_at is not None
            and moment - run.created_at > NEVER_STARTED_AFTER
        ):
            run = update_run(
                store, run.id, status="failed", ended_at=moment,
                reason="the run was prepared but its process never started",
            )  # fmt: skip
        out.append(run)
    out.reverse()
    return out


# ----------------------------------------------------------------------------- run facts


def model_of(run: RunRecord) -> str:
    """The base model a run trains (its registered name when it has one)."""
    base = run.outputs.get("base_model")
    if isinstance(base, str) and base:
        return base
    try:
        data = yaml.safe_load(run.config) or {}
    except yaml.YAMLError:
        return ""
    model = data.get("model") if isinstance(data, dict) else None
    return str(model) if model else ""


def duration_s(run: RunRecord, now: datetime | None = None) -> float | None:
    if run.started_at is None:
        return None
    end = run.ended_at or (now or utcnow())
    return max(0.0, (end - run.started_at).total_seconds())


def can_resume(run: RunRecord) -> bool:
    """A stopped / failed / cancelled stage with a checkpoint, or an unfinished pipeline."""
    if run.status not in ("failed", "stopped", "cancelled"):
        return False
    if run.stage == "pipeline":
        return True
    return latest_checkpoint(run) is not None


def can_restart(run: RunRecord) -> bool:
    """Any ended run can start again as a new run from the same request."""
    return run.finished
