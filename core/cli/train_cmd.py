"""`hat train …`: run the HAT stages as child processes and watch them.

    hat train sft --config sft.yaml                 # validate, launch, follow the events
    hat train sft --config sft.yaml --show-command  # print the exact child command, run nothing
    hat train rl --config rl.yaml --num-gpus 8 --distributed fsdp2
    hat train sft --config sft.yaml --num-processes 2   # two CPU processes (DDP over gloo)
    hat train pipeline --config hat.yaml            # SFT -> OPD -> RL, each from the last
    hat train list | status RUN | stop RUN | cancel RUN | resume RUN
    hat train schema sft                            # the config's JSON Schema (studio forms)
    hat train estimate sft --config sft.yaml        # memory now; time from a 3-step warm-up

A run whose memory estimate (core/train/estimate.py) exceeds what this machine has free is
refused before it starts, with both numbers.

A config with unknown keys or impossible values is rejected before anything starts, every
problem with its field. In the foreground, Ctrl-C asks the run to stop (checkpoint and adapter
saved, resumable); a second Ctrl-C cancels it. `--detach` returns at once; `hat train status`
follows up (and notices a child that died).
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from core.cli.common import cell, console, err_console, esc, fail, open_store
from core.durations import format_duration
from core.train.config import (
    ConfigError,
    PipelineConfig,
    StageConfig,
    config_schema,
    load_config,
    load_pipeline,
)
from core.train.launch_checks import Environment, check_launch, check_pipeline, detect_environment

app = typer.Typer(
    help="Train: HSA-SFT, general OPD, HSA-RL and the pipeline.", no_args_is_help=True
)

ConfigOpt = Annotated[Path, typer.Option("--config", "-c", help="The stage's YAML config.")]
ShowOpt = Annotated[
    bool, typer.Option("--show-command", help="Print the child command line and exit.")
]
DetachOpt = Annotated[bool, typer.Option("--detach", help="Start and return; do not follow.")]
ParallelOpt = Annotated[
    bool,
    typer.Option(
        "--parallel",
        help="Start even while another run trains (both share the cores or GPU and slow down).",
    ),
]
GpusOpt = Annotated[int | None, typer.Option("--num-gpus", min=0, help="GPUs per machine.")]
ProcsOpt = Annotated[
    int | None,
    typer.Option(
        "--num-processes",
        min=1,
        help="Training processes on this machine (CPU: DDP over gloo; GPU: one per GPU).",
    ),
]
DistOpt = Annotated[
    str | None, typer.Option("--distributed", help="none | multi_gpu | fsdp2 | zero3")
]
MachinesOpt = Annotated[int | None, typer.Option("--num-machines", min=1)]
RankOpt = Annotated[int | None, typer.Option("--machine-rank", min=0)]
IpOpt = Annotated[str | None, typer.Option("--main-process-ip")]
PortOpt = Annotated[int | None, typer.Option("--main-process-port")]


def _launch_overrides(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _apply_launch(config: StageConfig, overrides: dict[str, Any]) -> StageConfig:
    if not overrides:
        return config
    from core.train.config import parse_stage

    data = config.model_dump(mode="json")
    data["launch"] = {**data["launch"], **overrides}
    return parse_stage(data, config.stage)


def _print_problems(problems: list[str]) -> None:
    err_console.print(f"[red]{len(problems)} problem(s) in the config:[/red]")
    for line in problems:
        err_console.print(f"  {line}", markup=False)


def _load_stage(stage: str, path: Path, overrides: dict[str, Any]) -> StageConfig:
    try:
        return _apply_launch(load_config(path, stage), overrides)
    except ConfigError as exc:
        _print_problems(exc.lines())
        raise typer.Exit(1) from None


def _fmt(value: Any, digits: int = 4) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _seconds(value: Any) -> str:
    return format_duration(value if isinstance(value, int | float) else None)


def print_event(event: dict[str, Any]) -> None:
    kind = event.get("event")
    if kind == "phase":
        extra = f" - {esc(event['reason'])}" if event.get("reason") else ""
        phase = esc(event.get("phase"))
        console.print(f"[bold]{phase}[/bold]{extra}", markup=True, highlight=False)
    elif kind == "log":
        parts = [f"step {event.get('step')}/{event.get('total')}"]
        for key in ("loss", "learning_rate", "grad_norm", "tokens_per_s"):
            if event.get(key) is not None:
                parts.append(f"{key} {_fmt(event[key])}")
        for name, value in (event.get("rewards") or {}).items():
            parts.append(f"{name} {_fmt(value, 3)}")
        parts.append(
            f"elapsed {_seconds(event.get('elapsed_s'))} eta {_seconds(event.get('eta_s'))}"
        )
        console.print("  " + "  ".join(parts), markup=False, highlight=False)
    elif kind == "checkpoint":
        console.print(f"  checkpoint at step {event.get('step')}", markup=False)
    elif kind == "resume":
        console.print(f"  resumed after step {event.get('from_step')}", markup=False)
    elif kind == "output":
        for key in ("adapter", "merged", "model"):
            if event.get(key):
                console.print(f"  {key}: {event[key]}", markup=False)


class _Interrupts:
    """Ctrl-C: first stop (save), second cancel, third cancel with SIGTERM."""

    def __init__(self, on_signal: Any) -> None:
        self.count = 0
        self.on_signal = on_signal
        self.previous: Any = None

    def __enter__(self) -> _Interrupts:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def _handle(self, signum: int, frame: Any) -> None:
        self.count += 1
        action = {1: "stop", 2: "cancel"}.get(self.count, "force")
        err_console.print(f"\n[yellow]{action} requested[/yellow]")
        self.on_signal(action)


def _control(store: Any, run_id: str, action: str) -> None:
    from core.train.runs import RunError, cancel, stop

    try:
        if action == "stop":
            stop(store, run_id)
        else:
            cancel(store, run_id, force=action == "force")
    except RunError:
        pass


def _end(run: Any) -> None:
    color = {"done": "green", "stopped": "yellow", "cancelled": "yellow"}.get(run.status, "red")
    console.print(f"run {run.id}: [{color}]{run.status}[/{color}]", markup=True, highlight=False)
    if run.reason:
        console.print(run.reason, markup=False, highlight=False)
    registered = run.outputs.get("registered")
    if registered:
        console.print(f"registered: {', '.join(registered)}", markup=False)
    if run.status != "done" and run.status != "stopped":
        raise typer.Exit(1)


def _show(config: StageConfig, env: Environment) -> None:
    from core.paths import runs_dir
    from core.pythons import training_python
    from core.train.runs import new_run_id, show_command
    from core.train.scaleout import stage_command

    run_dir = runs_dir() / new_run_id(config.stage)
    command, accelerate = stage_command(
        config, env, python=training_python(), config_path=run_dir / "config.yaml", run_dir=run_dir
    )
    console.print(show_command(command), markup=False, highlight=False, soft_wrap=True)
    if accelerate is not None:
        import yaml

        console.print(f"# {run_dir / 'accelerate.yaml'}:", markup=False)
        console.print(yaml.safe_dump(accelerate, sort_keys=True), markup=False, highlight=False)


def _one_run(store: Any, parallel: bool) -> None:
    """The one-run rule (core/train/runs.py `check_one_run`), as the studio's Start obeys it."""
    from core.train.runs import RunError, check_one_run

    if not parallel:
        try:
            check_one_run(store)
        except RunError as exc:
            fail(str(exc))


