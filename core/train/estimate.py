"""What a training run will need before it starts: memory (at once, from the model's config and
the stage config) and time (from a short measured warm-up in a training child).

**Memory** (`estimate_memory`) is a sum of parts, each derived from the model's config.json
(hidden, intermediate, layers, heads, vocab: `ModelShape`), never from a model name:

- weights at the training dtype (bf16 where the device multiplies it natively, else fp32);
- the trained parameters' state: LoRA adapters are kept in fp32 by PEFT, so each adapter
  parameter costs its weight, its gradient and AdamW's two moments (16 bytes); a full
  fine-tune holds a gradient at the weight dtype and two AdamW moments per weight;
- activations saved for backward, per decoder layer and token (`_layer_bytes_per_token`: the
  RMSNorms' fp32 copies, q/k/v and their rotated copies, the grouped k/v expanded for SDPA,
  the attention output, the SwiGLU's four intermediate tensors and the fp32 copies PEFT makes
  of each adapted Linear's input), at the longest sequence of a step times the batch; with
  gradient checkpointing only each layer's input is kept, plus one layer recomputed;
- the attention matrix where SDPA materialises it (a padded batch of more than one row on the
  CPU): rows x heads x length^2 in fp32, scores and softmax, one layer at a time (a model that
  kept it for every layer, as first written here, over-estimated a batch of two 1,001-token
  rows by 127 %: the measured peak holds no such term);
- the LM-head logits: the sliced loss (training/fast_sft.py) projects only the trained
  positions, TRL's head every position; each projected position costs the vocabulary in the
  training dtype, its fp32 copy, the fp32 log-softmax and its gradient;
- framework overhead: a constant (Python, torch, transformers, TRL, the tokenizer, the dataset,
  the mmapped weight file's pages), measured on the cpu profile's SFT at one length and batch
  (benchmarks/train_estimate.py, docs/benchmarks.md) and not fitted anywhere else.

The total is compared with what the machine has free: RAM (MemAvailable) on the CPU, the
least free GPU's memory on a GPU. `core/train/launch_checks.py` refuses a launch that does not
fit, with these numbers.

**Time** (`warmup`) runs the stage itself (`python -m training`) for a few optimizer steps on
the run's own config and data, takes the mean step time after the first step (which allocates)
and multiplies by the run's steps; it also reads the child's peak RSS (os.wait4).

Pure Python: no torch; the warm-up is a child process in the training environment.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.pythons import project_root, training_python
from core.train.config import OpdConfig, RlConfig, SftConfig, StageConfig, dump_config, parse_stage
from core.train.data import DataError, balance_rows, load_sft_rows
from core.train.events import read_events

if TYPE_CHECKING:
    from core.train.launch_checks import Environment

GIB = 1024**3
MIB = 1024**2

CPU_OVERHEAD_BYTES = 470 * MIB
"""Framework overhead of a CPU training child (module doc): the peak RSS of the cpu profile's
SFT child on 489-token rows at batch 1 (1.56 GiB, 2026-12-07) minus the modelled parts (467
MiB), rounded; calibrated on that one point only (benchmarks/train_estimate.py,
docs/benchmarks.md)."""
GPU_OVERHEAD_BYTES = 1_024 * MIB
"""CUDA context, kernels and the allocator's slack on a GPU: not measured here (no GPU was
lent when this was written); a round figure from the CUDA context alone (~0.5 GiB) doubled."""

ASSUMED_PROMPT_TOKENS = 512
"""OPD / RL prompts are not tokenized before a launch: their length is assumed."""

FP32 = 4
ADAM_MOMENTS = 2
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class EstimateError(ValueError):
    """The model's config lacks what the estimate needs (the message names it)."""


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer that decide its training memory."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied_embeddings: bool = True
    parameters: int = 0
    """Every weight (0: computed from the sizes)."""

    @property
    def parameter_count(self) -> int:
        return self.parameters or self.computed_parameters()

    def computed_parameters(self) -> int:
        h, d = self.hidden, self.head_dim
        attention = h * self.heads * d * 2 + h * self.kv_heads * d * 2
        mlp = 3 * h * self.intermediate
        per_layer = attention + mlp + 2 * h
        head = 0 if self.tied_embeddings else self.vocab * h
        return self.vocab * h + head + self.layers * per_layer + h

    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of each decoder Linear, by its usual module name."""
        h, i, d = self.hidden, self.intermediate, self.head_dim
        return {
            "q_proj": (h, self.heads * d),
            "k_proj": (h, self.kv_heads * d),
            "v_proj": (h, self.kv_heads * d),
            "o_proj": (self.heads * d, h),
            "gate_proj": (h, i),
            "up_proj": (h, i),
            "down_proj": (i, h),
        }

    def lora_parameters(self, rank: int, targets: str | list[str]) -> int:
        """Adapter parameters: r x (in + out) per adapted Linear per layer ("all-linear":
        every decoder Linear, not the LM head, as PEFT does)."""
        names = ALL_LINEAR if targets == "all-linear" else tuple(targets)
        shapes = self.linear_shapes()
        per_layer = sum(rank * sum(shapes[n]) for n in names if n in shapes)
        return per_layer * self.layers

    def adapted_inputs(self, targets: str | list[str]) -> tuple[int, int]:
        """(adapted Linears whose input is `hidden` wide, those whose input is `intermediate`
        wide) per layer: PEFT keeps an fp32 copy of each one's input."""
        names = ALL_LINEAR if targets == "all-linear" else tuple(targets)
        shapes = self.linear_shapes()
        wide = [shapes[n][0] for n in names if n in shapes]
        return (
            sum(1 for w in wide if w != self.intermediate),
            sum(1 for w in wide if w == self.intermediate),
        )


