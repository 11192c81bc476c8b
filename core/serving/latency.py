"""Latency statistics (DESIGN.md §3, Latency) and the per-request rows the store keeps.

Metrics, all in seconds:

* `ttft_s`, `tpot_s`, `call_e2e_s` — per model call, as the client measured them
  (`core.serving.client`); calls that failed are left out, TTFT/TPOT only where defined
  (TPOT needs two or more output tokens).
* `agent_e2e_s` — per agent request, viewer message to the end of the request: the final reply
  (the report's definition) for status ok, the last model call's answer for requests the
  harness ended otherwise (retry budget, max turns). Requests whose model call failed
  (`model_error`: the server, not the model, decided their length) are left out; the status
  counts of a run say how many requests were ok.

Warm-up requests are stored (flagged) but never enter the statistics. Percentiles are numpy's
with linear interpolation; P50 and P95 always, P99 only with at least `p99_min_samples`
samples (default 100: below that the P99 is just the maximum).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.runtime.client import CallTiming, ChatClient, DeltaCallback, Message, ModelReply
from core.runtime.trace import ModelCallStep, Trace
from core.store.serving import CallRow, RequestRow

METRICS = ("ttft_s", "tpot_s", "call_e2e_s", "agent_e2e_s")
P99_MIN_SAMPLES = 100


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation (numpy's default method)."""
    if not values:
        raise ValueError("no samples")
    return float(np.percentile(np.asarray(values, dtype=float), q, method="linear"))


@dataclass
class MetricSummary:
    n: int
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    min: float | None = None
    max: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "p50": self.p50,
            "p95": self.p95,
            "p99": self.p99,
            "mean": self.mean,
            "min": self.min,
            "max": self.max,
        }


@dataclass
class LatencyStats:
    """Samples per metric; `summary(metric)` gives P50/P95(/P99)."""

    p99_min_samples: int = P99_MIN_SAMPLES
    samples: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METRICS})

    def add(self, metric: str, value: float | None) -> None:
        if value is None:
            return
        self.samples.setdefault(metric, []).append(float(value))

    def add_row(self, row: RequestRow) -> None:
        """Add one stored request (ignored when it is a warm-up request)."""
        if row.warmup:
            return
        if row.status != "model_error":
            self.add("agent_e2e_s", row.e2e_s)
        for call in row.calls:
            if call.error is not None:
                continue
            self.add("call_e2e_s", call.e2e_s)
            self.add("ttft_s", call.ttft_s)
            self.add("tpot_s", call.tpot_s)

    @classmethod
    def from_rows(
        cls, rows: Iterable[RequestRow], *, p99_min_samples: int = P99_MIN_SAMPLES
    ) -> LatencyStats:
        stats = cls(p99_min_samples=p99_min_samples)
        for row in rows:
            stats.add_row(row)
        return stats

    def summary(self, metric: str) -> MetricSummary:
        values = self.samples.get(metric, [])
        if not values:
            return MetricSummary(n=0)
        return MetricSummary(
            n=len(values),
            p50=percentile(values, 50),
            p95=percentile(values, 95),
            p99=percentile(values, 99) if len(values) >= self.p99_min_samples else None,
            mean=float(np.mean(values)),
            min=float(np.min(values)),
            max=float(np.max(values)),
        )

    def summaries(self) -> dict[str, MetricSummary]:
        return {m: self.summary(m) for m in METRICS}


class RecordingClient:
    """Wraps a ChatClient and keeps each call's CallTiming (token source included).

    One per agent request: the loop's trace keeps TTFT/TPOT/e2e/tokens, this adds which
    token count the client used, for the stored call rows.
    """

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.timings: list[CallTiming | None] = []

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        try:
            reply = await self.client.complete(messages, tools=tools, on_delta=on_delta)
        except BaseException:
            self.timings.append(None)
            raise
        self.timings.append(reply.timing)
        return reply


def request_row(
    trace: Trace,
    *,
    session: str,
    source: str,
    engine: str | None = None,
    model: str | None = None,
    task_id: str | None = None,
    warmup: bool = False,
    timings: Sequence[CallTiming | None] | None = None,
) -> RequestRow:
    """The store row of one agent request, from its Trace (and the recorded call timings)."""
    calls: list[CallRow] = []
    steps = trace.steps_of(ModelCallStep)
    for index, step in enumerate(steps):
        timing = timings[index] if timings is not None and index < len(timings) else None
        calls.append(
            CallRow(
                idx=index,
                e2e_s=step.timing.e2e_s if step.error is None else step.wall_s,
                ttft_s=step.timing.ttft_s if step.error is None else None,
                tpot_s=step.timing.tpot_s if step.error is None else None,
                prompt_tokens=step.timing.prompt_tokens,
                output_tokens=step.timing.output_tokens,
                token_source=timing.token_source if timing is not None else None,
                error=step.error,
            )
        )
    return RequestRow(
        request_id=trace.request_id,
        session=session,
        source=source,
        engine=engine,
        model=model,
        harness=trace.harness,
        task_id=task_id,
        status=trace.status.value,
        warmup=warmup,
        e2e_s=trace.e2e_s,
        model_calls=trace.counts.model_calls,
        tool_calls=trace.counts.tool_calls,
        hook_retries=trace.counts.retries,
        hook_blocks=trace.counts.hook_blocks,
        viewer_message=trace.viewer_message,
        final_reply=trace.final_reply,
        error=trace.reason if trace.status.value != "ok" else None,
        started_at=trace.started_at,
        calls=calls,
    )


def latency_line(trace: Trace) -> str:
    """One line for a chat reply: agent e2e, calls, and the last call's TTFT/TPOT/tokens."""
    steps = trace.steps_of(ModelCallStep)
    parts = [
        f"e2e {trace.e2e_s:.2f}s",
        f"{trace.counts.model_calls} model call(s)",
        f"{trace.counts.tool_calls} tool call(s)",
        f"{trace.counts.retries} retr{'y' if trace.counts.retries == 1 else 'ies'}",
    ]
    ttfts = [s.timing.ttft_s for s in steps if s.timing.ttft_s is not None]
    tpots = [s.timing.tpot_s for s in steps if s.timing.tpot_s is not None]
    if ttfts:
        parts.append(f"TTFT {ttfts[0]:.3f}s first / {max(ttfts):.3f}s max")
    if tpots:
        parts.append(f"TPOT {1000 * float(np.mean(tpots)):.1f}ms")
    tokens = sum(s.timing.output_tokens or 0 for s in steps)
    parts.append(f"{tokens} output tokens")
    if trace.status.value != "ok":
        parts.append(f"status {trace.status.value}")
    return " · ".join(parts)