def _run_stage(config: StageConfig, show: bool, detach: bool, parallel: bool = False) -> None:
    from core.train.runs import RunError, prepare, start, watch

    env = detect_environment()
    problems = check_launch(config, env)
    if problems:
        _print_problems(problems)
        raise typer.Exit(1)
    if show:
        _show(config, env)
        return
    with open_store() as store:
        _one_run(store, parallel)
        from core.train.launch_checks import check_memory
        from core.train.measure import check_sft_rows

        try:
            for warning in check_sft_rows(store, config):
                console.print(f"[yellow]warning[/yellow] {esc(warning)}", soft_wrap=True)
            estimate = check_memory(store, config, env)
            if estimate is not None:
                console.print(f"memory: {estimate.summary()}", markup=False, highlight=False)
            run = prepare(store, config, env)
        except ConfigError as exc:
            _print_problems(exc.lines())
            raise typer.Exit(1) from None
        console.print(f"run {run.id} ({run.run_dir})", markup=False, highlight=False)
        try:
            proc = start(store, run.id)
        except RunError as exc:
            fail(str(exc))
        if detach:
            console.print(f"started (pid {proc.pid}); follow with: hat train status {run.id}")
            return
        with _Interrupts(lambda action: _control(store, run.id, action)):
            run = watch(store, run.id, proc, on_event=print_event)
        _end(run)


