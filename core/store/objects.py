"""Content-addressed blobs and trees (see ``core.store.tables`` for the layout).

All functions take an open Connection inside the caller's transaction and touch the database
with a handful of set-based statements, never one query per component.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, bindparam, insert, select, text

from core.store import delta
from core.store.errors import StoreError
from core.store.tables import HarnessBlob, HarnessPath, HarnessTree, HarnessTreeEntry

T = TypeVar("T")
_CHUNK = 500  # bound parameters per IN list (SQLite's limit is far above, but stay modest)


@dataclass(frozen=True)
class Tuning:
    """Storage trade-offs; tests shrink them to exercise snapshots and chain limits."""

    tree_snapshot_every: int = 32  # a tree's delta chain is at most this long
    blob_chain_max: int = 32  # a blob is stored in full at least every this many deltas
    delta_max_ratio: float = 0.75  # keep a delta only if smaller than this fraction of the text


@dataclass(frozen=True)
class TreeEntry:
    blob_pk: int
    blob_hash: bytes


Tree = dict[str, TreeEntry]  # path -> blob


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def tree_hash(hashes: Mapping[str, bytes]) -> bytes:
    """sha256 over the sorted {path: blob hash} map; equal content <=> equal tree hash."""
    h = hashlib.sha256()
    for path in sorted(hashes):
        h.update(path.encode("utf-8"))
        h.update(b"\0")
        h.update(hashes[path].hex().encode("ascii"))
        h.update(b"\n")
    return h.digest()


def chunks(items: Sequence[T], size: int = _CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ----------------------------------------------------------------------------- reading


_TREE_CHAIN = text(
    """
    WITH RECURSIVE chain(pk, base_pk, depth) AS (
        SELECT pk, base_pk, depth FROM harness_trees WHERE pk = :pk
        UNION ALL
        SELECT t.pk, t.base_pk, t.depth FROM harness_trees t JOIN chain c ON t.pk = c.base_pk
    )
    SELECT c.depth, p.path, e.blob_pk, b.hash
    FROM chain c
    JOIN harness_tree_entries e ON e.tree_pk = c.pk
    JOIN harness_paths p ON p.pk = e.path_pk
    LEFT JOIN harness_blobs b ON b.pk = e.blob_pk
    ORDER BY c.depth
    """
)


def read_tree(conn: Connection, tree_pk: int) -> Tree:
    """The full {path: blob} map of a tree: its snapshot plus the deltas down to it.

    The result is checked against the stored tree hash (StoreError when they disagree).
    """
    tree: Tree = {}
    for _depth, path, blob_pk, blob_hash in conn.execute(_TREE_CHAIN, {"pk": tree_pk}):
        if blob_pk is None:
            tree.pop(path, None)
        else:
            tree[path] = TreeEntry(blob_pk, bytes(blob_hash))
    stored = conn.execute(select(HarnessTree.hash).where(HarnessTree.pk == tree_pk)).scalar_one()
    if tree_hash({p: e.blob_hash for p, e in tree.items()}) != bytes(stored):
        raise StoreError(f"corrupt store: tree {bytes(stored).hex()[:12]} fails its hash check")
    return tree


_BLOB_CHAIN = text(
    """
    WITH RECURSIVE chain(pk) AS (
        SELECT pk FROM harness_blobs WHERE pk IN :pks
        UNION
        SELECT b.base_pk FROM harness_blobs b JOIN chain c ON b.pk = c.pk
        WHERE b.base_pk IS NOT NULL
    )
    SELECT b.pk, b.base_pk, b.depth, b.hash, b.size, b.data
    FROM harness_blobs b JOIN chain c ON b.pk = c.pk
    """
).bindparams(bindparam("pks", expanding=True))


@dataclass(frozen=True)
class _BlobRow:
    base_pk: int | None
    depth: int
    hash: bytes
    size: int
    data: bytes


def _blob_rows(conn: Connection, pks: Iterable[int]) -> dict[int, _BlobRow]:
    rows: dict[int, _BlobRow] = {}
    wanted = sorted(set(pks))
    for chunk in chunks(wanted):
        for pk, base_pk, depth, blob_hash, size, data in conn.execute(
            _BLOB_CHAIN, {"pks": list(chunk)}
        ):
            rows[pk] = _BlobRow(base_pk, depth, bytes(blob_hash), size, bytes(data))
    return rows


def read_blobs(conn: Connection, pks: Iterable[int]) -> dict[int, bytes]:
    """Decoded, hash-checked contents of the given blobs (delta chains fetched in one query)."""
    wanted = set(pks)
    rows = _blob_rows(conn, wanted)
    out: dict[int, bytes] = {}
    for pk in wanted:
        _decode(pk, rows, out)
    return {pk: out[pk] for pk in wanted}


def _decode(pk: int, rows: Mapping[int, _BlobRow], memo: dict[int, bytes]) -> bytes:
    chain: list[int] = []
    current: int | None = pk
    while current is not None and current not in memo:
        row = rows.get(current)
        if row is None:
            raise StoreError(f"corrupt store: blob {current} is missing")
        chain.append(current)
        current = row.base_pk
        if len(chain) > 10_000:
            raise StoreError("corrupt store: blob delta chain does not end")
    data = memo[current] if current is not None else b""
    for link in reversed(chain):
        row = rows[link]
        try:
            data = row.data if row.base_pk is None else delta.decode(data, row.data)
        except delta.DeltaError as exc:
            raise StoreError(f"corrupt store: blob {row.hash.hex()[:12]}: {exc}") from None
        if len(data) != row.size or sha256(data) != row.hash:
            raise StoreError(f"corrupt store: blob {row.hash.hex()[:12]} fails its hash check")
        memo[link] = data
    return memo[pk]


def find_blobs(conn: Connection, hashes: Iterable[bytes]) -> dict[bytes, int]:
    """hash -> pk of the blobs already stored."""
    found: dict[bytes, int] = {}
    wanted = sorted(set(hashes))
    for chunk in chunks(wanted):
        stmt = select(HarnessBlob.hash, HarnessBlob.pk).where(HarnessBlob.hash.in_(chunk))
        for blob_hash, pk in conn.execute(stmt):
            found[bytes(blob_hash)] = pk
    return found


def find_tree(conn: Connection, th: bytes) -> int | None:
    pk = conn.execute(select(HarnessTree.pk).where(HarnessTree.hash == th)).scalar_one_or_none()
    return pk


# ----------------------------------------------------------------------------- writing


def _intern_paths(conn: Connection, paths: Iterable[str]) -> dict[str, int]:
    wanted = sorted(set(paths))
    found: dict[str, int] = {}
    for chunk in chunks(wanted):
        stmt = select(HarnessPath.path, HarnessPath.pk).where(HarnessPath.path.in_(chunk))
        found.update({path: pk for path, pk in conn.execute(stmt)})
    missing = [{"path": p} for p in wanted if p not in found]
    if missing:
        stmt_i = insert(HarnessPath).returning(HarnessPath.path, HarnessPath.pk)
        found.update({path: pk for path, pk in conn.execute(stmt_i, missing)})
    return found


def _store_blobs(
    conn: Connection,
    files: Mapping[str, bytes],
    hashes: Mapping[str, bytes],
    base: Tree,
    tuning: Tuning,
) -> dict[bytes, int]:
    """Insert the blobs not stored yet (as deltas against `base` where it pays); hash -> pk."""
    known = find_blobs(conn, hashes.values())
    new_paths: dict[bytes, str] = {}
    for path in sorted(files):
        if hashes[path] not in known and hashes[path] not in new_paths:
            new_paths[hashes[path]] = path
    if not new_paths:
        return known
    # Delta bases: the blob the parent tree had at the same path.
    base_pks = {p: base[p].blob_pk for p in new_paths.values() if p in base}
    base_rows = _blob_rows(conn, base_pks.values()) if base_pks else {}
    base_texts: dict[int, bytes] = {}
    rows: list[dict[str, Any]] = []
    for blob_hash, path in new_paths.items():
        data = files[path]
        row: dict[str, Any] = {
            "hash": blob_hash,
            "base_pk": None,
            "depth": 0,
            "size": len(data),
            "data": data,
        }
        base_pk = base_pks.get(path)
        if base_pk is not None and base_rows[base_pk].depth + 1 < tuning.blob_chain_max:
            base_text = _decode(base_pk, base_rows, base_texts)
            encoded = delta.encode(base_text, data)
            if len(encoded) < len(data) * tuning.delta_max_ratio:
                row.update(base_pk=base_pk, depth=base_rows[base_pk].depth + 1, data=encoded)
        rows.append(row)
    stmt = insert(HarnessBlob).returning(HarnessBlob.hash, HarnessBlob.pk)
    known.update({bytes(h): pk for h, pk in conn.execute(stmt, rows)})
    return known


def store_tree(
    conn: Connection,
    files: Mapping[str, bytes],
    base_tree_pk: int | None,
    tuning: Tuning,
) -> tuple[int, bytes]:
    """Store a tree of component files (blobs deduplicated); return (tree pk, tree hash).

    An identical tree already stored is reused as is. Otherwise the tree is stored as its
    changes against `base_tree_pk` (the parent version's tree) or, when that chain is long or
    most paths changed, as a full snapshot.
    """
    hashes = {path: sha256(data) for path, data in files.items()}
    th = tree_hash(hashes)
    existing = find_tree(conn, th)
    if existing is not None:
        return existing, th
    base: Tree = {}
    base_depth = -1
    if base_tree_pk is not None:
        base = read_tree(conn, base_tree_pk)
        base_depth = conn.execute(
            select(HarnessTree.depth).where(HarnessTree.pk == base_tree_pk)
        ).scalar_one()
    blob_pks = _store_blobs(conn, files, hashes, base, tuning)
    changes: dict[str, int | None] = {
        path: blob_pks[h]
        for path, h in hashes.items()
        if path not in base or base[path].blob_hash != h
    }
    changes.update({path: None for path in base if path not in hashes})
    snapshot = (
        base_tree_pk is None
        or base_depth + 1 >= tuning.tree_snapshot_every
        or len(changes) * 2 > len(hashes)
    )
    entries: Mapping[str, int | None] = (
        {path: blob_pks[h] for path, h in hashes.items()} if snapshot else changes
    )
    tree_pk = conn.execute(
        insert(HarnessTree).returning(HarnessTree.pk),
        {
            "hash": th,
            "base_pk": None if snapshot else base_tree_pk,
            "depth": 0 if snapshot else base_depth + 1,
            "size": len(hashes),
        },
    ).scalar_one()
    if entries:
        path_pks = _intern_paths(conn, entries)
        conn.execute(
            insert(HarnessTreeEntry),
            [
                {"tree_pk": tree_pk, "path_pk": path_pks[path], "blob_pk": blob_pk}
                for path, blob_pk in entries.items()
            ],
        )
    return tree_pk, th
