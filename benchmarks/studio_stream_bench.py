"""Studio event-loop stall while a training run streams events and a chat streams tokens.

    python benchmarks/studio_stream_bench.py [--idle 15] [--seconds 60] [--model-folder DIR]
                                             [--chat-only] [--out FILE]

One process, offscreen, the real application path: the studio's main window under qasync, its
Chat page and a training-run monitor. A 5 ms QTimer (precise) records how late each tick fires
(the stall of the GUI event loop), in two windows of the same run:

1. **idle** (`--idle` s): the studio open on the Chat page, the page's model server started and
   idle, no training.
2. **load** (`--seconds` s): a real tiny SFT run on the demo model (core/train: prepare + start,
   a `python -m training sft` child, an event per step) followed by the Train page's monitor
   (its run hub polls and folds the events; the monitor draws the charts) in a second window,
   or — when this checkout has no Train page — by a minimal monitor that reads the event stream
   in a worker every 500 ms and updates a pyqtgraph curve in place; and, at the same time, the
   Chat page's live-room replay answering viewer messages back to back through the agent loop
   against a real `transformers serve` (tokens streamed into the page as they arrive).

The load window starts once both are streaming (the first training step event and the first
streamed token). `--chat-only` leaves the training run out: on a small machine the SFT child
takes the cores the model server decodes on, and the chat then streams too slowly to load
the page's drawing path; alone, the server streams at its full speed.

Reported: tick lateness P50 / P99 / max per window, the P99 ratio load : idle, and what
streamed during the load window (tokens, model calls, training events). Goal: P99 in the load
window < 30 ms.

The demo model is imported into the benchmark's own home (about a minute), unless
`--model-folder` names an imported demo model folder to register instead.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROBE_MS = 5


def bench_harness() -> Any:
    """The demo harness with two short reply skills, one tool and four prompt sections: short
    prompts, so the model's time goes to streaming rather than CPU prefill."""
    from core.harness.demo import load_demo_harness

    harness = load_demo_harness().model_copy(deep=True)
    for skill in harness.skills:
        skill.enabled = skill.name in ("product-qa", "chit-chat")
    for tool in harness.tools:
        tool.enabled = tool.name == "get_product_by_link"
    for section in harness.prompt.sections:
        section.enabled = section.id in ("persona", "skills", "tools", "output")
    return harness


def setup_home(home: Path, model_folder: str | None) -> tuple[str, Path]:
    """Register the demo model, store the bench harness, write 4 SFT rows (oracle teacher)."""
    from typer.testing import CliRunner

    from core.cli.main import app
    from core.models import add_demo, add_folder
    from core.store import Store

    with Store.open(home / "hat.db") as store:
        if model_folder:
            name = add_folder(store, "demo", model_folder).name
        else:
            name = add_demo(store)[0].name
        store.commit(bench_harness(), "bench: two skills, one tool")
    rows = home / "sft4.jsonl"
    result = CliRunner().invoke(
        app,
        ["data", "generate", "--teacher", "oracle", "--tasks", "train", "--per-category", "1",
         "--variants", "1", "--sampler", "hsa", "--harness-version", "head", "--limit", "4",
         "--out", str(rows), "-j", "1"],
    )  # fmt: skip
    if result.exit_code != 0:
        raise SystemExit(f"could not generate SFT rows:\n{result.output}")
    return name, rows


def start_training(model: str, rows: Path) -> tuple[str, Any]:
    from core.store import Store
    from core.train.config import parse_stage
    from core.train.launch_checks import detect_environment
    from core.train.runs import prepare, start

    config = parse_stage(
        {
            "model": model,
            "data": [str(rows)],
            "system_prompt": "compact",
            "max_length": 288,
            "per_device_batch_size": 2,
            "learning_rate": 1e-4,
            "lr_scheduler": "constant",
            "max_steps": 2000,
            "logging_steps": 1,
            "save_steps": 100000,
        },
        "sft",
    )
    with Store.open() as store:
        run = prepare(store, config, detect_environment())
        proc = start(store, run.id)
    return run.id, proc