def _stage_command(stage: str) -> Any:
    def command(
        config: ConfigOpt,
        show_command: ShowOpt = False,
        detach: DetachOpt = False,
        parallel: ParallelOpt = False,
        num_gpus: GpusOpt = None,
        num_processes: ProcsOpt = None,
        distributed: DistOpt = None,
        num_machines: MachinesOpt = None,
        machine_rank: RankOpt = None,
        main_process_ip: IpOpt = None,
        main_process_port: PortOpt = None,
    ) -> None:
        overrides = _launch_overrides(
            num_gpus=num_gpus,
            num_processes=num_processes,
            distributed=distributed,
            num_machines=num_machines,
            machine_rank=machine_rank,
            main_process_ip=main_process_ip,
            main_process_port=main_process_port,
        )
        _run_stage(_load_stage(stage, config, overrides), show_command, detach, parallel)

    return command


app.command("sft", help="Stage 1, HSA-SFT (SFTTrainer, loss on assistant turns).")(
    _stage_command("sft")
)
app.command("opd", help="Stage 2, general on-policy distillation (reverse KL to the base).")(
    _stage_command("opd")
)
app.command("rl", help="Stage 3, HSA-RL (GRPO, graders as rewards, faults on).")(
    _stage_command("rl")
)


@app.command("pipeline")
def pipeline_cmd(
    config: ConfigOpt,
    show_command: ShowOpt = False,
    detach: DetachOpt = False,
    parallel: ParallelOpt = False,
) -> None:
    """SFT -> OPD -> RL, each stage starting from the previous stage's output."""
    from core.train.pipeline import run_pipeline

    try:
        pipeline: PipelineConfig = load_pipeline(config)
    except ConfigError as exc:
        _print_problems(exc.lines())
        raise typer.Exit(1) from None
    env = detect_environment()
    problems = check_pipeline(pipeline, env)
    if problems:
        _print_problems(problems)
        raise typer.Exit(1)
    if not show_command:
        _pipeline_memory(pipeline, env)
    if show_command:
        from core.train.config import resolved_stages

        for stage in resolved_stages(pipeline):
            console.print(f"# {stage.stage}", markup=False)
            _show(stage, env)
        return
    if detach:
        _detach_pipeline(pipeline, env, parallel)
        return
    with open_store() as store:
        _one_run(store, parallel)
        current: dict[str, str] = {}

        def on_stage(run: Any, how: str) -> None:
            current["id"] = run.id
            console.print(f"== {run.stage}: run {run.id} ({how})", markup=False)

        def interrupt(action: str) -> None:
            if current:
                _control(store, current["id"], action)

        with _Interrupts(interrupt):
            try:
                run = run_pipeline(store, pipeline, env, on_event=print_event, on_stage=on_stage)
            except ConfigError as exc:
                _print_problems(exc.lines())
                raise typer.Exit(1) from None
        _end(run)


def _pipeline_memory(pipeline: PipelineConfig, env: Environment) -> None:
    """Each stage's memory check (core/train/launch_checks.py `check_memory`) before the
    pipeline starts: a stage that cannot fit is refused now, not after the ones before it."""
    from core.train.config import resolved_stages
    from core.train.launch_checks import check_memory

    problems: list[str] = []
    with open_store() as store:
        for stage in resolved_stages(pipeline):
            try:
                check_memory(store, stage, env)
            except ConfigError as exc:
                problems += [f"pipeline.{stage.stage}.{line}" for line in exc.lines()]
    if problems:
        _print_problems(problems)
        raise typer.Exit(1)


def _detach_pipeline(pipeline: PipelineConfig, env: Environment, parallel: bool) -> None:
    """The pipeline run created here and continued by its detached orchestrator, the same
    process the studio starts (core/train/orchestrate.py), logging to its run folder."""
    from core.train.launcher import launch_pipeline
    from core.train.pipeline import PIPELINE_LOG
    from core.train.runs import RunError

    with open_store() as store:
        try:
            run, proc = launch_pipeline(store, pipeline, env, parallel=parallel)
        except (RunError, ConfigError) as exc:
            fail(str(exc))
    log = Path(run.run_dir) / PIPELINE_LOG
    console.print(
        f"pipeline {run.id} started in the background (pid {proc.pid}); log {log}; "
        f"follow with: hat train status {run.id}",
        markup=False,
    )


