"""Training runs: prepare, launch and watch a stage child, record it in the store.

    run = prepare(store, config, env)              # validated, frozen, a row in train_runs
    proc = start(store, run.id)                    # python -m training <stage> ... (or accelerate)
    run = watch(store, run.id, proc, on_event=print)   # events -> store, then the final status

A run lives in `<home>/runs/<id>/`:

    config.yaml        the frozen config the child reads (models resolved to folders)
    request.yaml       the config as the user gave it (registry names), also in the store
    accelerate.yaml    the generated accelerate config (GPU runs only)
    events.jsonl       the event stream (core/train/events.py)
    child.log          the child's stdout and stderr
    control            the stop / cancel flag
    checkpoints/       Trainer checkpoints (checkpoint-<step>/)
    adapter/, merged/, model/   outputs

Statuses: created -> running -> done | failed | stopped | cancelled. The child writes its own
final phase; when it dies without one (SIGKILL, the OOM killer, a crash in C), `finalize`
marks the run failed with the exit status and the tail of child.log. Nothing here ever touches
another run's folder or rows.

On `done` (and on `stopped`: a stop saves the adapter too) the outputs are registered in the
model registry (core.models) when the base model is a registered one: the adapter as
`<output_name or run id>` (kind adapter, base = that model), a merged or fully fine-tuned
model as kind merged. A base given as a bare folder is not in the registry, so its outputs
are only recorded in the run (`outputs`).

`resume(store, run_id)` restarts a failed / stopped run from its last checkpoint with
`--resume`: the Trainer restores optimizer, scheduler, RNG and step; the child writes a
`resume` event so the metric curve continues without a gap or a repeat.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from core.exits import exit_signal, exit_words, tail_text
from core.harness import folder_files
from core.models import RegistryError, get, register_adapter, register_merged
from core.paths import runs_dir
from core.pythons import project_root, training_python
from core.store import Store, StoreError
from core.store.harness_ref import resolve_harness
from core.store.training import (
    RunRecord,
    add_run,
    get_run,
    ingest_events,
    list_runs,
    update_run,
)
from core.store.types import utcnow
from core.train.config import (
    ConfigError,
    OpdConfig,
    RlConfig,
    SftConfig,
    StageConfig,
    dump_config,
    parse_stage,
)
from core.train.data import bank_path, files_hash, text_hash
from core.train.events import (
    FINAL_PHASES,
    Event,
    Resume,
    clear_control,
    events_path,
    last_phase,
    read_events,
    request_control,
)
from core.train.launch_checks import Environment, check_launch
from core.train.scaleout import stage_command, write_accelerate_config

EventCallback = Callable[[Event], None]
LOG_FILE = "child.log"
CHECKPOINTS = "checkpoints"


class RunError(Exception):
    """A run operation cannot be done (unknown run, nothing to resume, ...)."""


def new_run_id(stage: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stage}-{stamp}-{uuid.uuid4().hex[:6]}"


def code_revision() -> str | None:
    """`git rev-parse HEAD` of the project (+ "-dirty" with local changes), else None."""
    root = project_root()
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    rev = head.stdout.strip()
    return rev + ("-dirty" if dirty.stdout.strip() else "")


# ----------------------------------------------------------------------------- models


def resolve_model(store: Store, ref: str, *, field: str) -> tuple[str, str | None]:
    """(folder or hub id, registered name or None) for a model reference; ConfigError if none."""
    path = Path(ref).expanduser()
    if path.is_dir():
        return str(path.resolve()), None

    try:
        record = get(store, ref)
    except RegistryError:
        raise ConfigError(
            [
                (
                    field,
                    f"unknown model {ref!r}: not a registered model (hat models list) nor a folder",
                )
            ]
        ) from None
    return record.location, record.name


# ----------------------------------------------------------------------------- prepare


def _provenance(store: Store, config: StageConfig) -> tuple[str | None, str | None]:
    """(harness version, dataset hash) known before launch (SFT's versions come from rows)."""
    if isinstance(config, SftConfig):
        return None, files_hash(config.data)
    if isinstance(config, OpdConfig):
        if config.prompts == "bank":
            return None, files_hash([bank_path()])
        if config.prompts == "tulu3":
            return None, "tulu3"
        return None, files_hash([config.prompts])
    return _rl_provenance(store, config)


def _rl_provenance(store: Store, config: RlConfig) -> tuple[str | None, str | None]:
    """The harness the stage trains on, resolved as its child resolves it (training/rl.py
    `load_harness`: core/store/harness_ref.py's one rule), so the record names that harness: a
    stored version's id, else the content hash of the folder or bundled demo it read."""

    try:
        harness, version = resolve_harness(store, config.harness)
    except StoreError:  # a ref that names nothing: resolve_config reports it
        harness, version = None, None
    if version is None and harness is not None:
        files = folder_files(harness)
        kind = "folder" if config.harness is not None else "demo"
        version = f"{kind}:" + text_hash(json.dumps(files, sort_keys=True))[:16]
    spec = f"{config.tasks}|{config.per_category}|{config.task_seed}|{config.sampler}|{config.seed}"
    if Path(config.tasks).expanduser().is_file():
        spec += "|" + files_hash([config.tasks])
    return version, text_hash(spec)


def resolve_config(store: Store, config: StageConfig) -> tuple[StageConfig, dict[str, Any]]:
    """The config the child reads (models as folders) and what was resolved from what."""
    problems: list[tuple[str, str]] = []
    update: dict[str, Any] = {}
    names: dict[str, Any] = {}
    for field in ("model", "adapter", "teacher"):
        ref = getattr(config, field, None)
        if not ref:
            continue
        try:
            location, name = resolve_model(store, ref, field=f"{config.stage}.{field}")
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        update[field] = location
        names[field] = name
    if isinstance(config, RlConfig) and config.harness and not Path(config.harness).is_dir():
        try:
            store.info(config.harness)
        except StoreError as exc:
            problems.append((f"{config.stage}.harness", str(exc)))
    if problems:
        raise ConfigError(problems)
    return config.model_copy(update=update), names


def prepare(
    store: Store,
    config: StageConfig,
    env: Environment,
    *,
    parent: str | None = None,
    run_id: str | None = None,
    python: str | None = None,
) -> RunRecord:
    """Validate `config` for this machine, freeze it into a new run folder and row (in the
    store's workspace, `Store.home`)."""
    problems = check_launch(config, env)
    if problems:
        raise ConfigError([("", p) for p in problems])
    resolved, names = resolve_config(store, config)
    # Re-validate the resolved copy: it must still be a valid config of its stage.
    resolved = parse_stage(resolved.model_dump(mode="json"), config.stage)
    run_id = run_id or new_run_id(config.stage)
    run_dir = runs_dir(store.home) / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    config_path = run_dir / "config.yaml"
    config_path.write_text(dump_config(resolved), encoding="utf-8")
    request_text = dump_config(config)
    (run_dir / "request.yaml").write_text(request_text, encoding="utf-8")
    command, accelerate = stage_command(
        resolved, env, python=python or training_python(), config_path=config_path, run_dir=run_dir
    )
    if accelerate is not None:
        write_accelerate_config(run_dir / "accelerate.yaml", accelerate)
    harness_version, dataset_hash = _provenance(store, config)
    record = RunRecord(
        id=run_id,
        stage=config.stage,
        status="created",
        config=request_text,
        run_dir=str(run_dir),
        parent=parent,
        harness_version=harness_version,
        dataset_hash=dataset_hash,
        code_revision=code_revision(),
        command=command,
        outputs={"base_model": names.get("model"), "resolved": names},
    )
    return add_run(store, record)


def show_command(command: list[str]) -> str:

    return shlex.join(command)


# ----------------------------------------------------------------------------- start / watch


def child_env(home: Path | None = None, devices: list[int] | None = None) -> dict[str, str]:
    """The environment of a training child (a stage, or a pipeline's driver): this process's,
    with the workspace `home` as the child's `HAT_HOME` and, when a subset of GPUs was chosen,
    `CUDA_VISIBLE_DEVICES` (set for the child only: this process's environment is never
    changed for a launch)."""
    env = dict(os.environ)
    if home is not None:
        env["HAT_HOME"] = str(home)
    if devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(d) for d in devices)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    # OpenMP threads that sleep instead of spinning at barriers: on a CPU shared with other
    # work, spinning torch threads were measured 6x slower per step (115 s vs 19 s, 2 cores,
    # load ~10); on an idle machine the difference is within noise.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # glibc's allocator returned the step's large activation buffers to the kernel and faulted
    # them back in on the next step: a third of a CPU SFT step was system time. Keeping freed
    # memory in the heap measured ~10 % faster (2 cores, SmolLM2-135M LoRA, 8 steps: 110.6 s
    # against 122.3 s wall, system time 44 s against 60 s). No effect off glibc.
    env.setdefault("MALLOC_MMAP_THRESHOLD_", str(32 * 1024 * 1024))
    env.setdefault("MALLOC_TRIM_THRESHOLD_", str(4 * 1024**3))
    env.setdefault("MALLOC_TOP_PAD_", str(512 * 1024 * 1024))
    env["PYTHONUNBUFFERED"] = "1"
    if not getattr(sys, "frozen", False):
        # From a checkout the child imports this very `core` and `training`. A packaged app's
        # folder holds the app's own libraries, which must not shadow the training
        # environment's (that environment has hat-studio installed, see core.pythons).
        root = str(project_root())
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_devices(run: RunRecord) -> list[int] | None:
    """The GPUs chosen for a run when it was launched (kept in its outputs, so resume and
    restart use the same ones); None: every GPU the machine shows."""
    devices = run.outputs.get("devices")
    if isinstance(devices, list) and all(isinstance(d, int) for d in devices):
        return list(devices)
    return None


