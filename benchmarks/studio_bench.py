"""Studio benchmarks: cold start to first painted window, and event-loop stalls while editing.

    python benchmarks/studio_bench.py [--runs 5] [--seconds 8] [--skills 200] [--out FILE]

1. **Cold start.** Fresh Python processes, alternating: a bare PySide6 window (QApplication +
   QMainWindow + a label) and the studio (`studio.app`: theme, instance lock, the main window on
   a fresh workspace). Each child prints the wall-clock time of its window's first paint event;
   the parent subtracts the time it spawned the child. Medians over `--runs`. The studio child
   also reports when the workspace finished opening (store, demo import), which happens after
   the first paint, in a worker.
2. **Event-loop stall while editing.** In-process, offscreen: the studio opens a workspace whose
   harness has `--skills` skills (1-2 KB Markdown bodies each). A 5 ms QTimer records how late
   each tick fires (the stall), while a driver types into skill bodies at ~30 keystrokes/s,
   switches skill every 40 keystrokes, edits a description and undoes now and then, and saves a
   version (a worker job) every 3 seconds. Reported: P50 / P99 / max of the tick lateness.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BARE = r"""
import sys, time
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow
app = QApplication(sys.argv)
class F(QObject):
    def eventFilter(self, obj, ev):
        if ev.type() == QEvent.Type.Paint:
            print(f"paint {time.time():.6f}", flush=True)
            QTimer.singleShot(0, app.quit)
            obj.removeEventFilter(self)
        return False
w = QMainWindow()
w.setCentralWidget(QLabel("Hello"))
w.resize(1440, 900)
f = F()
w.installEventFilter(f)
w.show()
app.exec()
"""

STUDIO = r"""
import sys, time
from pathlib import Path
from PySide6.QtCore import QEvent, QObject, QTimer
from studio.app import create_app, create_window
from studio.workspace import InstanceGuard
app = create_app([])
home = Path(sys.argv[1])
guard = InstanceGuard(home)
guard.acquire()
win = create_window(home, theme_name="light", guard=guard)
class F(QObject):
    def eventFilter(self, obj, ev):
        if ev.type() == QEvent.Type.Paint:
            print(f"paint {time.time():.6f}", flush=True)
            obj.removeEventFilter(self)
        return False
f = F()
win.installEventFilter(f)
def ready():
    print(f"ready {time.time():.6f}", flush=True)
    QTimer.singleShot(0, app.quit)
