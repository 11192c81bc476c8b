"""SFT training throughput on this machine: tokens/s and achieved FLOP/s against a bf16 GEMM.

    python benchmarks/train_throughput.py [--tokens 700] [--steps 4] [--out result.json]

Why: a CPU replication is bought in tokens, so the question is how close one optimizer step
gets to what the machine's matrix units can do. Each configuration trains the demo model
(SmolLM2-135M-Instruct) for `--steps` timed steps (after one warm-up step) on rows of
`--tokens` tokens, the loop `training/sft.py` runs inside TRL (forward, backward, AdamW step):

- precision fp32 / bf16 (autocast, as TrainingArguments(bf16=True) does on CPU),
- LoRA r16 on all linear layers (4 x params FLOPs a token) / full fine-tune (6 x),
- batch 1 (no padding: SDPA takes its causal flash path, no attention matrix) / batch 2 with
  an attention mask (the padded path),
- gradient checkpointing on / off.

The ceiling is a bf16 (and fp32) GEMM of 2048^3 in the same process, same threads, measured
just before. Reported per configuration: s/step, tokens/s, achieved FLOP/s = k x params x
tokens/s (k = 4 LoRA, 6 full), and that over the GEMM's FLOP/s; and peak RSS for a
`--long` row (4096 tokens, the case that was OOM-killed at batch 2 on a 24 GB machine).
Results and the command go to docs/benchmarks.md ("Training throughput").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def gemm_flops(dtype: Any, n: int = 2048, repeats: int = 5) -> float:
    import torch

    a = torch.randn(n, n, dtype=dtype)
    b = torch.randn(n, n, dtype=dtype)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def model_folder() -> str:
    env = os.environ.get("HAT_BENCH_MODEL")
    if env:
        return env
    from core.models import get
    from core.paths import database_path
    from core.store import Store

    store = Store.open(database_path())
    return str(get(store, "smollm2-135m-instruct").location)


def run_config(
    folder: str, *, precision: str, method: str, batch: int, tokens: int, steps: int,
    checkpointing: bool,
) -> dict[str, Any]:  # fmt: skip
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    params = sum(p.numel() for p in model.parameters())
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"),
        )
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if method == "lora":
            model.enable_input_require_grads()
    model.train()
    optim = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(100, 40000, (batch, tokens), generator=gen)
    kwargs: dict[str, Any] = {"input_ids": ids, "labels": ids}
    if batch > 1:
        mask = torch.ones_like(ids)
        mask[1:, tokens - tokens // 4 :] = 0  # a shorter second row: the padded path
        kwargs["attention_mask"] = mask
    times = []
    for i in range(steps + 1):
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = model(**kwargs).loss
        loss.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)
        if i:
            times.append(time.perf_counter() - t0)
    step_s = sorted(times)[len(times) // 2]
    tok_s = batch * tokens / step_s
    k = 4 if method == "lora" else 6
    return {
        "precision": precision, "method": method, "batch": batch, "tokens": tokens,
        "checkpointing": checkpointing, "step_s": round(step_s, 3), "tokens_per_s": round(tok_s, 1),
        "flops": k * params * tok_s, "params": params,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=700)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--one", help="internal: run one configuration (JSON) and print it")
    args = parser.parse_args()
    if args.one:
        spec = json.loads(args.one)
        print(json.dumps(run_config(spec.pop("folder"), **spec)))
        return
    import subprocess

    import torch

    folder = model_folder()
    ceiling = {"bf16": gemm_flops(torch.bfloat16), "fp32": gemm_flops(torch.float32)}
    print(f"threads {torch.get_num_threads()}; GEMM 2048^3: bf16 {ceiling['bf16'] / 1e9:.0f} "
          f"GFLOP/s, fp32 {ceiling['fp32'] / 1e9:.0f} GFLOP/s")  # fmt: skip
    configs = [
        {"precision": "fp32", "method": "lora", "batch": 2, "checkpointing": True},
        {"precision": "bf16", "method": "lora", "batch": 2, "checkpointing": True},
        {"precision": "bf16", "method": "lora", "batch": 2, "checkpointing": False},
        {"precision": "bf16", "method": "lora", "batch": 1, "checkpointing": False},
        {"precision": "bf16", "method": "full", "batch": 1, "checkpointing": False},
        {"precision": "fp32", "method": "full", "batch": 1, "checkpointing": False},
    ]
    rows = []
    for spec in configs:
        one = {**spec, "folder": folder, "tokens": args.tokens, "steps": args.steps}
        # Each configuration in a fresh process: peak RSS is its own, no allocator history.
        out = subprocess.run(
            [sys.executable, __file__, "--one", json.dumps(one)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["of_gemm"] = round(row["flops"] / ceiling[row["precision"]], 3)
        rows.append(row)
        print(f"{row['precision']} {row['method']:4} batch {row['batch']} ckpt "
              f"{'on ' if row['checkpointing'] else 'off'}: {row['step_s']:.2f} s/step, "
              f"{row['tokens_per_s']:.0f} tok/s, {row['flops'] / 1e9:.0f} GFLOP/s = "
              f"{row['of_gemm']:.2f} of GEMM, peak RSS {row['peak_rss_mb']} MB")  # fmt: skip
    long = {"precision": "bf16", "method": "lora", "batch": 2, "checkpointing": False,
            "folder": folder, "tokens": 4096, "steps": 1}  # fmt: skip
    out = subprocess.run(
        [sys.executable, __file__, "--one", json.dumps(long)], capture_output=True, text=True
    )
    if out.returncode == 0:
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"long row (batch 2 x 4096, bf16 LoRA, no checkpointing): {row['step_s']:.1f} s, "
              f"peak RSS {row['peak_rss_mb']} MB")  # fmt: skip
        rows.append({**row, "long": True})
    else:
        print(f"long row failed (rc {out.returncode}): {out.stderr.strip()[-300:]}")
    result = {"ceiling_flops": ceiling, "rows": rows, "load": os.getloadavg()}
    if args.out:
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