class MiniMonitor:
    """Stand-in for the Train page's monitor: events read in a worker, a loss curve updated in
    place (one curve object, `setData`), the step count in a label."""

    def __init__(self, run_dir: Path, jobs: Any) -> None:
        import pyqtgraph as pg
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

        self.run_dir = run_dir
        self.jobs = jobs
        self.offset = 0
        self.steps: list[float] = []
        self.loss: list[float] = []
        self.events = 0
        self.widget = QWidget()
        lay = QVBoxLayout(self.widget)
        self.status = QLabel("waiting for the first step")
        lay.addWidget(self.status)
        self.plot = pg.PlotWidget()
        self.curve = self.plot.plot([], [])
        lay.addWidget(self.plot)
        self.widget.resize(900, 600)
        self.timer = QTimer()
        self.timer.setInterval(500)
        self.timer.timeout.connect(self.poll)
        self._busy = False

    def start(self) -> None:
        self.widget.show()
        self.timer.start()

    def poll(self) -> None:
        if self._busy:
            return
        from core.train.events import events_path, read_events

        self._busy = True
        path, offset = events_path(self.run_dir), self.offset
        self.jobs.run(
            lambda: read_events(path, offset), on_done=self._got, on_error=self._err, label=""
        )

    def _err(self, _exc: BaseException) -> None:
        self._busy = False

    def _got(self, result: tuple[list[Any], int]) -> None:
        self._busy = False
        events, self.offset = result
        for event in events:
            self.events += 1
            if event.get("event") == "log" and "loss" in event:
                self.steps.append(float(event["step"]))
                self.loss.append(float(event["loss"]))
        if events:
            self.curve.setData(self.steps, self.loss)
            self.status.setText(f"step {int(self.steps[-1]) if self.steps else 0}")

    @property
    def step_seen(self) -> bool:
        return bool(self.steps)


class TrainPageMonitor:
    """The Train page's own monitor (`RunMonitor` on the page's run hub) following the run."""

    def __init__(self, win: Any, run_id: str, proc: Any) -> None:
        from PySide6.QtWidgets import QVBoxLayout, QWidget

        from studio.pages.train.monitor import RunMonitor

        page = win.page("train")
        self.hub = page.hub
        self.entry = self.hub.follow(run_id, proc)
        self.run_id = run_id
        self.widget = QWidget()
        lay = QVBoxLayout(self.widget)
        self.monitor = RunMonitor(self.hub)
        lay.addWidget(self.monitor)
        self.widget.resize(1100, 800)
        self.events = 0
        self.hub.updated.connect(self._updated)

    def _updated(self, run_id: str) -> None:
        if run_id == self.run_id:
            self.events += 1

    def start(self) -> None:
        self.widget.show()
        self.monitor.show_run(self.run_id)

    @property
    def step_seen(self) -> bool:
        state = self.hub.state(self.run_id)
        return bool(state is not None and getattr(state.state, "step", 0))


