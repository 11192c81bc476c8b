"""Fault injection for the live-room simulator.

Two sources of faults, both deterministic:

- task-specified `FaultSpec`s (core/sim/models.py): the `on_call`-th call (1-based, counting
  every call of that binding in the room, failed ones included) of `binding` fails with `kind`;
- seeded random `FaultRates`: per-kind probabilities drawn for each call. The draw for call n
  of binding b depends only on (seed, b, n), never on the order other bindings were called in,
  so one seed gives the same faults for the same per-binding call sequence.

A spec wins over a random draw for the same call. Every fault is raised as
`ToolError(kind, message)`; the agent loop shows it to the model as
`{"error": {"kind", "message"}}` and keeps going. What each kind looks like:

- `timeout`: "<tool> timed out after 30 s (upstream did not answer)" - no real waiting, so
  suites stay fast; the loop's own per-call timeout is a separate mechanism.
- `malformed`: the upstream answered with a corrupted payload. We raise
  `ToolError("malformed", ...)` whose message quotes the truncated JSON, rather than returning
  the broken text as a "successful" string result: a string result would reach the model as
  data (and the after_tool hooks and graders as a fact source), whereas the issue asks for a
  tool error the model can see and recover from.
- `permission_denied`: "the live-room service refused <tool>: the API key lacks scope ...".
- `rate_limit`: "too many requests to <tool>; retry after N s".
- `empty`: "<tool> returned an empty result (upstream had no data)".
"""

from __future__ import annotations

import json
import random
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.runtime.bindings import ToolError, ToolErrorKind
from core.sim.models import FaultKind, FaultSpec

FAULT_KINDS: tuple[FaultKind, ...] = tuple(FaultKind)
"""Error kinds that mean "the service failed", as opposed to a handler's answer (`error`);
they compare equal to the kinds' strings in a trace."""
RETRYABLE: frozenset[FaultKind] = frozenset({FaultKind.TIMEOUT, FaultKind.RATE_LIMIT})
"""Fault kinds worth one retry (the oracle retries them once; the graders expect it)."""


class FaultRates(BaseModel):
    """Per-call probability of each fault kind; the sum must be at most 1."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(default=0.0, ge=0, le=1)
    malformed: float = Field(default=0.0, ge=0, le=1)
    permission_denied: float = Field(default=0.0, ge=0, le=1)
    rate_limit: float = Field(default=0.0, ge=0, le=1)
    empty: float = Field(default=0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _check_total(self) -> FaultRates:
        if self.total > 1 + 1e-9:
            raise ValueError(f"fault rates sum to {self.total:g}; at most 1 is allowed")
        return self

    @classmethod
    def uniform(cls, total: float) -> FaultRates:
        """`total` probability of some fault per call, split evenly over the five kinds."""
        share = total / len(FAULT_KINDS)
        return cls(**{kind.value: share for kind in FAULT_KINDS})

    @property
    def total(self) -> float:
        return sum(self.rate(kind) for kind in FAULT_KINDS)

    def rate(self, kind: FaultKind) -> float:
        value: float = getattr(self, kind.value)
        return value


class FaultInjector:
    """Decides, per binding call, whether and how it fails.

    `next_fault(binding)` advances that binding's call counter and returns the fault kind for
    this call or None; `calls(binding)` is the number of calls seen so far.
    """

    def __init__(
        self,
        faults: list[FaultSpec] | tuple[FaultSpec, ...] = (),
        rates: FaultRates | None = None,
        *,
        seed: int = 0,
    ) -> None:
        self.specs = list(faults)
        self.rates = rates
        self.seed = seed
        self._counts: dict[str, int] = {}

    def calls(self, binding: str) -> int:
        return self._counts.get(binding, 0)

    def next_fault(self, binding: str) -> FaultKind | None:
        n = self._counts.get(binding, 0) + 1
        self._counts[binding] = n
        for spec in self.specs:
            if spec.binding == binding and spec.on_call == n:
                return spec.kind
        return random_fault(self.rates, self.seed, binding, n)

    def reset(self) -> None:
        self._counts.clear()


def random_fault(rates: FaultRates | None, seed: int, binding: str, n: int) -> FaultKind | None:
    """The seeded random fault of call `n` of `binding` (None: the call succeeds)."""
    if rates is None or rates.total <= 0:
        return None
    draw = random.Random(f"{seed}:{binding}:{n}").random()
    edge = 0.0
    for kind in FAULT_KINDS:
        edge += rates.rate(kind)
        if draw < edge:
            return kind
    return None


def fault_error(kind: FaultKind, tool: str, *, preview: Any = None, n: int = 1) -> ToolError:
    """The ToolError a fault of `kind` raises for `tool` (the harness's name for it).

    `preview` is the result the call would have returned; a malformed fault quotes the first
    characters of its JSON, cut off mid-value, as a corrupted upstream payload would look.
    """
    if kind is FaultKind.TIMEOUT:
        return ToolError(
            ToolErrorKind.TIMEOUT,
            f"{tool} timed out after 30 s (the live-room service did not answer)",
        )
    if kind is FaultKind.MALFORMED:
        text = json.dumps(preview, ensure_ascii=False) if preview is not None else '{"result": '
        cut = text[: max(8, min(len(text) - 1, 48))]
        return ToolError(
            ToolErrorKind.MALFORMED,
            f"{tool} returned a corrupted result that could not be parsed: {cut!r} (truncated)",
        )
    if kind is FaultKind.PERMISSION_DENIED:
        return ToolError(
            ToolErrorKind.PERMISSION_DENIED,
            f"the live-room service refused {tool}: this host session lacks permission for it",
        )
    if kind is FaultKind.RATE_LIMIT:
        wait = 2 + (n % 4) * 3
        return ToolError(
            ToolErrorKind.RATE_LIMIT, f"too many requests to {tool}; retry after {wait} s"
        )
    return ToolError(ToolErrorKind.EMPTY, f"{tool} returned an empty result (no data upstream)")
