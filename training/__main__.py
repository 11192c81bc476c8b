"""`python -m training sft|opd|rl --config run.yaml [--run-dir DIR] [--resume]`

The stage runners (training/sft.py, opd.py, rl.py) as a child process. `core.train.runs`
starts this (or `accelerate launch -m training ...`) with the run's frozen config and folder;
run by hand without `--run-dir`, a folder under `<home>/runs/` is made (not in the store).

Events go to `<run dir>/events.jsonl` (core/train/events.py); the final phase says how it
ended: done, stopped (the stop flag: checkpoint and adapter saved), cancelled (the cancel flag
or SIGTERM), or failed with the reason (bad data, out of memory, an error). Exit status: 0
done / stopped / cancelled, 1 failed, 2 bad config, 3 bad data.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from core.train.config import STAGES, ConfigError, load_config
from core.train.data import DataError
from core.train.events import EventWriter


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    text = str(exc).lower()
    return name == "OutOfMemoryError" or any(
        marker in text
        for marker in ("out of memory", "can't allocate memory", "cannot allocate memory")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__.split("\n")[0])
    parser.add_argument("stage", choices=STAGES)
    parser.add_argument("--config", required=True, type=Path, help="The stage's YAML config.")
    parser.add_argument("--run-dir", type=Path, default=None, help="Run folder (events, outputs).")
    parser.add_argument("--resume", action="store_true", help="Continue from the last checkpoint.")
    args = parser.parse_args(argv)

    try:
        config = load_config(args.config, args.stage)
    except ConfigError as exc:
        print("\n".join(exc.lines()), file=sys.stderr)
        return 2
    run_dir = args.run_dir
    if run_dir is None:
        from core.paths import runs_dir
        from core.train.runs import new_run_id

        run_dir = runs_dir() / new_run_id(args.stage)
    run_dir.mkdir(parents=True, exist_ok=True)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    writer = EventWriter(run_dir) if rank == 0 else RankWriter(run_dir, rank)

    def on_term(signum: int, frame: Any) -> None:
        raise _Terminated()

    signal.signal(signal.SIGTERM, on_term)
    from training.common import StageCancelled, StageContext, package_versions

    writer.phase("loading", stage=args.stage, resume=args.resume)
    writer.emit("info", packages=package_versions(), pid=os.getpid(), rank=rank, world_size=world)
    ctx = StageContext(run_dir=run_dir, writer=writer, resume=args.resume)
    try:
        if args.stage == "sft":
            from training.sft import run
        elif args.stage == "opd":
            from training.opd import run
        else:
            from training.rl import run
        outcome = run(config, ctx)
        writer.phase("stopped" if outcome == "stop" else "done")
        return 0
    except DataError as exc:
        # the log too, not only the event: the monitor's Log tab and `hat train status` show
        # the child's last lines, and a run that failed on its data must not leave them empty
        print(f"failed: data: {exc}", file=sys.stderr, flush=True)
        writer.phase("failed", reason=f"data: {exc}")
        return 3
    except (StageCancelled, _Terminated, KeyboardInterrupt) as exc:
        writer.phase("cancelled", reason=str(exc) or "terminated (SIGTERM)")
        return 0
    except Exception as exc:
        traceback.print_exc()
        if _is_oom(exc):
            writer.phase(
                "failed",
                reason=f"out of memory: {exc}. Lower per_device_batch_size or max_length, "
                "or enable gradient_checkpointing.",
            )
        else:
            writer.phase("failed", reason=f"{type(exc).__name__}: {exc}")
        return 1
    finally:
        writer.close()


class _Terminated(Exception):
    def __str__(self) -> str:
        return "terminated (SIGTERM)"


class RankWriter(EventWriter):
    """Ranks other than 0 keep their own stream, `rank-<N>.jsonl` beside the run's one: the
    launcher, the store and the studio read only `events.jsonl` (rank 0's), so there is one
    curve per run; these files show that every rank ran (its pid, its steps, its losses)."""

    def __init__(self, run_dir: Path, rank: int) -> None:
        self.path = run_dir / f"rank-{rank}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        self.seq = 0
        self._lock = threading.Lock()
        self._handle = self.path.open("a", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
