"""The one-run rule (#35 item 2): enforced where runs are launched, so `hat train` and the
studio obey the same rule, and released on every ending — a child that crashed while nobody
watched included. Real processes and a real store; the "training" process is a real child
whose command line names it as the run's process does (`process_alive` checks that)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store
from core.store.training import RunRecord, add_run, get_run
from core.train.runs import RunError, check_one_run, training_now

runner = CliRunner()


def _child(seconds: float) -> subprocess.Popen[bytes]:
    # argv[2] makes the command line name it as a training child does
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})",
                             "training"])  # fmt: skip


@pytest.fixture
def live(hat_home: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    proc = _child(60)
    run_dir = hat_home / "runs" / "sft-live"
    run_dir.mkdir(parents=True)
    (run_dir / "child.log").write_text("loading the model\nTraceback: out of memory\n")
    with Store.open() as store:
        add_run(store, RunRecord(id="sft-live", stage="sft", status="running", config="{}",
                                 run_dir=str(run_dir), pid=proc.pid))  # fmt: skip
    try:
        yield proc, "sft-live"
    finally:
        proc.kill()
        proc.wait()


def test_a_second_run_is_refused_while_one_trains_and_allowed_once_it_crashed(
    live: tuple[subprocess.Popen[bytes], str],
) -> None:
    proc, run_id = live
    with Store.open() as store:
        assert [r.id for r in training_now(store)] == [run_id]
        with pytest.raises(RunError, match=rf"{run_id} is training \(pid {proc.pid}\)"):
            check_one_run(store)
    proc.kill()  # the child dies without a final event
    proc.wait()
    with Store.open() as store:
        check_one_run(store)  # released: the crash is settled on the way
        run = get_run(store, run_id)
    assert run.status == "failed" and "out of memory" in (run.reason or "")


def test_a_stage_a_pipeline_and_a_resume_from_the_cli_obey_the_rule(
    live: tuple[subprocess.Popen[bytes], str], tmp_path: Path
) -> None:
    _proc, run_id = live
    config = tmp_path / "sft.yaml"
    (tmp_path / "rows.jsonl").write_text("{}\n")
    config.write_text(f"model: nothing-registered\ndata: [{tmp_path / 'rows.jsonl'}]\n")
    result = runner.invoke(app, ["train", "sft", "--config", str(config)])
    assert result.exit_code == 1
    assert f"{run_id} is training" in result.output and "--parallel" in result.output
    assert "Traceback" not in result.output
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(f"sft:\n  model: nothing-registered\n  data: [{tmp_path / 'rows.jsonl'}]\n")
    result = runner.invoke(app, ["train", "pipeline", "--config", str(pipeline)])
    if "is training" not in result.output:  # a config problem is reported first, also fine
        assert result.exit_code == 1 and "Traceback" not in result.output
    with Store.open() as store:
        add_run(store, RunRecord(id="sft-old", stage="sft", status="stopped", config="{}",
                                 run_dir=str(tmp_path / "old")))  # fmt: skip
    result = runner.invoke(app, ["train", "resume", "sft-old"])
    assert result.exit_code == 1 and f"{run_id} is training" in result.output
