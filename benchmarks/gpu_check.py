"""The GPU check: `bash scripts/gpu-check.sh [--dry-run] [--json FILE]` (this module's main).

One run on one GPU, with nothing downloaded, prints one table:

- the device, its bf16 peak and memory bandwidth from the datasheet (when the name is known),
  and both measured in the same run: a bf16 GEMM (the practical compute peak) and a device
  copy (bytes read + written per second);
- SFT and GRPO (TRL, LoRA r16 on every linear layer, bf16): steps/s and tokens/s after a
  warm-up step, achieved FLOP/s = tokens/s x model FLOPs per token, over the measured GEMM
  peak and over the datasheet peak; peak GPU memory per stage;
- `generate` decode tokens/s at batch 1 over the memory roofline (measured bandwidth /
  weight bytes: each decoded token reads every weight once);
- the training events the studio charts: each stage runs with the project's own trainer
  callback (training/common.py) writing a real `events.jsonl`, read back through the
  studio's monitor state (core/train/monitor.py): loss, learning rate, grad norm, tokens/s,
  the reward series, and the GPU memory readout of every log line;
- the studio's GPU memory readout (training.common.gpu_memory: NVML through nvidia-ml-py
  when installed, else torch) and GPU detection (core.train.launch_checks.detect_environment:
  NVML or nvidia-smi) against what torch sees;
- with `--demo-model FOLDER` (SmolLM2-135M-Instruct, when it is at hand), correctness on real
  weights: LoRA SFT overfits one short row, the loss must halve;
- the `gpu` experiment profile (resources/experiment/profiles/gpu.yaml): its three stages
  pass `check_launch` on this machine, and one SFT step at the profile's batch and length
  (per_device_batch_size x max_length, LoRA rank as in the profile) fits in memory.

Speed figures come from a model of a real size built from a config with random weights
(Qwen3-1.7B's shape: 28 layers, hidden 2048, 16 heads / 8 KV heads, MLP 6144, vocabulary
151936, tied embeddings): nothing is downloaded, and random weights cost the same FLOPs.
The tokenizer is built here too (a word-level vocabulary the size of the model's).

Model FLOPs per token: a LoRA step does the frozen base's forward (2N) and the input
gradients of its backward (2N) but no weight gradients, so 4N, where N counts the weights of
every linear layer (the LM head included); plus causal attention, 2 x layers x attention
width x sequence length per token forward, x3 with backward. A GRPO step adds the sampling:
2N per generated (and prefilled) token.

`--dry-run` builds the same stages on the CPU with a tiny model of the same family (2
layers, hidden 64) and runs each for 2 steps, in well under a minute: the table's rows and
the event checks are exercised without a GPU (the speed figures then mean nothing).
Exit status 0 when every check passed, 1 when one failed (the table says which).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # core and training, as source

# Datasheet figures: (bf16 dense TFLOP/s, memory TB/s), matched on the device name.
SPEC: tuple[tuple[str, float, float], ...] = (
    ("H200", 989.0, 4.8),
    ("H100 NVL", 835.0, 3.9),
    ("H100 PCIe", 756.0, 2.0),
    ("H100", 989.0, 3.35),
    ("H20", 148.0, 4.0),
    ("A100-SXM4-80GB", 312.0, 2.039),
    ("A100 80GB PCIe", 312.0, 1.935),
    ("A100", 312.0, 1.555),
    ("L40S", 362.0, 0.864),
)


def spec_of(name: str) -> tuple[float, float] | None:
    """(bf16 TFLOP/s, TB/s) from the datasheet for a device name, None when unknown."""
    for key, flops, bandwidth in SPEC:
        if key in name:
            return flops, bandwidth
    return None


@dataclass
class Shape:
    """A model shape (Qwen3 family) and the sizes each stage runs with."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    sft_batch: int
    sft_length: int
    steps: int
    grpo_batch: int
    generations: int
    prompt_length: int
    completion_length: int
    decode_tokens: int
    gemm_n: int
    copy_mb: int
    profile_length_cap: int | None = None


