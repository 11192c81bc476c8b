"""The pipeline's detached orchestrator (core/train/orchestrate.py): the one process that
continues a pipeline outside the front end that launched it, for the studio and for
`hat train pipeline --detach` alike. Real processes, a real store; the pipeline's stage fails
before any training starts (an unknown model passes the form but not the registry), so no
model is needed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import yaml
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store
from core.store.training import get_run, list_runs
from core.train.config import parse_pipeline
from core.train.launch_checks import detect_environment
from core.train.launcher import launch_pipeline
from core.train.orchestrate import event_line, main


def test_event_lines_say_what_a_log_reader_needs() -> None:
    assert event_line({"event": "phase", "phase": "training", "reason": "resumed"}) == (
        "training - resumed"
    )
    line = event_line({"event": "log", "step": 3, "total": 10, "loss": 1.23456, "grad_norm": 2})
    assert line == "  step 3/10  loss 1.235"
    assert event_line({"event": "checkpoint", "step": 5}) == "  checkpoint at step 5"
    assert event_line({"event": "output", "adapter": "/r/a", "model": None}) == "  adapter: /r/a"
    assert event_line({"event": "metrics", "x": 1}) is None


def test_an_unknown_pipeline_is_named_and_exits_1(hat_home: Path) -> None:
    with Store.open(hat_home / "hat.db"):
        pass
    assert main(["no-such-run"]) == 1
    assert main([]) == 2


def test_a_detached_pipeline_from_the_cli_runs_in_the_orchestrator(
    hat_home: Path, tmp_path: Path
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text('{"messages": []}\n')
    config = tmp_path / "pipeline.yaml"
    config.write_text(yaml.safe_dump({"model": "no-such-model", "sft": {"data": [str(data)]}}))
    result = CliRunner().invoke(app, ["train", "pipeline", "--config", str(config), "--detach"])
    assert result.exit_code == 0, result.output
    assert "started in the background" in result.output
    with Store.open(hat_home / "hat.db") as store:
        (pipeline,) = list_runs(store, stage="pipeline")
        deadline = time.monotonic() + 300
        while get_run(store, pipeline.id).status in ("created", "running"):
            assert time.monotonic() < deadline, "the orchestrator never ended the pipeline"
            time.sleep(0.5)
        run = get_run(store, pipeline.id)
    assert run.status == "failed" and run.reason is not None
    assert "stage sft could not start" in run.reason and "no-such-model" in run.reason
    log = (Path(run.run_dir) / "pipeline.log").read_text()
    assert f"pipeline {run.id}: continuing" in log and f"pipeline {run.id}: failed" in log


def test_a_launch_runs_in_the_stores_workspace_and_leaves_the_environment_alone(
    hat_home: Path, tmp_path: Path
) -> None:
    """A front end's workspace need not be $HAT_HOME: the run folder, the orchestrator's store
    and the child's HAT_HOME are the store's folder, and this process's environment is the
    same after the launch as before (no process-wide switch, so no lock between threads)."""
    data = tmp_path / "rows.jsonl"
    data.write_text('{"messages": []}\n')
    config = parse_pipeline({"model": "no-such-model", "sft": {"data": [str(data)]}})
    workspace = tmp_path / "workspace"
    before = dict(os.environ)
    with Store.open(workspace / "hat.db") as store:
        run, proc = launch_pipeline(store, config, detect_environment())
        assert dict(os.environ) == before
        assert proc.wait(timeout=300) == 1
        run = get_run(store, run.id)
    assert Path(run.run_dir).parent == workspace / "runs"
    assert run.status == "failed" and "no-such-model" in (run.reason or "")
    with Store.open(hat_home / "hat.db") as other:
        assert list_runs(other) == []