def start(store: Store, run_id: str, *, resume: bool = False) -> subprocess.Popen[bytes]:
    """Launch the run's child (detached in its own session); the run becomes `running`."""
    run = get_run(store, run_id)
    if run.command is None or run.stage not in ("sft", "opd", "rl"):
        raise RunError(f"run {run.id} has no stage command")
    if run.status == "running" and process_alive(run):
        raise RunError(f"run {run.id} is already running (pid {run.pid})")
    run_dir = Path(run.run_dir)
    clear_control(run_dir)
    command = list(run.command)
    if resume and "--resume" not in command:
        command.append("--resume")
    log = (run_dir / LOG_FILE).open("ab")
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=str(project_root()),
            env=child_env(store.home, run_devices(run)),
            start_new_session=True,
        )
    except OSError as exc:
        update_run(
            store, run.id, status="failed", reason=f"cannot start {command[0]}: {exc.strerror}",
            ended_at=utcnow(),
        )  # fmt: skip
        raise RunError(
            f"cannot start the training process ({command[0]}): {exc.strerror}"
        ) from None
    finally:
        log.close()
    update_run(
        store,
        run.id,
        status="running",
        pid=proc.pid,
        exit_code=None,
        reason=None,
        started_at=run.started_at or utcnow(),
        ended_at=None,
    )
    return proc