QWEN3_1_7B = Shape(
    layers=28,
    hidden=2048,
    heads=16,
    kv_heads=8,
    head_dim=128,
    intermediate=6144,
    vocab=151936,
    sft_batch=4,
    sft_length=1024,
    steps=6,
    grpo_batch=8,
    generations=8,
    prompt_length=128,
    completion_length=128,
    decode_tokens=256,
    gemm_n=8192,
    copy_mb=4096,
)
TINY = Shape(
    layers=2,
    hidden=64,
    heads=4,
    kv_heads=2,
    head_dim=16,
    intermediate=128,
    vocab=512,
    sft_batch=2,
    sft_length=32,
    steps=2,
    grpo_batch=4,
    generations=4,
    prompt_length=8,
    completion_length=8,
    decode_tokens=8,
    gemm_n=256,
    copy_mb=16,
    profile_length_cap=64,
)


@dataclass
class Row:
    check: str
    figure: str
    detail: str = ""
    ok: bool = True


@dataclass
class Report:
    device: str
    dry_run: bool
    rows: list[Row] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def add(self, check: str, figure: str, detail: str = "", ok: bool = True) -> None:
        self.rows.append(Row(check, figure, detail, ok))

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def table(self) -> str:
        head = ("check", "figure", "detail")
        cells = [(r.check + ("" if r.ok else " (FAILED)"), r.figure, r.detail) for r in self.rows]
        widths = [max(len(head[i]), *(len(c[i]) for c in cells)) for i in range(2)]
        lines = [f"| {head[0]:<{widths[0]}} | {head[1]:<{widths[1]}} | {head[2]} |"]
        lines.append(f"|{'-' * (widths[0] + 2)}|{'-' * (widths[1] + 2)}|--------|")
        for check, figure, detail in cells:
            lines.append(f"| {check:<{widths[0]}} | {figure:<{widths[1]}} | {detail} |")
        return "\n".join(lines)


# ----------------------------------------------------------------------------- pieces


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def gemm_flops(device: Any, dtype: Any, n: int, seconds: float = 1.0) -> float:
    """Measured matmul FLOP/s of an n x n x n product (warm-up, then about `seconds`)."""
    import torch

    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    _sync(device)
    count, began = 0, time.perf_counter()
    while True:
        for _ in range(10):
            a @ b
        count += 10
        _sync(device)
        elapsed = time.perf_counter() - began
        if elapsed >= seconds:
            return 2.0 * n**3 * count / elapsed


def copy_bandwidth(device: Any, megabytes: int, seconds: float = 1.0) -> float:
    """Measured device memory bandwidth: bytes read + written per second by a copy."""
    import torch

    size = megabytes * 2**20
    src = torch.empty(size, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    dst.copy_(src)
    _sync(device)
    count, began = 0, time.perf_counter()
    while True:
        dst.copy_(src)
        count += 1
        _sync(device)
        elapsed = time.perf_counter() - began
        if elapsed >= seconds:
            return 2.0 * size * count / elapsed


def build_tokenizer(vocab: int) -> Any:
    """A word-level tokenizer with `vocab` entries (w0 ... ; <pad>, <eos>, <unk> first)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    words.update({f"w{i}": i for i in range(3, vocab)})
    tok = Tokenizer(models.WordLevel(vocab=words, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    fast.padding_side = "left"
    return fast


def build_model(shape: Shape, device: Any, dtype: Any) -> Any:
    """A Qwen3-family causal LM of `shape` with random weights, on `device`."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    config = Qwen3Config(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        max_position_embeddings=40960,
        tie_word_embeddings=True,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.generation_config.pad_token_id = 0
    model.generation_config.eos_token_id = 1
    return model


def linear_weights(model: Any) -> int:
    """N: weights of every linear layer (the LM head included, tied or not)."""
    import torch

    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def train_flops_per_token(shape: Shape, n_linear: int, context: int) -> float:
    """LoRA training FLOPs per token: 4N + causal attention x3 (module doc)."""
    attention = 2.0 * shape.layers * shape.heads * shape.head_dim * context
    return 4.0 * n_linear + 3.0 * attention


def lora(r: int = 16) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=2 * r, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"
    )