def _int(config: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def shape_from_config(config: dict[str, Any], *, parameters: int = 0) -> ModelShape:
    """A ModelShape from a Hugging Face config.json's fields (`text_config` for multimodal
    configs); EstimateError naming the first missing field."""
    text = config.get("text_config")
    if isinstance(text, dict):
        config = {**config, **text}
    hidden = _int(config, "hidden_size", "n_embd", "d_model")
    layers = _int(config, "num_hidden_layers", "n_layer", "num_layers")
    heads = _int(config, "num_attention_heads", "n_head")
    vocab = _int(config, "vocab_size")
    for name, value in (("hidden_size", hidden), ("num_hidden_layers", layers),
                        ("num_attention_heads", heads), ("vocab_size", vocab)):  # fmt: skip
        if value is None:
            raise EstimateError(f"config.json has no {name}: the memory cannot be estimated")
    assert hidden and layers and heads and vocab
    intermediate = _int(config, "intermediate_size", "n_inner", "ffn_dim") or 4 * hidden
    kv_heads = _int(config, "num_key_value_heads") or heads
    head_dim = _int(config, "head_dim") or hidden // heads
    tied = config.get("tie_word_embeddings", True) is not False
    return ModelShape(hidden=hidden, intermediate=intermediate, layers=layers, heads=heads,
                      kv_heads=kv_heads, head_dim=head_dim, vocab=vocab, tied_embeddings=tied,
                      parameters=parameters)  # fmt: skip


def model_shape(folder: str | Path) -> ModelShape:
    """The shape of the model in a Hugging Face folder: config.json, and the parameter count
    from the safetensors headers (core/models/folder.py); EstimateError when unreadable."""
    from core.models.folder import FolderError, check_model_folder  # heavy: sqlalchemy, alembic

    path = Path(folder).expanduser()
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EstimateError(f"cannot read {path / 'config.json'}: {exc}") from None
    if not isinstance(config, dict):
        raise EstimateError(f"{path / 'config.json'} is not a JSON object")
    try:
        parameters = check_model_folder(path).parameters or 0
    except FolderError:
        parameters = 0
    return shape_from_config(config, parameters=parameters)


# ----------------------------------------------------------------------------- the machine


@dataclass(frozen=True)
class MachineMemory:
    """Memory the run can use: RAM on the CPU, the least free GPU's memory on a GPU."""

    device: str  # cpu | gpu
    total_bytes: int
    available_bytes: int


def _meminfo(text: str | None = None) -> tuple[int, int]:
    if text is None:
        try:
            text = Path("/proc/meminfo").read_text(encoding="utf-8")
        except OSError:
            return 0, 0
    values: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[name] = int(parts[0]) * 1024
    total = values.get("MemTotal", 0)
    return total, values.get("MemAvailable", values.get("MemFree", total))


def _gpu_memory() -> list[tuple[int, int]]:
    """(total, free) bytes per visible GPU, from nvidia-smi; empty when unknown."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=memory.total,memory.free", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            rows.append((int(parts[0]) * MIB, int(parts[1]) * MIB))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [int(v) for v in visible.split(",") if v.strip().isdigit()]
        rows = [rows[i] for i in ids if i < len(rows)]
    return rows


def machine_memory(gpu: bool) -> MachineMemory:
    """What this machine has now for a run on the GPU (`gpu`) or the CPU."""
    if gpu:
        rows = _gpu_memory()
        if rows:
            total, free = min(rows, key=lambda r: r[1])
            return MachineMemory("gpu", total, free)
    total, available = _meminfo()
    return MachineMemory("cpu", total, available)


# ----------------------------------------------------------------------------- the estimate


@dataclass(frozen=True)
class MemoryEstimate:
    parts: dict[str, int]
    """Bytes per part (weights, trained state, activations, attention, logits, overhead)."""
    machine: MachineMemory
    sequence: int
    """Tokens per row the activations were sized for."""
    rows: int
    """Rows per forward (the per-device batch; OPD / RL: their completions)."""
    dtype: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total_bytes(self) -> int:
        return sum(self.parts.values())

    @property
    def fits(self) -> bool:
        return self.machine.available_bytes <= 0 or self.total_bytes <= self.machine.available_bytes

    def summary(self) -> str:
        where = "GPU memory" if self.machine.device == "gpu" else "RAM"
        return (
            f"needs ~{gib(self.total_bytes)} GiB of {where}; this machine has "
            f"{gib(self.machine.available_bytes)} GiB free (of {gib(self.machine.total_bytes)})"
        )

    def breakdown(self) -> str:
        return ", ".join(f"{name} {gib(size)}" for name, size in self.parts.items())

    def as_dict(self) -> dict[str, Any]:
        return {
            "total_bytes": self.total_bytes,
            "parts": dict(self.parts),
            "device": self.machine.device,
            "available_bytes": self.machine.available_bytes,
            "machine_total_bytes": self.machine.total_bytes,
            "sequence": self.sequence,
            "rows": self.rows,
            "dtype": self.dtype,
            "fits": self.fits,
            "notes": list(self.notes),
        }


def gib(size: int | float) -> str:
    """Bytes as GiB with two decimals (one past 10 GiB)."""
    value = size / GIB
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def training_dtype_bytes(config: StageConfig, *, gpu: bool, cpu_bf16: bool) -> tuple[int, str]:
    """(bytes per element, name) of the weights as the child loads them (training/common.py
    `resolve_device`: auto is bf16 on a GPU and on a CPU with native bf16, else fp32)."""
    precision = config.precision
    if precision == "auto":
        precision = "bf16" if gpu or cpu_bf16 else "fp32"
    return (FP32, "fp32") if precision == "fp32" else (2, precision)


def _layer_bytes_per_token(shape: ModelShape, dtype: int, targets: str | list[str] | None) -> int:
    """Activation bytes one decoder layer keeps for backward per token (module doc)."""
    h, i = shape.hidden, shape.intermediate
    q = shape.heads * shape.head_dim
    kv = shape.kv_heads * shape.head_dim
    norms = 2 * (2 * FP32 * h + dtype * h)  # fp32 input and normalised copy, the dtype output
    attention = dtype * (q + 2 * kv)  # q, k, v
    attention += dtype * (q + kv)  # rotated q and k
    attention += dtype * 2 * q  # k and v expanded to every head for SDPA
    attention += dtype * 2 * q  # SDPA output, o_proj input
    mlp = dtype * 4 * i  # gate, up, silu(gate), silu(gate) * up
    casts = 0
    if targets is not None:
        narrow, wide = shape.adapted_inputs(targets)
        casts = FP32 * (narrow * h + wide * i) if dtype != FP32 else 0
    return norms + attention + mlp + casts


def _head_bytes_per_position(shape: ModelShape, dtype: int) -> int:
    """Logits of one projected position: the dtype output, its fp32 copy, the fp32
    log-softmax kept for backward and its gradient."""
    return shape.vocab * (dtype + 3 * FP32)


def estimate_memory(
    shape: ModelShape,
    config: StageConfig,
    machine: MachineMemory,
    *,
    env: Environment | None = None,
    longest_row: int | None = None,
    trained_tokens: int | None = None,
    overhead_bytes: int | None = None,
    processes: int = 1,
    data_rows: int | None = None,
) -> MemoryEstimate:
    """The memory `config` needs with the model `shape` on `machine` (module doc).

    `longest_row`: the longest row in tokens when measured (SFT; default max_length);
    `trained_tokens`: the most trained positions in one row (the sliced head projects only
    those; default every position); `processes`: training processes on this machine (on the
    CPU they share its RAM, so each holds a copy of every part; on GPUs each has its own);
    `data_rows`: the rows the data holds (a batch is never larger)."""
    gpu = machine.device == "gpu"
    cpu_bf16 = env.cpu_bf16 if env is not None else False
    dtype, dtype_name = training_dtype_bytes(config, gpu=gpu, cpu_bf16=cpu_bf16)
    notes: list[str] = []
    params = shape.parameter_count
    parts: dict[str, int] = {"weights": params * dtype}

    if config.method == "lora":
        adapter = shape.lora_parameters(config.lora.r, config.lora.target_modules)
        parts["LoRA + AdamW"] = adapter * FP32 * (2 + ADAM_MOMENTS)
        targets: str | list[str] | None = config.lora.target_modules
    else:
        moment = dtype  # torch's AdamW keeps its moments in the parameters' dtype
        parts["gradients + AdamW"] = params * (dtype + ADAM_MOMENTS * moment)
        targets = None

    rows = config.per_device_batch_size
    if data_rows is not None and not (isinstance(config, SftConfig) and config.packing):
        rows = max(1, min(rows, data_rows))
    if isinstance(config, SftConfig):
        sequence = min(config.max_length, longest_row) if longest_row else config.max_length
        if config.packing:
            sequence = config.max_length
        if config.loss_on == "all" or config.lm_head_loss == "trl" or trained_tokens is None:
            head_positions = sequence
        else:
            head_positions = min(sequence, trained_tokens)
    else:
        sequence = ASSUMED_PROMPT_TOKENS + config.max_completion_length
        head_positions = config.max_completion_length
        notes.append(f"prompts assumed {ASSUMED_PROMPT_TOKENS} tokens (not tokenized before)")
        if isinstance(config, OpdConfig):
            parts["teacher weights"] = params * dtype
            head_positions *= 2  # the student's and the teacher's logits
        elif isinstance(config, RlConfig) and config.beta > 0:
            parts["reference weights"] = params * dtype
    tokens = rows * sequence
    per_token = _layer_bytes_per_token(shape, dtype, targets)
    if config.gradient_checkpointing:
        parts["activations"] = tokens * (shape.layers * dtype * shape.hidden + per_token)
    else:
        parts["activations"] = tokens * shape.layers * per_token
    if rows > 1 and not gpu:
        # a padded batch: SDPA builds the fp32 scores and their softmax for one layer at a time
        # in forward and keeps neither for backward (measured: not one matrix per layer)
        parts["attention matrix"] = rows * shape.heads * sequence * sequence * FP32 * 2
    parts["logits"] = rows * head_positions * _head_bytes_per_position(shape, dtype)
    default_overhead = GPU_OVERHEAD_BYTES if gpu else CPU_OVERHEAD_BYTES
    parts["overhead"] = default_overhead if overhead_bytes is None else overhead_bytes
    if processes > 1 and not gpu:
        parts = {name: size * processes for name, size in parts.items()}
        notes.append(f"{processes} CPU processes, each with its own copy")
    return MemoryEstimate(parts=parts, machine=machine, sequence=sequence, rows=rows,
                          dtype=dtype_name, notes=tuple(notes))  # fmt: skip


def fit_problem(estimate: MemoryEstimate) -> str | None:
    """The refusal line for an estimate over what the machine has free, else None."""
    if estimate.fits:
        return None
    return (
        f"{estimate.summary()} ({estimate.breakdown()}): lower per_device_batch_size or "
        "max_length, or turn on gradient_checkpointing"
    )


# ----------------------------------------------------------------------------- time


WARMUP_TIMEOUT_S = 900.0


class WarmupError(RuntimeError):
    """The warm-up could not run or measured no step (the message says why)."""


@dataclass(frozen=True)
class Warmup:
    steps: int
    """Optimizer steps the warm-up ran."""
    step_s: float
    """Mean seconds per optimizer step after the first."""
    first_step_s: float
    load_s: float
    """Seconds from the child's start to its first step (model and data loading)."""
    peak_rss_bytes: int
    """The child's peak resident memory (os.wait4)."""
    total_steps: int | None
    """The run's optimizer steps (None: unknown before the stage loads its data)."""
    elapsed_s: tuple[float, ...] = ()
    """Seconds from the start of training to the end of each step, as the child logged them."""

    @property
    def run_s(self) -> float | None:
        """Expected training time of the whole run (load excluded)."""
        if self.total_steps is None:
            return None
        return self.first_step_s + max(0, self.total_steps - 1) * self.step_s

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "step_s": round(self.step_s, 3),
            "first_step_s": round(self.first_step_s, 3),
            "load_s": round(self.load_s, 3),
            "peak_rss_bytes": self.peak_rss_bytes,
            "total_steps": self.total_steps,
            "run_s": None if self.run_s is None else round(self.run_s, 1),
        }


