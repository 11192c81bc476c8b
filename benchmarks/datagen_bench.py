"""Oracle, graders and teacher-data benchmark (not a test).

    python benchmarks/datagen_bench.py [--split train] [--variants 0] [--out result.json]

1. Gold trajectories: the oracle inside the agent loop against a LiveRoom, then the four
   graders, over the ls-qa and robustness suites; tasks per second and how many got full marks.
2. Teacher data: `core.datagen.generate` with the oracle teacher over a split (what
   `hat data generate --teacher oracle --tasks <split>` runs), one worker; rows per second and
   the size of the file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.datagen import GenerateConfig, Teacher, generate
from core.episode.gold import gold_trajectory
from core.harness.demo import load_demo_harness
from core.sim.catalog import load_catalog
from core.sim.graders import grade
from core.sim.models import Split
from core.sim.oracle import task_harness
from core.sim.tasks import generate_tasks, load_suite


async def gold(suite: str) -> dict[str, Any]:
    catalog, harness = load_catalog(), load_demo_harness()
    tasks = load_suite(suite)
    started = time.perf_counter()
    full = 0
    for task in tasks:
        trace = await gold_trajectory(task, harness, catalog)
        full += grade(task, trace, task_harness(task, harness), catalog).full_marks
    elapsed = time.perf_counter() - started
    return {
        "suite": suite,
        "tasks": len(tasks),
        "full_marks": full,
        "seconds": round(elapsed, 2),
        "tasks_per_s": round(len(tasks) / elapsed, 1),
    }


async def data(split: str, variants: int) -> dict[str, Any]:
    catalog, harness = load_catalog(), load_demo_harness()
    tasks = generate_tasks(Split(split))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sft.jsonl"
        config = GenerateConfig(out=out, variants=variants, concurrency=1)
        started = time.perf_counter()
        summary = await generate(tasks, harness, catalog, Teacher.oracle(catalog), config)
        elapsed = time.perf_counter() - started
        size = out.stat().st_size
    return {
        "split": split,
        "tasks": len(tasks),
        "variants": variants,
        "rows": summary.written,
        "rejected": summary.rejected,
        "seconds": round(elapsed, 2),
        "rows_per_s": round(summary.written / elapsed, 1),
        "megabytes": round(size / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="train")
    parser.add_argument("--variants", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = {
        "python": platform.python_version(),
        "gold": [asyncio.run(gold("ls-qa")), asyncio.run(gold("robustness"))],
        "data": asyncio.run(data(args.split, args.variants)),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