class StepClock:
    """A TrainerCallback factory: wall time at the end of every optimizer step."""

    @staticmethod
    def make(device: Any) -> Any:
        from transformers import TrainerCallback

        class Clock(TrainerCallback):  # type: ignore[misc]
            def __init__(self) -> None:
                self.ends: list[float] = []

            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                _sync(device)
                self.ends.append(time.perf_counter())

        return Clock()


def steps_per_s(ends: list[float]) -> float:
    """Optimizer steps per second after the first (warm-up) step."""
    if len(ends) < 2:
        return math.nan
    return (len(ends) - 1) / (ends[-1] - ends[0])


def common_args(out: Path, steps: int, batch: int, gpu: bool) -> dict[str, Any]:
    return {
        "output_dir": str(out),
        "max_steps": steps,
        "per_device_train_batch_size": batch,
        "gradient_accumulation_steps": 1,
        "learning_rate": 1e-4,
        "lr_scheduler_type": "constant",
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "bf16": gpu,
        "use_cpu": not gpu,
        "dataloader_num_workers": 0,
        "seed": 0,
    }


def _peak_memory(device: Any) -> int | None:
    import torch

    if device.type != "cuda":
        return None
    return int(torch.cuda.max_memory_allocated(device))


def _reset_memory(device: Any) -> None:
    import gc

    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _gib(value: int | None) -> str:
    return "n/a (CPU)" if value is None else f"{value / 2**30:.1f} GiB"


def _events(run_dir: Path) -> list[dict[str, Any]]:
    from core.train.events import iter_events

    return iter_events(run_dir)


def chart_check(run_dir: Path, wanted: tuple[str, ...], gpu: bool) -> tuple[bool, str]:
    """Feed a stage's events.jsonl to the studio's monitor state: are the charts drawn?"""
    from core.train.monitor import MonitorState

    events = _events(run_dir)
    state = MonitorState()
    state.apply(events)
    logs = [e for e in events if e.get("event") == "log"]
    have = {name: len(state.series[name].ys) for name in state.series if state.series[name].ys}
    missing = [name for name in wanted if not have.get(name)]
    memory_ok = (not gpu) or all(e.get("gpu_memory") for e in logs)
    detail = f"{len(logs)} log events; series " + ", ".join(f"{k} {v}" for k, v in have.items())
    if gpu:
        detail += "; gpu_memory on every log line" if memory_ok else "; gpu_memory MISSING"
    if missing:
        detail += "; missing " + ", ".join(missing)
    return bool(logs) and not missing and memory_ok, detail


# ----------------------------------------------------------------------------- stages


def run_sft(
    shape: Shape, device: Any, dtype: Any, tokenizer: Any, work: Path, report: Report, *, gpu: bool
) -> None:
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from core.train.events import EventWriter
    from training.common import make_callback

    _reset_memory(device)
    model = build_model(shape, device, dtype)
    n_linear = linear_weights(model)
    generator = torch.Generator().manual_seed(0)
    rows = shape.sft_batch * shape.steps
    ids = torch.randint(3, shape.vocab, (rows, shape.sft_length), generator=generator)
    dataset = Dataset.from_dict({"input_ids": ids.tolist()})
    run_dir = work / "sft"
    writer = EventWriter(run_dir)
    clock = StepClock.make(device)
    trainer = SFTTrainer(
        model=model,
        args=SFTConfig(
            **common_args(run_dir / "checkpoints", shape.steps, shape.sft_batch, gpu),
            max_length=shape.sft_length,
            packing=False,
            dataset_num_proc=None,
        ),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora(),
        callbacks=[make_callback(writer, run_dir, resume=False), clock],
    )
    trainer.train()
    writer.close()
    rate = steps_per_s(clock.ends)
    tokens = rate * shape.sft_batch * shape.sft_length
    flops = tokens * train_flops_per_token(shape, n_linear, shape.sft_length)
    peak = _peak_memory(device)
    report.data["sft"] = {
        "steps_per_s": rate,
        "tokens_per_s": tokens,
        "flops": flops,
        "peak_memory": peak,
        "n_linear": n_linear,
    }
    report.add(
        "SFT LoRA r16",
        f"{rate:.2f} steps/s, {tokens:,.0f} tok/s",
        f"batch {shape.sft_batch} x {shape.sft_length} tokens; {_flops_text(flops, report)}; "
        f"peak memory {_gib(peak)}",
    )
    ok, detail = chart_check(run_dir, ("loss", "learning_rate", "grad_norm", "tokens_per_s"), gpu)
    report.add("SFT events (studio charts)", "ok" if ok else "missing", detail, ok)
    del trainer, model