def run_steps(config: StageConfig, env: Environment) -> int | None:
    """The optimizer steps the run will take: max_steps, or for SFT the epochs over the rows
    (after balancing) in batches of the global batch; None when only the stage knows."""
    if config.max_steps is not None:
        return config.max_steps
    if not isinstance(config, SftConfig):
        return None
    from core.train.launch_checks import batch_plan  # cycle: launch_checks imports this module

    try:
        rows = load_sft_rows(config.data, max_rows=config.max_rows).rows
    except DataError:
        return None
    if config.balance_categories or config.balance_skills or config.original_weight > 1:
        rows = balance_rows(rows, seed=config.seed, by_category=config.balance_categories,
                            original_weight=config.original_weight,
                            by_skill=config.balance_skills)  # fmt: skip
    plan = batch_plan(config, env)
    micro = math.ceil(len(rows) / (plan.per_device * plan.processes))
    per_epoch = max(1, math.ceil(micro / plan.accumulation))
    return max(1, math.ceil(per_epoch * config.epochs))


def warmup(
    config: StageConfig,
    env: Environment,
    *,
    steps: int = 3,
    timeout_s: float = WARMUP_TIMEOUT_S,
    python: str | None = None,
) -> Warmup:
    """Run the stage for `steps` optimizer steps in a training child on a temporary folder
    (nothing registered, nothing kept) and time them (module doc). `config.model` must be a
    model folder (resolve a registered name first)."""
    steps = max(2, steps)
    data = config.model_dump(mode="json")
    data.update(max_steps=steps, logging_steps=1, save_steps=10**6, merge=False,
                save_total_limit=None, output_name=None)  # fmt: skip
    trial = parse_stage(data, config.stage)
    folder = Path(tempfile.mkdtemp(prefix="hat-warmup-"))
    try:
        path = folder / "config.yaml"
        path.write_text(dump_config(trial), encoding="utf-8")
        run_dir = folder / "run"
        command = [python or training_python(), "-m", "training", config.stage,
                   "--config", str(path), "--run-dir", str(run_dir)]  # fmt: skip
        began = time.time()
        try:
            proc = subprocess.Popen(
                command, cwd=str(project_root()), stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise WarmupError(f"cannot start the warm-up: {exc.strerror}") from None
        peak = _wait(proc, timeout_s)
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        events, _ = read_events(run_dir / "events.jsonl")
        logs = [e for e in events if e.get("event") == "log" and e.get("elapsed_s") is not None]
        training = next((e for e in events if e.get("phase") == "training"), None)
        if proc.returncode != 0 or len(logs) < 2:
            failed = [e for e in events if e.get("phase") == "failed"]
            reason = failed[-1].get("reason") if failed else None
            lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
            why = reason or (lines[-1] if lines else f"exit status {proc.returncode}")
            raise WarmupError(f"the warm-up ran no steps: {why}")
        elapsed = [float(e["elapsed_s"]) for e in logs]
        first = elapsed[0]
        step_s = (elapsed[-1] - elapsed[0]) / (len(elapsed) - 1)
        load_s = _since(training, began) if training is not None else 0.0
        return Warmup(steps=len(logs), step_s=step_s, first_step_s=first, load_s=load_s,
                      peak_rss_bytes=peak, total_steps=run_steps(config, env),
                      elapsed_s=tuple(elapsed))  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _since(event: dict[str, Any], began: float) -> float:
    """Seconds from `began` (unix time) to an event's `time`."""
    stamp = event.get("time")
    return max(0.0, float(stamp) - began) if isinstance(stamp, int | float) else 0.0


def _wait(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    """Wait for `proc` (killing its session past `timeout_s`); its peak RSS in bytes.

    The peak is the child's own high-water mark (`VmHWM`), read while it runs: wait4's
    `ru_maxrss` also keeps the RSS the process had before its exec, which is the caller's
    (a long-lived studio or test process of several GiB forked or vforked into it)."""
    deadline = time.monotonic() + timeout_s
    peak = 0
    while True:
        peak = max(peak, _high_water_mark(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return peak or int(usage.ru_maxrss) * 1024  # kilobytes on Linux
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            os.wait4(proc.pid, 0)
            raise WarmupError(f"the warm-up took more than {timeout_s:.0f} s")
        time.sleep(0.1)


def _high_water_mark(pid: int) -> int:
    """The peak resident memory of `pid`'s current program in bytes (0 where unreadable)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return 0
    match = re.search(r"^VmHWM:\s+(\d+)\s+kB", status, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0
