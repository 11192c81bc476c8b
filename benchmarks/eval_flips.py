"""Evaluation flip rate: the same model on the same items, twice, per serving setting.

    HAT_HOME=<the replication's home> python benchmarks/eval_flips.py RUN_FOLDER
        [--model hat] [--suite ls-qa] [--settings bfloat16:16 float32:16] [--out flips.json]

Why: a replication's comparison is only as sharp as one evaluation is repeatable. Greedy
decoding is deterministic in exact arithmetic, but a server batches the items in flight, and
on this CPU vLLM's bf16 kernels give a sequence slightly different logits depending on what
it is batched with; where two tokens are nearly tied the argmax flips, the trajectory forks
and the item's grade can change. vLLM's batch-invariant mode (`VLLM_BATCH_INVARIANT`) exists
for GPUs only (0.32), so on a CPU the levers are the dtype and the batch.

For each setting `DTYPE:CONCURRENCY` this starts the replication's serving engine on one of
its models (`--model`: base, fixed or hat; the run folder's own merged model) exactly as the
replication does (`--enable-prefix-caching`, `max_num_seqs` = concurrency), runs the suite's
request of that replication twice on the same server, and counts per item:

- **grade flips**: items whose four grades differ between the two runs;
- **headline flips**: items whose *answered correctly* (accuracy 1 and effectiveness 1)
  differs — what moves the report's first number;

with the wall time of each run. Results and the command go to docs/benchmarks.md
("Evaluation flip rate").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def grades_of(row: Any) -> tuple[float, ...]:
    g = row.grades or {}
    out = []
    for dim in ("accuracy", "effectiveness", "tool_rationality", "skill_selection"):
        value = g.get(dim)
        out.append(float(value.get("score", 0.0)) if isinstance(value, dict) else -1.0)
    return tuple(out)


def measure(run: Any, model: str, suite: str, dtype: str, concurrency: int) -> dict[str, Any]:
    from core.eval.api import load_results, run_eval
    from core.experiment.report import answered

    request = run.requests(model)[suite]
    engine = run.engine()
    server = run.model_server(model, dtype=dtype, concurrency=concurrency)
    server.start()
    try:
        rows: list[dict[str, Any]] = []
        walls = []
        for _ in range(2):
            req = request.model_copy(
                update={"engine": engine, "base_url": server.base_url,
                        "model_id": server.model_id, "concurrency": concurrency}
            )  # fmt: skip
            t0 = time.monotonic()
            done = run_eval(run.store, req)
            walls.append(round(time.monotonic() - t0, 1))
            rows.append({r.key: r for r in load_results(run.store, done.id)})
    finally:
        server.stop()
    first, second = rows
    keys = sorted(set(first) & set(second))
    grade_flips = [k for k in keys if grades_of(first[k]) != grades_of(second[k])]
    head_flips = [k for k in keys if answered(first[k]) != answered(second[k])]
    heads = [sum(answered(r[k]) for k in keys) / max(len(keys), 1) for r in rows]
    return {
        "dtype": dtype,
        "concurrency": concurrency,
        "engine": engine,
        "items": len(keys),
        "grade_flips": len(grade_flips),
        "headline_flips": len(head_flips),
        "answered_correctly": [round(100 * h, 1) for h in heads],
        "wall_s": walls,
        "flipped": grade_flips,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_folder", type=Path)
    parser.add_argument("--model", default="hat", choices=["base", "fixed", "hat"])
    parser.add_argument("--suite", default="ls-qa", choices=["ls-qa", "hv-qa", "edit"])
    parser.add_argument("--settings", nargs="+", default=["bfloat16:16", "float32:16"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from core.experiment.replicate import Replication
    from core.store import Store

    store = Store.open()
    run = Replication.open(store, args.run_folder)
    load = os.getloadavg()
    results = []
    for setting in args.settings:
        dtype, _, concurrency = setting.partition(":")
        row = measure(run, args.model, args.suite, dtype, int(concurrency or 16))
        results.append(row)
        print(f"{dtype:9} x{row['concurrency']:<3} {row['items']} items: "
              f"{row['grade_flips']} grade flips, {row['headline_flips']} headline flips; "
              f"answered correctly {row['answered_correctly']}; "
              f"wall {row['wall_s']} s")  # fmt: skip
    result = {"run": str(args.run_folder), "model": args.model, "suite": args.suite,
              "load_at_start": load, "load_at_end": os.getloadavg(), "rows": results}  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
