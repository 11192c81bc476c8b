"""What the studio's chat shows for an agent request, as plain data (no Qt).

The agent loop reports each step as it happens (`AgentLoop.run(on_event=...)`); the chat turns
every step into zero or more `Card`s: a skill load, a tool call with its arguments, the tool's
result (or its error), a hook decision, an output whose tool calls could not be parsed, a model
call that failed. Model text itself is not a card: it streams into the reply bubble, and the
view decides from the `ModelCallStep` whether that text was a candidate reply or tool calls.

`reply_latency(trace)` is the latency row under each reply (DESIGN.md §3, Latency): TTFT of the
first model call, decode speed, time spent in model calls, the agent request end to end, the
number of model and tool calls. `session_lines(rows)` is the session panel: P50/P95 per metric
from `LatencyStats`, warm-up requests left out.

Kept here, not in the studio, so the same mapping can be tested without a display and reused by
any other front end (a web view, a report).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.runtime.trace import (
    Decision,
    HookStep,
    ModelCallStep,
    SkillLoadStep,
    Step,
    ToolCallStep,
    Trace,
)
from core.serving.latency import LatencyStats, MetricSummary
from core.serving.metrics import SpecDecode
from core.store.serving import RequestRow

CARD_KINDS = ("skill", "tool_call", "tool_result", "hook", "parse_error", "model_error")
BODY_LIMIT = 1600
"""Characters of a card body (JSON, reminders) before it is cut with a note."""

EVENT_TITLES = {
    "on_input": "on input",
    "before_tool": "before tool",
    "after_tool": "after tool",
    "before_reply": "before reply",
}


@dataclass(frozen=True)
class Card:
    """One thing the agent did, ready to draw.

    `status` picks the colour: ok, error, warning, or the hook decisions allow / block.
    `body` is monospace text (JSON, a reminder); `detail` a plain sentence (a reason).
    """

    kind: str
    title: str
    subtitle: str = ""
    status: str = "ok"
    detail: str = ""
    body: str = ""
    step_index: int = 0


def clip(text: str, limit: int = BODY_LIMIT) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… ({len(text) - limit:,} more characters)"


def pretty_json(value: Any, limit: int = BODY_LIMIT, *, indent: int | None = None) -> str:
    """JSON (non-ASCII kept; one line unless `indent`), clipped; values JSON cannot encode are
    shown with repr. One line by default: a chat card wraps it, which is far denser than an
    indented block."""
    try:
        text = json.dumps(value, ensure_ascii=False, indent=indent, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(text, limit)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def cards_for_step(step: Step, index: int = 0) -> list[Card]:
    """The cards of one trace step (none for a model call that produced text or tool calls,
    and none for a reply: those are the reply bubble)."""
    if isinstance(step, SkillLoadStep):
        if step.ok:
            kind = f"{step.kind} skill" if step.kind else "skill"
            return [Card("skill", step.name, kind, "ok", step_index=index)]
        return [Card("skill", step.name, "skill not loaded", "error", step.error or "", "", index)]
    if isinstance(step, ToolCallStep):
        call = Card(
            "tool_call",
            step.name,
            "",
            "ok",
            body=pretty_json(step.arguments) if step.arguments else "{}",
            step_index=index,
        )
        if step.error is None:
            result = Card(
                "tool_result",
                step.name,
                _ms(step.duration_s),
                "ok",
                body=pretty_json(step.result),
                step_index=index,
            )
        else:
            result = Card(
                "tool_result",
                step.name,
                step.error_kind or "error",
                "error",
                detail=step.error,
                step_index=index,
            )
        return [call, result]
    if isinstance(step, HookStep):
        event = EVENT_TITLES.get(step.event, step.event)
        where = f"{event} · {step.tool}" if step.tool else event
        status = {Decision.ALLOW: "allow", Decision.BLOCK: "block"}.get(step.decision, "warning")
        detail = step.reason
        if step.decision is Decision.ERROR:
            detail = f"the hook failed and was treated as allow: {step.reason}"
        return [
            Card(
                "hook",
                step.hook,
                f"{where} · {step.kind.replace('_', ' ')}",
                status,
                detail,
                clip(step.reminder or ""),
                index,
            )
        ]
    if isinstance(step, ModelCallStep):
        if step.error is not None:
            return [Card("model_error", "Model call failed", "", "error", step.error, "", index)]
        if step.parse_errors:
            return [
                Card(
                    "parse_error",
                    "Tool call not understood",
                    f"model call {step.turn}",
                    "warning",
                    "; ".join(step.parse_errors),
                    clip(step.raw_output),
                    index,
                )
            ]
    return []


def cards_for_trace(trace: Trace) -> list[Card]:
    """Every card of a finished request, in order (what the live view built step by step)."""
    out: list[Card] = []
    for index, step in enumerate(trace.steps):
        out.extend(cards_for_step(step, index))
    return out


# ----------------------------------------------------------------------------- latency row


@dataclass(frozen=True)
class ReplyLatency:
    """The latency row under one reply."""

    ttft_s: float | None
    tokens_per_s: float | None
    model_s: float
    agent_s: float
    model_calls: int
    tool_calls: int
    output_tokens: int
    status: str
    spec_decode: SpecDecode | None = None
    """Speculative decoding over this request (vLLM with it on), else None."""

    def items(self) -> list[tuple[str, str]]:
        """(label, value) pairs in display order."""
        out = [("TTFT", _ms(self.ttft_s) if self.ttft_s is not None else "–")]
        out.append(("decode", f"{self.tokens_per_s:.1f} tok/s" if self.tokens_per_s else "–"))
        out.append(("model e2e", _ms(self.model_s)))
        out.append(("agent e2e", _ms(self.agent_s)))
        calls = f"{self.model_calls} model · {self.tool_calls} tool"
        out.append(("calls", calls))
        out.append(("tokens", str(self.output_tokens)))
        spec = self.spec_decode
        if spec is not None and spec.acceptance_rate is not None:
            out.append(
                (
                    "spec accept",
                    f"{100 * spec.acceptance_rate:.0f}% · {spec.accepted_per_draft or 0:.1f}/draft",
                )
            )
        return out


def reply_latency(trace: Trace, spec_decode: SpecDecode | None = None) -> ReplyLatency:
    """TTFT of the first model call; decode speed over all calls that produced two or more
    tokens (output tokens after the first / time after the first); model e2e: the calls' own
    e2e summed (failed calls by their wall time); agent e2e: viewer message to the end;
    speculative decoding's acceptance where the lane measured it (`ChatLane.spec_decode`)."""
    steps = trace.steps_of(ModelCallStep)
    ttft = next((s.timing.ttft_s for s in steps if s.timing.ttft_s is not None), None)
    tokens_after_first = 0
    decode_time = 0.0
    model_s = 0.0
    output_tokens = 0
    for s in steps:
        t = s.timing
        model_s += t.e2e_s if s.error is None else s.wall_s
        output_tokens += t.output_tokens or 0
        if s.error is None and t.ttft_s is not None and t.output_tokens and t.output_tokens > 1:
            tokens_after_first += t.output_tokens - 1
            decode_time += max(0.0, t.e2e_s - t.ttft_s)
    rate = tokens_after_first / decode_time if decode_time > 0 and tokens_after_first else None
    return ReplyLatency(
        ttft_s=ttft,
        tokens_per_s=rate,
        model_s=model_s,
        agent_s=trace.e2e_s,
        model_calls=trace.counts.model_calls,
        tool_calls=trace.counts.tool_calls,
        output_tokens=output_tokens,
        status=trace.status.value,
        spec_decode=spec_decode,
    )


