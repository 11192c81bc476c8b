"""Where and how a training run can launch on this machine: what the machine offers
(`Environment`, found by core/machine.py without torch), how a stage's batch splits over its
processes (`batch_plan`), and the checks a config must pass on this machine before anything
starts (`check_launch`, `check_pipeline`: GPU-only options on a CPU box, processes per core,
RL's task sources), and whether the run fits in memory (`check_memory`: the estimate of
core/train/estimate.py against the RAM or GPU memory free, refused with both numbers). The
stage configs themselves are core/train/config.py's; these depend on the machine, they do not.

    problems = check_launch(load_config("run.yaml", stage="sft"), detect_environment())
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from core.machine import cpu_native_bf16, gpu_names, usable_cores
from core.taskfile.sources import source_problem
from core.train.config import (
    ConfigError,
    LaunchSettings,
    OpdConfig,
    PipelineConfig,
    RlConfig,
    SftConfig,
    StageBase,
    StageConfig,
    resolved_stages,
)
from core.train.estimate import (
    EstimateError,
    MachineMemory,
    MemoryEstimate,
    estimate_memory,
    fit_problem,
    machine_memory,
    model_shape,
)
from core.train.measure import MeasureError, RowLengths, measure_rows

if TYPE_CHECKING:
    from core.store import Store

# ----------------------------------------------------------------------------- environment


@dataclass(frozen=True)
class Environment:
    """What this machine offers, found without torch."""

    gpus: int = 0
    gpu_names: tuple[str, ...] = ()
    cpu_bf16: bool = False
    cpu_count: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)


def detect_environment() -> Environment:
    """GPUs and CPU facts as core/machine.py finds them (HAT_GPU_COUNT overrides the GPUs)."""

    names = gpu_names()
    return Environment(
        gpus=len(names),
        gpu_names=tuple(names),
        cpu_bf16=cpu_native_bf16(),
        cpu_count=usable_cores(),
    )


# ----------------------------------------------------------------------------- launch checks


@dataclass(frozen=True)
class BatchPlan:
    processes: int
    per_device: int
    accumulation: int

    @property
    def global_batch(self) -> int:
        return self.processes * self.per_device * self.accumulation


def processes_per_machine(launch: LaunchSettings, env: Environment) -> int:
    """Training processes on one machine: one per GPU used; `num_processes` on the CPU."""
    if not uses_gpu(launch, env):
        return launch.num_processes or 1
    if launch.num_gpus is not None:
        return max(1, launch.num_gpus)
    return max(1, env.gpus)


def uses_gpu(launch: LaunchSettings, env: Environment) -> bool:
    if launch.device == "cpu" or launch.num_gpus == 0:
        return False
    return launch.device == "cuda" or env.gpus > 0


def distributed_kind(launch: LaunchSettings, env: Environment) -> str:
    """none | multi_gpu | multi_cpu | fsdp2 | zero3 (auto resolved by the process count and
    the device: several CPU processes are DDP over gloo, `multi_cpu`)."""
    total = processes_per_machine(launch, env) * launch.num_machines
    if launch.distributed != "auto":
        return launch.distributed
    if total == 1:
        return "none"
    return "multi_gpu" if uses_gpu(launch, env) else "multi_cpu"


def cpu_threads_per_process(launch: LaunchSettings, env: Environment) -> int:
    """Torch threads each CPU process gets: the cores shared out evenly (at least one)."""
    return max(1, env.cpu_count // processes_per_machine(launch, env))


def batch_plan(config: StageBase, env: Environment) -> BatchPlan:
    """Per-device batch and gradient accumulation for the run (ConfigError when impossible)."""
    processes = processes_per_machine(config.launch, env) * config.launch.num_machines
    per_device = config.per_device_batch_size
    if config.global_batch_size is None:
        return BatchPlan(processes, per_device, config.gradient_accumulation_steps)
    step = per_device * processes
    if config.global_batch_size % step:
        raise ConfigError(
            [
                (
                    "global_batch_size",
                    f"{config.global_batch_size} is not a multiple of per_device_batch_size "
                    f"{per_device} x {processes} process(es) = {step}",
                )
            ]
        )
    return BatchPlan(processes, per_device, config.global_batch_size // step)


def _cpu_sharding(kind: str) -> str:
    """Why FSDP2 / ZeRO-3 do not run on CPU processes (appended to the field's message)."""
    if kind == "fsdp2":
        why = (
            "accelerate (1.16) builds FSDP only for GPU-type devices; on CPU processes it "
            "ignores the FSDP config and trains plain DDP (measured: distributed type "
            "MULTI_CPU, no FSDP wrapping)"
        )
    else:
        why = "accelerate (1.16) turns DeepSpeed on only off the CPU (its state skips it there)"
    return f": {why}. On the CPU use distributed auto (DDP over gloo)"


def check_launch(config: StageConfig, env: Environment, *, prefix: str | None = None) -> list[str]:
    """Problems that stop `config` from running on this machine ("field: message" lines)."""
    where = config.stage if prefix is None else prefix
    problems: list[tuple[str, str]] = []
    if not config.model:
        problems.append(("model", "required: a registered model name or a model folder"))
    gpu = uses_gpu(config.launch, env)
    launch = config.launch
    if env.gpus == 0:
        no_gpu = "needs a GPU and this machine has none"
        if launch.device == "cuda":
            problems.append(("launch.device", f"cuda {no_gpu}"))
        if launch.num_gpus:
            problems.append(("launch.num_gpus", f"{launch.num_gpus} GPU(s): {no_gpu}"))
        if launch.distributed == "multi_gpu":
            problems.append(
                (
                    "launch.distributed",
                    f"multi_gpu {no_gpu}; several CPU processes (num_processes) run DDP over "
                    "gloo with distributed auto",
                )
            )
        elif launch.distributed in ("fsdp2", "zero3"):
            problems.append(
                (
                    "launch.distributed",
                    f"{launch.distributed} {no_gpu}{_cpu_sharding(launch.distributed)}",
                )
            )
        if config.precision == "fp16":
            problems.append(("precision", f"fp16 {no_gpu} (use auto, fp32 or bf16)"))
        if isinstance(config, OpdConfig | RlConfig) and config.use_vllm:
            problems.append(("use_vllm", f"vLLM generation {no_gpu}; set use_vllm: false on CPU"))
    elif launch.num_gpus is not None and launch.num_gpus > env.gpus:
        problems.append(("launch.num_gpus", f"{launch.num_gpus} asked, {env.gpus} visible"))
    if not gpu and launch.num_machines > 1:
        problems.append(("launch.num_machines", "multi-node runs need GPUs"))
    problems.extend(_check_processes(config, env))
    try:
        plan = batch_plan(config, env)
    except ConfigError as exc:
        problems.extend(exc.problems)
        plan = None
    if (
        isinstance(config, RlConfig)
        and plan is not None
        and plan.global_batch % config.num_generations
    ):
        problems.append(
            (
                "num_generations",
                f"the global batch ({plan.global_batch} = {plan.per_device} per device x "
                f"{plan.processes} process(es) x {plan.accumulation} accumulation) must be "
                f"divisible by num_generations ({config.num_generations})",
            )
        )
    if isinstance(config, OpdConfig) and not config.teacher:
        problems.append(("teacher", "required: OPD distils from a teacher (the pre-SFT base)"))
    if isinstance(config, SftConfig):
        for index, item in enumerate(config.data):
            if not Path(item).expanduser().is_file():
                problems.append((f"data.{index}", f"no such file: {item}"))
    if (
        isinstance(config, OpdConfig)
        and config.prompts not in ("bank", "tulu3")
        and not Path(config.prompts).expanduser().is_file()
    ):
        problems.append(("prompts", f"no such file: {config.prompts} (or use bank / tulu3)"))
    if isinstance(config, RlConfig):
        problems.extend(_check_rl_sources(config))
    return [f"{where}.{f}: {m}" for f, m in problems]


def _check_processes(config: StageConfig, env: Environment) -> list[tuple[str, str]]:
    """The process count against the devices (CPU: a core each; GPU: one per GPU), and the
    sharding strategy against the processes it would shard across."""
    launch = config.launch
    problems: list[tuple[str, str]] = []
    count = launch.num_processes
    if count is not None and not uses_gpu(launch, env) and count > env.cpu_count:
        problems.append(
            (
                "launch.num_processes",
                f"{count} CPU processes on {env.cpu_count} core(s): each process needs a core "
                f"of its own (at most {env.cpu_count} here)",
            )
        )
    if count is not None and uses_gpu(launch, env):
        gpus = processes_per_machine(launch, env)
        if count != gpus:
            problems.append(
                (
                    "launch.num_processes",
                    f"{count} processes with {gpus} GPU(s): accelerate runs one process per "
                    "GPU; choose the GPUs (num_gpus) instead",
                )
            )
    kind = distributed_kind(launch, env)
    total = processes_per_machine(launch, env) * launch.num_machines
    if env.gpus > 0 and not uses_gpu(launch, env) and launch.distributed != "auto":
        if launch.distributed in ("fsdp2", "zero3"):
            problems.append(
                (
                    "launch.distributed",
                    f"{kind} with the CPU chosen (no GPU in use){_cpu_sharding(kind)}",
                )
            )
        elif launch.distributed == "multi_gpu":
            problems.append(
                ("launch.distributed", "multi_gpu with the CPU chosen: use auto (DDP over gloo)")
            )
    if kind in ("fsdp2", "zero3") and total == 1 and uses_gpu(launch, env):
        problems.append(
            (
                "launch.distributed",
                f"{kind} shards the model across processes and this run has one (one GPU): "
                "use auto, or more GPUs",
            )
        )
    return problems


def _check_rl_sources(config: RlConfig) -> list[tuple[str, str]]:
    from core.datagen.variants import SAMPLERS  # heavy: openai, sqlalchemy, alembic

    problems: list[tuple[str, str]] = []
    if config.sampler not in SAMPLERS:
        known = ", ".join(sorted(SAMPLERS))
        problems.append(("sampler", f"unknown variant sampler {config.sampler!r} (known: {known})"))

    problem = source_problem(config.tasks)
    if problem is not None:
        problems.append(("tasks", problem))
    return problems


def check_pipeline(config: PipelineConfig, env: Environment) -> list[str]:
    problems: list[str] = []
    for stage in resolved_stages(config):
        problems += check_launch(stage, env, prefix=f"pipeline.{stage.stage}")
    return problems


# ----------------------------------------------------------------------------- memory


def stage_memory(
    config: StageConfig,
    env: Environment,
    folder: str | Path,
    *,
    lengths: RowLengths | None = None,
    machine: MachineMemory | None = None,
) -> MemoryEstimate:
    """The memory estimate of `config` on this machine (core/train/estimate.py) with the
    model in `folder`; SFT rows measured (`lengths`) size the sequence and the sliced head."""
    longest = trained = data_rows = None
    if lengths is not None and lengths.rows and isinstance(config, SftConfig):
        longest = min(lengths.longest, config.max_length)
        trained = max(
            min(n, config.max_length) - start
            for n, start in zip(lengths.lengths, lengths.first_reply, strict=True)
        )
        data_rows = lengths.rows
    if machine is None:
        machine = machine_memory(uses_gpu(config.launch, env))
    return estimate_memory(model_shape(folder), config, machine, env=env,
                           longest_row=longest, trained_tokens=max(1, trained or 0) or None,
                           processes=processes_per_machine(config.launch, env),
                           data_rows=data_rows)  # fmt: skip


def memory_problems(estimate: MemoryEstimate, *, prefix: str) -> list[str]:
    """The refusal line ("<stage>.memory: needs ~X GiB ...") when the run does not fit."""
    problem = fit_problem(estimate)
    return [] if problem is None else [f"{prefix}.memory: {problem}"]


def check_memory(
    store: Store,
    config: StageConfig,
    env: Environment,
    *,
    lengths: RowLengths | None = None,
) -> MemoryEstimate | None:
    """The launch's memory check: ConfigError ("memory: needs ~X GiB of RAM; this machine has
    Y GiB free ...") when the estimate exceeds what the machine has free; the estimate, or None
    where the model is unknown, not a local folder (a hub id) or its config cannot be read."""
    from core.train.runs import resolve_model  # heavy: sqlalchemy, alembic

    if not config.model:
        return None
    try:
        folder, _name = resolve_model(store, config.model, field="model")
    except ConfigError:
        return None  # an unknown model: the launch's own checks name it
    if not Path(folder).is_dir():
        return None
    if lengths is None and isinstance(config, SftConfig) and config.data:
        try:
            lengths = measure_rows(folder, config.data, system_prompt=config.system_prompt,
                                   max_rows=config.max_rows)  # fmt: skip
        except MeasureError:
            lengths = None  # the row check reports it
    try:
        estimate = stage_memory(config, env, folder, lengths=lengths)
    except EstimateError:
        return None
    problem = fit_problem(estimate)
    if problem is not None:
        raise ConfigError([("memory", problem)])
    return estimate
