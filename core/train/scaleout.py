"""Launch commands and generated accelerate configs (single GPU, multi-GPU, multi-CPU, FSDP2,
ZeRO-3).

One CPU process runs as `python -m training <stage> --config ... --run-dir ...`. Everything
else runs under `accelerate launch --config_file <run dir>/accelerate.yaml ...` with a config
generated here (the shapes follow TRL's examples/accelerate_configs):

- single_gpu: one process on one GPU (distributed_type NO);
- multi_gpu: DDP, one process per GPU;
- multi_cpu: DDP over gloo, `launch.num_processes` CPU processes on a machine without GPUs
  (or `device: cpu`). accelerate's MULTI_CPU config alone starts one process unless an MPI
  hostfile is given, so the command adds `--multi_gpu`, which selects its torchrun launcher
  (the flag names the launcher, not the device: each process has `use_cpu` and joins a gloo
  group), and `--num_cpu_threads_per_process` (the cores shared out, at least one each);
- fsdp2: FSDP v2, transformer-block auto wrap, full state dict for saving, bf16;
- zero3: DeepSpeed ZeRO stage 3 (needs `deepspeed` in the training environment).

Multi-node: `--num_machines`, `--machine_rank`, `--main_process_ip`, `--main_process_port`
are passed on the command line (and written into the config); run the same command on every
machine with its own `machine_rank`. `--num_processes` is the total over all machines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from core.train.config import StageConfig
from core.train.launch_checks import (
    Environment,
    cpu_threads_per_process,
    distributed_kind,
    processes_per_machine,
    uses_gpu,
)

KINDS = ("single_gpu", "multi_gpu", "multi_cpu", "fsdp2", "zero3")


def accelerate_config(
    kind: str,
    *,
    num_processes: int,
    num_machines: int = 1,
    machine_rank: int = 0,
    main_process_ip: str | None = None,
    main_process_port: int = 29500,
    mixed_precision: str = "bf16",
) -> dict[str, Any]:
    """The accelerate config for `kind` (one of KINDS); `num_processes` counts every machine."""
    if kind not in KINDS:
        raise ValueError(f"unknown accelerate config {kind!r} (one of {', '.join(KINDS)})")
    base: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "downcast_bf16": "no",
        "machine_rank": machine_rank,
        "main_training_function": "main",
        "mixed_precision": mixed_precision,
        "num_machines": num_machines,
        "num_processes": num_processes,
        "rdzv_backend": "static",
        "same_network": True,
        "tpu_env": [],
        "tpu_use_cluster": False,
        "tpu_use_sudo": False,
        "use_cpu": False,
    }
    if num_machines > 1:
        base["main_process_ip"] = main_process_ip
        base["main_process_port"] = main_process_port
    if kind == "single_gpu":
        base.update(distributed_type="NO", gpu_ids="0", num_processes=1)
    elif kind == "multi_gpu":
        base.update(distributed_type="MULTI_GPU", gpu_ids="all")
    elif kind == "multi_cpu":
        base.update(distributed_type="MULTI_CPU", use_cpu=True)
    elif kind == "fsdp2":
        base.update(
            distributed_type="FSDP",
            fsdp_config={
                "fsdp_activation_checkpointing": False,
                "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                "fsdp_cpu_ram_efficient_loading": True,
                "fsdp_offload_params": False,
                "fsdp_reshard_after_forward": True,
                "fsdp_state_dict_type": "FULL_STATE_DICT",
                "fsdp_version": 2,
            },
        )
    else:
        base.update(
            distributed_type="DEEPSPEED",
            deepspeed_config={
                "deepspeed_multinode_launcher": "standard",
                "offload_optimizer_device": "none",
                "offload_param_device": "none",
                "zero3_init_flag": True,
                "zero3_save_16bit_model": True,
                "zero_stage": 3,
            },
        )
    return base


def config_kind(config: StageConfig, env: Environment) -> str | None:
    """Which generated config a stage runs under (None: plain `python -m training` on CPU)."""
    kind = distributed_kind(config.launch, env)
    if not uses_gpu(config.launch, env):
        return None if kind == "none" else kind
    if kind == "none":
        total = processes_per_machine(config.launch, env) * config.launch.num_machines
        return "single_gpu" if total == 1 else "multi_gpu"
    return kind


def mixed_precision(config: StageConfig, env: Environment | None = None) -> str:
    """accelerate's mixed_precision for the stage's precision (auto: bf16, or on a CPU
    without native bf16 no mixed precision, as the training child decides)."""
    if config.precision == "auto" and env is not None and not uses_gpu(config.launch, env):
        return "bf16" if env.cpu_bf16 else "no"
    return {"bf16": "bf16", "fp16": "fp16", "fp32": "no"}.get(config.precision, "bf16")


def stage_command(
    config: StageConfig,
    env: Environment,
    *,
    python: str,
    config_path: Path,
    run_dir: Path,
    accelerate_path: Path | None = None,
    resume: bool = False,
) -> tuple[list[str], dict[str, Any] | None]:
    """(argv, accelerate config or None) that run `config` from `run_dir`."""
    tail = ["-m", "training", config.stage, "--config", str(config_path), "--run-dir", str(run_dir)]
    if resume:
        tail.append("--resume")
    kind = config_kind(config, env)
    if kind is None:
        return [python, *tail], None
    launch = config.launch
    per_machine = processes_per_machine(launch, env)
    total = per_machine * launch.num_machines
    acc = accelerate_config(
        kind,
        num_processes=total,
        num_machines=launch.num_machines,
        machine_rank=launch.machine_rank,
        main_process_ip=launch.main_process_ip,
        main_process_port=launch.main_process_port,
        mixed_precision=mixed_precision(config, env),
    )
    if not uses_gpu(launch, env):
        acc["use_cpu"] = True
    target = accelerate_path or run_dir / "accelerate.yaml"
    argv = [
        python,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(target),
        "--num_processes",
        str(acc["num_processes"]),
        "--num_machines",
        str(launch.num_machines),
        "--machine_rank",
        str(launch.machine_rank),
    ]
    if not uses_gpu(launch, env):
        if kind == "multi_cpu":
            argv.append("--multi_gpu")  # accelerate's torchrun launcher (module doc)
        argv += ["--num_cpu_threads_per_process", str(cpu_threads_per_process(launch, env))]
    if launch.num_machines > 1:
        argv += [
            "--main_process_ip",
            str(launch.main_process_ip),
            "--main_process_port",
            str(launch.main_process_port),
        ]
    return [*argv, *tail], acc


def write_accelerate_config(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=True), encoding="utf-8")
    return path
