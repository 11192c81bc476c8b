"""Store access for the model registry and per-request latency rows.

    with Store.open() as store:
        add_model(store, ModelRecord(name="demo", kind="base", source="gguf", location=dir))
        get_model(store, "demo")
        add_latency(store, [RequestRow(...)])        # one transaction for all rows
        latency_rows(store, session="bench-...")

Each function is one transaction; failures a user can cause raise ``StoreError``. The rules
of the registry (folders, GGUF import, what "managed" means) live in ``core.models``; this
module only keeps the rows.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select
from sqlalchemy.exc import IntegrityError

from core.store.db import transaction
from core.store.errors import StoreError
from core.store.store import Store
from core.store.tables import LatencyCall, LatencyRequest, ModelEntry
from core.store.types import utcnow

MODEL_KINDS = ("base", "adapter", "merged")
MODEL_SOURCES = ("folder", "hub", "gguf", "demo", "training")


@dataclass(frozen=True)
class ModelRecord:
    """One registered model. `location` is a folder path, or the hub id when source=hub."""

    name: str
    kind: str
    source: str
    location: str
    revision: str | None = None
    managed: bool = False
    base: str | None = None
    architecture: str | None = None
    parameters: int | None = None
    weight_bytes: int | None = None
    dtype: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


def _rows(conn: Connection) -> list[ModelRecord]:
    entries = [r._mapping for r in conn.execute(select(ModelEntry).order_by(ModelEntry.pk))]
    names = {r["pk"]: r["name"] for r in entries}
    return [
        ModelRecord(
            name=r["name"],
            kind=r["kind"],
            source=r["source"],
            location=r["location"],
            revision=r["revision"],
            managed=bool(r["managed"]),
            base=names.get(r["base_pk"]) if r["base_pk"] is not None else None,
            architecture=r["architecture"],
            parameters=r["parameters"],
            weight_bytes=r["weight_bytes"],
            dtype=r["dtype"],
            meta=json.loads(r["meta"] or "{}"),
            created_at=r["created_at"],
        )
        for r in entries
    ]


def _validate(record: ModelRecord) -> None:
    if not record.name or not record.name.strip() or record.name != record.name.strip():
        raise StoreError(f"invalid model name {record.name!r}")
    if record.kind not in MODEL_KINDS:
        raise StoreError(f"model kind must be one of {', '.join(MODEL_KINDS)}: {record.kind!r}")
    if record.source not in MODEL_SOURCES:
        raise StoreError(
            f"model source must be one of {', '.join(MODEL_SOURCES)}: {record.source!r}"
        )
    if record.kind in ("adapter", "merged") and record.base is None:
        raise StoreError(f"a {record.kind} model needs its base model")


def add_model(store: Store, record: ModelRecord) -> ModelRecord:
    """Register `record`; StoreError if the name is taken or the base model is unknown."""
    _validate(record)
    with transaction(store.engine, store.path, write=True) as conn:
        existing = conn.execute(select(ModelEntry.pk).where(ModelEntry.name == record.name))
        if existing.first() is not None:
            raise StoreError(f"a model named {record.name!r} is already registered")
        base_pk = None
        if record.base is not None:
            base_pk = conn.execute(
                select(ModelEntry.pk).where(ModelEntry.name == record.base)
            ).scalar()
            if base_pk is None:
                raise StoreError(f"unknown base model {record.base!r}")
        try:
            conn.execute(
                insert(ModelEntry).values(
                    name=record.name,
                    kind=record.kind,
                    source=record.source,
                    location=record.location,
                    revision=record.revision,
                    managed=record.managed,
                    base_pk=base_pk,
                    architecture=record.architecture,
                    parameters=record.parameters,
                    weight_bytes=record.weight_bytes,
                    dtype=record.dtype,
                    meta=json.dumps(record.meta, sort_keys=True),
                    created_at=record.created_at or utcnow(),
                )
            )
        except IntegrityError:
            raise StoreError(f"a model named {record.name!r} is already registered") from None
        return next(r for r in _rows(conn) if r.name == record.name)


def find_model(store: Store, name: str) -> ModelRecord | None:
    with transaction(store.engine, store.path, write=False) as conn:
        return next((r for r in _rows(conn) if r.name == name), None)


def get_model(store: Store, name: str) -> ModelRecord:
    record = find_model(store, name)
    if record is None:
        names = ", ".join(r.name for r in list_models(store)) or "none registered"
        raise StoreError(f"unknown model {name!r} (models: {names})")
    return record


def list_models(store: Store) -> list[ModelRecord]:
    """Every registered model, oldest first."""
    with transaction(store.engine, store.path, write=False) as conn:
        return _rows(conn)


def remove_model(store: Store, name: str) -> ModelRecord:
    """Unregister `name` (the caller deletes managed folders); refused while others build on it."""
    with transaction(store.engine, store.path, write=True) as conn:
        records = _rows(conn)
        record = next((r for r in records if r.name == name), None)
        if record is None:
            raise StoreError(f"unknown model {name!r}")
        children = [r.name for r in records if r.base == name]
        if children:
            raise StoreError(
                f"model {name!r} is the base of {', '.join(children)}; remove those first"
            )
        conn.execute(delete(ModelEntry).where(ModelEntry.name == name))
        return record


# ----------------------------------------------------------------------------- latency


@dataclass
class CallRow:
    """One model call of a request, as the client measured it."""

    idx: int
    e2e_s: float
    ttft_s: float | None = None
    tpot_s: float | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    token_source: str | None = None
    error: str | None = None


@dataclass
class RequestRow:
    """One agent request: viewer message to final reply."""

    request_id: str
    session: str
    source: str
    status: str
    e2e_s: float
    model_calls: int
    tool_calls: int
    hook_retries: int
    hook_blocks: int
    viewer_message: str
    started_at: datetime
    engine: str | None = None
    model: str | None = None
    harness: str | None = None
    task_id: str | None = None
    warmup: bool = False
    final_reply: str | None = None
    error: str | None = None
    calls: list[CallRow] = field(default_factory=list)


_REQUEST_FIELDS = (
    "request_id",
    "session",
    "source",
    "engine",
    "model",
    "harness",
    "task_id",
    "status",
    "warmup",
    "e2e_s",
    "model_calls",
    "tool_calls",
    "hook_retries",
    "hook_blocks",
    "viewer_message",
    "final_reply",
    "error",
    "started_at",
)
_CALL_FIELDS = (
    "idx",
    "ttft_s",
    "tpot_s",
    "e2e_s",
    "prompt_tokens",
    "output_tokens",
    "token_source",
    "error",
)


def add_latency(store: Store, rows: Sequence[RequestRow]) -> None:
    """Store request rows and their call rows, all in one transaction."""
    if not rows:
        return
    with transaction(store.engine, store.path, write=True) as conn:
        for row in rows:
            try:
                insert_latency(conn, row)
            except IntegrityError:
                raise StoreError(f"latency of request {row.request_id} is already stored") from None


def insert_latency(conn: Connection, row: RequestRow, *, skip_stored: bool = False) -> None:
    """One request row and its call rows, inside the caller's transaction (an evaluation
    stores an item's latency in the item's own). A request id stored already raises
    IntegrityError, or is left as it is with `skip_stored` (a resumed run meets its own)."""
    if skip_stored:
        stored = conn.execute(
            select(LatencyRequest.pk).where(LatencyRequest.request_id == row.request_id)
        ).first()
        if stored is not None:
            return
    pk = conn.execute(
        insert(LatencyRequest).values(**{f: getattr(row, f) for f in _REQUEST_FIELDS})
    ).inserted_primary_key
    if pk is None:  # pragma: no cover - SQLite always returns it
        raise StoreError("the database returned no key for a latency row")
    if row.calls:
        conn.execute(
            insert(LatencyCall),
            [{"request_pk": pk[0], **{f: getattr(c, f) for f in _CALL_FIELDS}} for c in row.calls],
        )


def latency_rows(
    store: Store, session: str | None = None, *, include_warmup: bool = True
) -> list[RequestRow]:
    """Stored requests (of one session when given) in insertion order, with their calls."""
    with transaction(store.engine, store.path, write=False) as conn:
        query = select(LatencyRequest).order_by(LatencyRequest.pk)
        if session is not None:
            query = query.where(LatencyRequest.session == session)
        if not include_warmup:
            query = query.where(LatencyRequest.warmup.is_(False))
        requests = [r._mapping for r in conn.execute(query).all()]
        pks = [r["pk"] for r in requests]
        calls: dict[int, list[CallRow]] = {pk: [] for pk in pks}
        if pks:
            call_query = (
                select(LatencyCall)
                .where(LatencyCall.request_pk.in_(pks))
                .order_by(LatencyCall.request_pk, LatencyCall.idx)
            )
            for c in conn.execute(call_query).all():
                m = c._mapping
                calls[m["request_pk"]].append(CallRow(**{f: m[f] for f in _CALL_FIELDS}))
        return [
            RequestRow(**{f: r[f] for f in _REQUEST_FIELDS}, calls=calls[r["pk"]]) for r in requests
        ]


def latency_sessions(store: Store) -> list[tuple[str, int]]:
    """(session, number of requests) for every session, oldest first."""
    with transaction(store.engine, store.path, write=False) as conn:
        rows = conn.execute(
            select(LatencyRequest.session, LatencyRequest.pk).order_by(LatencyRequest.pk)
        ).all()
    counts: dict[str, int] = {}
    for session, _pk in rows:
        counts[session] = counts.get(session, 0) + 1
    return list(counts.items())
