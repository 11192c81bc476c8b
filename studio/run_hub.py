"""The studio's side of training runs: one hub per workspace that follows runs and acts on them.

    hub = run_hub(ctx)                     # shared by the Train and Runs pages
    hub.updated.connect(view.on_update)    # (run id): its MonitorState changed
    hub.launch(config, env, devices=..., run_id=..., on_done=...)
    hub.stop(run_id) / cancel / resume / restart

Following: every 500 ms the hub polls the runs it follows in its own one-thread worker
(`core.train.monitor.poll_all`: new bytes of each event stream and log, the store brought up
to date, a finished child finalized with its exit status). The GUI thread only folds the new
events into each run's `MonitorState` and emits `updated`; it never reads a whole file. A run
is followed from the moment a view opens it (its history replayed once) or the studio starts
it, until it has ended.

When a workspace opens, `attach_runs` settles the runs the store still marks running: an
alive process keeps being followed (a run started before the studio was closed shows up
live again); a vanished one is marked failed with the reason, and its view offers Resume.

Launching, stopping and resuming go through `core.train.launcher` / `core.train.runs` in the
shared job runner (they write the store and start processes, never on the GUI thread).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Signal

from studio.context import StoreChange
from studio.jobs import Jobs

if TYPE_CHECKING:
    from core.store.training import RunRecord
    from core.train.launch_checks import Environment
    from core.train.monitor import MonitorState, RunTracker, RunUpdate
    from studio.context import StudioContext

POLL_MS = 500
LIST_EVERY = 10
"""Ticks between two reads of the run list (runs started elsewhere, e.g. by `hat train`)."""


@dataclass
class Followed:
    """A run the hub follows: its tracker, the state views draw, what the store says."""

    tracker: RunTracker
    state: MonitorState
    run: RunRecord | None = None
    children: list[RunRecord] = field(default_factory=list)
    source: str | None = None
    loaded: bool = False
    error: str | None = None
    seen_live: bool = False
    """The hub saw it training (an old run opened in the monitor never changes the current
    model)."""
    published: bool = False
    """Its registered output was made the studio's current model."""

    @property
    def live(self) -> bool:
        return not self.loaded or self.run is None or not self.run.finished