def percentiles(values: list[float]) -> dict[str, Any]:
    """P50/P99/max of the lateness, and when (seconds into the window) ticks ran > 50 ms late."""
    import numpy as np

    data = np.asarray(sorted(max(0.0, v) for v in values), dtype=float)
    elapsed, long = 0.0, []
    for v in values:
        elapsed += (PROBE_MS + v) / 1000
        if v > 50:
            long.append([round(elapsed, 1), round(v, 1)])
    return {
        "ticks": len(data),
        "p50_ms": round(float(np.percentile(data, 50)), 2),
        "p99_ms": round(float(np.percentile(data, 99)), 2),
        "max_ms": round(float(data.max()), 2),
        "over_50ms": long,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    home = Path(tempfile.mkdtemp(prefix="hat-stream-bench-"))
    os.environ["HAT_HOME"] = str(home)
    sys.path.insert(0, str(ROOT))
    t0 = time.monotonic()
    model, rows = setup_home(home, args.model_folder)
    setup_s = time.monotonic() - t0

    import qasync
    from PySide6.QtCore import Qt, QTimer

    from core.store import Store
    from core.train.runs import cancel
    from studio.app import create_app, create_window
    from studio.jobs import jobs, reset_jobs
    from studio.workspace import InstanceGuard, settings

    settings(home).setValue("window/page", "chat")
    app = create_app([])
    guard = InstanceGuard(home)
    guard.acquire()
    win = create_window(home, theme_name="light", guard=guard)
    win.resize(1440, 900)
    win.show()
    loop = qasync.QEventLoop(app, already_running=False)
    asyncio.set_event_loop(loop)

    ticks: list[float] = []
    last = [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        ticks.append((now - last[0]) * 1000 - PROBE_MS)
        last[0] = now

    probe = QTimer()
    probe.setTimerType(Qt.TimerType.PreciseTimer)
    probe.timeout.connect(tick)
    stalls: list[dict[str, Any]] = []
    watching = threading.Event()

    def watchdog() -> None:
        """Where the GUI thread is when a tick is over 100 ms late (one stack per stall)."""
        import traceback

        main_id = threading.main_thread().ident
        reported = 0.0
        while not stop_watch.is_set():
            time.sleep(0.02)
            if not watching.is_set():
                continue
            behind = time.perf_counter() - last[0]
            if behind > 0.1 and last[0] != reported:
                frame = sys._current_frames().get(main_id or 0)
                if frame is not None:
                    stack = traceback.format_stack(frame)[-8:]
                    stalls.append({"behind_ms": round(behind * 1000), "stack": stack})
                reported = last[0]

    stop_watch = threading.Event()
    threading.Thread(target=watchdog, daemon=True, name="stall-watchdog").start()

    async def until(predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {what}")
            await asyncio.sleep(0.05)

    async def window(seconds: float) -> list[float]:
        ticks.clear()
        last[0] = time.perf_counter()
        probe.start(PROBE_MS)
        watching.set()
        await asyncio.sleep(seconds)
        watching.clear()
        probe.stop()
        return list(ticks[1:])

    result: dict[str, Any] = {"setup_s": round(setup_s, 1)}
    run_id: str | None = None
    children: list[subprocess.Popen[bytes]] = []

    async def main() -> None:
        nonlocal run_id
        await until(lambda: win.ctx.session.doc is not None, 120, "the workspace")
        page = win.page("chat")
        panel = page.servers["A"]
        await until(lambda: panel.model.currentData() == model, 60, "the model list")
        await until(lambda: "A" in page.lanes, 60, "the harness")
        page.max_tokens.setValue(args.max_tokens)
        started = time.monotonic()
        panel.start()
        await until(lambda: panel.state == "running", 600, "the model server")
        result["server_start_s"] = round(time.monotonic() - started, 1)
        await asyncio.sleep(2.0)
        idle = await window(args.idle)
        result["idle"] = percentiles(idle)
        print("idle", json.dumps(result["idle"]), flush=True)

        monitor: Any = None
        if not args.chat_only:
            run_id, proc = start_training(model, rows)
            children.append(proc)
            try:
                monitor = TrainPageMonitor(win, run_id, proc)
                result["monitor"] = "Train page RunMonitor"
            except Exception as exc:  # no Train page here (or another version of it)
                monitor = MiniMonitor(home / "runs" / run_id, jobs())
                result["monitor"] = f"minimal ({type(exc).__name__}: {exc})"
            monitor.start()
        deltas = [0]
        column = page.columns["A"]
        original = column.stream.delta

        def counting(text: str) -> None:
            deltas[0] += 1
            original(text)

        column.stream.delta = counting  # type: ignore[method-assign]
        page.replay_history.setChecked(False)
        page.start_replay(count=500, pace_s=0.0, seed=1)
        await until(lambda: deltas[0] > 0, 600, "the first streamed token")
        if monitor is not None:
            await until(lambda: monitor.step_seen, 900, "the first training step")
        lane = page.lanes["A"]
        rows_before = len(lane.session.rows)

        def training_events() -> int:
            return monitor.events if monitor is not None else 0

        events_before, deltas_before = training_events(), deltas[0]
        load = await window(args.seconds)
        result["load"] = percentiles(load)
        page.stop_replay()
        result["streamed"] = {
            "chat_deltas": deltas[0] - deltas_before,
            "chat_requests_finished": len(lane.session.rows) - rows_before,
            "training_updates": training_events() - events_before,
        }
        done = lane.session.rows[rows_before:]
        calls = [c for r in done for c in r.calls if c.error is None]
        result["streamed"]["model_calls"] = len(calls)
        result["streamed"]["output_tokens"] = sum(c.output_tokens or 0 for c in calls)
        result["p99_ratio_load_idle"] = round(
            result["load"]["p99_ms"] / max(result["idle"]["p99_ms"], 0.01), 2
        )
        print("load", json.dumps(result["load"]), flush=True)
        for _ in range(600):  # let the reply in flight finish (at most 30 s), then tear down
            if not page.busy:
                break
            await asyncio.sleep(0.05)

    try:
        loop.run_until_complete(main())
    finally:
        if run_id is not None:
            with Store.open() as store:
                try:
                    cancel(store, run_id, force=True)
                except Exception as exc:  # already finished
                    print(f"cancel: {exc}", file=sys.stderr)
        for child in children:  # the training child must not outlive the benchmark
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait(timeout=10)
        app.aboutToQuit.emit()  # what quitting does: the chat's server stops, pollers end
        reset_jobs()
        asyncio.set_event_loop(None)
        loop.close()
        win._closing_ok = True
        win.close()
        guard.release()
    stop_watch.set()
    result["stall_stacks"] = stalls
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, default=15.0, help="seconds of the idle window")
    parser.add_argument("--seconds", type=float, default=60.0, help="seconds of the load window")
    parser.add_argument("--max-tokens", type=int, default=128, help="per model call")
    parser.add_argument("--model-folder", help="an imported demo model folder to register")
    parser.add_argument(
        "--chat-only",
        action="store_true",
        help="no training run in the load window: the chat streams at the server's full speed",
    )
    parser.add_argument("--out", help="write the results as JSON")
    args = parser.parse_args()
    result = run(args)
    print(json.dumps(result, indent=2), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