# ----------------------------------------------------------------------------- session panel


@dataclass(frozen=True)
class StatLine:
    """One metric of the session panel: P50 and P95 in seconds (None without samples)."""

    metric: str
    title: str
    n: int
    p50: float | None
    p95: float | None

    def cells(self) -> tuple[str, str]:
        def fmt(v: float | None) -> str:
            return "–" if v is None else _ms(v)

        return fmt(self.p50), fmt(self.p95)


SESSION_METRICS = (
    ("ttft_s", "TTFT"),
    ("tpot_s", "TPOT"),
    ("call_e2e_s", "Model e2e"),
    ("agent_e2e_s", "Agent e2e"),
)


@dataclass(frozen=True)
class SessionSummary:
    lines: list[StatLine]
    requests: int
    warmup: int
    failed: int
    """Requests whose model call failed (`model_error`: the server decided their length, so
    they are not timed), warm-ups not counted: timed + warmup + failed == requests."""
    unfinished: tuple[str, ...] = ()
    """The statuses of timed requests that ended without a final reply (the harness ended
    them: max turns, a hook's retry budget). They are timed, as the latency stats time them."""

    @property
    def timed(self) -> int:
        return self.requests - self.warmup - self.failed

    def note(self) -> str:
        """One sentence whose counts add up to the requests and agree with the columns: which
        were timed (and which of those ended without a reply), which were left out and why
        (the columns' own sample counts are per model call)."""
        if self.requests == 0:
            return "no requests yet"
        head = f"{self.requests} request{'s' if self.requests != 1 else ''}: {self.timed} timed"
        if self.unfinished:
            why = ", ".join(sorted(set(self.unfinished)))
            head += f" ({len(self.unfinished)} of them ended without a reply: {why})"
        if self.warmup:
            head += f", {self.warmup} warm-up left out"
        if self.failed:
            head += f", {self.failed} failed (no timings)"
        return head


def session_summary(rows: Sequence[RequestRow]) -> SessionSummary:
    """P50/P95 per metric over the session's requests (warm-up requests left out)."""
    stats = LatencyStats.from_rows(rows)
    lines = []
    for metric, title in SESSION_METRICS:
        s: MetricSummary = stats.summary(metric)
        lines.append(StatLine(metric, title, s.n, s.p50, s.p95))
    return SessionSummary(
        lines=lines,
        requests=len(rows),
        warmup=sum(1 for r in rows if r.warmup),
        failed=sum(1 for r in rows if r.status == "model_error" and not r.warmup),
        unfinished=tuple(
            r.status for r in rows if r.status not in ("ok", "model_error") and not r.warmup
        ),
    )
