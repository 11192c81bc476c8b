"""Speculative decoding on vLLM: acceptance rate and decode speed-up, with against without.
Not a test.

    python benchmarks/speculative.py --model FOLDER [--spec ngram:4] [--rounds 3]
        [--max-tokens 128] [--out spec.json]
    python benchmarks/speculative.py --model FOLDER --engine transformers --spec ngram:4

`--engine transformers`: `transformers serve` has no server-wide setting, but a request may
carry a `generation_config` JSON that `generate()` takes; `{"prompt_lookup_num_tokens": N}`
there is transformers' prompt lookup decoding. One server, the same requests with and without
it; no acceptance (the server counts none), only the decode rates.

Two servers of the same model through the product's own `ManagedServer` (the command line
`core.serving.engines.build_launch` makes here): one plain, one with `--spec`. Both stay up;
requests go to one at a time, the order alternating per round (ABBA), with a pause between so
an idle server's spinning threads are quiet again. Prompts are agent-style:

* `repeat` — a tool call whose arguments quote the prompt's record (what n-gram prompt lookup
  is for: the reply repeats prompt text);
* `edit` — the same record back with one field changed;
* `free` — free text that quotes nothing (lookup finds little to propose).

Per request: the client's TTFT, output tokens and decode rate ((tokens - 1) / (e2e - TTFT),
the product's TPOT inverted), and on the speculative server the change of vLLM's
`spec_decode` counters over that request (`core.serving.metrics.spec_decode_counts`). The
summary per prompt: acceptance (accepted / proposed tokens), median decode tok/s with and
without, and their ratio (the speed-up); the same over all prompts. Greedy decoding, so both
servers must produce the same text (checked: the `same_text` share).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RECORD = (
    '{"order_id": "A-20931", "customer": "Marta Lindqvist", "items": [{"sku": "LMP-220", '
    '"name": "brass desk lamp", "qty": 2}, {"sku": "SHD-014", "name": "linen lamp shade", '
    '"qty": 2}], "address": "14 Harbour Street, Bergen", "status": "packed"}'
)

PROMPTS: dict[str, list[dict[str, str]]] = {
    "repeat": [
        {
            "role": "system",
            "content": "You are an order agent. To act, reply with one tool call as JSON: "
            '{"tool": NAME, "arguments": {...}} and nothing else.',
        },
        {
            "role": "user",
            "content": f"Here is the order record:\n{RECORD}\nCall the tool ship_order with "
            "the whole record as its arguments, copied exactly.",
        },
    ],
    "edit": [
        {
            "role": "user",
            "content": f"Record:\n{RECORD}\nWrite the same JSON record back exactly, with "
            'only "status" changed from "packed" to "shipped".',
        }
    ],
    "free": [
        {
            "role": "user",
            "content": "Write a short story about a lighthouse keeper who finds a message in "
            "a bottle.",
        }
    ],
}


def machine() -> dict[str, Any]:
    """What the figures were measured on, and how busy it was."""
    model = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "loadavg_1_5_15": list(os.getloadavg()),
    }


async def one(
    server: Any,
    prompt: list[dict[str, str]],
    max_tokens: int,
    extra_body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from core.serving import GenerationOptions, OpenAIChatClient
    from core.serving.metrics import spec_decode_counts

    vllm = server.config.engine == "vllm"
    before = await asyncio.to_thread(server.metrics_text) if vllm else ""
    client = OpenAIChatClient(
        server.base_url,
        server.model_id,
        options=GenerationOptions(max_tokens=max_tokens),
        extra_body=extra_body,
    )
    try:
        reply = await client.complete(prompt)
    finally:
        await client.aclose()
    after = await asyncio.to_thread(server.metrics_text) if vllm else ""
    t = reply.timing
    tokens = t.output_tokens or 0
    decode = None
    if t.ttft_s is not None and tokens >= 2 and t.e2e_s > t.ttft_s:
        decode = (tokens - 1) / (t.e2e_s - t.ttft_s)
    spec_after = spec_decode_counts(after)
    spec = spec_after.minus(spec_decode_counts(before)) if spec_after else None
    return {
        "ttft_s": t.ttft_s,
        "e2e_s": t.e2e_s,
        "output_tokens": tokens,
        "decode_tok_s": decode,
        "text": reply.content,
        "spec": spec.to_dict() if spec else None,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per prompt and overall: acceptance, median decode rate and e2e per server, and the
    ratios against `spec` (decode: spec / other; e2e: other / spec; > 1 means spec is faster)."""

    def block(selected: list[dict[str, Any]]) -> dict[str, Any]:
        names = sorted({r["server"] for r in selected})
        decode = {
            n: [r["decode_tok_s"] for r in selected if r["server"] == n and r["decode_tok_s"]]
            for n in names
        }
        e2e = {n: [r["e2e_s"] for r in selected if r["server"] == n] for n in names}
        accepted = sum(r["spec"]["accepted_tokens"] for r in selected if r["spec"])
        proposed = sum(r["spec"]["draft_tokens"] for r in selected if r["spec"])
        drafts = sum(r["spec"]["drafts"] for r in selected if r["spec"])
        out: dict[str, Any] = {
            "requests_each": len(e2e.get("spec", [])),
            "acceptance": accepted / proposed if proposed else None,
            "accepted_per_draft": accepted / drafts if drafts else None,
            "accepted_tokens": accepted,
            "draft_tokens": proposed,
        }
        for n in names:
            out[f"decode_tok_s_{n}_median"] = median(decode[n]) if decode[n] else None
            out[f"e2e_s_{n}_median"] = median(e2e[n]) if e2e[n] else None
        for n in names:
            if n == "spec" or not decode[n] or not decode.get("spec"):
                continue
            out[f"decode_speedup_vs_{n}"] = median(decode["spec"]) / median(decode[n])
            out[f"e2e_speedup_vs_{n}"] = median(e2e[n]) / median(e2e["spec"])
        return out

    prompts = sorted({r["prompt"] for r in rows})
    summary = {name: block([r for r in rows if r["prompt"] == name]) for name in prompts}
    summary["all"] = block(rows)
    return summary


