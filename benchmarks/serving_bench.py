"""Serving benchmark (not a test): client overhead and decode speed against the memory roofline.

    python benchmarks/serving_bench.py [--engine transformers|vllm] [--folder DIR] [--trials 8]
                                       [--out result.json]

One run, one server (started here with the demo model unless --folder names another), two
measurements:

1. TTFT ratio. The same first model call of an agent request (the demo harness's system prompt
   and a viewer message; greedy, max_tokens 16, streaming, usage requested) sent by
   (a) our agent loop: `AgentLoop.run` with `OpenAIChatClient` (max_turns 1), timed from the
       `run()` call to the first streamed text (prompt rendering, hooks and client included), and
       the TTFT the client itself reports;
   (b) a raw `openai.AsyncOpenAI` streaming call with the same messages and parameters, timed
       from `create()` to the first chunk with text.
   Trials alternate a/b (so drift hits both); the ratio is of the medians (goal <= 1.05). A
   short-prompt workload (one line of system prompt) shows the overhead without a long prefill.
2. Decode speed vs roofline. Memory bandwidth is measured in the same run: numpy copies of a
   1 GiB float32 array (bytes read + written / time; best of 5), on one thread and on two at
   once (numpy releases the GIL), the larger counts. A decode step reads every weight once, so
   the roofline is bandwidth / weight bytes (safetensors headers) tokens/s. The measured decode
   rate is 1 / TPOT of a long free generation (128 tokens; median of 3). Goal: >= 0.8 of the
   roofline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.harness.demo import load_demo_harness
from core.harness.render import render_system_prompt
from core.models import DEMO_MODEL_NAME, add_demo, check_model_folder
from core.runtime import AgentLoop, Bindings
from core.serving import EngineConfig, GenerationOptions, ManagedServer, OpenAIChatClient
from core.store import Store

VIEWER = "hi Mia! how much is link 12 and is it in stock?"


def memory_bandwidth(size_bytes: int = 1 << 30, repeats: int = 5) -> dict[str, float]:
    """Copy bandwidth in bytes/s (read + write), one thread and two threads."""
    n = size_bytes // 4
    src = [np.ones(n // 2, dtype=np.float32) for _ in range(2)]
    dst = [np.empty_like(a) for a in src]
    whole_src, whole_dst = np.ones(n, dtype=np.float32), np.empty(n, dtype=np.float32)
    np.copyto(whole_dst, whole_src)  # touch the pages
    best1 = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(whole_dst, whole_src)
        best1 = max(best1, 2 * whole_src.nbytes / (time.perf_counter() - t))
    best2 = 0.0
    for _ in range(repeats):
        threads = [threading.Thread(target=np.copyto, args=(dst[i], src[i])) for i in range(2)]
        t = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        best2 = max(best2, 2 * sum(a.nbytes for a in src) / (time.perf_counter() - t))
    return {"one_thread": best1, "two_threads": best2, "best": max(best1, best2)}


async def ttft_trials(
    server: ManagedServer, system: str, trials: int, max_tokens: int = 16
) -> dict[str, Any]:
    import openai

    harness = load_demo_harness()
    harness.settings.max_turns = 1
    for hook in harness.hooks:
        hook.enabled = False  # one model call per request: nothing may ask again
    if system != render_system_prompt(load_demo_harness()):
        for section in harness.prompt.sections:
            section.enabled = False
        harness.prompt.sections[0].enabled = True
        harness.prompt.sections[0].template = system
    messages = [{"role": "system", "content": render_system_prompt(harness)}]
    messages.append({"role": "user", "content": VIEWER})
    options = GenerationOptions(max_tokens=max_tokens)
    ours = OpenAIChatClient(server.base_url, server.model_id, options=options)
    raw = openai.AsyncOpenAI(base_url=server.base_url, api_key="bench", max_retries=0)
    loop_ttft: list[float] = []
    client_ttft: list[float] = []
    raw_ttft: list[float] = []
    prompt_tokens = None

    async def run_ours() -> None:
        nonlocal prompt_tokens
        first: list[float] = []

        def on_delta(_text: str) -> None:
            if not first:
                first.append(time.perf_counter())

        started = time.perf_counter()
        trace = await AgentLoop(harness, ours, Bindings()).run(VIEWER, on_delta=on_delta)
        step = trace.steps[0]
        assert step.type == "model_call" and step.error is None, step
        if first:
            loop_ttft.append(first[0] - started)
            client_ttft.append(step.timing.ttft_s or float("nan"))
        prompt_tokens = step.timing.prompt_tokens

    async def run_raw() -> None:
        started = time.perf_counter()
        stream = await raw.chat.completions.create(
            model=server.model_id,
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=max_tokens,
            temperature=0.0,
        )
        first = None
        async for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter()
        if first is not None:
            raw_ttft.append(first - started)

    await run_ours()  # warm-up, both paths
    await run_raw()
    loop_ttft.clear(), client_ttft.clear(), raw_ttft.clear()
    for i in range(trials):
        if i % 2 == 0:
            await run_ours()
            await run_raw()
        else:
            await run_raw()
            await run_ours()
    await ours.aclose()
    await raw.close()
    loop_med, raw_med = statistics.median(loop_ttft), statistics.median(raw_ttft)
    return {
        "prompt_tokens": prompt_tokens,
        "trials": trials,
        "loop_ttft_median_s": loop_med,
        "client_reported_ttft_median_s": statistics.median(client_ttft),
        "raw_openai_ttft_median_s": raw_med,
        "ratio_loop_over_raw": loop_med / raw_med,
        "ratio_client_over_raw": statistics.median(client_ttft) / raw_med,
        # each trial pair ran back to back: the median of per-pair ratios resists drift
        "ratio_paired_median": statistics.median(
            a / b for a, b in zip(loop_ttft, raw_ttft, strict=False)
        ),
        "overhead_ms": 1000 * (loop_med - raw_med),
        "loop_ttft_s": loop_ttft,
        "raw_ttft_s": raw_ttft,
    }


async def decode_rate(
    server: ManagedServer, runs: int = 3, max_tokens: int = 128
) -> dict[str, Any]:
    rates, tokens = [], []
    async with OpenAIChatClient(
        server.base_url, server.model_id, options=GenerationOptions(max_tokens=max_tokens)
    ) as client:
        prompt = [{"role": "user", "content": "Write a long, detailed story about a lighthouse."}]
        await client.complete(prompt)  # warm-up
        for _ in range(runs):
            reply = await client.complete(prompt)
            t = reply.timing
            if t.tpot_s:
                rates.append(1.0 / t.tpot_s)
                tokens.append(t.output_tokens)
    return {"tokens_per_s_median": statistics.median(rates), "runs": rates, "tokens": tokens}


def demo_folder() -> str:
    home = Path(os.environ.get("HAT_HOME") or tempfile.mkdtemp(prefix="hat-bench-"))
    os.environ["HAT_HOME"] = str(home)
    with Store.open(home / "hat.db") as store:
        record, _ = add_demo(store)
    return record.location


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default="transformers", choices=["transformers", "vllm"])
    parser.add_argument("--folder", help="model folder (default: the demo model)")
    parser.add_argument("--python", help="interpreter of the engine's environment")
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument(
        "--no-eager",
        action="store_true",
        help="serve with torch.compile (transformers --compile; vLLM without --enforce-eager)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    folder = args.folder or demo_folder()
    info = check_model_folder(folder)
    bandwidth = memory_bandwidth()
    config = EngineConfig(
        args.engine, python=args.python, enforce_eager=False if args.no_eager else None
    )
    server = ManagedServer(config, folder)
    started = time.perf_counter()
    server.start()
    startup = time.perf_counter() - started
    try:
        demo_system = render_system_prompt(load_demo_harness())
        long = asyncio.run(ttft_trials(server, demo_system, args.trials))
        short = asyncio.run(
            ttft_trials(server, "You are Mia, a live-stream shopping host.", args.trials)
        )
        decode = asyncio.run(decode_rate(server))
    finally:
        server.stop()
    bandwidth_after = memory_bandwidth()
    best_bw = max(bandwidth["best"], bandwidth_after["best"])
    roofline = best_bw / (info.weight_bytes or 1)
    result = {
        "engine": args.engine,
        "compiled": args.no_eager,
        "model": DEMO_MODEL_NAME if not args.folder else folder,
        "weight_bytes": info.weight_bytes,
        "dtype": info.dtype,
        "server_startup_s": startup,
        "ttft_demo_harness": long,
        "ttft_short_prompt": short,
        "memory_bandwidth_GBps": {
            "before": {k: v / 1e9 for k, v in bandwidth.items()},
            "after": {k: v / 1e9 for k, v in bandwidth_after.items()},
        },
        "roofline_tokens_per_s": roofline,
        "decode": decode,
        "decode_over_roofline": decode["tokens_per_s_median"] / roofline,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg_1m": os.getloadavg()[0],
            "platform": platform.platform(),
        },
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    print(
        f"\nTTFT loop/raw: demo harness {long['ratio_loop_over_raw']:.3f} "
        f"({long['prompt_tokens']} prompt tokens, overhead {long['overhead_ms']:.1f} ms), "
        f"short prompt {short['ratio_loop_over_raw']:.3f} (overhead {short['overhead_ms']:.1f} ms)"
        f"\ndecode {decode['tokens_per_s_median']:.1f} tok/s vs roofline {roofline:.1f} tok/s "
        f"({best_bw / 1e9:.1f} GB/s / {info.weight_bytes / 1e6:.0f} MB) = "
        f"{result['decode_over_roofline']:.2f}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