def run_grpo(
    shape: Shape, device: Any, dtype: Any, tokenizer: Any, work: Path, report: Report, *, gpu: bool
) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from core.train.events import EventWriter
    from training.common import make_callback

    _reset_memory(device)
    model = build_model(shape, device, dtype)
    n_linear = linear_weights(model)
    generator = torch.Generator().manual_seed(1)
    prompts = [
        " ".join(
            f"w{int(i)}"
            for i in torch.randint(3, shape.vocab, (shape.prompt_length,), generator=generator)
        )
        for _ in range(shape.grpo_batch * shape.steps)
    ]
    dataset = Dataset.from_dict({"prompt": prompts})

    def length_reward(completions: list[str], **kw: Any) -> list[float]:
        return [len(c.split()) / shape.completion_length for c in completions]

    def distinct_reward(completions: list[str], **kw: Any) -> list[float]:
        return [len(set(c.split())) / max(1, len(c.split())) for c in completions]

    run_dir = work / "grpo"
    writer = EventWriter(run_dir)
    clock = StepClock.make(device)
    args = GRPOConfig(
        **common_args(run_dir / "checkpoints", shape.steps, shape.grpo_batch, gpu),
        num_generations=shape.generations,
        max_completion_length=shape.completion_length,
        temperature=1.0,
        beta=0.0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[length_reward, distinct_reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora(),
        callbacks=[make_callback(writer, run_dir, resume=False), clock],
    )
    trainer.train()
    writer.close()
    rate = steps_per_s(clock.ends)
    sequence = shape.prompt_length + shape.completion_length
    tokens = rate * shape.grpo_batch * sequence
    per_token = train_flops_per_token(shape, n_linear, sequence) + 2.0 * n_linear
    flops = tokens * per_token
    peak = _peak_memory(device)
    report.data["grpo"] = {
        "steps_per_s": rate,
        "tokens_per_s": tokens,
        "flops": flops,
        "peak_memory": peak,
    }
    report.add(
        "GRPO LoRA r16",
        f"{rate:.2f} steps/s, {tokens:,.0f} tok/s",
        f"{shape.grpo_batch} completions/step ({shape.generations} per prompt), prompt "
        f"{shape.prompt_length} + completion {shape.completion_length} tokens, HF generate; "
        f"{_flops_text(flops, report)}; peak memory {_gib(peak)}",
    )
    wanted = ("loss", "learning_rate", "reward", "completion_length")
    ok, detail = chart_check(run_dir, wanted, gpu)
    report.add("GRPO events (studio charts)", "ok" if ok else "missing", detail, ok)
    del trainer, model


def run_decode(shape: Shape, device: Any, dtype: Any, report: Report) -> None:
    import torch

    _reset_memory(device)
    model = build_model(shape, device, dtype).eval()
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    prompt = torch.randint(3, shape.vocab, (1, 16), device=device)
    with torch.inference_mode():
        model.generate(prompt, max_new_tokens=4, min_new_tokens=4, do_sample=False)
        _sync(device)
        began = time.perf_counter()
        out = model.generate(
            prompt,
            max_new_tokens=shape.decode_tokens,
            min_new_tokens=shape.decode_tokens,
            do_sample=False,
        )
        _sync(device)
        elapsed = time.perf_counter() - began
    new = out.shape[1] - prompt.shape[1]
    rate = new / elapsed
    bandwidth = report.data.get("bandwidth") or math.nan
    roofline = bandwidth / weight_bytes
    peak = _peak_memory(device)
    report.data["decode"] = {
        "tokens_per_s": rate,
        "roofline": roofline,
        "weight_bytes": weight_bytes,
        "peak_memory": peak,
    }
    report.add(
        "generate decode (batch 1)",
        f"{rate:,.1f} tok/s",
        f"{rate / roofline:.0%} of the memory roofline {roofline:,.0f} tok/s (measured "
        f"bandwidth / {weight_bytes / 2**30:.2f} GiB of weights); {new} tokens; "
        f"peak memory {_gib(peak)}",
    )
    del model


def _flops_text(flops: float, report: Report) -> str:
    measured = report.data.get("gemm") or math.nan
    text = f"{flops / 1e12:.2f} TFLOP/s = {flops / measured:.0%} of the measured GEMM peak"
    spec = report.data.get("spec")
    if spec:
        text += f", {flops / (spec[0] * 1e12):.0%} of the datasheet bf16 peak"
    return text


def check_readout(device: Any, report: Report) -> None:
    """The studio's GPU memory readout and GPU detection against torch."""
    import torch

    from core.train.launch_checks import detect_environment
    from training.common import gpu_memory

    env = detect_environment()
    if device.type != "cuda":
        ok = env.gpus == 0
        report.add(
            "GPU detection (core)",
            f"{env.gpus} GPU(s)",
            "torch sees no GPU (dry run on the CPU)",
            ok,
        )
        report.add(
            "GPU memory readout (studio)",
            "n/a (CPU)",
            f"training.common.gpu_memory() -> {gpu_memory()!r}",
            gpu_memory() == [],
        )
        return
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    ok = env.gpus == len(names) and all(
        a in b or b in a for a, b in zip(env.gpu_names, names, strict=False)
    )
    report.add(
        "GPU detection (core)",
        f"{env.gpus} GPU(s)",
        f"detect_environment {list(env.gpu_names)}; torch {names}",
        ok,
    )
    try:
        import pynvml  # noqa: F401

        source = "NVML (nvidia-ml-py)"
    except ImportError:
        source = "torch.cuda.mem_get_info (nvidia-ml-py not installed)"
    readout = gpu_memory()
    free, total = torch.cuda.mem_get_info(0)
    torch_used, torch_total = (total - free) / 2**20, total / 2**20
    first = readout[0] if readout else {}
    ok = bool(readout) and abs(first.get("total_mb", 0) - torch_total) <= 0.01 * torch_total
    ok = ok and abs(first.get("used_mb", 0) - torch_used) <= max(1024.0, 0.05 * torch_used)
    report.add(
        "GPU memory readout (studio)",
        f"{first.get('used_mb', '?')} / {first.get('total_mb', '?')} MB",
        f"source {source}; torch mem_get_info {torch_used:.0f} / {torch_total:.0f} MB",
        ok,
    )


def check_profile(
    shape: Shape, device: Any, dtype: Any, tokenizer: Any, work: Path, report: Report, *, gpu: bool
) -> None:
    """The `gpu` profile's stages pass check_launch here; one SFT step at its batch fits."""
    import torch

    from core.experiment.profiles import load_profile
    from core.train.launch_checks import check_launch, detect_environment

    profile = load_profile("gpu")
    env = detect_environment()
    data = work / "profile-rows.jsonl"
    data.write_text("{}\n", encoding="utf-8")
    problems: list[str] = []
    for stage in (profile.hat.sft, profile.hat.opd, profile.hat.rl):
        update: dict[str, Any] = {"model": str(work)}
        if stage.stage == "sft":
            update["data"] = [str(data)]
        if stage.stage == "opd":
            update["teacher"] = str(work)
        problems += check_launch(stage.model_copy(update=update), env)
    report.add(
        "gpu profile: launch checks",
        "ok" if not problems else f"{len(problems)} problem(s)",
        "; ".join(problems)
        or f"sft, opd, rl of {profile.name} ({profile.model}) on {env.gpus} GPU(s)",
        not problems,
    )
    sft = profile.hat.sft
    length = (
        sft.max_length
        if shape.profile_length_cap is None
        else min(sft.max_length, shape.profile_length_cap)
    )
    batch = sft.per_device_batch_size
    _reset_memory(device)
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model = build_model(shape, device, dtype)
    ids = torch.randint(3, shape.vocab, (batch, length), generator=torch.Generator().manual_seed(2))
    args = SFTConfig(
        **common_args(work / "profile", 1, batch, gpu), max_length=length, dataset_num_proc=None
    )
    setattr(args, _checkpointing_name(args), sft.gradient_checkpointing)
    figure, ok = "fits", True
    began = time.perf_counter()
    try:
        trainer = SFTTrainer(
            model=model,
            args=args,
            train_dataset=Dataset.from_dict({"input_ids": ids.tolist()}),
            processing_class=tokenizer,
            peft_config=lora(sft.lora.r),
        )
        trainer.train()
        detail = f"peak memory {_gib(_peak_memory(device))}"
    except torch.OutOfMemoryError as exc:
        figure, ok = "OUT OF MEMORY", False
        detail = f"{str(exc).splitlines()[0][:160]}"
    elapsed = time.perf_counter() - began
    report.add(
        "gpu profile: one SFT step",
        figure,
        f"per_device_batch_size {batch} x max_length {length}, LoRA r{sft.lora.r}, "
        f"gradient_checkpointing {sft.gradient_checkpointing}: {detail} ({elapsed:.1f} s)",
        ok,
    )
    del model


def check_demo(folder: Path | None, device: Any, work: Path, report: Report, *, gpu: bool) -> None:
    """Correctness on real weights: LoRA SFT of the demo model (SmolLM2-135M-Instruct, when
    its folder is given) overfits one short conversation: the loss must fall by half."""
    if folder is None:
        report.add(
            "demo model SFT (correctness)",
            "skipped",
            "no --demo-model folder given (the speed rows use random weights)",
        )
        return
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    _reset_memory(device)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    dtype = torch.bfloat16 if gpu else torch.float32
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).to(device)
    text = "The parcel for order 4417 left the warehouse on Monday and arrives on Thursday."
    steps = 8
    args = SFTConfig(
        **{**common_args(work / "demo", steps, 4, gpu), "learning_rate": 3e-3},
        max_length=64,
        dataset_num_proc=None,
    )
    losses: list[float] = []

    from transformers import TrainerCallback

    class Losses(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict({"text": [text] * 4 * steps}),
        processing_class=tokenizer,
        peft_config=lora(),
        callbacks=[Losses()],
    )
    trainer.train()
    ok = len(losses) == steps and losses[-1] < 0.5 * losses[0]
    report.add(
        "demo model SFT (correctness)",
        f"loss {losses[0]:.3f} -> {losses[-1]:.3f}",
        f"{folder.name}, LoRA r16, {steps} steps of 4 copies of one row; passes when "
        "the loss halves",
        ok,
    )
    del trainer, model