def process_alive(run: RunRecord) -> bool:
    """Whether the run's process still runs (a zombie, or a reused pid, does not count)."""
    if run.pid is None:
        return False
    try:
        os.kill(run.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{run.pid}")
    if proc.exists():
        try:
            stat = (proc / "stat").read_text()
            if stat.rsplit(")", 1)[-1].split()[0] == "Z":
                return False
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return False
        marker = "pipeline" if run.stage == "pipeline" else "training"
        return marker in cmdline
    return True


def training_now(store: Store) -> list[RunRecord]:
    """The runs training on this machine now: top-level runs (a pipeline's stages count as
    their pipeline) the store marks running or created whose process is alive. A run whose
    process is gone (it failed, crashed or was killed while nobody watched) is settled on the
    way (`refresh`), so an ended run never holds the one-run rule."""
    live: list[RunRecord] = []
    for run in list_runs(store):
        if run.parent is not None or run.finished:
            continue
        if run.status == "running":
            run = refresh(store, run.id)
        if not run.finished and process_alive(run):
            live.append(run)
    return live


def check_one_run(store: Store) -> None:
    """The one-run rule, where every run is launched (the studio's Start, `hat train`, resume
    and restart): a second run would share the machine's cores or GPU with the first and slow
    both. RunError names the run that trains and how to end it."""
    live = training_now(store)
    if live:
        run = live[0]
        raise RunError(
            f"{run.id} is training (pid {run.pid}): stop it (hat train stop {run.id}, or Stop "
            "on the Train page's Monitor tab) or wait for it to end; --parallel starts beside it"
        )


def sync(store: Store, run_id: str, on_event: EventCallback | None = None) -> RunRecord:
    """Copy the run's new events into the store (and pass each to `on_event`)."""
    run = get_run(store, run_id)
    if run.stage == "pipeline":
        return run
    events, offset = read_events(events_path(Path(run.run_dir)), run.events_offset)
    if not events:
        return run
    run = ingest_events(store, run.id, events, offset, resume_of=Resume.of)
    changes: dict[str, Any] = {}
    for event in events:
        if event.get("event") == "info":
            if isinstance(event.get("packages"), dict):
                changes["packages"] = event["packages"]
            versions = event.get("harness_versions")
            if isinstance(versions, list) and versions and not run.harness_version:
                changes["harness_version"] = ",".join(str(v) for v in versions)
        elif event.get("event") == "output":
            outputs = dict(run.outputs)
            for key in ("adapter", "merged", "model"):
                if event.get(key):
                    outputs[key] = event[key]
            changes["outputs"] = outputs
    if changes:
        run = update_run(store, run.id, **changes)
    if on_event is not None:
        for event in events:
            on_event(event)
    return run


def watch(
    store: Store,
    run_id: str,
    proc: subprocess.Popen[bytes] | None = None,
    *,
    on_event: EventCallback | None = None,
    poll_s: float = 0.5,
    stop: threading.Event | None = None,
) -> RunRecord:
    """Follow the run until its process ends (or `stop` is set); then its final record."""
    run = get_run(store, run_id)
    while True:
        run = sync(store, run_id, on_event)
        if proc is None and not process_alive(run):
            sync(store, run_id, on_event)
            return finalize(store, run_id, None)
        if stop is not None and stop.is_set():
            return run
        if proc is None:
            time.sleep(poll_s)
            continue
        try:  # returns as soon as the child exits, not at the next poll
            code = proc.wait(timeout=poll_s)
        except subprocess.TimeoutExpired:
            continue
        sync(store, run_id, on_event)
        return finalize(store, run_id, code)


def refresh(store: Store, run_id: str) -> RunRecord:
    """Bring a run's row up to date: new events, and its end when the process is gone."""
    run = sync(store, run_id)
    if run.status == "running" and run.stage != "pipeline" and not process_alive(run):
        run = sync(store, run_id)
        return finalize(store, run_id, None)
    if run.status == "running" and run.stage == "pipeline" and not process_alive(run):
        return update_run(
            store, run.id, status="failed", ended_at=utcnow(),
            reason="the pipeline process ended before its stages finished",
        )  # fmt: skip
    return run


def describe_exit(code: int | None) -> str:
    """Why a training process that wrote no final event ended (`core.exits` words)."""
    if code is None:
        return "the training process ended without a final event"
    if exit_signal(code) is None:
        return f"the training process ended with {exit_words(code)} without a final event"
    return f"the training process was {exit_words(code)}"


_WARNING_RE = re.compile(r"^\S.*\.py:\d+: \w*Warning: ")
"""A Python warning's first line ("path.py:12: FutureWarning: ..."); its source line follows,
indented."""
_PROGRESS_RE = re.compile(r"\d+%\|.*\| *\d+/\d+ \[")
"""A tqdm bar ("Loading weights: 100%|███| 272/272 [00:00<00:00, ...]"); its updates are
separated by carriage returns, so each is a line of its own here."""
_METRICS_RE = re.compile(r"^\{'[\w/.-]+': .*\}$")
"""The trainer's printed logs ("{'loss': '0.12', 'grad_norm': ...}")."""


def log_tail(run_dir: Path, lines: int = 15) -> str:
    """The child log's last lines for a failed run's reason, without Python warnings, progress
    bars or the trainer's metric lines: a library's FutureWarning just before the end read as
    the cause of the failure, and a killed run's reason was its last loss dicts and "100%|███"
    bars, which the charts already show (the log file keeps them all)."""
    data = tail_text(run_dir / LOG_FILE, 20_000)
    kept: list[str] = []
    in_warning = False
    for line in data.strip().splitlines():
        in_warning = bool(_WARNING_RE.match(line)) or (in_warning and line[:1].isspace())
        noise = not line.strip() or _PROGRESS_RE.search(line) or _METRICS_RE.match(line)
        if not (in_warning or noise):
            kept.append(line)
    return "\n".join(kept[-lines:])


_OOM_RE = re.compile(r"out of memory|MemoryError|OutOfMemoryError|Cannot allocate memory", re.I)


def finalize(store: Store, run_id: str, exit_code: int | None) -> RunRecord:
    """Set the run's final status from its last phase event, or failed with the reason."""
    run = get_run(store, run_id)
    run_dir = Path(run.run_dir)
    events, _ = read_events(events_path(run_dir))
    phase = last_phase(events)
    status, reason = "failed", None
    if phase is not None and phase.get("phase") in FINAL_PHASES:
        status = str(phase["phase"])
        reason = phase.get("reason") or phase.get("message")
        if status == "done" and exit_code not in (None, 0):
            status, reason = "failed", f"{describe_exit(exit_code)} after it reported done"
    else:
        reason = describe_exit(exit_code)
        tail = log_tail(run_dir)
        if _OOM_RE.search(tail):
            reason = "out of memory: " + reason
        if tail:
            reason += "\n" + tail
    run = update_run(
        store,
        run.id,
        status=status,
        reason=reason,
        exit_code=exit_code,
        ended_at=utcnow(),
    )
    if status in ("done", "stopped"):  # a stopped run saved its adapter too: it is servable
        run = register_outputs(store, run)
    return run


def register_outputs(store: Store, run: RunRecord) -> RunRecord:
    """Register a done (or stopped) run's adapter / merged / full model (module doc)."""
    outputs = dict(run.outputs)
    if outputs.get("registered"):
        return run
    base = outputs.get("base_model")
    config = yaml.safe_load(run.config) or {}
    name = config.get("output_name") or run.id
    registered: list[str] = []
    if not base:
        outputs["note"] = "the base model is a folder, not a registered model: nothing registered"
        return update_run(store, run.id, outputs=outputs)

    meta = {"run": run.id, "stage": run.stage}
    try:
        if outputs.get("adapter"):
            register_adapter(store, name, outputs["adapter"], base=base, meta=meta)
            registered.append(name)
        if outputs.get("merged"):
            register_merged(store, f"{name}-merged", outputs["merged"], base=base, meta=meta)
            registered.append(f"{name}-merged")
        if outputs.get("model"):
            register_merged(store, name, outputs["model"], base=base, meta=meta)
            registered.append(name)
    except RegistryError as exc:
        outputs["note"] = f"not registered: {exc}"
    outputs["registered"] = registered
    return update_run(store, run.id, outputs=outputs)


# ----------------------------------------------------------------------------- control


def stop(store: Store, run_id: str) -> RunRecord:
    """Ask the run to save a checkpoint and its adapter, then end as `stopped`."""
    run = refresh(store, run_id)
    if run.finished:
        raise RunError(f"run {run.id} is not running ({run.status})")
    for stage in _live_children(store, run):
        request_control(Path(stage.run_dir), "stop")
    request_control(Path(run.run_dir), "stop")
    return run


def cancel(store: Store, run_id: str, *, force: bool = False) -> RunRecord:
    """Ask the run to end at once without saving; `force` also sends SIGTERM."""
    run = refresh(store, run_id)
    if run.finished:
        raise RunError(f"run {run.id} is not running ({run.status})")
    targets = [*_live_children(store, run), run]
    for target in targets:
        request_control(Path(target.run_dir), "cancel")
        if force and target.pid is not None and process_alive(target):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(target.pid, signal.SIGTERM)
    return run


def _live_children(store: Store, run: RunRecord) -> list[RunRecord]:
    if run.stage != "pipeline":
        return []
    return [r for r in list_runs(store, parent=run.id) if not r.finished]


def latest_checkpoint(run: RunRecord) -> Path | None:
    folder = Path(run.run_dir) / CHECKPOINTS
    best: tuple[int, Path] | None = None
    for child in folder.glob("checkpoint-*"):
        suffix = child.name.rsplit("-", 1)[-1]
        if suffix.isdigit() and (child / "trainer_state.json").is_file():
            step = int(suffix)
            if best is None or step > best[0]:
                best = (step, child)
    return best[1] if best else None


def resume(store: Store, run_id: str) -> subprocess.Popen[bytes]:
    """Restart a failed / stopped / cancelled stage run from its last checkpoint."""
    run = refresh(store, run_id)
    if run.stage == "pipeline":
        raise RunError("resume a pipeline with resume_pipeline (hat train resume does)")
    if run.status in ("running", "created", "done"):
        raise RunError(f"run {run.id} is {run.status}; only failed or stopped runs resume")
    if latest_checkpoint(run) is None:
        raise RunError(f"run {run.id} has no checkpoint to resume from")
    return start(store, run.id, resume=True)


def run_stage(
    store: Store,
    config: StageConfig,
    env: Environment,
    *,
    on_event: EventCallback | None = None,
    parent: str | None = None,
    python: str | None = None,
) -> RunRecord:
    """prepare + start + watch: one stage, in the foreground."""
    run = prepare(store, config, env, parent=parent, python=python)
    proc = start(store, run.id)
    return watch(store, run.id, proc, on_event=on_event)


def stage_config_of(run: RunRecord) -> StageConfig:
    """The frozen (resolved) config the run's child reads."""
    data = yaml.safe_load((Path(run.run_dir) / "config.yaml").read_text(encoding="utf-8"))
    if run.stage not in ("sft", "opd", "rl"):
        raise RunError(f"run {run.id} is a {run.stage}, not a stage")
    return parse_stage(data, run.stage)
