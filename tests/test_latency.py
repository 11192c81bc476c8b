"""Latency statistics, stored latency rows, and vLLM /metrics parsing (no server needed)."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from core.harness.demo import load_demo_harness
from core.runtime import AgentLoop, AssistantTurn, Bindings, ScriptedClient, ToolCall
from core.runtime.client import CallTiming, ModelError, ModelReply
from core.serving.latency import (
    LatencyStats,
    RecordingClient,
    latency_line,
    percentile,
    request_row,
)
from core.serving.metrics import Histogram, parse_histograms, server_view
from core.store import Store, StoreError
from core.store.serving import CallRow, RequestRow, add_latency, latency_rows, latency_sessions


def _row(i: int, *, warmup: bool = False, status: str = "ok", session: str = "s") -> RequestRow:
    return RequestRow(
        request_id=f"r{session}{i}",
        session=session,
        source="bench",
        status=status,
        e2e_s=1.0 + i,
        model_calls=2,
        tool_calls=1,
        hook_retries=0,
        hook_blocks=0,
        viewer_message="hi",
        started_at=datetime.now(UTC),
        warmup=warmup,
        calls=[
            CallRow(idx=0, e2e_s=0.5 + i, ttft_s=0.1 * (i + 1), tpot_s=0.01 * (i + 1)),
            CallRow(idx=1, e2e_s=0.2, ttft_s=None, tpot_s=None, error="boom"),
        ],
    )


def test_percentiles_are_numpy_linear() -> None:
    values = [0.3, 0.1, 0.2, 0.9, 0.5]
    assert percentile(values, 50) == pytest.approx(0.3)
    # linear interpolation: rank 0.95 * 4 = 3.8 between 0.5 and 0.9
    assert percentile(values, 95) == pytest.approx(0.5 + 0.8 * 0.4)
    with pytest.raises(ValueError):
        percentile([], 50)


def test_stats_exclude_warmup_and_failed_calls_and_gate_p99() -> None:
    rows = [_row(0, warmup=True), *(_row(i) for i in range(1, 6)), _row(9, status="model_error")]
    stats = LatencyStats.from_rows(rows)
    ttft = stats.summary("ttft_s")
    assert ttft.n == 6  # 5 measured ok rows + the model_error row's successful call
    expected = [0.1 * (i + 1) for i in [1, 2, 3, 4, 5, 9]]
    assert ttft.p50 == pytest.approx(float(np.percentile(expected, 50)))
    assert ttft.p95 == pytest.approx(float(np.percentile(expected, 95)))
    assert ttft.p99 is None  # fewer than 100 samples
    agent = stats.summary("agent_e2e_s")
    assert agent.n == 5 and agent.p50 == pytest.approx(4.0)  # model_error left out
    many = LatencyStats(p99_min_samples=10)
    for v in range(20):
        many.add("ttft_s", v)
    assert many.summary("ttft_s").p99 == pytest.approx(float(np.percentile(range(20), 99)))
    assert LatencyStats().summary("tpot_s").n == 0


def test_latency_rows_round_trip_in_one_transaction(tmp_path: Path) -> None:
    with Store.open(tmp_path / "hat.db") as store:
        add_latency(store, [_row(1), _row(2, session="t")])
        back = latency_rows(store, "s")
        assert len(back) == 1 and back[0].calls[1].error == "boom"
        assert back[0].request_id == "rs1" and back[0].calls[0].ttft_s == pytest.approx(0.2)
        assert latency_sessions(store) == [("s", 1), ("t", 1)]
        with pytest.raises(StoreError, match="already stored"):
            add_latency(store, [_row(3), _row(1)])  # one duplicate: nothing of it is stored
        assert [r.request_id for r in latency_rows(store)] == ["rs1", "rt2"]
        assert latency_rows(store, include_warmup=False) == latency_rows(store)


def test_request_row_from_a_trace_through_the_loop() -> None:
    harness = load_demo_harness()
    turns = [
        AssistantTurn(tool_calls=[ToolCall(name="load_skill", arguments={"name": "chit-chat"})]),
        AssistantTurn(content="Hi there, welcome to the show!"),
    ]
    recorder = RecordingClient(ScriptedClient(turns))
    trace = asyncio.run(AgentLoop(harness, recorder, Bindings()).run("hello!"))
    assert trace.ok
    row = request_row(trace, session="x", source="chat", warmup=True, timings=recorder.timings)
    assert row.model_calls == 2 and row.tool_calls == 0 and row.status == "ok"
    assert [c.idx for c in row.calls] == [0, 1] and row.warmup
    assert row.final_reply == "Hi there, welcome to the show!"
    assert "2 model call(s)" in latency_line(trace)


def test_model_errors_are_rows_with_the_reason() -> None:
    class Failing:
        async def complete(self, messages, *, tools=None, on_delta=None) -> ModelReply:  # type: ignore[no-untyped-def]
            raise ModelError("request timeout: no complete reply within 1 s")

    recorder = RecordingClient(Failing())
    trace = asyncio.run(AgentLoop(load_demo_harness(), recorder, Bindings()).run("hi"))
    row = request_row(trace, session="x", source="chat", timings=recorder.timings)
    assert row.status == "model_error" and "request timeout" in (row.error or "")
    assert row.calls[0].error is not None and row.calls[0].ttft_s is None


def test_tpot_definition() -> None:
    assert CallTiming(ttft_s=0.2, e2e_s=1.2, output_tokens=11).tpot_s == pytest.approx(0.1)
    assert CallTiming(ttft_s=0.2, e2e_s=1.2, output_tokens=1).tpot_s is None


METRICS_TEXT = """\
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.5
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:num_requests_running{engine="0",model_name="m"} 0.0
"""


def test_prometheus_histograms_and_quantiles() -> None:
    hists = parse_histograms(METRICS_TEXT)
    ttft = hists["vllm:time_to_first_token_seconds"]
    assert ttft.count == 4 and ttft.sum == 1.5 and ttft.buckets[math.inf] == 4
    # rank 2 of 4 falls in (0.1, 0.5] holding ranks 2..3: 0.1 + 0.4 * (2 - 1) / 2
    assert ttft.quantile(0.5) == pytest.approx(0.3)
    assert ttft.quantile(0.95) == pytest.approx(0.5 + 0.5 * (3.8 - 3) / 1)
    before = {
        "vllm:time_to_first_token_seconds": Histogram(
            {0.1: 1, 0.5: 1, 1.0: 1, math.inf: 1}, 0.05, 1
        )
    }
    view = server_view(before, hists)
    assert view["ttft_s"]["n"] == 3 and view["ttft_s"]["mean"] == pytest.approx(1.45 / 3)
    assert Histogram().quantile(0.5) is None
