"""Harness versions: commit, resolve, log, diff, labels and rollback on an open connection.

These functions run inside a transaction the caller opened (``core.store.store.Store`` does);
they work on component files (``{path: bytes}``) and leave pydantic models to the caller.

Refs accepted by ``resolve``:

* a full version id (64 hex digits) or a unique prefix of at least 6 hex digits (global: ids
  are unique across harness names);
* a label name (labels belong to one harness name; when ``harness_name`` is not given and the
  label exists for several harness names, the error lists the ``name@label`` forms);
* ``name@label``;
* ``head`` / ``name@head``: the newest version of that harness name ("head" is therefore not
  allowed as a label name, nor is anything that looks like an id prefix);
* any of these followed by ``~N`` (``~`` = ``~1``): its N-th ancestor along parent links, as
  in git (``head~1`` is the version before head).
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Row, delete, func, insert, select
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from core.store import objects
from core.store.errors import StoreError
from core.store.tables import (
    HarnessLabel,
    HarnessTree,
    HarnessVersion,
    TrustedHookSource,
)
from core.store.types import to_text, utcnow

MIN_PREFIX = 6
HEAD = "head"
_HEX_RE = re.compile(r"^[0-9a-fA-F]+$")
_LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ANCESTOR_RE = re.compile(r"^(.+?)~(\d*)$")


@dataclass(frozen=True)
class VersionInfo:
    id: str
    parent_id: str | None
    harness_name: str
    message: str
    created_at: datetime
    tree_hash: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class ComponentDiff:
    path: str
    component: str  # manifest | prompt | skill | tool | hook
    name: str
    change: str  # added | removed | modified | renamed
    old_text: str | None
    new_text: str | None
    unified: str
    old_name: str | None = None
    """renamed: the component's name in the older version (core/store/renames.py)."""
    old_path: str | None = None
    """renamed: the file's path in the older version."""


@dataclass(frozen=True)
class VersionRow:
    pk: int
    id: str
    harness_name: str
    tree_pk: int


