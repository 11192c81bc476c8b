"""The live readout under a streaming reply, as LM Studio shows it: time to the first token
and the decode rate of the model call that is streaming, updated as chunks arrive (the latency
row under the finished reply then gives the client's measured figures).

One streamed chunk is one token on an OpenAI-compatible server (vLLM and transformers serve
send a chunk per decoded token), so the rate counts chunks; the first chunk is the end of the
prefill, so the rate is over the chunks after it, as TPOT is.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LiveSpeed:
    """The request's first-token time and the current model call's decode rate."""

    started: float
    """Monotonic time the current model call began (the request's start for the first)."""
    first: float | None = None
    """When the current call's first chunk came."""
    last: float | None = None
    chunks: int = 0
    ttft_s: float | None = None
    """Time to the first token of the request's first model call."""
    calls: int = 1

    def chunk(self, now: float) -> None:
        """A streamed chunk arrived at `now`."""
        if self.first is None:
            self.first = now
            if self.ttft_s is None:
                self.ttft_s = max(0.0, now - self.started)
        self.last = now
        self.chunks += 1

    def call_ended(self, now: float) -> None:
        """A model call finished (tool calls follow, then the next call starts at `now`)."""
        self.started = now
        self.first = self.last = None
        self.chunks = 0
        self.calls += 1

    @property
    def tokens_per_s(self) -> float | None:
        if self.first is None or self.last is None or self.chunks < 2:
            return None
        span = self.last - self.first
        return (self.chunks - 1) / span if span > 0 else None

    def text(self, now: float) -> str:
        """What the column header shows while the request runs."""
        if self.ttft_s is None:
            return f"waiting for the first token… {now - self.started:.1f} s"
        parts = [f"TTFT {self.ttft_s * 1000:.0f} ms"]
        rate = self.tokens_per_s
        if self.first is None:
            parts.append(f"call {self.calls}: waiting… {now - self.started:.1f} s")
        else:
            parts.append(f"{rate:.1f} tok/s" if rate is not None else "decoding…")
            parts.append(f"{self.chunks} tok")
        return " · ".join(parts)