def _checkpointing_name(args: Any) -> str:
    return (
        "activation_checkpointing"
        if hasattr(args, "activation_checkpointing")
        else ("gradient_checkpointing")
    )


# ----------------------------------------------------------------------------- main


def run(dry_run: bool, demo_model: Path | None = None) -> Report:
    import torch

    gpu = torch.cuda.is_available() and not dry_run
    device = torch.device("cuda", 0) if gpu else torch.device("cpu")
    shape = QWEN3_1_7B if gpu else TINY
    dtype = torch.bfloat16 if gpu else torch.float32
    name = torch.cuda.get_device_name(0) if gpu else "CPU (dry run)"
    report = Report(device=name, dry_run=not gpu)
    spec = spec_of(name) if gpu else None
    report.data["spec"] = spec
    versions = " ".join(
        f"{m.__name__} {m.__version__}"
        for m in (torch, __import__("transformers"), __import__("trl"), __import__("peft"))
    )
    report.add(
        "device",
        name,
        (
            f"datasheet bf16 {spec[0]:.0f} TFLOP/s, {spec[1]:.2f} TB/s"
            if spec
            else "datasheet figures unknown for this name"
        )
        + f"; {versions}",
    )
    report.add(
        "model",
        "Qwen3-1.7B shape" if gpu else "tiny Qwen3 shape (dry run)",
        f"{shape.layers} layers, hidden {shape.hidden}, {shape.heads}/{shape.kv_heads} heads, "
        f"MLP {shape.intermediate}, vocab {shape.vocab}, random weights, {dtype}".replace(
            "torch.", ""
        ),
    )
    gemm = gemm_flops(device, torch.bfloat16 if gpu else torch.float32, shape.gemm_n)
    report.data["gemm"] = gemm
    report.add(
        "GEMM peak (measured)",
        f"{gemm / 1e12:.1f} TFLOP/s",
        f"{shape.gemm_n}^3 {'bf16' if gpu else 'fp32'} matmul"
        + (f"; {gemm / (spec[0] * 1e12):.0%} of the datasheet" if spec else ""),
    )
    bandwidth = copy_bandwidth(device, shape.copy_mb)
    report.data["bandwidth"] = bandwidth
    report.add(
        "memory bandwidth (measured)",
        f"{bandwidth / 1e9:,.0f} GB/s",
        f"device copy of {shape.copy_mb} MiB (read + write)"
        + (f"; {bandwidth / (spec[1] * 1e12):.0%} of the datasheet" if spec else ""),
    )
    tokenizer = build_tokenizer(shape.vocab)
    with tempfile.TemporaryDirectory(prefix="hat-gpu-check-") as tmp:
        work = Path(tmp)
        stages = (
            ("SFT", lambda: run_sft(shape, device, dtype, tokenizer, work, report, gpu=gpu)),
            ("GRPO", lambda: run_grpo(shape, device, dtype, tokenizer, work, report, gpu=gpu)),
            ("decode", lambda: run_decode(shape, device, dtype, report)),
            ("readout", lambda: check_readout(device, report)),
            ("demo", lambda: check_demo(demo_model, device, work, report, gpu=gpu)),
            (
                "profile",
                lambda: check_profile(shape, device, dtype, tokenizer, work, report, gpu=gpu),
            ),
        )
        for label, stage in stages:
            began = time.perf_counter()
            try:
                stage()
            except Exception as exc:
                traceback.print_exc()
                report.add(label, "ERROR", f"{type(exc).__name__}: {exc}"[:300], False)
            report.data.setdefault("seconds", {})[label] = round(time.perf_counter() - began, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/gpu-check.sh", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="The same stages on the CPU with a tiny model, 2 steps each.",
    )
    parser.add_argument(
        "--demo-model",
        type=Path,
        default=None,
        help="A SmolLM2-135M-Instruct folder (hat models list): a correctness check on real "
        "weights (LoRA SFT overfits one row).",
    )
    parser.add_argument("--json", type=Path, default=None, help="Also write the rows as JSON.")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    began = time.perf_counter()
    report = run(args.dry_run, args.demo_model)
    total = time.perf_counter() - began
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"\nGPU check ({report.device}, {stamp}, {total:.0f} s)\n")
    print(report.table())
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "device": report.device,
                    "dry_run": report.dry_run,
                    "seconds": round(total, 1),
                    "date": stamp,
                    "ok": report.ok,
                    "rows": [r.__dict__ for r in report.rows],
                    "data": report.data,
                },
                indent=2,
                default=str,
            ),
            encoding="utf-8",
        )
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