@app.command("list")
def list_cmd(
    stage: Annotated[str | None, typer.Option("--stage", help="sft | opd | rl | pipeline")] = None,
) -> None:
    """Every training run, oldest first."""
    from rich.table import Table

    from core.store.training import list_runs
    from core.train.runs import refresh

    with open_store() as store:
        runs = [refresh(store, r.id) if r.status == "running" else r for r in list_runs(store)]
        if stage:
            runs = [r for r in runs if r.stage == stage]
        if not runs:
            console.print("no training runs")
            return
        table = Table()
        table.add_column("run", no_wrap=True)
        for name in ("stage", "status", "step", "created", "registered"):
            table.add_column(name)
        for run in runs:
            total = f"/{run.total_steps}" if run.total_steps else ""
            created = run.created_at.strftime("%Y-%m-%d %H:%M") if run.created_at else ""
            registered = ", ".join(run.outputs.get("registered") or [])
            table.add_row(
                cell(run.id), cell(run.stage), cell(run.status), f"{run.step}{total}", created,
                cell(registered),
            )  # fmt: skip
        console.print(table)


@app.command("status")
def status_cmd(
    run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    events: Annotated[int, typer.Option("--events", "-n", help="Last N events to show.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="The run record as JSON.")] = False,
) -> None:
    """A run's status, progress, provenance and last events."""
    from core.store.training import list_runs, run_events
    from core.train.runs import refresh

    with open_store() as store:
        run = refresh(store, run_id)
        if as_json:
            data = {k: v for k, v in run.__dict__.items()}
            console.print_json(json.dumps(data, default=str))
            return
        total = f"/{run.total_steps}" if run.total_steps else ""
        lines = [
            f"run {run.id}  stage {run.stage}  status {run.status}  step {run.step}{total}",
            f"folder {run.run_dir}",
            f"harness {run.harness_version or '-'}  dataset {(run.dataset_hash or '-')[:16]}",
            f"code {run.code_revision or '-'}  packages "
            + ", ".join(f"{k} {v}" for k, v in sorted(run.packages.items())),
        ]
        if run.reason:
            lines.append(f"reason: {run.reason}")
        for key in ("adapter", "merged", "model"):
            if run.outputs.get(key):
                lines.append(f"{key}: {run.outputs[key]}")
        if run.outputs.get("registered"):
            lines.append("registered: " + ", ".join(run.outputs["registered"]))
        for line in lines:
            console.print(line, markup=False, highlight=False)
        if run.stage == "pipeline":
            for child in list_runs(store, parent=run.id):
                console.print(f"  {child.stage}: {child.id} {child.status}", markup=False)
            return
        for event in run_events(store, run.id)[-events:] if events > 0 else []:
            print_event(event)


@app.command("stop")
def stop_cmd(run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")]) -> None:
    """Save a checkpoint and the adapter, then end the run (resumable)."""
    from core.train.runs import RunError, stop

    with open_store() as store:
        try:
            run = stop(store, run_id)
        except RunError as exc:
            fail(str(exc))
        console.print(f"stop requested for {run.id}")


@app.command("cancel")
def cancel_cmd(
    run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    force: Annotated[bool, typer.Option("--force", help="Also send SIGTERM.")] = False,
) -> None:
    """End the run at once without saving."""
    from core.train.runs import RunError, cancel

    with open_store() as store:
        try:
            run = cancel(store, run_id, force=force)
        except RunError as exc:
            fail(str(exc))
        console.print(f"cancel requested for {run.id}")


@app.command("resume")
def resume_cmd(
    run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    detach: DetachOpt = False,
    parallel: ParallelOpt = False,
) -> None:
    """Continue a failed or stopped run from its last checkpoint (steps and curves continue)."""
    from core.train.pipeline import resume_pipeline
    from core.train.runs import RunError, refresh, resume, watch

    with open_store() as store:
        run = refresh(store, run_id)
        if run.finished:  # resume refuses a run that has not ended, naming its status
            _one_run(store, parallel)
        try:
            if run.stage == "pipeline":
                if detach:
                    fail("a pipeline resumes in the foreground")
                run = resume_pipeline(store, run.id, detect_environment(), on_event=print_event)
                _end(run)
                return
            proc = resume(store, run.id)
        except (RunError, ConfigError) as exc:
            fail(str(exc))
        if detach:
            console.print(f"resumed (pid {proc.pid}); follow with: hat train status {run.id}")
            return
        with _Interrupts(lambda action: _control(store, run.id, action)):
            run = watch(store, run.id, proc, on_event=print_event)
        _end(run)


@app.command("schema")
def schema_cmd(
    stage: Annotated[str, typer.Argument(help="sft | opd | rl | pipeline")],
) -> None:
    """The JSON Schema of a config (defaults and help text for every field)."""
    if stage not in ("sft", "opd", "rl", "pipeline"):
        fail(f"unknown stage {stage!r}: sft, opd, rl or pipeline")
    console.print_json(json.dumps(config_schema(stage)))


@app.command("estimate")
def estimate_cmd(
    stage: Annotated[str, typer.Argument(help="sft | opd | rl")],
    config: ConfigOpt,
    warmup_steps: Annotated[
        int,
        typer.Option(
            "--warmup-steps",
            min=0,
            help="Optimizer steps of the timing warm-up (a real training child; 0: memory only).",
        ),
    ] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="The estimate as JSON.")] = False,
) -> None:
    """What a run needs before it starts: memory (from the model's config) against what this
    machine has free, and the time from a short measured warm-up of the stage itself."""
    from core.train.estimate import EstimateError, WarmupError, gib, warmup
    from core.train.launch_checks import stage_memory
    from core.train.measure import MeasureError, measure_rows
    from core.train.runs import resolve_model

    if stage not in ("sft", "opd", "rl"):
        fail(f"unknown stage {stage!r}: sft, opd or rl")
    loaded = _load_stage(stage, config, {})
    env = detect_environment()
    problems = check_launch(loaded, env)
    if problems:
        _print_problems(problems)
        raise typer.Exit(1)
    with open_store() as store:
        try:
            folder, _name = resolve_model(store, str(loaded.model), field="model")
        except ConfigError as exc:
            _print_problems(exc.lines())
            raise typer.Exit(1) from None
    if not Path(folder).is_dir():
        fail(f"model: {loaded.model} is not a local model folder (register or download it first)")
    lengths = None
    if loaded.stage == "sft":
        try:
            lengths = measure_rows(folder, loaded.data, system_prompt=loaded.system_prompt,
                                   max_rows=loaded.max_rows)  # fmt: skip
        except MeasureError as exc:
            fail(f"data: {exc}")
    try:
        memory = stage_memory(loaded, env, folder, lengths=lengths)
    except EstimateError as exc:
        fail(f"model: {exc}")
    result: dict[str, Any] = {"memory": memory.as_dict()}
    if not as_json:
        console.print(f"memory: {memory.summary()}", markup=False, highlight=False)
        for name, size in memory.parts.items():
            console.print(f"  {name:<18} {gib(size):>7} GiB", markup=False, highlight=False)
        console.print(
            f"  (rows of {memory.sequence} tokens x {memory.rows} per device, {memory.dtype})",
            markup=False, highlight=False,
        )  # fmt: skip
        if not memory.fits:
            err_console.print("[red]does not fit: a launch is refused[/red]")
    if warmup_steps > 0:
        runnable = loaded.model_copy(update={"model": str(folder)})
        if not as_json:
            console.print(f"warm-up: {max(2, warmup_steps)} steps in a training child…",
                          markup=False)  # fmt: skip
        try:
            timing = warmup(runnable, env, steps=warmup_steps)
        except WarmupError as exc:
            fail(str(exc))
        result["time"] = timing.as_dict()
        if not as_json:
            steps = timing.total_steps
            total = (f"{format_duration(timing.run_s)} for {steps} steps"
                     if steps is not None and timing.run_s is not None
                     else "the run's steps are known once the stage loads its data")  # fmt: skip
            console.print(
                f"time: {timing.step_s:.1f} s per step (measured over {timing.steps} steps, "
                f"load {timing.load_s:.0f} s): {total}; warm-up peak memory "
                f"{gib(timing.peak_rss_bytes)} GiB",
                markup=False, highlight=False,
            )  # fmt: skip
    if as_json:
        console.print_json(json.dumps(result))
    if not memory.fits:
        raise typer.Exit(1)