class RunHub(QObject):
    updated = Signal(str)
    """A followed run's state or record changed (run id)."""
    runsChanged = Signal()
    """The list of runs changed (a run added, or a status changed)."""
    envReady = Signal()

    def __init__(self, ctx: StudioContext) -> None:
        super().__init__(ctx)
        self.ctx = ctx
        self.followed: dict[str, Followed] = {}
        self.runs: list[RunRecord] = []
        self.env: Environment | None = None
        self.attached = False
        self._poller = Jobs(self, workers=1)
        self._in_flight = False
        self._list_due = True
        self._ticks = 0
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self.tick)
        self._closed = False
        self._reap: list[subprocess.Popen[bytes]] = []
        """Children of finished runs not yet exited: waited for on each tick, so none is left
        a zombie under the studio (the store can say `stopped` before the process ends)."""
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        ctx.closing.connect(self.shutdown)
        ctx.opened.connect(self.attach)
        if ctx.store is not None:
            self.attach()
        self._detect_environment()

    def live_runs(self) -> list[RunRecord]:
        """Runs that are training now (top-level ones: a pipeline's stages count as one)."""
        return [r for r in self.runs if r.status in ("running", "created") and r.parent is None]

    # ------------------------------------------------------------------ workspace

    def _detect_environment(self) -> None:
        def work() -> Environment:
            from core.train.launch_checks import detect_environment

            return detect_environment()

        def done(env: Environment) -> None:
            self.env = env
            self.envReady.emit()

        self.ctx.jobs.run(work, on_done=done, on_error=lambda _e: None, label="")

    def attach(self) -> None:
        """Settle the store's running runs (module doc) and start following the live ones."""
        store = self.ctx.store
        if store is None:
            return
        if self._closed:  # the previous workspace was closed (a workspace switch): poll again
            self._poller = Jobs(self, workers=1)
            self._closed = False
        self.followed.clear()
        self.attached = False

        def work() -> list[RunRecord]:
            from core.train.monitor import attach_runs

            return attach_runs(store)

        def done(runs: list[RunRecord]) -> None:
            self.runs = runs
            self.attached = True
            for run in runs:
                if run.status in ("running", "created"):
                    self.follow(run.id)
            self.runsChanged.emit()
            self._timer.start()

        self._poller.run(work, on_done=done, on_error=self._report)

    def shutdown(self) -> None:
        """Stop polling before the workspace closes its store: the poller thread must not
        read a closed store, nor deliver to a hub that is being destroyed."""
        self._closed = True
        self._timer.stop()
        self._poller.shutdown()

    def refresh(self) -> None:
        """Read the run list again now (the runs being followed keep their state)."""
        self._list_due = True
        QTimer.singleShot(0, self.tick)

    def _report(self, exc: BaseException) -> None:
        self.ctx.message.emit("error", f"Training runs: {exc}")

    # ------------------------------------------------------------------ following

    def follow(self, run_id: str, proc: subprocess.Popen[bytes] | None = None) -> Followed:
        """Follow `run_id` (its history is read at the next poll)."""
        from core.train.monitor import MonitorState, RunTracker

        entry = self.followed.get(run_id)
        if entry is None:
            entry = Followed(RunTracker(run_id, proc), MonitorState())
            self.followed[run_id] = entry
        elif proc is not None:
            entry.tracker.proc = proc
            entry.loaded = False  # poll again until it ends
        if not self._timer.isActive() and self.ctx.store is not None and not self._closed:
            self._timer.start()
        QTimer.singleShot(0, self.tick)
        return entry

    def state(self, run_id: str) -> Followed | None:
        return self.followed.get(run_id)

    def record(self, run_id: str) -> RunRecord | None:
        entry = self.followed.get(run_id)
        if entry is not None and entry.run is not None:
            return entry.run
        return next((r for r in self.runs if r.id == run_id), None)

    def tick(self) -> None:
        store = self.ctx.store
        if self._in_flight or store is None or self._closed:
            return
        self._ticks += 1
        self._reap = [proc for proc in self._reap if proc.poll() is None]
        if self._ticks % LIST_EVERY == 0:
            self._list_due = True
        live = [(rid, e.tracker) for rid, e in self.followed.items() if e.live]
        want_list = self._list_due
        if not live and not want_list:
            return
        self._in_flight = True
        self._list_due = False

        def work() -> tuple[list[Any], list[RunRecord] | None]:
            from core.store.training import list_runs
            from core.train.monitor import poll_all

            results = poll_all(store, [tracker for _rid, tracker in live])
            runs = list(reversed(list_runs(store))) if want_list else None
            return list(zip([rid for rid, _t in live], results, strict=True)), runs

        def fail(exc: BaseException) -> None:
            self._in_flight = False

        self._poller.run(work, on_done=self._polled, on_error=fail)

    def _polled(self, result: tuple[list[Any], list[RunRecord] | None]) -> None:
        self._in_flight = False
        pairs, runs = result
        status_changed = False
        for run_id, update in pairs:
            entry = self.followed.get(run_id)
            if entry is None:
                continue
            if isinstance(update, BaseException):
                entry.error = str(update)
                entry.loaded = True
                self.updated.emit(run_id)
                continue
            status_changed |= self._apply(entry, update)
            self.updated.emit(run_id)
        if runs is not None:
            changed = [(r.id, r.status, r.step) for r in runs] != [
                (r.id, r.status, r.step) for r in self.runs
            ]
            self.runs = runs
            for run in runs:  # started elsewhere (hat train ...) while the studio is open
                if run.status == "running" and run.id not in self.followed:
                    self.follow(run.id)
            if changed or status_changed:
                self.runsChanged.emit()
        elif status_changed:
            # `_apply` already put the ended run into `runs`, so the next listing would see
            # no change: say it now, or Start stays locked by a run that has ended
            self.runsChanged.emit()
            self._list_due = True
            QTimer.singleShot(0, self.tick)

    def _apply(self, entry: Followed, update: RunUpdate) -> bool:
        from core.train.monitor import MonitorState

        before = entry.run.status if entry.run is not None else None
        if update.reset:
            entry.state = MonitorState()
        entry.state.apply(update.events)
        entry.state.add_log(update.log)
        entry.run = update.run
        entry.children = update.children
        entry.source = update.source
        entry.loaded = True
        entry.error = None
        for index, run in enumerate(self.runs):
            if run.id == update.run.id:
                self.runs[index] = update.run
        proc = entry.tracker.proc
        if update.run.finished and proc is not None and proc.poll() is None:
            self._reap.append(proc)
        registered = update.run.outputs.get("registered") or []
        entry.seen_live |= not update.run.finished
        if update.run.finished and registered and entry.seen_live and not entry.published:
            # what was just trained is what the operator wants to try next, on every page
            entry.published = True
            self.ctx.announce(StoreChange.MODELS)  # the run's child registered them
            self.ctx.set_current_model(str(registered[0]))
        return before != update.run.status

    # ------------------------------------------------------------------ actions

    def launch(
        self,
        config: Any,
        env: Environment,
        *,
        devices: list[int] | None = None,
        run_id: str | None = None,
        on_done: Callable[[RunRecord], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Start a stage or a pipeline (config decides) and follow it."""
        store = self.ctx.store
        if store is None:
            return

        def work() -> tuple[RunRecord, subprocess.Popen[bytes]]:
            from core.train.config import PipelineConfig
            from core.train.launcher import launch_pipeline, launch_stage

            if isinstance(config, PipelineConfig):
                return launch_pipeline(store, config, env, devices=devices)
            return launch_stage(store, config, env, run_id=run_id, devices=devices)

        self.ctx.jobs.run(
            work,
            on_done=lambda result: self._started(result, on_done),
            on_error=on_error or self._report,
            label="Starting a training run",
        )

    def _started(
        self,
        result: tuple[RunRecord, subprocess.Popen[bytes]],
        on_done: Callable[[RunRecord], None] | None,
    ) -> None:
        run, proc = result
        self.runs.insert(0, run)
        self.follow(run.id, proc)
        self._list_due = True
        self.runsChanged.emit()
        if on_done is not None:
            on_done(run)

    def _act(self, what: str, fn: Callable[[], Any], run_id: str, after: Any = None) -> None:
        def done(value: Any) -> None:
            if after is not None:
                after(value)
            self.follow(run_id)
            self._list_due = True

        self.ctx.jobs.run(fn, on_done=done, on_error=self._report, label=what)

    def stop(self, run_id: str) -> None:
        """Ask the run to save a checkpoint and its adapter, then end (resumable)."""
        store = self.ctx.store
        if store is None:
            return
        from core.train import runs

        self._act("Stopping a run", lambda: runs.stop(store, run_id), run_id)

    def cancel(self, run_id: str) -> None:
        """End the run at once without saving."""
        store = self.ctx.store
        if store is None:
            return
        from core.train import runs

        self._act("Cancelling a run", lambda: runs.cancel(store, run_id), run_id)

    def resume(self, run_id: str) -> None:
        """Continue from the last checkpoint (a pipeline: from its unfinished stage)."""
        store = self.ctx.store
        if store is None:
            return
        from core.train.launcher import resume_run

        def attach(proc: subprocess.Popen[bytes]) -> None:
            entry = self.follow(run_id, proc)
            entry.loaded = False

        self._act("Resuming a run", lambda: resume_run(store, run_id), run_id, attach)

    def restart(self, run_id: str, on_done: Callable[[RunRecord], None] | None = None) -> None:
        """Start a new run with the same request as `run_id`."""
        store, env = self.ctx.store, self.env
        if store is None or env is None:
            return
        from core.train.launcher import restart_run

        self.ctx.jobs.run(
            lambda: restart_run(store, run_id, env),
            on_done=lambda result: self._started(result, on_done),
            on_error=self._report,
            label="Restarting a run",
        )


def run_hub(ctx: StudioContext) -> RunHub:
    """The workspace's hub (made on first use; it lives as long as the context)."""
    hub = getattr(ctx, "_run_hub", None)
    if isinstance(hub, RunHub):
        return hub
    hub = RunHub(ctx)
    ctx._run_hub = hub  # type: ignore[attr-defined]
    ctx.runHubCreated.emit(hub)
    return hub
