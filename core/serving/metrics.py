"""vLLM's server-side view: Prometheus histograms from /metrics.

    before = parse_histograms(server.metrics_text())
    ... run the benchmark ...
    after = parse_histograms(server.metrics_text())
    view = server_view(before, after)        # {"ttft_s": {...}, "tpot_s": {...}, ...}

Histograms are cumulative since the server started, so the benchmark reads them before and
after and uses the difference: only its own requests count. Quantiles follow Prometheus'
`histogram_quantile`: linear interpolation inside the bucket the rank falls in (so they are
only as precise as the buckets); the mean (sum / count) is exact.

With speculative decoding on, vLLM also counts drafts, proposed and accepted tokens
(`vllm:spec_decode_num_drafts_total`, `..._num_draft_tokens_total`,
`..._num_accepted_tokens_total`); `spec_decode_counts` reads them and `SpecDecode.minus` gives
the change over a request or a run, from which the acceptance rate (accepted / proposed) and
the mean accepted length per draft follow.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

# Our metric name -> vLLM histogram.
SERVER_METRICS = {
    "ttft_s": "vllm:time_to_first_token_seconds",
    "tpot_s": "vllm:request_time_per_output_token_seconds",
    "itl_s": "vllm:inter_token_latency_seconds",
    "call_e2e_s": "vllm:e2e_request_latency_seconds",
    "queue_s": "vllm:request_queue_time_seconds",
    "prefill_s": "vllm:request_prefill_time_seconds",
    "decode_s": "vllm:request_decode_time_seconds",
}

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LE = re.compile(r'le="([^"]+)"')


@dataclass
class Histogram:
    buckets: dict[float, float] = field(default_factory=dict)  # upper bound -> cumulative count
    sum: float = 0.0
    count: float = 0.0

    def minus(self, other: Histogram | None) -> Histogram:
        if other is None:
            return Histogram(dict(self.buckets), self.sum, self.count)
        return Histogram(
            {le: c - other.buckets.get(le, 0.0) for le, c in self.buckets.items()},
            self.sum - other.sum,
            self.count - other.count,
        )

    def quantile(self, q: float) -> float | None:
        """Prometheus histogram_quantile (q in 0..1); None without observations."""
        if self.count <= 0 or not self.buckets:
            return None
        bounds = sorted(self.buckets)
        total = self.buckets.get(math.inf, self.count)
        rank = q * total
        previous_bound, previous_count = 0.0, 0.0
        for bound in bounds:
            count = self.buckets[bound]
            if count >= rank:
                if math.isinf(bound):
                    return previous_bound  # in the +Inf bucket: the highest finite bound
                if count == previous_count:
                    return bound
                fraction = (rank - previous_count) / (count - previous_count)
                return previous_bound + (bound - previous_bound) * fraction
            previous_bound, previous_count = bound, count
        return previous_bound

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None


def parse_histograms(text: str) -> dict[str, Histogram]:
    """Every histogram in a Prometheus text exposition, label sets summed per name."""
    out: dict[str, Histogram] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        name, labels, raw = match.group(1), match.group(2) or "", match.group(3)
        try:
            value = float(raw)
        except ValueError:
            continue
        if name.endswith("_bucket"):
            le_match = _LE.search(labels)
            if le_match is None:
                continue
            bound = math.inf if le_match.group(1) in ("+Inf", "Inf") else float(le_match.group(1))
            hist = out.setdefault(name.removesuffix("_bucket"), Histogram())
            hist.buckets[bound] = hist.buckets.get(bound, 0.0) + value
        elif name.endswith("_sum"):
            base = name.removesuffix("_sum")
            if base in out or _is_histogram_name(base):
                out.setdefault(base, Histogram()).sum += value
        elif name.endswith("_count"):
            base = name.removesuffix("_count")
            if base in out or _is_histogram_name(base):
                out.setdefault(base, Histogram()).count += value
    return {k: v for k, v in out.items() if v.buckets}


def _is_histogram_name(name: str) -> bool:
    return name in SERVER_METRICS.values()


def server_view(
    before: dict[str, Histogram] | None, after: dict[str, Histogram]
) -> dict[str, dict[str, Any]]:
    """P50/P95/mean/count of each server metric over what happened between two readings."""
    view: dict[str, dict[str, Any]] = {}
    for ours, theirs in SERVER_METRICS.items():
        hist = after.get(theirs)
        if hist is None:
            continue
        delta = hist.minus((before or {}).get(theirs))
        view[ours] = {
            "metric": theirs,
            "n": round(delta.count),
            "p50": delta.quantile(0.50),
            "p95": delta.quantile(0.95),
            "mean": delta.mean,
        }
    return view


SPEC_COUNTERS = {
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
}
"""Our name -> vLLM's speculative decoding counter (vllm/v1/spec_decode/metrics.py)."""


@dataclass(frozen=True)
class SpecDecode:
    """Speculative decoding counts: drafts (steps that proposed), tokens proposed, accepted."""

    drafts: float = 0.0
    draft_tokens: float = 0.0
    accepted_tokens: float = 0.0

    def minus(self, other: SpecDecode | None) -> SpecDecode:
        if other is None:
            return self
        return SpecDecode(
            self.drafts - other.drafts,
            self.draft_tokens - other.draft_tokens,
            self.accepted_tokens - other.accepted_tokens,
        )

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted / proposed tokens; None when nothing was proposed."""
        return self.accepted_tokens / self.draft_tokens if self.draft_tokens > 0 else None

    @property
    def accepted_per_draft(self) -> float | None:
        """Mean tokens accepted per draft: each verifying step emits this many plus one."""
        return self.accepted_tokens / self.drafts if self.drafts > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "drafts": round(self.drafts),
            "draft_tokens": round(self.draft_tokens),
            "accepted_tokens": round(self.accepted_tokens),
            "acceptance_rate": self.acceptance_rate,
            "accepted_per_draft": self.accepted_per_draft,
        }

    def line(self) -> str:
        """A short readout: "spec accept 78% (14/18 tokens, 3.5/draft)"."""
        rate = self.acceptance_rate
        if rate is None:
            return "spec decode: no drafts"
        return (
            f"spec accept {100 * rate:.0f}% ({round(self.accepted_tokens)}/"
            f"{round(self.draft_tokens)} tokens, {self.accepted_per_draft or 0:.1f}/draft)"
        )


def spec_decode_counts(text: str) -> SpecDecode | None:
    """The speculative decoding counters in a /metrics text (label sets summed), or None
    where the server exposes none (speculative decoding off, or not vLLM)."""
    values: dict[str, float] = {}
    wanted = {theirs: ours for ours, theirs in SPEC_COUNTERS.items()}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None or match.group(1) not in wanted:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        key = wanted[match.group(1)]
        values[key] = values.get(key, 0.0) + value
    if not values:
        return None
    return SpecDecode(**values)
