"""Store access for evaluation runs and rows (work in progress)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.eval.api import EvalRun
    from core.eval.results import EvalResult, Suite
    from core.store import Store


def list_runs(store: Store) -> list[EvalRun]:
    raise NotImplementedError


def get_run(store: Store, run_id: str) -> EvalRun:
    raise NotImplementedError


def load_results(store: Store, run_id: str, *, suite: Suite | None = None) -> list[EvalResult]:
    raise NotImplementedError


def load_trace(
    store: Store, run_id: str, key: tuple[str, str, int | None, int]
) -> dict[str, Any] | None:
    raise NotImplementedError