def version_id(tree_hash: bytes, parent_id: str | None, message: str, created_at: datetime) -> str:
    """sha256 over (tree, parent, time, message), like a git commit id."""
    payload = (
        f"tree {tree_hash.hex()}\nparent {parent_id or '-'}\ncreated {to_text(created_at)}\n\n"
        f"{message}"
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- lookups

V = HarnessVersion.__table__
_ROW_COLS = (V.c.pk, V.c.id, V.c.harness_name, V.c.tree_pk)


def _row(r: Row[Any]) -> VersionRow:
    return VersionRow(r[0], r[1], r[2], r[3])


def head(conn: Connection, harness_name: str) -> VersionRow | None:
    r = conn.execute(
        select(*_ROW_COLS).where(V.c.harness_name == harness_name).order_by(V.c.pk.desc()).limit(1)
    ).first()
    return _row(r) if r is not None else None


def by_pk(conn: Connection, pk: int) -> VersionRow:
    return _row(conn.execute(select(*_ROW_COLS).where(V.c.pk == pk)).one())


def _by_label(conn: Connection, harness_name: str, label: str) -> VersionRow | None:
    if label.lower() == HEAD:
        return head(conn, harness_name)
    L = HarnessLabel.__table__
    r = conn.execute(
        select(*_ROW_COLS)
        .join(L, L.c.version_pk == V.c.pk)
        .where(L.c.harness_name == harness_name, L.c.label == label)
    ).first()
    return _row(r) if r is not None else None


def resolve(conn: Connection, ref: str, harness_name: str | None = None) -> VersionRow:
    """The version a ref names (see the module doc); StoreError when unknown or ambiguous."""
    if not isinstance(ref, str) or not ref.strip():
        raise StoreError("empty version ref")
    ref = ref.strip()
    ancestor = _ANCESTOR_RE.match(ref)
    if ancestor is not None:
        row = resolve(conn, ancestor.group(1), harness_name)
        steps = int(ancestor.group(2) or 1)
        for step in range(steps):
            parent_pk = conn.execute(select(V.c.parent_pk).where(V.c.pk == row.pk)).scalar_one()
            if parent_pk is None:
                raise StoreError(
                    f"{ref!r}: version {row.id[:12]} has no parent ({step} of {steps} steps)"
                )
            row = by_pk(conn, parent_pk)
        return row
    if "@" in ref:
        name, label = ref.rsplit("@", 1)
        if harness_name is not None and name != harness_name:
            raise StoreError(f"{ref!r} names harness {name!r}, not {harness_name!r}")
        found = _by_label(conn, name, label)
        if found is None:
            raise StoreError(f"unknown label {label!r} for harness {name!r}")
        return found
    is_hex = _HEX_RE.match(ref) is not None
    if is_hex and len(ref) == 64:
        r = conn.execute(select(*_ROW_COLS).where(V.c.id == ref.lower())).first()
        if r is not None:
            return _row(r)
    # A label (or head) of the given harness, or of whichever harness has it.
    if harness_name is not None:
        found = _by_label(conn, harness_name, ref)
        if found is not None:
            return found
    elif ref.lower() == HEAD:
        names = harness_names(conn)
        if len(names) == 1:
            found = head(conn, names[0])
            if found is not None:
                return found
        elif len(names) > 1:
            raise StoreError(
                "'head' is ambiguous: give the harness name, one of "
                + ", ".join(f"{n}@head" for n in names)
            )
    else:
        L = HarnessLabel.__table__
        rows = conn.execute(
            select(*_ROW_COLS, L.c.harness_name)
            .join(L, L.c.version_pk == V.c.pk)
            .where(L.c.label == ref)
            .order_by(L.c.harness_name)
        ).all()
        if len(rows) == 1:
            return _row(rows[0])
        if len(rows) > 1:
            choices = ", ".join(f"{r[4]}@{ref}" for r in rows)
            raise StoreError(f"label {ref!r} exists for several harnesses: {choices}")
    if is_hex and MIN_PREFIX <= len(ref) < 64:
        prefix = ref.lower()
        lo, hi = prefix.ljust(64, "0"), prefix.ljust(64, "f")
        rows = conn.execute(
            select(*_ROW_COLS).where(V.c.id >= lo, V.c.id <= hi).order_by(V.c.id).limit(11)
        ).all()
        if len(rows) == 1:
            return _row(rows[0])
        if len(rows) > 1:
            shown = ", ".join(f"{r[1][:12]} ({r[2]})" for r in rows[:10])
            more = " ..." if len(rows) > 10 else ""
            raise StoreError(f"version prefix {ref!r} is ambiguous: {shown}{more}")
    where = f" for harness {harness_name!r}" if harness_name is not None else ""
    hint = (
        f" (a version id prefix needs at least {MIN_PREFIX} hex digits)"
        if is_hex and len(ref) < MIN_PREFIX
        else ""
    )
    raise StoreError(f"unknown version or label {ref!r}{where}{hint}")


def harness_names(conn: Connection) -> list[str]:
    return list(
        conn.execute(select(V.c.harness_name).distinct().order_by(V.c.harness_name)).scalars()
    )


def infos(conn: Connection, pks: list[int]) -> dict[int, VersionInfo]:
    """VersionInfo of each version pk (with its parent id, tree hash and labels)."""
    if not pks:
        return {}
    P = V.alias("parent")
    T = HarnessTree.__table__
    L = HarnessLabel.__table__
    labels: dict[int, list[str]] = {}
    out: dict[int, VersionInfo] = {}
    for chunk in objects.chunks(sorted(set(pks))):
        for vpk, label in conn.execute(
            select(L.c.version_pk, L.c.label).where(L.c.version_pk.in_(chunk))
        ):
            labels.setdefault(vpk, []).append(label)
        rows = conn.execute(
            select(
                V.c.pk,
                V.c.id,
                P.c.id,
                V.c.harness_name,
                V.c.message,
                V.c.created_at,
                T.c.hash,
            )
            .join(T, T.c.pk == V.c.tree_pk)
            .outerjoin(P, P.c.pk == V.c.parent_pk)
            .where(V.c.pk.in_(chunk))
        )
        for pk, vid, parent_id, name, message, created_at, th in rows:
            out[pk] = VersionInfo(
                id=vid,
                parent_id=parent_id,
                harness_name=name,
                message=message,
                created_at=created_at,
                tree_hash=bytes(th).hex(),
                labels=tuple(sorted(labels.get(pk, []))),
            )
    return out


def log(conn: Connection, harness_name: str | None, limit: int | None) -> list[VersionInfo]:
    if limit is not None and limit < 0:
        raise StoreError(f"limit must be >= 0, got {limit}")
    stmt = select(V.c.pk).order_by(V.c.pk.desc())
    if harness_name is not None:
        stmt = stmt.where(V.c.harness_name == harness_name)
    if limit is not None:
        stmt = stmt.limit(limit)
    pks = list(conn.execute(stmt).scalars())
    found = infos(conn, pks)
    return [found[pk] for pk in pks]


# ----------------------------------------------------------------------------- writes


def _insert_version(
    conn: Connection,
    harness_name: str,
    tree_pk: int,
    th: bytes,
    parent: VersionRow | None,
    message: str,
) -> int:
    created_at = utcnow()
    parent_id = parent.id if parent is not None else None
    while True:
        vid = version_id(th, parent_id, message, created_at)
        taken = conn.execute(select(V.c.pk).where(V.c.id == vid)).first()
        if taken is None:
            break
        created_at += timedelta(microseconds=1)  # same content, parent, message and instant
    pk: int = conn.execute(
        insert(HarnessVersion).returning(HarnessVersion.pk),
        {
            "id": vid,
            "harness_name": harness_name,
            "parent_pk": parent.pk if parent is not None else None,
            "tree_pk": tree_pk,
            "message": message,
            "created_at": created_at,
        },
    ).scalar_one()
    return pk


def commit(
    conn: Connection,
    harness_name: str,
    files: dict[str, bytes],
    message: str,
    parent: str | None,
    trusted_sources: list[bytes],
    tuning: objects.Tuning,
) -> int:
    """Store one version (blobs, tree, version row, trusted sources); return its pk."""
    if parent is None:
        parent_row = None
    elif parent == HEAD:
        parent_row = head(conn, harness_name)
    else:
        parent_row = resolve(conn, parent, harness_name)
    tree_pk, th = objects.store_tree(
        conn, files, parent_row.tree_pk if parent_row is not None else None, tuning
    )
    pk = _insert_version(conn, harness_name, tree_pk, th, parent_row, message)
    record_trust(conn, trusted_sources)
    return pk


def record_trust(conn: Connection, hashes: list[bytes]) -> None:
    if not hashes:
        return
    now = utcnow()
    stmt = sqlite_insert(TrustedHookSource).on_conflict_do_nothing(index_elements=["hash"])
    conn.execute(stmt, [{"hash": h, "created_at": now} for h in sorted(set(hashes))])


def forget_trust(conn: Connection, hashes: list[bytes]) -> None:
    T = TrustedHookSource.__table__
    for chunk in objects.chunks(sorted(set(hashes))):
        conn.execute(delete(TrustedHookSource).where(T.c.hash.in_(chunk)))


def trusted(conn: Connection, hashes: list[bytes]) -> frozenset[bytes]:
    found: set[bytes] = set()
    T = TrustedHookSource.__table__
    for chunk in objects.chunks(sorted(set(hashes))):
        stmt = select(T.c.hash).where(T.c.hash.in_(chunk))
        found.update(bytes(h) for h in conn.execute(stmt).scalars())
    return frozenset(found)


def rollback(conn: Connection, ref: str, message: str | None) -> int:
    target = resolve(conn, ref)
    current = head(conn, target.harness_name)
    th = conn.execute(select(HarnessTree.hash).where(HarnessTree.pk == target.tree_pk)).scalar_one()
    text = message if message is not None else f"Roll back to {target.id[:12]}"
    return _insert_version(conn, target.harness_name, target.tree_pk, bytes(th), current, text)


def check_label(label: str) -> None:
    if not isinstance(label, str) or not _LABEL_RE.match(label):
        raise StoreError(
            f"label {label!r} must be 1-64 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit"
        )
    if label.lower() == HEAD:
        raise StoreError("'head' is reserved: it always names the newest version")
    if _HEX_RE.match(label) and len(label) >= MIN_PREFIX:
        raise StoreError(f"label {label!r} looks like a version id prefix; choose another name")


def tag(conn: Connection, label: str, ref: str) -> None:
    name: str | None = None
    if "@" in label:
        name, label = label.rsplit("@", 1)
    check_label(label)
    target = resolve(conn, ref, name)
    if name is not None and name != target.harness_name:
        raise StoreError(
            f"version {target.id[:12]} belongs to harness {target.harness_name!r}, not {name!r}"
        )
    stmt = sqlite_insert(HarnessLabel).values(
        harness_name=target.harness_name, label=label, version_pk=target.pk, updated_at=utcnow()
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["harness_name", "label"],
        set_={"version_pk": stmt.excluded.version_pk, "updated_at": stmt.excluded.updated_at},
    )
    conn.execute(stmt)


def untag(conn: Connection, label: str, harness_name: str) -> None:
    done = conn.execute(
        delete(HarnessLabel).where(
            HarnessLabel.harness_name == harness_name, HarnessLabel.label == label
        )
    ).rowcount
    if not done:
        raise StoreError(f"unknown label {label!r} for harness {harness_name!r}")


def labels(conn: Connection, harness_name: str | None) -> dict[str, str]:
    L = HarnessLabel.__table__
    stmt = (
        select(L.c.harness_name, L.c.label, V.c.id)
        .join(V, V.c.pk == L.c.version_pk)
        .order_by(L.c.harness_name, L.c.label)
    )
    if harness_name is not None:
        stmt = stmt.where(L.c.harness_name == harness_name)
        return {label: vid for _name, label, vid in conn.execute(stmt)}
    return {f"{name}@{label}": vid for name, label, vid in conn.execute(stmt)}


def count(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(V)).scalar_one())


