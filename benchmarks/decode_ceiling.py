"""Decode ceiling (not a test): how fast can this machine decode the demo model at all?

    python benchmarks/decode_ceiling.py [--folder DIR] [--tokens 128] [--compile] [--out r.json]

The serving benchmark compares a server's decode rate with the memory roofline (bandwidth /
weight bytes). When a server falls far short, this script says where the gap is, in one
process and one run, without any server or HTTP in the way:

1. `roofline`: numpy copy bandwidth (as serving_bench.py measures it) / weight bytes.
2. `weights_read`: one `torch.mv` per weight matrix of the model (every byte read once, as a
   decode step does, nothing else): the best a kernel-per-matrix engine can do here;
   `numpy_matvec`: the same through numpy's BLAS.
3. `forward_loop`: the model's own forward, one token at a time with its KV cache, in a plain
   Python loop (no `generate()`, no sampling): what eager PyTorch costs per token.
4. `generate`: `model.generate` greedy, `max_new_tokens` forced — what `transformers serve`
   runs per request; TPOT = (t(N+1 tokens) - t(1 token)) / N.
5. `generate_compiled` (with --compile): the same with a static cache and `torch.compile`
   (what `transformers serve --compile` enables), after a warm-up.

Each rate is tokens/s (median of --runs); each is also given as a fraction of the roofline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.serving_bench import demo_folder, memory_bandwidth
from core.models import check_model_folder

KEYS = ("weights_read", "numpy_matvec", "forward_loop", "generate", "generate_compiled")
PROMPT = "Write a long, detailed story about a lighthouse."


def _median_rate(samples: list[float]) -> dict[str, Any]:
    return {"tokens_per_s_median": statistics.median(samples), "runs": samples}


def weights_read(model: Any, runs: int) -> dict[str, Any]:
    import torch

    mats = [p for p in model.parameters() if p.dim() == 2]
    vecs = {m.shape[1]: torch.ones(m.shape[1], dtype=m.dtype) for m in mats}
    rates = []
    with torch.inference_mode():
        for _ in range(runs + 1):
            started = time.perf_counter()
            for m in mats:
                torch.mv(m, vecs[m.shape[1]])
            rates.append(1.0 / (time.perf_counter() - started))
    return {**_median_rate(rates[1:]), "matrices": len(mats)}


def numpy_matvec(model: Any, runs: int) -> dict[str, Any]:
    """The same reads through numpy's BLAS (multithreaded OpenBLAS): a second kernel library's
    ceiling, so the gap is not blamed on one library."""
    import numpy as np

    mats = [p.detach().numpy() for p in model.parameters() if p.dim() == 2]
    vecs = {m.shape[1]: np.ones(m.shape[1], dtype=m.dtype) for m in mats}
    rates = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        for m in mats:
            m @ vecs[m.shape[1]]
        rates.append(1.0 / (time.perf_counter() - started))
    return _median_rate(rates[1:])


def forward_loop(model: Any, ids: Any, tokens: int, runs: int) -> dict[str, Any]:
    import torch

    rates = []
    with torch.inference_mode():
        for _ in range(runs + 1):
            out = model(input_ids=ids, use_cache=True)
            cache, nxt = out.cache, out.logits[:, -1:].argmax(-1)
            started = time.perf_counter()
            for _ in range(tokens):
                out = model(input_ids=nxt, cache=cache, use_cache=True)
                cache, nxt = out.cache, out.logits[:, -1:].argmax(-1)
            rates.append(tokens / (time.perf_counter() - started))
    return _median_rate(rates[1:])


def generate_rate(model: Any, ids: Any, tokens: int, runs: int, **kwargs: Any) -> dict[str, Any]:
    import torch

    def timed(n: int) -> float:
        started = time.perf_counter()
        with torch.inference_mode():
            model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, **kwargs)
        return time.perf_counter() - started

    timed(tokens + 1)  # warm-up (and, compiled, the compilation)
    rates = []
    for _ in range(runs):
        rates.append(tokens / (timed(tokens + 1) - timed(1)))
    return _median_rate(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", help="model folder (default: the demo model)")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--compile", action="store_true", help="also measure torch.compile")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = args.folder or demo_folder()
    info = check_model_folder(folder)
    bandwidth = memory_bandwidth()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": PROMPT}], tokenize=False, add_generation_prompt=True
    )
    ids = tokenizer(text, return_tensors="pt").input_ids
    pad = tokenizer.eos_token_id
    result: dict[str, Any] = {
        "weight_bytes": info.weight_bytes,
        "torch_threads": torch.get_num_threads(),
        "weights_read": weights_read(model, args.runs),
        "numpy_matvec": numpy_matvec(model, args.runs),
        "forward_loop": forward_loop(model, ids, args.tokens, args.runs),
        "generate": generate_rate(model, ids, args.tokens, args.runs, pad_token_id=pad),
    }
    if args.compile:
        started = time.perf_counter()
        model.forward = torch.compile(model.forward)
        result["generate_compiled"] = generate_rate(
            model, ids, args.tokens, args.runs, pad_token_id=pad, cache_implementation="static"
        )
        result["generate_compiled"]["with_warm_up_s"] = time.perf_counter() - started
    after = memory_bandwidth()
    best = max(bandwidth["best"], after["best"])
    roofline = best / (info.weight_bytes or 1)
    result["memory_bandwidth_GBps"] = best / 1e9
    result["roofline_tokens_per_s"] = roofline
    for key in KEYS:
        if key in result:
            result[key]["over_roofline"] = result[key]["tokens_per_s_median"] / roofline
    result["machine"] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "platform": platform.platform(),
    }
    text_out = json.dumps(result, indent=2)
    print(text_out)
    if args.out:
        args.out.write_text(text_out + "\n")
    mb = info.weight_bytes / 1e6
    lines = [f"roofline {roofline:.1f} tok/s ({best / 1e9:.1f} GB/s / {mb:.0f} MB)"]
    for key in KEYS:
        if key in result:
            r = result[key]
            lines.append(f"{key}: {r['tokens_per_s_median']:.1f} tok/s = {r['over_roofline']:.2f}")
    print("\n".join(lines), file=sys.stderr)


if __name__ == "__main__":
    main()
