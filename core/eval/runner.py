"""The suite runner (work in progress: the API in core/eval/api.py is stable)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.eval.api import ClientFactory, EvalRequest, EvalRun, ProgressCallback, StopFlag
    from core.store import Store


async def start_run(
    store: Store,
    request: EvalRequest,
    *,
    on_progress: ProgressCallback | None = None,
    stop: StopFlag | None = None,
    client_factory: ClientFactory | None = None,
) -> EvalRun:
    raise NotImplementedError


async def continue_run(
    store: Store,
    run_id: str,
    *,
    on_progress: ProgressCallback | None = None,
    stop: StopFlag | None = None,
    client_factory: ClientFactory | None = None,
    base_url: str | None = None,
    retry_failed: bool = True,
) -> EvalRun:
    raise NotImplementedError