win.ctx.session.reset.connect(ready)
win.resize(1440, 900)
win.show()
app.exec()
guard.release()
"""


def _child(code: str, *args: str) -> dict[str, float]:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    start = time.time()
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    marks = {}
    for line in out.stdout.splitlines():
        name, _, value = line.partition(" ")
        if name in ("paint", "ready"):
            marks[name] = float(value) - start
    if "paint" not in marks:
        raise SystemExit(f"child failed:\n{out.stdout}\n{out.stderr}")
    return marks


def cold_start(runs: int) -> dict[str, float]:
    bare, studio, ready = [], [], []
    for _ in range(runs):
        bare.append(_child(BARE)["paint"])
        home = tempfile.mkdtemp(prefix="hat-bench-")
        marks = _child(STUDIO, home)
        studio.append(marks["paint"])
        if "ready" in marks:
            ready.append(marks["ready"])
    b, s = statistics.median(bare), statistics.median(studio)
    return {
        "bare_first_paint_s": round(b, 3),
        "studio_first_paint_s": round(s, 3),
        "ratio": round(s / b, 2),
        "studio_workspace_ready_s": round(statistics.median(ready), 3) if ready else None,
        "runs": runs,
        "bare_all": [round(x, 3) for x in bare],
        "studio_all": [round(x, 3) for x in studio],
    }


def big_harness(n_skills: int):  # type: ignore[no-untyped-def]
    import random

    from core.harness import Skill
    from core.harness.demo import load_demo_harness

    rng = random.Random(0)
    words = [
        "viewer",
        "price",
        "stock",
        "size",
        "coupon",
        "link",
        "product",
        "colour",
        "shipping",
        "return",
        "offer",
        "room",
        "host",
        "reply",
        "tool",
    ]
    harness = load_demo_harness()
    skills = list(harness.skills)
    for i in range(n_skills - len(skills)):
        body = "\n".join(
            f"{k}. " + " ".join(rng.choice(words) for _ in range(rng.randint(12, 24))) + "."
            for k in range(1, rng.randint(8, 14))
        )
        skills.append(
            Skill(
                name=f"skill-{i:03d}",
                description=f"Handle {rng.choice(words)} questions ({i}).",
                body=f"# Skill {i}\n\n## Steps\n{body}\n",
                kind="strategy" if i % 3 else "reply",
            )
        )
    return harness.model_copy(update={"skills": skills})


def stall(seconds: float, n_skills: int, save_every: float = 3.0) -> dict[str, float]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    home = Path(tempfile.mkdtemp(prefix="hat-bench-stall-"))
    os.environ["HAT_HOME"] = str(home)
    from PySide6.QtCore import QEventLoop, Qt, QTimer
    from PySide6.QtTest import QTest

    from core.store import Store
    from studio.app import create_app, create_window
    from studio.jobs import jobs
    from studio.workspace import InstanceGuard, settings

    harness = big_harness(n_skills)
    with Store.open(home / "hat.db") as store:
        store.commit(harness, "bench: 200 skills")
    settings(home).setValue("harness/name", harness.name)
    app = create_app([])
    guard = InstanceGuard(home)
    guard.acquire()
    win = create_window(home, theme_name="light", guard=guard)
    win.resize(1440, 900)
    win.show()

    def spin(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    while win.ctx.session.doc is None:
        spin(20)
    spin(300)
    page = win.harness_page
    names = [s.name for s in win.ctx.session.harness.skills]
    state = {"keys": 0, "skill": 0, "saves": 0}

    def open_skill(i: int) -> None:
        page.tree.select_name("skills", names[i % len(names)])
        ed = page.skill_editor
        ed.markdown.setFocus()
        ed.markdown.moveCursor(ed.markdown.textCursor().MoveOperation.End)

    open_skill(0)
    ticks: list[float] = []
    last = [time.perf_counter()]
    interval_ms = 5

    def tick() -> None:
        now = time.perf_counter()
        ticks.append((now - last[0]) * 1000 - interval_ms)
        last[0] = now

    text = "Keep the reply short and friendly, then point to the link. "

    def drive() -> None:
        ed = page.skill_editor
        k = state["keys"]
        state["keys"] += 1
        if k % 40 == 39:
            state["skill"] += 7
            open_skill(state["skill"])
            return
        if k % 97 == 50:
            page.undo()
            return
        if k % 61 == 30:
            ed.description.setPlainText(f"Handle questions, revision {k}.")
            return
        QTest.keyClick(ed.markdown, text[k % len(text)])

    def save() -> None:
        if jobs().running == 0 and win.ctx.session.dirty:
            state["saves"] += 1
            page.save(f"bench save {state['saves']}")

    probe = QTimer()
    probe.setTimerType(Qt.TimerType.PreciseTimer)
    probe.timeout.connect(tick)
    driver = QTimer()
    driver.timeout.connect(drive)
    saver = QTimer()
    saver.timeout.connect(save)
    last[0] = time.perf_counter()
    probe.start(interval_ms)
    driver.start(33)
    if save_every > 0:
        saver.start(int(save_every * 1000))
    spin(int(seconds * 1000))
    probe.stop()
    driver.stop()
    saver.stop()
    while jobs().running:
        spin(20)
    lateness = sorted(max(0.0, t) for t in ticks[1:])

    def pct(p: float) -> float:
        import numpy as np

        return float(np.percentile(lateness, p))

    result = {
        "skills": len(names),
        "seconds": seconds,
        "ticks": len(lateness),
        "keystrokes": state["keys"],
        "saves": state["saves"],
        "stall_p50_ms": round(pct(50), 2),
        "stall_p99_ms": round(pct(99), 2),
        "stall_max_ms": round(lateness[-1], 2),
    }
    win._closing_ok = True
    win.close()
    guard.release()
    del app
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--skills", type=int, default=200)
    parser.add_argument("--out", help="write the results as JSON")
    parser.add_argument("--only", choices=["start", "stall"])
    parser.add_argument(
        "--save-every", type=float, default=3.0, help="seconds between saves (0: none)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    results: dict[str, object] = {}
    if args.only in (None, "start"):
        results["cold_start"] = cold_start(args.runs)
        print(json.dumps(results["cold_start"], indent=2), flush=True)
    if args.only in (None, "stall"):
        results["stall"] = stall(args.seconds, args.skills, args.save_every)
        print(json.dumps(results["stall"], indent=2), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
