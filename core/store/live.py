"""Store access for what each model server answers with (`core.serving.promote` decides).

    add_live(store, LiveRecord(server=url, ..., action="promote"), baseline=..., expected=pk)
    live_row(store, url)                     # the server's newest row: what is live there
    get_live(store, pk)                      # one row (a rollback's target)
    live_history(store, url)                 # newest first

Rows are never changed: a promotion or a rollback adds one, pointing with `previous` at the
row a rollback from it returns to. Each function is one transaction; `add_live` writes a
promotion and the baseline it replaces (what the server served before its first recorded
promotion) together, and refuses when the server's newest row is no longer the one the caller
decided on (`expected`): two promotions at once cannot both win.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select

from core.store.db import transaction
from core.store.errors import StoreError
from core.store.store import Store
from core.store.tables import LiveModel
from core.store.types import utcnow

LIVE_ACTIONS = ("serving", "promote", "rollback")


@dataclass(frozen=True)
class LiveRecord:
    """What answered on one server from `since` on (see core/store/tables.py, live_models)."""

    server: str
    base_model: str
    model: str
    served_name: str
    action: str
    engine: str | None = None
    adapter: str | None = None
    run: str | None = None
    previous: int | None = None
    note: str | None = None
    since: datetime | None = None
    pk: int = 0


def _record(row: Any) -> LiveRecord:
    m = row._mapping
    return LiveRecord(
        server=m["server"],
        base_model=m["base_model"],
        model=m["model"],
        served_name=m["served_name"],
        action=m["action"],
        engine=m["engine"],
        adapter=m["adapter"],
        run=m["run"],
        previous=m["previous_pk"],
        note=m["note"],
        since=m["since"],
        pk=m["pk"],
    )


def _newest(conn: Connection, server: str) -> LiveRecord | None:
    row = conn.execute(
        select(LiveModel).where(LiveModel.server == server).order_by(LiveModel.pk.desc()).limit(1)
    ).first()
    return _record(row) if row is not None else None


def _insert(conn: Connection, record: LiveRecord, previous: int | None) -> int:
    if record.action not in LIVE_ACTIONS:
        raise StoreError(f"live action must be one of {', '.join(LIVE_ACTIONS)}: {record.action!r}")
    if not record.server or not record.served_name:
        raise StoreError("a live record needs its server and the model id it is served under")
    result = conn.execute(
        insert(LiveModel).values(
            server=record.server,
            engine=record.engine,
            base_model=record.base_model,
            model=record.model,
            adapter=record.adapter,
            served_name=record.served_name,
            run=record.run,
            action=record.action,
            previous_pk=previous,
            note=record.note,
            since=record.since or utcnow(),
        )
    )
    key = result.inserted_primary_key
    if key is None:  # pragma: no cover - SQLite always returns it
        raise StoreError("the database returned no key for a live record")
    return int(key[0])


def add_live(
    store: Store,
    record: LiveRecord,
    *,
    baseline: LiveRecord | None = None,
    expected: int | None = None,
) -> LiveRecord:
    """Make `record` the server's live row, in one transaction. `baseline` (what the server
    served before, when no row of it was valid) is written first and becomes `record`'s
    previous. `expected`: the pk of the newest row the caller decided on (None: it found
    none valid); StoreError when another writer got there first."""
    with transaction(store.engine, store.path, write=True) as conn:
        newest = _newest(conn, record.server)
        if expected is not None and (newest is None or newest.pk != expected):
            raise StoreError(
                f"what is live on {record.server} changed meanwhile (another promotion or "
                "rollback); look again and retry"
            )
        previous = record.previous
        if baseline is not None:
            previous = _insert(conn, baseline, baseline.previous)
        pk = _insert(conn, record, previous)
        row = conn.execute(select(LiveModel).where(LiveModel.pk == pk)).one()
        return _record(row)


def live_row(store: Store, server: str) -> LiveRecord | None:
    """The newest row of `server` (whether its server still serves it is the caller's
    question: a restarted server has forgotten what was loaded into it)."""
    with transaction(store.engine, store.path, write=False) as conn:
        return _newest(conn, server)


def get_live(store: Store, pk: int) -> LiveRecord:
    with transaction(store.engine, store.path, write=False) as conn:
        row = conn.execute(select(LiveModel).where(LiveModel.pk == pk)).first()
    if row is None:
        raise StoreError(f"no live record {pk}")
    return _record(row)


def live_history(store: Store, server: str | None = None, *, limit: int = 50) -> list[LiveRecord]:
    """Rows of `server` (every server when None), newest first."""
    with transaction(store.engine, store.path, write=False) as conn:
        query = select(LiveModel).order_by(LiveModel.pk.desc()).limit(limit)
        if server is not None:
            query = query.where(LiveModel.server == server)
        return [_record(r) for r in conn.execute(query).all()]


def live_servers(store: Store) -> list[LiveRecord]:
    """The newest row of every server that has one, newest first."""
    with transaction(store.engine, store.path, write=False) as conn:
        rows = [_record(r) for r in conn.execute(select(LiveModel).order_by(LiveModel.pk.desc()))]
    seen: set[str] = set()
    out = []
    for row in rows:
        if row.server not in seen:
            seen.add(row.server)
            out.append(row)
    return out
