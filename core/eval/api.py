"""The public face of evaluation: what callers (CLI, studio pages, the replication) code against.

    request = EvalRequest(model="demo", suites=[Suite.LS_QA, Suite.HV_QA], limit=20)
    run = run_eval(store, request, on_progress=lambda done, total, last: ...)
    rows = load_results(store, run.id)          # list[EvalResult] (core/eval/results.py)
    run = resume_eval(store, run.id)            # after a crash, a stop or a dead server
    report = impact(store, "demo", "production", "staging", suites=[Suite.LS_QA], limit=50)

A run evaluates one model (optionally with an adapter) under one stored harness version on
one or more suites. Items are (suite, task, variant, sample); each is one request through the
one agent loop (core/runtime/loop.py) against a fresh simulated live room, graded by the
Core II graders, and stored as an `EvalResult` row in its own transaction as soon as it
completes, so a run killed at any point loses at most the items in flight. What the suites
contain and how items are planned is in core/eval/runner.py; how the rows are kept is in
core/eval/store.py; the harness-change gate in core/eval/impact.py.

The data types are core/eval/types.py's, re-exported here with the functions.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from core.eval import store as _store
from core.eval.impact import run_impact
from core.eval.planning import ifeval_prompts, plan_items
from core.eval.results import EvalResult, Suite
from core.eval.runner import continue_run, is_active, start_run
from core.eval.types import (
    ALL_SUITES,
    DEFAULT_HARNESS,
    ClientFactory,
    ComponentChange,
    ComponentGroup,
    EvalError,
    EvalItem,
    EvalRequest,
    EvalRun,
    Flip,
    ImpactReport,
    ProgressCallback,
    RunStatus,
    StopFlag,
)

if TYPE_CHECKING:
    from core.store import Store

__all__ = [
    "ALL_SUITES",
    "DEFAULT_HARNESS",
    "ClientFactory",
    "ComponentChange",
    "ComponentGroup",
    "EvalError",
    "EvalItem",
    "EvalRequest",
    "EvalResult",
    "EvalRun",
    "Flip",
    "ImpactReport",
    "ProgressCallback",
    "RunStatus",
    "StopFlag",
    "Suite",
    "delete_eval_run",
    "eval_run_active",
    "get_eval_run",
    "impact",
    "impact_async",
    "list_eval_runs",
    "load_results",
    "load_trace",
    "plan_eval",
    "resume_eval",
    "resume_eval_async",
    "run_eval",
    "run_eval_async",
]

# ----------------------------------------------------------------------------- functions

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """The coroutine function `fn` as a plain call (its own event loop), for the CLI and
    scripts; the studio awaits the `_async` form on its qasync loop."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(fn(*args, **kwargs))

    return call


async def run_eval_async(
    store: Store,
    request: EvalRequest,
    *,
    on_progress: ProgressCallback | None = None,
    stop: StopFlag | None = None,
    client_factory: ClientFactory | None = None,
) -> EvalRun:
    """Create a run for `request`, evaluate every item, return the finished record.

    Never raises for model, server or item failures: they end up as failed rows or as the
    run's status and reason. Raises `EvalError` for bad requests (unknown model, harness or
    suite data) before anything is stored. (`run_eval` is the same outside an event loop.)"""

    return await start_run(
        store, request, on_progress=on_progress, stop=stop, client_factory=client_factory
    )


async def resume_eval_async(
    store: Store,
    run_id: str,
    *,
    on_progress: ProgressCallback | None = None,
    stop: StopFlag | None = None,
    client_factory: ClientFactory | None = None,
    base_url: str | None = None,
    retry_failed: bool = True,
) -> EvalRun:
    """Continue a run: items with a stored row are skipped, except (with `retry_failed`)
    rows that failed for transport reasons (model_error: the server was unreachable or
    answered with an error; timeout; crash), which are run again and replaced. Failures that
    are the model's own (empty output, endless tool loops) stay. `base_url` points the resume
    at another running server."""

    return await continue_run(
        store,
        run_id,
        on_progress=on_progress,
        stop=stop,
        client_factory=client_factory,
        base_url=base_url,
        retry_failed=retry_failed,
    )


def list_eval_runs(store: Store) -> list[EvalRun]:
    """Every run, oldest first."""
    return _store.list_runs(store)


def get_eval_run(store: Store, run_id: str) -> EvalRun:
    """One run by id or unique id prefix (StoreError when unknown)."""
    return _store.get_run(store, run_id)


def eval_run_active(store: Store, run_id: str) -> bool:
    """Whether a process is executing the run now. A run stored as running whose process
    died is not active: resuming it is safe (a resume of an active run is refused)."""

    return is_active(store, run_id)


def delete_eval_run(store: Store, run_id: str) -> None:
    """Remove a run and its rows (its latency rows stay with the serving statistics)."""
    _store.delete_run(store, run_id)


def plan_eval(request: EvalRequest) -> list[EvalItem]:
    """The items a request will run, in order (what `EvalRun.total` counts), without running
    anything: for a page that shows the size of a run before it starts. Raises EvalError
    when the IFEval prompts cannot be loaded."""

    records = ifeval_prompts(request.ifeval_path) if Suite.IFEVAL in request.suites else None
    return plan_items(request, ifeval_records=records)


def load_results(store: Store, run_id: str, *, suite: Suite | None = None) -> list[EvalResult]:
    """The rows of a run in a stable order (suite, task, variant seed, sample)."""
    return _store.load_results(store, run_id, suite=suite)


def load_trace(
    store: Store, run_id: str, key: tuple[str, str, int | None, int]
) -> dict[str, Any] | None:
    """The stored agent trace (Trace.model_dump) of one item, None when it has none."""
    return _store.load_trace(store, run_id, key)


async def impact_async(
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
    """Run the suites (default LS-QA) under both harness versions (reusing stored runs of the
    same model, version and settings), list the flipped items grouped by the changed
    components, with the score change and its 95 % paired bootstrap interval.
    `request` gives the other settings (its model, adapter, harness, suites and limit are
    replaced by the arguments)."""

    return await run_impact(
        store,
        model,
        from_ref,
        to_ref,
        suites=suites,
        limit=limit,
        adapter=adapter,
        base_url=base_url,
        request=request,
        on_progress=on_progress,
        stop=stop,
        client_factory=client_factory,
    )


run_eval = _blocking(run_eval_async)
resume_eval = _blocking(resume_eval_async)
impact = _blocking(impact_async)
