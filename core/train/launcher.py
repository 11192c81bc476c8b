"""Launching runs from a long-lived front end (the studio): preview, start, resume, restart.

    text = command_preview(config, env, home=store.home, run_id=run_id)   # the exact lines
    run, proc = launch_stage(store, config, env, run_id=run_id)
    pipeline = launch_pipeline(store, config, env)       # detached orchestrator

The front end's workspace is a folder it was given, not necessarily `$HAT_HOME`: it is the
store's own folder (`Store.home`, so a launch names only the store and can never mix two
workspaces), where run folders are made, and each child gets it as its
`HAT_HOME` (with `CUDA_VISIBLE_DEVICES` when a subset of GPUs was chosen) through its own
environment (`runs.child_env`); this process's environment is never changed, so launches
from several threads need no lock.

Stage children are started with `runs.start` (their own session: they outlive the front end,
which re-attaches later). A pipeline is orchestrated by a detached process
(`python -m core.train.orchestrate <id>`, core/train/orchestrate.py) rather than by a thread
of the front end, for the same reason: closing the window
must not end a pipeline between two stages. The chosen GPUs are kept in the run's outputs
(`devices`) so that resume and restart use the same ones.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from core.pythons import project_root, training_python
from core.store import Store
from core.store.training import RunRecord, get_run, update_run
from core.train.config import (
    PipelineConfig,
    StageConfig,
    parse_pipeline,
    parse_stage,
    resolved_stages,
)
from core.train.launch_checks import Environment, check_memory
from core.train.measure import check_sft_rows
from core.train.pipeline import PIPELINE_LOG, start_pipeline
from core.train.runs import (
    RunError,
    check_one_run,
    child_env,
    new_run_id,
    prepare,
    refresh,
    resume,
    run_devices,
    show_command,
    start,
)
from core.train.scaleout import stage_command


def _devices_prefix(devices: list[int] | None) -> str:
    if devices is None:
        return ""
    return f"CUDA_VISIBLE_DEVICES={','.join(str(d) for d in devices)} "


def command_preview(
    config: StageConfig | PipelineConfig,
    env: Environment,
    *,
    home: Path,
    run_id: str | None = None,
    devices: list[int] | None = None,
    python: str | None = None,
) -> str:
    """The exact commands a launch runs: the `hat train` line and the training process line
    (`python -m training …` on CPU, `accelerate launch …` with GPUs), with the accelerate
    config when one is generated."""
    runs = Path(home) / "runs"
    exe = python or training_python()
    prefix = _devices_prefix(devices)
    if isinstance(config, PipelineConfig):
        lines = [
            "# from a terminal (this config saved as pipeline.yaml):",
            f"{prefix}hat train pipeline --config pipeline.yaml",
        ]
        for stage in resolved_stages(config):
            stage_dir = runs / new_run_id(stage.stage)
            argv, accelerate = stage_command(
                stage, env, python=exe, config_path=stage_dir / "config.yaml", run_dir=stage_dir
            )
            lines += ["", f"# stage {stage.stage}: the training process", show_command(argv)]
            if accelerate is not None:
                lines.append(f"# + generated {stage_dir / 'accelerate.yaml'}")
        return "\n".join(lines)
    run_dir = runs / (run_id or new_run_id(config.stage))
    argv, accelerate = stage_command(
        config, env, python=exe, config_path=run_dir / "config.yaml", run_dir=run_dir
    )
    lines = [
        "# from a terminal (the request is saved in the run folder):",
        f"{prefix}hat train {config.stage} --config {shlex.quote(str(run_dir / 'request.yaml'))}",
        "",
        "# the training process it starts:",
        prefix + show_command(argv),
    ]
    if accelerate is not None:
        lines += ["", f"# {run_dir / 'accelerate.yaml'}:", yaml.safe_dump(accelerate).rstrip()]
    return "\n".join(lines)


def _remember_devices(store: Store, run: RunRecord, devices: list[int] | None) -> RunRecord:
    if devices is None:
        return run
    return update_run(store, run.id, outputs={**run.outputs, "devices": list(devices)})


def launch_stage(
    store: Store,
    config: StageConfig,
    env: Environment,
    *,
    run_id: str | None = None,
    devices: list[int] | None = None,
    parent: str | None = None,
    parallel: bool = False,
) -> tuple[RunRecord, subprocess.Popen[bytes]]:
    """Validate, freeze and start one stage in the store's workspace (ConfigError / RunError
    say why not; RunError too while another run trains, unless `parallel`)."""
    if parent is None and not parallel:
        check_one_run(store)
    if parent is None:
        check_sft_rows(store, config)  # ConfigError when no row keeps a reply token
        check_memory(store, config, env)  # ConfigError when the run does not fit in memory
    run = prepare(store, config, env, run_id=run_id, parent=parent)
    run = _remember_devices(store, run, devices)
    proc = start(store, run.id)
    return get_run(store, run.id), proc


def _spawn_pipeline(store: Store, run: RunRecord) -> subprocess.Popen[bytes]:
    """The pipeline's orchestrator in its own session (it runs the pending stages)."""
    run_dir = Path(run.run_dir)
    env = child_env(store.home, run_devices(run))
    root = str(project_root())
    command = [sys.executable, "-m", "core.train.orchestrate", run.id]
    with (run_dir / PIPELINE_LOG).open("ab") as log:
        try:
            return subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=root,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise RunError(f"cannot start the pipeline process: {exc.strerror}") from None


def launch_pipeline(
    store: Store,
    config: PipelineConfig,
    env: Environment,
    *,
    devices: list[int] | None = None,
    parallel: bool = False,
) -> tuple[RunRecord, subprocess.Popen[bytes]]:
    """Validate the pipeline, create its run, and start its detached orchestrator (RunError
    while another run trains, unless `parallel`)."""
    if not parallel:
        check_one_run(store)
    run = start_pipeline(store, config, env)
    run = _remember_devices(store, run, devices)
    return run, _spawn_pipeline(store, run)


def resume_run(store: Store, run_id: str, *, parallel: bool = False) -> subprocess.Popen[bytes]:
    """Continue a stopped / failed / cancelled stage from its checkpoint, or a pipeline from
    its unfinished stage (RunError says why not, or that another run trains)."""
    run = refresh(store, run_id)
    if run.finished and not parallel:  # resume() refuses a run that has not ended, saying so
        check_one_run(store)
    if run.stage != "pipeline":
        return resume(store, run.id)
    if run.status in ("running", "done", "created"):
        raise RunError(f"pipeline {run.id} is {run.status}; only an ended pipeline resumes")
    return _spawn_pipeline(store, run)


def request_of(run: RunRecord) -> StageConfig | PipelineConfig:
    """The config a run was asked with (registry names, not resolved folders)."""
    data: Any = yaml.safe_load(run.config) or {}
    if run.stage == "pipeline":
        return parse_pipeline(data)
    return parse_stage(data, run.stage)


def restart_run(
    store: Store, run_id: str, env: Environment
) -> tuple[RunRecord, subprocess.Popen[bytes]]:
    """A new run with the same request as `run_id` (which stays as it is)."""
    run = get_run(store, run_id)
    if not run.finished:
        raise RunError(f"run {run.id} is {run.status}; stop it before starting it again")
    config = request_of(run)
    devices = run_devices(run)
    if isinstance(config, PipelineConfig):
        return launch_pipeline(store, config, env, devices=devices)
    return launch_stage(store, config, env, devices=devices)
