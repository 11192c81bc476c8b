"""The store facade: one SQLite file, harness versions today, runs/metrics/evals later."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, Engine

from core.harness import Harness, HarnessError, HookKind, folder_files
from core.harness.folder import harness_from_files, mcp_server_data
from core.harness.models import Tool, binding_needs_trust
from core.paths import database_path
from core.store import harness_versions as hv
from core.store import objects
from core.store.db import (
    SQLITE_MAGIC,
    make_engine,
    migrate,
    read_only_filesystem,
    transaction,
    translate_errors,
)
from core.store.errors import StoreError
from core.store.harness_versions import ComponentDiff, VersionInfo
from core.store.renames import with_renames


def _source_hash(source: str) -> bytes:
    return hashlib.sha256(source.encode("utf-8")).digest()


_CacheKey = tuple[bytes, frozenset[bytes]]


def _is_python_hook(path: str) -> bool:
    return path.startswith("hooks/") and path.endswith(".py")


def _file_hashes(files: dict[str, bytes]) -> dict[str, bytes]:
    return {p: hashlib.sha256(b).digest() for p, b in files.items()}


def _python_sources(tree: objects.Tree) -> list[bytes]:
    """Blob hashes of the Python hook sources (= the hashes trust is recorded under)."""
    return [e.blob_hash for p, e in tree.items() if _is_python_hook(p)]


def _apply_trust(harness: Harness, trusted: frozenset[bytes]) -> None:
    for hook in harness.hooks:
        if hook.kind is HookKind.PYTHON and hook.source is not None:
            hook.trusted = _source_hash(hook.source) in trusted


def _tool_trust_hash(tool: Tool, harness: Harness) -> bytes | None:
    """The hash a tool's trust is recorded under, None for a binding that needs none.

    What runs is the binding (a module's function) and, for `mcp:`, the server's command
    line: trusting `mcp:shop/lookup` with one command does not trust another command."""
    if not binding_needs_trust(tool.binding):
        return None
    server = ""
    if tool.binding.startswith("mcp:"):
        declared = harness.mcp_servers.get(tool.binding[4:].split("/", 1)[0])
        if declared is not None:
            server = json.dumps(mcp_server_data(declared), sort_keys=True)
    return _source_hash(f"tool-binding\0{tool.binding}\0{server}")


def _tool_trust(harness: Harness) -> dict[int, bytes]:
    """{index of a tool in harness.tools: its trust hash} for tools whose binding needs trust."""
    out = {}
    for i, tool in enumerate(harness.tools):
        found = _tool_trust_hash(tool, harness)
        if found is not None:
            out[i] = found
    return out


def _comparable(harness: Harness) -> dict[str, Any]:
    """The harness as data, without the `trusted` flags of hooks and tools (the store keeps
    trust apart)."""
    data = harness.model_dump(mode="json")
    for item in [*data["hooks"], *data["tools"]]:
        item.pop("trusted", None)
    return data


class Store:
    """Versioned harness storage in one SQLite database (WAL).

    Open with ``Store.open(path)``; use as a context manager or call ``close()``. Every method
    that writes runs one transaction; every failure a user can cause raises ``StoreError``.
    A Store may be shared between threads (connections come from a pool).
    """

    def __init__(self, engine: Engine, path: Path) -> None:
        self._engine: Engine | None = engine
        self.path = path
        self.tuning = objects.Tuning()
        # Check that every committed harness loads back equal (costs one re-parse per commit).
        self.verify_commits = True
        self._cache: OrderedDict[_CacheKey, Harness] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._cache_size = 8

    @property
    def home(self) -> Path:
        """The workspace this database belongs to: the folder holding it, where its runs/,
        models/ and datasets/ are (`core.paths`), whatever `$HAT_HOME` says."""
        return Path(self.path).parent

    # ------------------------------------------------------------------------- lifecycle

    @classmethod
    def open(cls, path: Path | None = None, *, busy_timeout: float = 5.0) -> Store:
        """Open (creating and migrating to the newest schema) the database at `path`.

        `path` defaults to ``core.paths.database_path()``; `busy_timeout` is how long a write
        waits for another process's write lock before failing with "database is locked".
        """
        if path is None:
            path = database_path()
        path = Path(path).expanduser()
        if path.is_dir():
            raise StoreError(f"not a HAT database (it is a folder): {path}")
        read_only = read_only_filesystem(path)
        if read_only and not path.exists():
            raise StoreError(
                f"no database at {path}, and it cannot be created there: the file system is "
                "read-only (point HAT_HOME at a writable folder)"
            )
        try:
            if not read_only:
                path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and path.stat().st_size > 0:
                with path.open("rb") as fh:
                    if fh.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                        raise StoreError(f"not a HAT database, or the file is corrupt: {path}")
        except OSError as exc:
            raise StoreError(f"cannot open the database file {path}: {exc.strerror}") from None
        engine = make_engine(path, busy_timeout=busy_timeout, read_only=read_only)
        try:
            migrate(engine, path)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine, path)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise StoreError("the store is closed")
        return self._engine

    def _read(self) -> AbstractContextManager[Connection]:
        return transaction(self.engine, self.path, write=False)

    def _write(self) -> AbstractContextManager[Connection]:
        return transaction(self.engine, self.path, write=True)

    # ------------------------------------------------------------------------- versions

    def commit(
        self,
        harness: Harness,
        message: str,
        *,
        parent: str | None = "head",
        tag: str | None = None,
    ) -> VersionInfo:
        """Store `harness` as a new immutable version and return it.

        `parent`: ``"head"`` (the newest version with the same harness name, None if there is
        none), any ref ``resolve`` accepts (labels of ``harness.name``), or None for a root.
        `tag`: a label moved to the new version in the same transaction, so a bad label
        stores nothing.
        Trusted Python hooks have their source hash recorded, so they load back trusted; so
        have trusted python:/mcp: tools their binding (and MCP server command line).
        """
        if not isinstance(harness, Harness):
            raise StoreError(f"expected a Harness, got {type(harness).__name__}")
        if not isinstance(message, str):
            raise StoreError("the commit message must be a string")
        files = {p: t.encode("utf-8") for p, t in folder_files(harness).items()}
        rebuilt = self._check_round_trip(harness, files) if self.verify_commits else None
        trusted_sources = [
            _source_hash(h.source)
            for h in harness.hooks
            if h.kind is HookKind.PYTHON and h.trusted and h.source is not None
        ]
        trusted_sources += [
            found for i, found in _tool_trust(harness).items() if harness.tools[i].trusted
        ]
        with self._write() as conn:
            pk = hv.commit(conn, harness.name, files, message, parent, trusted_sources, self.tuning)
            info = hv.infos(conn, [pk])[pk]
            if tag is not None:
                hv.tag(conn, f"{harness.name}@{tag}" if "@" not in tag else tag, info.id)
            if rebuilt is not None:
                sources = [h for p, h in _file_hashes(files).items() if _is_python_hook(p)]
                trusted = hv.trusted(conn, sources)
        if rebuilt is not None:
            _apply_trust(rebuilt, trusted)
            self._cache_put((bytes.fromhex(info.tree_hash), trusted), rebuilt)
        return info

    def _check_round_trip(self, harness: Harness, files: dict[str, bytes]) -> Harness:
        try:
            rebuilt = harness_from_files(files, trust_python_hooks=False, name=harness.name)
        except HarnessError as exc:
            raise StoreError(
                f"harness {harness.name!r} cannot be stored: its files do not load back:\n{exc}"
            ) from None
        if _comparable(rebuilt) != _comparable(harness):
            raise StoreError(
                f"harness {harness.name!r} cannot be stored exactly: the folder format loses "
                "part of it (" + _first_difference(_comparable(harness), _comparable(rebuilt)) + ")"
            )
        return rebuilt

    def resolve(self, ref: str, harness_name: str | None = None) -> str:
        """Full id of the version `ref` names (id, prefix >= 6 hex, label, name@label, head)."""
        with self._read() as conn:
            return hv.resolve(conn, ref, harness_name).id

    def info(self, ref: str, harness_name: str | None = None) -> VersionInfo:
        """VersionInfo of one version."""
        with self._read() as conn:
            row = hv.resolve(conn, ref, harness_name)
            return hv.infos(conn, [row.pk])[row.pk]

    def files(self, ref: str, harness_name: str | None = None) -> dict[str, str]:
        """The canonical component files of a version, {path: text}."""
        with self._read() as conn:
            row = hv.resolve(conn, ref, harness_name)
            return {p: b.decode("utf-8") for p, b in self._files(conn, row).items()}

    def load(self, ref: str, harness_name: str | None = None) -> Harness:
        """The harness stored as `ref`; Python hooks are trusted iff their source was trusted.

        Each call returns a new object the caller may change freely.
        """
        with self._read() as conn:
            row = hv.resolve(conn, ref, harness_name)
            tree = objects.read_tree(conn, row.tree_pk)
            trusted = hv.trusted(conn, _python_sources(tree))
            key = (objects.tree_hash({p: e.blob_hash for p, e in tree.items()}), trusted)
            cached = self._cache_get(key)
            if cached is None:
                blobs = objects.read_blobs(conn, {e.blob_pk for e in tree.values()})
        if cached is not None:
            return self._with_tool_trust(cached)
        files = {path: blobs[entry.blob_pk] for path, entry in sorted(tree.items())}
        try:
            harness = harness_from_files(files, trust_python_hooks=False, name=row.harness_name)
        except HarnessError as exc:
            raise StoreError(
                f"version {row.id[:12]} of {row.harness_name!r} no longer validates:\n{exc}"
            ) from None
        _apply_trust(harness, trusted)
        self._cache_put(key, harness)
        return self._with_tool_trust(harness.model_copy(deep=True))

    def _with_tool_trust(self, harness: Harness) -> Harness:
        """`harness` with each python:/mcp: tool trusted iff its binding's trust was recorded
        (applied after the cache, which holds them untrusted, as loaded)."""
        hashes = _tool_trust(harness)
        if hashes:
            with self._read() as conn:
                trusted = hv.trusted(conn, list(hashes.values()))
            for i, found in hashes.items():
                harness.tools[i].trusted = found in trusted
        return harness

    # Loaded harnesses by (tree hash, trusted sources among its hooks): versions are immutable,
    # so a hit is always right; the cache only saves re-parsing (the expensive part of a load).
    @property
    def cache_size(self) -> int:
        """How many loaded harnesses are kept in memory (0 turns the cache off)."""
        return self._cache_size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        with self._cache_lock:
            self._cache_size = size
            while len(self._cache) > max(size, 0):
                self._cache.popitem(last=False)

    def _cache_get(self, key: _CacheKey) -> Harness | None:
        with self._cache_lock:
            harness = self._cache.get(key)
            if harness is None:
                return None
            self._cache.move_to_end(key)
        return harness.model_copy(deep=True)

    def _cache_put(self, key: _CacheKey, harness: Harness) -> None:
        with self._cache_lock:
            if self._cache_size <= 0:
                return
            self._cache[key] = harness
            self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    @staticmethod
    def _files(conn: Connection, row: hv.VersionRow) -> dict[str, bytes]:
        tree = objects.read_tree(conn, row.tree_pk)
        blobs = objects.read_blobs(conn, {e.blob_pk for e in tree.values()})
        return {path: blobs[entry.blob_pk] for path, entry in sorted(tree.items())}

    def log(self, harness_name: str | None = None, limit: int | None = None) -> list[VersionInfo]:
        """Versions, newest first (all harness names when `harness_name` is None)."""
        with self._read() as conn:
            return hv.log(conn, harness_name, limit)

    def diff(self, a: str | None, b: str, *, renames: bool = True) -> list[ComponentDiff]:
        """Per-component changes from version `a` to version `b`, sorted by path; `a` None
        compares with nothing (every component of `b` added: a first version). With
        `renames`, a component gone and one new that are the same one renamed are one
        `renamed` change (core/store/renames.py), as git shows them."""

        with self._read() as conn:
            row_a = hv.resolve(conn, a) if a is not None else None
            row_b = hv.resolve(conn, b)
            diffs = hv.diff(conn, row_a, row_b)
        if not renames or row_a is None or not any(d.change == "removed" for d in diffs):
            return diffs
        return with_renames(diffs, self.load(row_a.id), self.load(row_b.id))

    def rollback(self, ref: str, message: str | None = None) -> VersionInfo:
        """A new version whose content equals `ref`'s; its parent is that harness's head."""
        with self._write() as conn:
            pk = hv.rollback(conn, ref, message)
            return hv.infos(conn, [pk])[pk]

    def harness_names(self) -> list[str]:
        with self._read() as conn:
            return hv.harness_names(conn)

    # ------------------------------------------------------------------------- labels

    def tag(self, label: str, ref: str) -> None:
        """Create or move `label` (of the version's harness name) to the version `ref` names.

        `label` may be written ``name@label``; the version must then belong to ``name``.
        """
        with self._write() as conn:
            hv.tag(conn, label, ref)

    def untag(self, label: str, harness_name: str) -> None:
        with self._write() as conn:
            hv.untag(conn, label, harness_name)

    def labels(self, harness_name: str | None = None) -> dict[str, str]:
        """{label: version id} of one harness; with no name, {"name@label": id} of all."""
        with self._read() as conn:
            return hv.labels(conn, harness_name)

    # ------------------------------------------------------------------------- maintenance

    def trust_tools(self, harness: Harness) -> None:
        """Record every python:/mcp: tool binding of `harness` (with its MCP server's command
        line) as trusted, so versions holding them load back trusted (the studio's "trust
        these tools")."""
        hashes = list(_tool_trust(harness).values())
        if hashes:
            with self._write() as conn:
                hv.record_trust(conn, hashes)

    def trust_source(self, source: str) -> None:
        """Record a Python hook source as trusted (the studio's "trust this hook")."""
        with self._write() as conn:
            hv.record_trust(conn, [_source_hash(source)])

    def set_trust(self, harness: Harness, kind: str, name: str, trusted: bool) -> bool:
        """Grant (`trusted`) or withdraw trust in one Python hook or one python:/mcp:/http
        tool of `harness` (the studio's Trust panel), recorded by what runs — the hook's
        source, the tool's binding with its server's command line — so every version with
        that same code follows, and changed code asks again. Sets the flag on `harness` too;
        False when it has no such hook or tool to trust."""
        found: bytes | None = None
        target: Any = None
        if kind == "hook":
            target = next((h for h in harness.hooks if h.name == name), None)
            if target is not None and target.kind is HookKind.PYTHON and target.source:
                found = _source_hash(target.source)
        elif kind == "tool":
            target = harness.tool(name)
            if target is not None:
                found = _tool_trust_hash(target, harness)
        if found is None:
            return False
        with self._write() as conn:
            if trusted:
                hv.record_trust(conn, [found])
            else:
                hv.forget_trust(conn, [found])
        target.trusted = trusted  # (the load cache is keyed by the trusted sources too)
        return True

    def checkpoint(self, *, vacuum: bool = False) -> None:
        """Fold the WAL into the main file (and VACUUM it when asked)."""
        with translate_errors(self.path):
            raw = self.engine.raw_connection()  # outside any transaction, as VACUUM needs
            try:
                cursor = raw.cursor()
                if vacuum:
                    cursor.execute("VACUUM")
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                cursor.close()
            finally:
                raw.close()


def _first_difference(a: Any, b: Any, where: str = "") -> str:
    """Where two JSON-like values first differ, as a dotted path."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key), f"{where}.{key}" if where else key)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return f"{where or 'harness'}: {_short(a)} != {_short(b)}"


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
