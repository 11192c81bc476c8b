"""Store access for evaluation runs and their per-item rows (tables eval_runs, eval_results).

    run = create_run(store, request, harness="live-host", harness_version=vid, total=540)
    add_result(store, run.id, result, trace=trace.model_dump(mode="json"))   # one transaction
    load_results(store, run.id); done_items(store, run.id); list_runs(store)

Every function is one transaction; failures a user can cause raise `StoreError`. A run id may
be given by a unique prefix. A row is unique per run by its item key (suite, task, variant
seed, sample): storing a row for a key that exists replaces it (a resumed run re-running an
item that failed for transport reasons). Traces are kept zlib-compressed, read only on demand.
"""

from __future__ import annotations

import json
import secrets
import zlib
from typing import Any

from sqlalchemy import Connection, case, delete, func, insert, select, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from core.eval.results import EvalResult, ResultStatus, Suite
from core.eval.types import EvalRequest, EvalRun, RunStatus
from core.store.db import resolve_id, transaction
from core.store.errors import StoreError
from core.store.serving import RequestRow, insert_latency
from core.store.store import Store
from core.store.tables import EvalResultRow, EvalRunRow
from core.store.types import utcnow

ItemKey = tuple[str, str, int | None, int]


def item_key(key: ItemKey) -> str:
    """The stored text of an item key (JSON: unambiguous whatever a task id contains)."""
    return json.dumps(list(key), separators=(",", ":"))


def new_run_id() -> str:
    return f"eval-{utcnow():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


# ----------------------------------------------------------------------------- runs


def _resolve(conn: Connection, ref: str) -> tuple[int, str]:
    """(pk, id) of the run `ref` names: an exact id or a unique prefix."""
    return resolve_id(conn, EvalRunRow, ref, noun="evaluation run", listed_by="hat eval list")


Counts = tuple[int, int, int, int]
"""(rows, passed, failed, errors) of one run."""


def _counts(conn: Connection, pks: list[int] | None = None) -> dict[int, Counts]:
    """run pk -> Counts."""
    query = select(
        EvalResultRow.run_pk,
        func.count(),
        func.sum(case((EvalResultRow.passed.is_(True), 1), else_=0)),
        func.sum(case((EvalResultRow.status == ResultStatus.FAILED.value, 1), else_=0)),
        func.sum(case((EvalResultRow.status == ResultStatus.ERROR.value, 1), else_=0)),
    ).group_by(EvalResultRow.run_pk)
    if pks is not None:
        query = query.where(EvalResultRow.run_pk.in_(pks))
    return {
        r[0]: (int(r[1]), int(r[2] or 0), int(r[3] or 0), int(r[4] or 0))
        for r in conn.execute(query).all()
    }


def _record(row: Any, counts: Counts) -> EvalRun:
    try:
        request = EvalRequest.model_validate(row.request)
    except ValueError as exc:
        raise StoreError(
            f"evaluation run {row.id}: its stored request does not load: {exc}"
        ) from None
    done, passed, failed, errors = counts
    return EvalRun(
        id=row.id,
        request=request,
        status=RunStatus(row.status),
        harness=row.harness,
        harness_version=row.harness_version,
        model=row.model,
        adapter=row.adapter,
        fingerprint=row.fingerprint,
        total=row.total,
        done=done,
        passed=passed,
        failed=failed,
        errors=errors,
        reason=row.reason,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )


def create_run(
    store: Store,
    request: EvalRequest,
    *,
    harness: str,
    harness_version: str | None,
    total: int,
    run_id: str | None = None,
) -> EvalRun:
    """Store a new run (status created) for `request`."""
    rid = run_id or new_run_id()
    with transaction(store.engine, store.path, write=True) as conn:
        if conn.execute(select(EvalRunRow.pk).where(EvalRunRow.id == rid)).first() is not None:
            raise StoreError(f"an evaluation run {rid!r} already exists")
        conn.execute(
            insert(EvalRunRow).values(
                id=rid,
                status=RunStatus.CREATED.value,
                reason=None,
                request=request.model_dump(mode="json"),
                fingerprint=request.fingerprint(),
                model=request.model,
                adapter=request.adapter,
                harness=harness,
                harness_version=harness_version,
                total=total,
                created_at=utcnow(),
            )
        )
    return get_run(store, rid)


_UPDATABLE = {"status", "reason", "total", "started_at", "finished_at", "request"}


def update_run(store: Store, ref: str, **changes: Any) -> EvalRun:
    """Set fields of a run: status, reason, total, started_at, finished_at, request."""
    unknown = set(changes) - _UPDATABLE
    if unknown:
        raise StoreError(f"unknown evaluation run fields: {', '.join(sorted(unknown))}")
    values = dict(changes)
    if "status" in values:
        values["status"] = RunStatus(values["status"]).value
    if isinstance(values.get("request"), EvalRequest):
        values["request"] = values["request"].model_dump(mode="json")
    with transaction(store.engine, store.path, write=True) as conn:
        pk, _ = _resolve(conn, ref)
        if values:
            conn.execute(update(EvalRunRow).where(EvalRunRow.pk == pk).values(**values))
    return get_run(store, ref)


def get_run(store: Store, ref: str) -> EvalRun:
    with transaction(store.engine, store.path, write=False) as conn:
        pk, _ = _resolve(conn, ref)
        row = conn.execute(select(EvalRunRow).where(EvalRunRow.pk == pk)).one()
        return _record(row, _counts(conn, [pk]).get(pk, (0, 0, 0, 0)))


