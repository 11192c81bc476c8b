"""Engine, transactions and migrations of the SQLite database.

* WAL journal (readers never wait for the writer), foreign keys on, a busy timeout so a short
  write by another process is waited for rather than reported.
* pysqlite's own transaction handling is switched off and we emit BEGIN ourselves: read
  transactions are ``BEGIN`` (deferred), write transactions ``BEGIN IMMEDIATE``, so a writer
  takes the write lock before it reads what it is about to change (no lost update, no
  deadlock-style SQLITE_BUSY on lock upgrade). Each write is one transaction.
* Every DB-API error is turned into a ``StoreError`` with a message for the user.
* Alembic migrations live in ``core/store/migrations`` and run in code on open; no alembic.ini
  is needed at run time (one ships next to this file for developers' ``alembic revision``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, inspect, select
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from core.store.errors import StoreError

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
SQLITE_MAGIC = b"SQLite format 3\x00"
_WRITE = "hat_write"


def read_only_filesystem(path: Path) -> bool:
    """Whether `path` (or, when it does not exist, its nearest existing parent) sits on a file
    system mounted read-only. False where the platform cannot tell."""
    target = Path(path)
    while not target.exists() and target != target.parent:
        target = target.parent
    try:
        return bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):
        return False


def is_read_only(engine: Engine) -> bool:
    return bool(engine.url.query.get("mode") == "ro")


def make_engine(path: Path, *, busy_timeout: float = 5.0, read_only: bool = False) -> Engine:
    """An engine on the SQLite file at `path`, configured as described in the module doc.

    `read_only` (a database on a read-only file system) opens it with SQLite's `mode=ro`, and
    `immutable=1` when no WAL file exists beside it (SQLite could not create the shared-memory
    file there); nothing is ever written, and every write transaction is a StoreError.
    """
    url = f"sqlite:///{path}"
    if read_only:
        wal = Path(f"{path}-wal")
        shm = Path(f"{path}-shm")
        extra = "" if wal.exists() and shm.exists() else "&immutable=1"
        url = f"sqlite:///file:{quote(str(path))}?mode=ro{extra}&uri=true"
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": busy_timeout},
    )
    timeout_ms = max(0, int(busy_timeout * 1000))

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {timeout_ms}")
            cursor.execute("PRAGMA foreign_keys = ON")
            if not read_only:
                cursor.execute("PRAGMA journal_mode = WAL")
                cursor.execute("PRAGMA synchronous = NORMAL")  # durable with WAL, much faster
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def describe_error(exc: BaseException, path: Path) -> str:
    """A user-facing sentence for a database failure."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    text = str(orig)
    low = text.lower()
    if "locked" in low or "busy" in low:
        return f"database is locked by another process: {path}"
    if "not a database" in low or "malformed" in low or "file is encrypted" in low:
        return f"not a HAT database, or the file is corrupt: {path}"
    if "readonly" in low or "read-only" in low:
        return f"database is read-only: {path}"
    if "unable to open" in low:
        return f"cannot open the database file: {path}"
    return f"database error on {path}: {text}"


@contextmanager
def translate_errors(path: Path) -> Iterator[None]:
    """Turn DB-API and SQLAlchemy errors raised inside the block into StoreError."""
    try:
        yield
    except StoreError:
        raise
    except (SQLAlchemyError, sqlite3.Error) as exc:
        raise StoreError(describe_error(exc, path)) from exc


@contextmanager
def transaction(engine: Engine, path: Path, *, write: bool) -> Iterator[Connection]:
    """One transaction: committed when the block ends, rolled back (entirely) if it raises."""
    if write and is_read_only(engine):
        raise StoreError(
            f"the database {path} is on a read-only file system: it can be read, not changed "
            "(remount it read-write, or point HAT_HOME at a writable folder)"
        )
    with translate_errors(path), engine.connect() as conn:
        if write:
            conn = conn.execution_options(**{_WRITE: True})
        with conn.begin():
            yield conn


# ----------------------------------------------------------------------------- migrations


def alembic_config(connection: Connection | None = None) -> Config:
    """An alembic Config built in code; `connection` is what env.py migrates."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships migrations
        raise StoreError("the store has no migrations")
    return head


def _check_schema(conn: Connection, path: Path) -> bool:
    """True when the database needs migrating; StoreError when it is not ours or too new."""
    script = ScriptDirectory.from_config(alembic_config())
    known = {rev.revision for rev in script.walk_revisions()}
    tables = set(inspect(conn).get_table_names())
    if "alembic_version" not in tables:
        if tables:
            raise StoreError(f"not a HAT database (it has other tables): {path}")
        return True
    current = set(MigrationContext.configure(conn).get_current_heads())
    unknown = sorted(current - known)
    if unknown:
        raise StoreError(
            f"the database {path} has schema revision {', '.join(unknown)}, newer than this "
            f"program (which knows up to {script.get_current_head()}); update HAT Studio"
        )
    return current != {script.get_current_head()}


def migrate(engine: Engine, path: Path) -> None:
    """Create or upgrade the schema to head, in one write transaction (no-op when current)."""
    with transaction(engine, path, write=False) as conn:
        needed = _check_schema(conn, path)
    if not needed:
        return
    if is_read_only(engine):
        raise StoreError(
            f"the database {path} needs a schema migration but is on a read-only file system "
            "(remount it read-write once, or point HAT_HOME at a writable copy)"
        )
    with transaction(engine, path, write=True) as conn:
        # Re-check under the write lock: another process may have migrated meanwhile.
        if _check_schema(conn, path):
            command.upgrade(alembic_config(conn), "head")


def resolve_id(
    conn: Connection, table: Any, ref: str, *, noun: str, listed_by: str
) -> tuple[int, str]:
    """(pk, id) of the row of `table` (a mapped class with `pk` and `id` columns) that `ref`
    names: its exact id or a unique prefix of one, as every `hat … RUN` argument accepts.
    StoreError names the `noun` and where the ids are `listed_by` when none or several match."""
    pk_col, id_col = table.pk, table.id
    exact = conn.execute(select(pk_col, id_col).where(id_col == ref)).first()
    if exact is not None:
        return exact[0], exact[1]
    if not ref:
        raise StoreError(f"no {noun} id given")
    like = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = conn.execute(select(pk_col, id_col).where(id_col.like(like, escape="\\")).limit(3)).all()
    if not rows:
        raise StoreError(f"unknown {noun} {ref!r} ({listed_by} shows the runs)")
    if len(rows) > 1:
        names = ", ".join(r[1] for r in rows)
        raise StoreError(f"{noun} id prefix {ref!r} is ambiguous: {names} ...")
    return rows[0][0], rows[0][1]
