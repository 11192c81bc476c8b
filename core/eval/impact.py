"""Harness-change impact (work in progress)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.eval.api import (
        ClientFactory,
        EvalRequest,
        ImpactReport,
        ProgressCallback,
        StopFlag,
    )
    from core.eval.results import Suite
    from core.store import Store


async def run_impact(
    store: Store,
    model: str,
    from_ref: str,
    to_ref: str,
    *,
    suites: list[Suite] | None = None,
    limit: int | None = None,
    adapter: str | None = None,
    base_url: str | None = None,
    request: EvalRequest | None = None,
    on_progress: ProgressCallback | None = None,
    stop: StopFlag | None = None,
    client_factory: ClientFactory | None = None,
) -> ImpactReport:
    raise NotImplementedError


def report_dict(report: ImpactReport) -> dict[str, Any]:
    raise NotImplementedError
