"""What the three stage runners share: device and precision, model loading, LoRA, trainer
arguments, the event callback (progress, metrics, stop / cancel), saving and resuming.

Only `training/` imports torch / transformers / TRL / PEFT; the configs, the event stream and
the flag files are core's (core/train), so the launcher and the studio read what this writes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from core.train.config import StageConfig
from core.train.events import EventWriter, clear_control, read_control

PACKAGES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "hat-studio")
CHECKPOINTS = "checkpoints"


class StageCancelled(Exception):
    """The run was cancelled (flag or SIGTERM); nothing is saved."""


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


@dataclass
class Device:
    kind: str  # cpu | cuda
    precision: str  # fp32 | bf16 | fp16
    world_size: int = 1
    rank: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def use_cpu(self) -> bool:
        return self.kind == "cpu"

    def torch_dtype(self) -> Any:
        import torch

        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision, torch.float32)


def cpu_has_bf16() -> bool:
    """Native bf16 matmuls on this CPU (AMX or AVX512-BF16): the flags core/machine.py reads
    for the configs and the serving engines, so the child trains in the dtype they expect.
    Without them bf16 is emulated and measured here ~20-30x slower than fp32 (AMD EPYC, AVX2
    only)."""
    from core.machine import cpu_native_bf16

    return cpu_native_bf16()


def resolve_device(config: StageConfig) -> Device:
    import torch

    cuda = (
        torch.cuda.is_available()
        and config.launch.device != "cpu"
        and (config.launch.num_gpus != 0)
    )
    kind = "cuda" if cuda else "cpu"
    notes: list[str] = []
    precision = config.precision
    if precision == "auto":
        if cuda:
            precision = "bf16" if torch.cuda.is_bf16_supported() else "fp32"
        else:
            precision = "bf16" if cpu_has_bf16() else "fp32"
            if precision == "fp32":
                notes.append("fp32: this CPU has no native bf16 (AMX / AVX512-BF16)")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    return Device(kind, precision, world, rank, notes)


def accumulation(config: StageConfig, device: Device) -> int:
    if config.global_batch_size is None:
        return config.gradient_accumulation_steps
    step = config.per_device_batch_size * device.world_size
    if config.global_batch_size % step:
        raise ValueError(
            f"global_batch_size {config.global_batch_size} is not a multiple of "
            f"per_device_batch_size x processes = {step}"
        )
    return config.global_batch_size // step


def trainer_kwargs(config: StageConfig, device: Device, run_dir: Path) -> dict[str, Any]:
    """TrainingArguments fields every stage sets the same way."""
    return {
        "output_dir": str(run_dir / CHECKPOINTS),
        "max_steps": config.max_steps if config.max_steps is not None else -1,
        "num_train_epochs": config.epochs,
        "per_device_train_batch_size": config.per_device_batch_size,
        "gradient_accumulation_steps": accumulation(config, device),
        "learning_rate": config.learning_rate,
        "lr_scheduler_type": config.lr_scheduler,
        "warmup_steps": config.warmup_ratio,
        "weight_decay": config.weight_decay,
        "max_grad_norm": config.max_grad_norm,
        "seed": config.seed,
        "logging_steps": config.logging_steps,
        "save_strategy": "steps",
        "save_steps": config.save_steps,
        "save_total_limit": config.save_total_limit,
        "bf16": device.precision == "bf16",
        "fp16": device.precision == "fp16",
        "use_cpu": device.use_cpu,
        _checkpointing_field(): config.gradient_checkpointing,
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        # Under DDP every trainable parameter (the adapter, or every weight) takes part in each
        # forward: no search for unused ones (the Trainer's default does one per step).
        "ddp_find_unused_parameters": False,
    }


def _checkpointing_field() -> str:
    """transformers >= 5.x renamed gradient_checkpointing to activation_checkpointing."""
    import dataclasses

    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    return (
        "activation_checkpointing"
        if "activation_checkpointing" in names
        else "gradient_checkpointing"
    )


def load_tokenizer(path: str, *, padding_side: str | None = None) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if padding_side is not None:
        tokenizer.padding_side = padding_side
    return tokenizer


def load_model(path: str, device: Device) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=device.torch_dtype())


def lora_config(config: StageConfig) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora.r,
        lora_alpha=config.lora.alpha,
        lora_dropout=config.lora.dropout,
        target_modules=config.lora.target_modules,
        task_type="CAUSAL_LM",
    )


def student(config: StageConfig, device: Device) -> tuple[Any, Any]:
    """(model, peft_config for the trainer or None): the base, with the adapter to continue."""
    assert config.model is not None
    model = load_model(config.model, device)
    if config.method == "full":
        return model, None
    if config.adapter:
        from peft import PeftModel

        return PeftModel.from_pretrained(model, config.adapter, is_trainable=True), None
    return model, lora_config(config)


# ----------------------------------------------------------------------------- events


def gpu_memory() -> list[dict[str, Any]]:
    """Used / total memory per GPU (NVML when nvidia-ml-py is present, else torch.cuda)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            out = []
            for index in range(pynvml.nvmlDeviceGetCount()):
                info = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index))
                out.append(
                    {
                        "device": index,
                        "used_mb": round(info.used / 2**20),
                        "total_mb": round(info.total / 2**20),
                    }
                )
            return out
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no nvidia-ml-py, or no driver: fall back to torch
        pass
    import torch

    if not torch.cuda.is_available():
        return []
    out = []
    for index in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(index)
        out.append(
            {
                "device": index,
                "used_mb": round((total - free) / 2**20),
                "total_mb": round(total / 2**20),
            }
        )
    return out


