"""Latency benchmark: replay simulator tasks through the agent loop against a model server.

    result = await run_latency_bench(harness, client, tasks, n=20, concurrency=2, warmup=2,
                                     session="bench-...", store=store, metrics=read_metrics)
    result.to_json()

Each request is one task: a fresh `LiveRoom` for the task (its room state and faults), the
viewer message through `AgentLoop.run`, and a stored `RequestRow` (flagged when it is a
warm-up request). Warm-up requests run first, one at a time; then `n` requests with at most
`concurrency` in flight. The client view is `LatencyStats` over the non-warm-up rows; with a
`metrics` reader (vLLM's /metrics) the server view is the change of its histograms over the
measured part of the run, and where speculative decoding is on, its acceptance over the same
requests (`speculative`: drafts, proposed and accepted tokens, acceptance rate).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.episode.live_room import LiveRoomWorld
from core.episode.play import play
from core.harness.models import Harness
from core.runtime.client import ChatClient
from core.serving.latency import (
    METRICS,
    P99_MIN_SAMPLES,
    LatencyStats,
    MetricSummary,
    RecordingClient,
    request_row,
)
from core.serving.metrics import (
    Histogram,
    SpecDecode,
    parse_histograms,
    server_view,
    spec_decode_counts,
)
from core.sim.catalog import load_catalog
from core.sim.models import Catalog, Task
from core.store import Store
from core.store.serving import RequestRow, add_latency
from core.taskfile.sources import load_live_source

RULES = (
    "client view: ttft/tpot/call_e2e over the successful model calls of the measured "
    "(non-warm-up) requests, agent_e2e over the measured requests except those that ended "
    "in model_error (see statuses for how many were ok); "
    "percentiles: numpy, linear interpolation; P99 only with >= {p99} samples. Server view "
    "(vLLM): change of /metrics histograms over the measured requests, Prometheus "
    "histogram_quantile (bucket interpolation)."
)


def select_tasks(spec: str, count: int, *, seed: int = 0) -> list[Task]:
    """`count` tasks from a split (train|dev|test), a suite (ls-qa|robustness) or a JSONL file
    of live-room tasks, resolved as every other command resolves them
    (core/taskfile/sources.py), shuffled with `seed` and cycled when `count` exceeds what
    there is."""

    pool = load_live_source(spec, seed=seed)
    if not pool:
        raise ValueError(f"the task set {spec!r} is empty")
    order = list(pool)
    random.Random(seed).shuffle(order)
    return [order[i % len(order)] for i in range(count)]


@dataclass
class BenchResult:
    session: str
    engine: str | None
    model: str | None
    tasks: str
    n: int
    concurrency: int
    warmup: int
    rows: list[RequestRow]
    wall_s: float
    client: dict[str, MetricSummary]
    server: dict[str, dict[str, Any]] | None = None
    speculative: SpecDecode | None = None
    """Speculative decoding counts over the measured requests; None where it is off."""
    p99_min_samples: int = P99_MIN_SAMPLES
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def measured(self) -> list[RequestRow]:
        return [r for r in self.rows if not r.warmup]

    def to_json(self) -> dict[str, Any]:
        measured = self.measured
        statuses = Counter(r.status for r in measured)
        sources = Counter(c.token_source or "unknown" for r in measured for c in r.calls)
        calls = sum(r.model_calls for r in measured)
        return {
            "session": self.session,
            "engine": self.engine,
            "model": self.model,
            "tasks": self.tasks,
            "n": self.n,
            "concurrency": self.concurrency,
            "warmup": self.warmup,
            "wall_s": self.wall_s,
            "requests_per_s": len(measured) / self.wall_s if self.wall_s > 0 else None,
            "statuses": dict(statuses),
            "model_calls": calls,
            "tool_calls": sum(r.tool_calls for r in measured),
            "hook_retries": sum(r.hook_retries for r in measured),
            "token_source": dict(sources),
            "client": {m: self.client[m].to_dict() for m in METRICS},
            "server": self.server,
            "speculative": self.speculative.to_dict() if self.speculative else None,
            "rules": RULES.format(p99=self.p99_min_samples),
            **self.extra,
        }


async def run_latency_bench(
    harness: Harness,
    client: ChatClient,
    tasks: list[Task],
    *,
    n: int,
    concurrency: int = 1,
    warmup: int = 0,
    session: str | None = None,
    engine: str | None = None,
    model: str | None = None,
    task_spec: str = "",
    catalog: Catalog | None = None,
    store: Store | None = None,
    metrics: Callable[[], str] | None = None,
    on_request: Callable[[RequestRow], None] | None = None,
    p99_min_samples: int = P99_MIN_SAMPLES,
) -> BenchResult:
    """Run `warmup` + `n` requests (tasks[i] for request i) and summarise them."""
    if n < 1:
        raise ValueError("n must be at least 1")
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if len(tasks) < warmup + n:
        raise ValueError(f"need {warmup + n} tasks, got {len(tasks)}")
    if catalog is None:
        catalog = load_catalog()
    session = session or f"bench-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    rows: list[RequestRow] = []

    world = LiveRoomWorld(catalog)

    async def one(index: int, task: Task, is_warmup: bool) -> None:
        recorder = RecordingClient(client)
        trace = (await play(task, harness, recorder, world, graded=False)).trace
        row = request_row(
            trace,
            session=session,
            source="bench",
            engine=engine,
            model=model,
            task_id=task.id,
            warmup=is_warmup,
            timings=recorder.timings,
        )
        rows.append(row)
        if store is not None:
            await asyncio.to_thread(add_latency, store, [row])
        if on_request is not None:
            on_request(row)

    for i in range(warmup):
        await one(i, tasks[i], True)

    before: dict[str, Histogram] | None = None
    spec_before: SpecDecode | None = None
    if metrics is not None:
        text = await asyncio.to_thread(metrics)
        before, spec_before = parse_histograms(text), spec_decode_counts(text)
    semaphore = asyncio.Semaphore(concurrency)

    async def limited(index: int) -> None:
        async with semaphore:
            await one(index, tasks[index], False)

    started = time.monotonic()
    await asyncio.gather(*(limited(warmup + i) for i in range(n)))
    wall = time.monotonic() - started
    server = None
    speculative = None
    if metrics is not None:
        text = await asyncio.to_thread(metrics)
        server = server_view(before, parse_histograms(text))
        spec_after = spec_decode_counts(text)
        if spec_after is not None:
            speculative = spec_after.minus(spec_before)
    stats = LatencyStats.from_rows(rows, p99_min_samples=p99_min_samples)
    return BenchResult(
        session=session,
        engine=engine,
        model=model,
        tasks=task_spec,
        n=n,
        concurrency=concurrency,
        warmup=warmup,
        rows=rows,
        wall_s=wall,
        client=stats.summaries(),
        server=server,
        speculative=speculative,
        p99_min_samples=p99_min_samples,
    )
