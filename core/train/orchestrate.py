"""The pipeline's detached orchestrator: `python -m core.train.orchestrate PIPELINE_ID`.

A pipeline launched from the studio is run by a process of its own, in its own session, so
closing the window never ends it between two stages (core/train/launcher.py). That process
is this module: it continues the pipeline's unfinished stages (`resume_pipeline`) in the home
folder of `$HAT_HOME`, writing one line per stage start and training event to its standard
output (the launcher sends it to the run folder's pipeline.log, which the studio's monitor
shows when the orchestrator fails before the first stage), and exits 0 when the pipeline is
done or was stopped, 1 otherwise: the exit status the studio reports.

It is the service's own entry point, not the `hat` command's, so launching never calls up
into the CLI; `hat train resume PIPELINE` runs the same `resume_pipeline` in the foreground.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from core.store import Store, StoreError
from core.store.training import RunRecord
from core.train.config import ConfigError
from core.train.launch_checks import detect_environment
from core.train.pipeline import resume_pipeline
from core.train.runs import RunError

ENDED_WELL = ("done", "stopped")


def event_line(event: dict[str, Any]) -> str | None:
    """One plain line for a training event worth a log line (phases, steps' losses,
    checkpoints, outputs); None for the rest."""
    kind = event.get("event")
    if kind == "phase":
        reason = f" - {event['reason']}" if event.get("reason") else ""
        return f"{event.get('phase')}{reason}"
    if kind == "log":
        parts = [f"step {event.get('step')}/{event.get('total')}"]
        parts += [f"{key} {event[key]:.4g}" for key in ("loss", "learning_rate")
                  if isinstance(event.get(key), int | float)]  # fmt: skip
        return "  " + "  ".join(parts)
    if kind == "checkpoint":
        return f"  checkpoint at step {event.get('step')}"
    if kind == "output":
        return "  " + ", ".join(f"{k}: {event[k]}" for k in ("adapter", "merged", "model")
                                if event.get(k))  # fmt: skip
    return None


def _print(line: str | None) -> None:
    if line:
        print(line, flush=True)


def _on_stage(run: RunRecord, action: str) -> None:
    _print(f"pipeline: stage {run.stage} ({run.id}): {action}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m core.train.orchestrate PIPELINE_ID", file=sys.stderr)
        return 2
    try:
        with Store.open() as store:
            _print(f"pipeline {args[0]}: continuing its unfinished stages")
            run = resume_pipeline(
                store,
                args[0],
                detect_environment(),
                on_event=lambda event: _print(event_line(event)),
                on_stage=_on_stage,
            )
    except (RunError, ConfigError, StoreError) as exc:
        print(f"pipeline {args[0]}: {exc}", file=sys.stderr, flush=True)
        return 1
    _print(f"pipeline {run.id}: {run.status}" + (f" - {run.reason}" if run.reason else ""))
    return 0 if run.status in ENDED_WELL else 1


if __name__ == "__main__":
    sys.exit(main())
