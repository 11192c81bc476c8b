"""Store access for training runs, their events and checkpoints.

    with Store.open() as store:
        add_run(store, RunRecord(id=..., stage="sft", status="created", config=yaml, ...))
        ingest_events(store, run_id, events, offset)   # copy new JSONL lines, one transaction
        update_run(store, run_id, status="done", ended_at=utcnow())
        get_run(store, run_id); list_runs(store); run_events(store, run_id, kind="log")

Each function is one transaction; failures a user can cause raise ``StoreError``. What the
rows mean (statuses, the event stream, resumes) is defined in ``core.train``; this module only
keeps them. The resume rule in particular is ``core.train.events.Resume``, which
``ingest_events`` is handed (``resume_of``) because the store sits floors below core.train
and may not import it: the store applies the rule, it never decides it. A run id may be given
by a unique prefix.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from core.store.db import resolve_id, transaction
from core.store.errors import StoreError
from core.store.store import Store
from core.store.tables import TrainCheckpoint, TrainEvent, TrainRun
from core.store.types import utcnow

RUN_STATUSES = ("created", "running", "done", "failed", "stopped", "cancelled")
_CUT_CHUNK = 500
"""Rows a resume marks superseded per UPDATE (SQLite limits a statement's variables)."""


class Cut(Protocol):
    """What a stream event cuts from the run's curve and progress (``core.train.events.Resume``,
    the one implementation; a Protocol here so the store can apply it without importing it)."""

    def supersedes(self, step: float | None) -> bool: ...

    def rewind(self, step: int) -> int: ...


ResumeOf = Callable[[Mapping[str, Any]], Cut | None]
"""The cut an event makes, None for one that cuts nothing (``core.train.events.Resume.of``)."""


@dataclass(frozen=True)
class RunRecord:
    """One training run (a stage, or a pipeline of stages)."""

    id: str
    stage: str
    status: str
    config: str
    run_dir: str
    parent: str | None = None
    reason: str | None = None
    harness_version: str | None = None
    dataset_hash: str | None = None
    packages: dict[str, str] = field(default_factory=dict)
    code_revision: str | None = None
    command: list[str] | None = None
    pid: int | None = None
    exit_code: int | None = None
    step: int = 0
    total_steps: int | None = None
    events_offset: int = 0
    outputs: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("done", "failed", "stopped", "cancelled")


@dataclass(frozen=True)
class CheckpointRecord:
    step: int
    path: str
    created_at: datetime


_JSON_FIELDS = {"packages", "command", "outputs"}
_COLUMNS = [f.name for f in fields(RunRecord) if f.name not in ("parent",)]


def _to_record(row: Any, ids: dict[int, str]) -> RunRecord:
    m = row._mapping
    data: dict[str, Any] = {}
    for name in _COLUMNS:
        value = m[name]
        if name in _JSON_FIELDS:
            value = json.loads(value) if value else ({} if name != "command" else None)
        data[name] = value
    data["parent"] = ids.get(m["parent_pk"]) if m["parent_pk"] is not None else None
    return RunRecord(**data)


def _values(record: RunRecord) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _COLUMNS:
        value = getattr(record, name)
        if name in _JSON_FIELDS:
            value = json.dumps(value, sort_keys=True) if value is not None else None
        out[name] = value
    return out


def _resolve(conn: Connection, ref: str) -> tuple[int, str]:
    """(pk, id) of the run `ref` names: an exact id or a unique prefix."""
    return resolve_id(conn, TrainRun, ref, noun="run", listed_by="hat train list")


def _ids(conn: Connection) -> dict[int, str]:
    return {pk: id_ for pk, id_ in conn.execute(select(TrainRun.pk, TrainRun.id)).all()}


def add_run(store: Store, record: RunRecord) -> RunRecord:
    if record.status not in RUN_STATUSES:
        raise StoreError(f"run status must be one of {', '.join(RUN_STATUSES)}")
    with transaction(store.engine, store.path, write=True) as conn:
        if conn.execute(select(TrainRun.pk).where(TrainRun.id == record.id)).first() is not None:
            raise StoreError(f"a run {record.id!r} already exists")
        values = _values(replace(record, created_at=record.created_at or utcnow()))
        values["parent_pk"] = _resolve(conn, record.parent)[0] if record.parent else None
        conn.execute(insert(TrainRun).values(**values))
    return get_run(store, record.id)


def get_run(store: Store, ref: str) -> RunRecord:
    with transaction(store.engine, store.path, write=False) as conn:
        pk, _ = _resolve(conn, ref)
        row = conn.execute(select(TrainRun).where(TrainRun.pk == pk)).one()
        return _to_record(row, _ids(conn))


def find_run(store: Store, ref: str) -> RunRecord | None:
    try:
        return get_run(store, ref)
    except StoreError:
        return None


def list_runs(
    store: Store, *, stage: str | None = None, parent: str | None = None
) -> list[RunRecord]:
    """Runs, oldest first (only one stage's, or only a pipeline's stages, when given)."""
    with transaction(store.engine, store.path, write=False) as conn:
        query = select(TrainRun).order_by(TrainRun.pk)
        if stage is not None:
            query = query.where(TrainRun.stage == stage)
        if parent is not None:
            query = query.where(TrainRun.parent_pk == _resolve(conn, parent)[0])
        ids = _ids(conn)
        return [_to_record(row, ids) for row in conn.execute(query).all()]


def update_run(store: Store, ref: str, **changes: Any) -> RunRecord:
    """Set fields of a run (status, reason, pid, exit_code, outputs, ...)."""
    unknown = set(changes) - set(_COLUMNS) - {"parent"}
    if unknown:
        raise StoreError(f"unknown run fields: {', '.join(sorted(unknown))}")
    if "status" in changes and changes["status"] not in RUN_STATUSES:
        raise StoreError(f"run status must be one of {', '.join(RUN_STATUSES)}")
    values = {
        k: (json.dumps(v, sort_keys=True) if k in _JSON_FIELDS and v is not None else v)
        for k, v in changes.items()
    }
    with transaction(store.engine, store.path, write=True) as conn:
        pk, _ = _resolve(conn, ref)
        if values:
            conn.execute(update(TrainRun).where(TrainRun.pk == pk).values(**values))
    return get_run(store, ref)


def ingest_events(
    store: Store,
    ref: str,
    events: Sequence[dict[str, Any]],
    offset: int,
    *,
    resume_of: ResumeOf,
) -> RunRecord:
    """Copy new stream events (by seq; repeats ignored), checkpoints and progress; one write.

    An event for which `resume_of` gives a cut (a `resume`: core.train.events.Resume) marks
    the stored log events before it that the cut supersedes and rewinds the progress, so the
    curve in the store is the one the live monitor draws from the same stream.
    """
    with transaction(store.engine, store.path, write=True) as conn:
        pk, _ = _resolve(conn, ref)
        row = conn.execute(
            select(TrainRun.step, TrainRun.total_steps).where(TrainRun.pk == pk)
        ).one()
        step, total = row[0], row[1]
        for event in events:
            seq = event.get("seq")
            if not isinstance(seq, int):
                continue
            kind = str(event.get("event", ""))[:16]
            ev_step = event.get("step") if isinstance(event.get("step"), int) else None
            cut = resume_of(event)
            if cut is not None:
                _supersede(conn, pk, seq, cut)
                step = cut.rewind(step)
            conn.execute(
                sqlite_insert(TrainEvent)
                .values(
                    run_pk=pk,
                    seq=seq,
                    time=float(event.get("time") or 0.0),
                    kind=kind,
                    step=ev_step,
                    data=json.dumps(event, sort_keys=True),
                    superseded=False,
                )
                .on_conflict_do_nothing()
            )
            if kind == "log" and ev_step is not None:
                step = max(step, ev_step)
                if isinstance(event.get("total"), int):
                    total = event["total"]
            elif kind == "checkpoint" and ev_step is not None:
                conn.execute(
                    sqlite_insert(TrainCheckpoint)
                    .values(
                        run_pk=pk,
                        step=ev_step,
                        path=str(event.get("path", "")),
                        created_at=utcnow(),
                    )
                    .on_conflict_do_update(
                        index_elements=["run_pk", "step"], set_={"path": str(event.get("path", ""))}
                    )
                )
        conn.execute(
            update(TrainRun)
            .where(TrainRun.pk == pk)
            .values(events_offset=offset, step=step, total_steps=total)
        )
    return get_run(store, ref)


def _supersede(conn: Connection, pk: int, seq: int, cut: Cut) -> None:
    """Mark the run's live log rows written before event `seq` that `cut` supersedes. The
    rule is applied in Python to the candidate rows (not restated as a SQL condition), so
    the store cannot drift from it; a resume is rare and a run's log rows are few."""
    rows = conn.execute(
        select(TrainEvent.seq, TrainEvent.step).where(
            TrainEvent.run_pk == pk,
            TrainEvent.kind == "log",
            TrainEvent.seq < seq,
            TrainEvent.superseded.is_(False),
        )
    ).all()
    cut_seqs = [row_seq for row_seq, step in rows if cut.supersedes(step)]
    for start in range(0, len(cut_seqs), _CUT_CHUNK):
        chunk = cut_seqs[start : start + _CUT_CHUNK]
        conn.execute(
            update(TrainEvent)
            .where(TrainEvent.run_pk == pk, TrainEvent.seq.in_(chunk))
            .values(superseded=True)
        )


def run_events(
    store: Store, ref: str, *, kind: str | None = None, include_superseded: bool = False
) -> list[dict[str, Any]]:
    """The stored events of a run in stream order (log events a resume replaced left out)."""
    with transaction(store.engine, store.path, write=False) as conn:
        pk, _ = _resolve(conn, ref)
        query = select(TrainEvent.data).where(TrainEvent.run_pk == pk).order_by(TrainEvent.seq)
        if kind is not None:
            query = query.where(TrainEvent.kind == kind)
        if not include_superseded:
            query = query.where(TrainEvent.superseded.is_(False))
        return [json.loads(r[0]) for r in conn.execute(query).all()]


def run_checkpoints(store: Store, ref: str) -> list[CheckpointRecord]:
    with transaction(store.engine, store.path, write=False) as conn:
        pk, _ = _resolve(conn, ref)
        rows = conn.execute(
            select(TrainCheckpoint)
            .where(TrainCheckpoint.run_pk == pk)
            .order_by(TrainCheckpoint.step)
        ).all()
        return [CheckpointRecord(r.step, r.path, r.created_at) for r in rows]