# ----------------------------------------------------------------------------- diff


def component_of(path: str) -> tuple[str, str]:
    """(component kind, name) of a folder path from ``core.harness.folder_files``."""
    parts = path.split("/")
    if path == "harness.yaml":
        return "manifest", "harness"
    if path == "mcp.json":
        return "mcp", "servers"
    if parts[0] == "prompt" and len(parts) == 2:
        return "prompt", parts[1].removesuffix(".md")
    if parts[0] == "skills" and len(parts) >= 2:
        return "skill", parts[1]
    if parts[0] == "tools" and len(parts) == 2:
        return "tool", parts[1].removesuffix(".json")
    if parts[0] == "hooks" and len(parts) == 2:
        return "hook", parts[1].rsplit(".", 1)[0]
    return parts[0], path  # not produced by folder_files today


def _lines(text: str) -> list[str]:
    """Split on "\\n" only (str.splitlines also splits on \\r, \\x0b, U+2028, ...)."""
    out = text.split("\n")
    lines = [line + "\n" for line in out[:-1]]
    if out[-1]:
        lines.append(out[-1])
    return lines


def unified_diff(
    path: str, old: str | None, new: str | None, *, old_path: str | None = None
) -> str:
    """git-style unified diff of one file (``/dev/null`` for an added or removed file;
    `old_path` for a renamed one)."""
    diff = difflib.unified_diff(
        _lines(old or ""),
        _lines(new or ""),
        fromfile=f"a/{old_path or path}" if old is not None else "/dev/null",
        tofile=f"b/{path}" if new is not None else "/dev/null",
    )
    out = []
    for line in diff:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff(conn: Connection, a: VersionRow | None, b: VersionRow) -> list[ComponentDiff]:
    """Per-file changes from `a` to `b`; from nothing (every file of `b` added) when `a` is
    None, which is how a first version is shown."""
    tree_a = objects.read_tree(conn, a.tree_pk) if a is not None else {}
    tree_b = objects.read_tree(conn, b.tree_pk)
    changed = sorted(
        path
        for path in set(tree_a) | set(tree_b)
        if path not in tree_a
        or path not in tree_b
        or tree_a[path].blob_hash != tree_b[path].blob_hash
    )
    wanted = {t[p].blob_pk for p in changed for t in (tree_a, tree_b) if p in t}
    texts = objects.read_blobs(conn, wanted)
    out: list[ComponentDiff] = []
    for path in changed:
        old = texts[tree_a[path].blob_pk].decode("utf-8") if path in tree_a else None
        new = texts[tree_b[path].blob_pk].decode("utf-8") if path in tree_b else None
        change = "added" if old is None else "removed" if new is None else "modified"
        component, name = component_of(path)
        out.append(
            ComponentDiff(path, component, name, change, old, new, unified_diff(path, old, new))
        )
    return out