_KNOWN = {"loss", "learning_rate", "grad_norm", "epoch"}


def make_callback(writer: EventWriter, run_dir: Path, *, resume: bool) -> Any:
    """The TrainerCallback that writes events and obeys the stop / cancel flag."""
    from transformers import TrainerCallback

    class HatEvents(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.outcome: str | None = None  # None | "stop" | "cancel"
            self.began = time.monotonic()
            self.first_step = 0
            self.last_tokens: tuple[float, float] | None = None
            self.gpu = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.began = time.monotonic()
            self.first_step = state.global_step
            if resume:
                writer.emit(
                    "resume",
                    from_step=state.global_step,
                    checkpoint=str(latest_checkpoint(run_dir) or ""),
                )
            writer.phase("training", total=state.max_steps, step=state.global_step)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            flag = shared_control(run_dir)
            if flag == "cancel":
                self.outcome = "cancel"
                control.should_training_stop = True
                control.should_save = False
            elif flag == "stop" and state.global_step < state.max_steps:
                self.outcome = "stop"
                control.should_training_stop = True
                control.should_save = True

        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            writer.emit("checkpoint", step=state.global_step, path=str(path))

        def on_log(
            self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any
        ) -> None:
            logs = dict(logs or {})
            if "train_runtime" in logs:  # the Trainer's end-of-run summary
                writer.emit("summary", step=state.global_step, metrics=logs)
                return
            now = time.monotonic()
            done = state.global_step - self.first_step
            elapsed = now - self.began
            eta = (state.max_steps - state.global_step) * elapsed / done if done > 0 else None
            event: dict[str, Any] = {
                "step": state.global_step,
                "total": state.max_steps,
                "epoch": logs.get("epoch"),
                "elapsed_s": round(elapsed, 3),
                "eta_s": round(eta, 3) if eta is not None else None,
            }
            for key in ("loss", "learning_rate", "grad_norm"):
                if key in logs:
                    event[key] = logs[key]
            tokens = logs.get("num_tokens", getattr(state, "num_input_tokens_seen", None))
            if isinstance(tokens, int | float) and tokens > 0:
                if self.last_tokens is not None and now > self.last_tokens[1]:
                    rate = (tokens - self.last_tokens[0]) / (now - self.last_tokens[1])
                    event["tokens_per_s"] = round(rate, 1)
                elif done > 0 and elapsed > 0 and not resume:
                    event["tokens_per_s"] = round(tokens / elapsed, 1)
                self.last_tokens = (float(tokens), now)
            rewards = {
                k.split("/")[1]: v
                for k, v in logs.items()
                if k.startswith("rewards/") and k.endswith("/mean") and k.count("/") == 2
            }
            if rewards:
                event["rewards"] = rewards
            event["metrics"] = {k: v for k, v in logs.items() if k not in _KNOWN}
            memory = gpu_memory() if args.use_cpu is False else []
            if memory:
                event["gpu_memory"] = memory
            writer.emit("log", **event)

    return HatEvents()


def distributed_info(trainer: Any) -> dict[str, Any]:
    """How this process trains: accelerate's distributed type, the process group's backend,
    world size and rank, and whether FSDP wraps the model (an info event per rank)."""
    import torch.distributed as dist

    accelerator = trainer.accelerator
    info: dict[str, Any] = {
        "distributed_type": str(accelerator.distributed_type).rsplit(".", 1)[-1],
        "num_processes": accelerator.num_processes,
        "process_index": accelerator.process_index,
        "fsdp": bool(getattr(trainer, "is_fsdp_enabled", False)),
    }
    if dist.is_available() and dist.is_initialized():
        info["backend"] = str(dist.get_backend())
    if info["fsdp"]:
        plugin = accelerator.state.fsdp_plugin
        info["fsdp_version"] = getattr(plugin, "fsdp_version", None)
    return info


def shared_control(run_dir: Path) -> str | None:
    """The stop / cancel flag as rank 0 read it, on every rank.

    Each rank reading the file itself could see it one step apart (written between two
    reads): one rank would leave the loop while the other waits in the next step's
    all-reduce forever. Rank 0 reads, and the answer is broadcast (one tiny collective per
    optimizer step; nothing at all in a single process).
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return read_control(run_dir)
    box: list[str | None] = [read_control(run_dir) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def latest_checkpoint(run_dir: Path) -> Path | None:
    best: tuple[int, Path] | None = None
    for child in (run_dir / CHECKPOINTS).glob("checkpoint-*"):
        suffix = child.name.rsplit("-", 1)[-1]
        ok = suffix.isdigit() and (child / "trainer_state.json").is_file()
        if ok and (best is None or int(suffix) > best[0]):
            best = (int(suffix), child)
    return best[1] if best else None


# ----------------------------------------------------------------------------- train + save


@dataclass
class StageContext:
    """What a stage runner gets: where to write, the event writer, resume or not."""

    run_dir: Path
    writer: EventWriter
    resume: bool = False

    def info(self, **data: Any) -> None:
        self.writer.emit("info", **data)

    def train(self, trainer: Any, callback: Any) -> str:
        """Train (from the last checkpoint when resuming); 'done' | 'stop' | 'cancel'."""
        checkpoint = latest_checkpoint(self.run_dir) if self.resume else None
        if self.resume and checkpoint is None:
            raise ValueError(f"nothing to resume: no checkpoint under {self.run_dir / CHECKPOINTS}")
        self.info(**distributed_info(trainer))
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        outcome = callback.outcome or "done"
        if outcome == "cancel":
            clear_control(self.run_dir)
            raise StageCancelled("cancelled by the user")
        return str(outcome)

    def save(
        self, trainer: Any, config: StageConfig, tokenizer: Any, outcome: str
    ) -> dict[str, str]:
        """Write the adapter (and merged model) or the full model; the output event.

        `Trainer.save_model` runs on every process (FSDP / ZeRO-3 gather the weights) and
        writes on the main one. The merged model is built on the main process from a fresh
        copy of the base and the saved adapter, so merging never touches a sharded model.
        """
        self.writer.phase("saving")
        target = self.run_dir / ("adapter" if config.method == "lora" else "model")
        trainer.save_model(str(target))
        outputs: dict[str, str] = {}
        if not trainer.is_world_process_zero():
            return outputs
        tokenizer.save_pretrained(str(target))
        outputs["adapter" if config.method == "lora" else "model"] = str(target)
        if config.method == "lora" and config.merge and outcome == "done":
            assert config.model is not None
            outputs["merged"] = str(merge_adapter(config.model, target, self.run_dir / "merged"))
        self.writer.emit("output", **outputs)
        return outputs


def merge_adapter(base: str, adapter: Path, out: Path) -> Path:
    """base + adapter weights folded in, saved with the tokenizer (fp32 on CPU)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), str(adapter))
    merged = model.merge_and_unload()
    merged.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(adapter)).save_pretrained(str(out))
    return out