def list_runs(
    store: Store,
    *,
    model: str | None = None,
    fingerprint: str | None = None,
    harness_version: str | None = None,
) -> list[EvalRun]:
    """Runs, oldest first; only those matching the given model / fingerprint / version."""
    with transaction(store.engine, store.path, write=False) as conn:
        query = select(EvalRunRow).order_by(EvalRunRow.pk)
        if model is not None:
            query = query.where(EvalRunRow.model == model)
        if fingerprint is not None:
            query = query.where(EvalRunRow.fingerprint == fingerprint)
        if harness_version is not None:
            query = query.where(EvalRunRow.harness_version == harness_version)
        rows = conn.execute(query).all()
        counts = _counts(conn, [r.pk for r in rows])
        out: list[EvalRun] = []
        for row in rows:
            try:
                out.append(_record(row, counts.get(row.pk, (0, 0, 0, 0))))
            except StoreError:
                continue  # a run stored by a newer program: not listable here, not fatal
        return out


def delete_run(store: Store, ref: str) -> None:
    """Remove a run and its rows."""
    with transaction(store.engine, store.path, write=True) as conn:
        pk, _ = _resolve(conn, ref)
        conn.execute(delete(EvalResultRow).where(EvalResultRow.run_pk == pk))
        conn.execute(delete(EvalRunRow).where(EvalRunRow.pk == pk))


# ----------------------------------------------------------------------------- rows


def add_result(
    store: Store,
    ref: str,
    result: EvalResult,
    *,
    trace: dict[str, Any] | None = None,
    latency: RequestRow | None = None,
) -> None:
    """Store one row (replacing the row of the same key, if any), its trace and the request's
    latency row (`core.store.serving` tables, source eval), all in one transaction."""
    packed = (
        zlib.compress(json.dumps(trace, ensure_ascii=False).encode("utf-8"), 6)
        if trace is not None
        else None
    )
    values = {
        "item_key": item_key(result.key),
        "suite": result.suite.value,
        "task_id": result.task_id,
        "sample": result.sample,
        "variant_seed": result.variant_seed,
        "dimension": result.dimension,
        "category": result.category,
        "score": result.score,
        "passed": result.passed,
        "status": result.status.value,
        "reason": result.reason,
        "trace_id": result.trace_id,
        "latency_s": result.latency_s,
        "grades": result.grades,
        "trace": packed,
        "created_at": utcnow(),
    }
    with transaction(store.engine, store.path, write=True) as conn:
        pk, _ = _resolve(conn, ref)
        statement = sqlite_insert(EvalResultRow).values(run_pk=pk, **values)
        conn.execute(
            statement.on_conflict_do_update(
                index_elements=["run_pk", "item_key"],
                set_={k: statement.excluded[k] for k in values if k != "item_key"},
            )
        )
        if latency is not None:
            insert_latency(conn, latency, skip_stored=True)


def _result(row: Any) -> EvalResult:
    return EvalResult(
        suite=Suite(row.suite),
        task_id=row.task_id,
        sample=row.sample,
        variant_seed=row.variant_seed,
        dimension=row.dimension,
        category=row.category,
        score=row.score,
        passed=row.passed,
        grades=row.grades or {},
        status=ResultStatus(row.status),
        reason=row.reason,
        trace_id=row.trace_id,
        latency_s=row.latency_s,
    )


_ROW_COLUMNS = [c for c in EvalResultRow.__table__.columns if c.name != "trace"]


def load_results(store: Store, ref: str, *, suite: Suite | None = None) -> list[EvalResult]:
    """The rows of a run, ordered by suite, task, variant seed and sample."""
    with transaction(store.engine, store.path, write=False) as conn:
        pk, _ = _resolve(conn, ref)
        query = select(*_ROW_COLUMNS).where(EvalResultRow.run_pk == pk)
        if suite is not None:
            query = query.where(EvalResultRow.suite == Suite(suite).value)
        rows = conn.execute(query).all()
    out = [_result(r) for r in rows]
    out.sort(key=lambda r: (r.suite.value, r.task_id, r.variant_seed or -1, r.sample))
    return out


def done_items(store: Store, ref: str) -> dict[ItemKey, tuple[ResultStatus, str | None]]:
    """Key -> (status, reason) of every stored row of a run (what resume skips)."""
    with transaction(store.engine, store.path, write=False) as conn:
        pk, _ = _resolve(conn, ref)
        rows = conn.execute(
            select(
                EvalResultRow.suite,
                EvalResultRow.task_id,
                EvalResultRow.variant_seed,
                EvalResultRow.sample,
                EvalResultRow.status,
                EvalResultRow.reason,
            ).where(EvalResultRow.run_pk == pk)
        ).all()
    return {(r[0], r[1], r[2], r[3]): (ResultStatus(r[4]), r[5]) for r in rows}


def load_trace(store: Store, ref: str, key: ItemKey) -> dict[str, Any] | None:
    """The stored trace of one item (None: no such row, or the item ran no request)."""
    with transaction(store.engine, store.path, write=False) as conn:
        pk, _ = _resolve(conn, ref)
        packed = conn.execute(
            select(EvalResultRow.trace).where(
                EvalResultRow.run_pk == pk, EvalResultRow.item_key == item_key(key)
            )
        ).scalar_one_or_none()
    if packed is None:
        return None
    data = json.loads(zlib.decompress(packed).decode("utf-8"))
    return data if isinstance(data, dict) else None