async def bench(args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    from core.serving import EngineConfig, ManagedServer
    from core.serving.engines import parse_speculative, speculative_config_json

    method, tokens = parse_speculative(args.spec)
    tokens = 4 if tokens is None else tokens
    extra: dict[str, dict[str, Any] | None] = {"base": None, "sync": None, "spec": None}
    if args.engine == "transformers":
        if method != "ngram":
            raise SystemExit("transformers serve: only ngram (prompt lookup) is measured here")
        configs = {"base": EngineConfig("transformers")}
        extra["spec"] = {"generation_config": json.dumps({"prompt_lookup_num_tokens": tokens})}
        spec_setting = extra["spec"]
    else:
        configs = {
            "base": EngineConfig("vllm", dtype=args.dtype, kv_cache_gib=args.kv_gib),
            # vLLM turns async scheduling off for n-gram drafting ("Async scheduling not
            # supported with ngram-based speculative decoding"): this control differs from the
            # speculative server in drafting alone
            "sync": EngineConfig(
                "vllm",
                dtype=args.dtype,
                kv_cache_gib=args.kv_gib,
                extra_args=["--no-async-scheduling"],
            ),
            "spec": EngineConfig(
                "vllm",
                dtype=args.dtype,
                kv_cache_gib=args.kv_gib,
                speculative=method,
                speculative_tokens=tokens,
                draft_model=args.draft_model,
            ),
        }
        spec_setting = json.loads(speculative_config_json(configs["spec"]))
        if not args.sync_control:
            del configs["sync"]
    started = {
        name: ManagedServer(config, args.model, served_name="m", log_dir=logs / name)
        for name, config in configs.items()
    }
    servers = {
        name: started.get(name, started["base"])
        for name in ("base", "sync", "spec")
        if name in started or name == "spec"
    }
    starts: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    load_before = machine()
    try:
        for name, server in started.items():
            t0 = time.monotonic()
            server.start()
            starts[name] = round(time.monotonic() - t0, 1)
            print(f"{name} up in {starts[name]} s", file=sys.stderr)
        for name, server in servers.items():  # warm-up: one unmeasured request each
            await one(server, PROMPTS["free"], 8, extra[name])
        for r in range(args.rounds):
            names = list(servers)
            order = names if r % 2 == 0 else names[::-1]
            for prompt_name, prompt in PROMPTS.items():
                for name in order:
                    time.sleep(args.pause)
                    row = await one(servers[name], prompt, args.max_tokens, extra[name])
                    row.update(round=r, prompt=prompt_name, server=name)
                    rows.append(row)
                    spec = row["spec"]
                    accept = (
                        f" accept {spec['acceptance_rate']:.2f}"
                        if spec and spec["acceptance_rate"] is not None
                        else ""
                    )
                    print(
                        f"round {r} {prompt_name:6} {name:4} {row['output_tokens']:4d} tok "
                        f"decode {row['decode_tok_s'] or 0:6.1f} tok/s{accept}",
                        file=sys.stderr,
                    )
    finally:
        for server in started.values():
            server.stop()
    texts: dict[tuple[int, str], dict[str, str]] = {}
    for row in rows:
        texts.setdefault((row["round"], row["prompt"]), {})[row["server"]] = row["text"]
    same = [t.get("base") == t.get("spec") for t in texts.values()]
    same_sync = [t.get("sync") == t.get("spec") for t in texts.values() if "sync" in t]
    return {
        "command": " ".join(["python", *sys.argv]),
        "engine": args.engine,
        "spec": args.spec,
        "speculative_setting": spec_setting,
        "max_tokens": args.max_tokens,
        "rounds": args.rounds,
        "dtype": args.dtype,
        "start_s": starts,
        "machine_before": load_before,
        "machine_after": machine(),
        "same_text_share": sum(same) / len(same) if same else None,
        "same_text_share_sync_spec": sum(same_sync) / len(same_sync) if same_sync else None,
        "texts_round0": {
            f"{prompt}/{server}": text[:300]
            for (r, prompt), by_server in texts.items()
            if r == 0
            for server, text in by_server.items()
        },
        "summary": summarise(rows),
        "rows": [{k: v for k, v in r.items() if k != "text"} for r in rows],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="Model folder (the demo model's).")
    parser.add_argument("--engine", default="vllm", choices=("vllm", "transformers"))
    parser.add_argument("--spec", default="ngram:4", help="METHOD[:N], as hat serve takes it.")
    parser.add_argument("--draft-model", default=None, help="Draft model for --spec draft.")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--pause", type=float, default=1.0, help="Seconds between requests.")
    parser.add_argument("--kv-gib", type=float, default=1.0)
    parser.add_argument("--dtype", default=None, help="vLLM dtype (default: the product's).")
    parser.add_argument(
        "--sync-control",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="Also serve a plain server without async scheduling (as the speculative one).",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spec-bench-") as tmp:
        report = asyncio.run(bench(args, Path(tmp)))
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps({"summary": report["summary"], "start_s": report["start_s"]}, indent=2))
    print(
        f"same text with and without: {report['same_text_share']} "
        f"(sync control: {report['same_text_share_sync_spec']}); "
        f"load before {report['machine_before']['loadavg_1_5_15']}, "
        f"after {report['machine_after']['loadavg_1_5_15']}"
    )


if __name__ == "__main__":
    main()
