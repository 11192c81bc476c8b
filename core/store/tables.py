"""Table definitions (SQLAlchemy 2 typed declarative).

Every schema change ships as an alembic migration in ``core/store/migrations/versions``; these
classes describe the schema at head and tests check that the two agree. Later features (runs,
metrics, evals, chats, models) add their classes here, or in their own module deriving from
``Base``, together with a new migration.

Harness versions are stored like git objects, content-addressed by sha256:

* ``harness_blobs``: the canonical text of one component file (``core.harness.folder_files``),
  keyed by the sha256 of that text. Stored in full, or as a delta (``core.store.delta``) against
  the previous blob of the same path, with the chain of deltas bounded (``depth``).
* ``harness_trees``: one row per distinct {path: blob} map, keyed by its tree hash. Its entries
  are either a full snapshot (``base_pk`` NULL) or the changes against the parent version's tree
  (``blob_pk`` NULL = path removed), again with a bounded chain.
* ``harness_versions``: an immutable commit: tree, parent, message, time; its id is the sha256
  of those, so a rollback (same tree, new parent) is a new version.
* ``harness_labels``: movable names (``production``, ``staging``) per harness name.
* ``trusted_hook_sources``: sha256 of Python hook sources the user has trusted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import ForeignKey, Index, LargeBinary, MetaData, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from core.store.types import UTCDateTime

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        bytes: LargeBinary(),
    }


class HarnessPath(Base):
    """Interned component paths, so tree entries hold small integers."""

    __tablename__ = "harness_paths"

    pk: Mapped[int] = mapped_column(primary_key=True)
    path: Mapped[str] = mapped_column(Text, unique=True)


class HarnessBlob(Base):
    __tablename__ = "harness_blobs"

    pk: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    base_pk: Mapped[int | None] = mapped_column(ForeignKey("harness_blobs.pk"))
    depth: Mapped[int] = mapped_column(default=0)
    size: Mapped[int]
    data: Mapped[bytes]


class HarnessTree(Base):
    __tablename__ = "harness_trees"

    pk: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    base_pk: Mapped[int | None] = mapped_column(ForeignKey("harness_trees.pk"))
    depth: Mapped[int] = mapped_column(default=0)
    size: Mapped[int]  # number of paths in the full tree


class HarnessTreeEntry(Base):
    __tablename__ = "harness_tree_entries"
    __table_args__ = ({"sqlite_with_rowid": False},)

    tree_pk: Mapped[int] = mapped_column(ForeignKey("harness_trees.pk"), primary_key=True)
    path_pk: Mapped[int] = mapped_column(ForeignKey("harness_paths.pk"), primary_key=True)
    blob_pk: Mapped[int | None] = mapped_column(ForeignKey("harness_blobs.pk"))


class HarnessVersion(Base):
    __tablename__ = "harness_versions"
    __table_args__ = (Index("ix_harness_versions_name_pk", "harness_name", "pk"),)

    pk: Mapped[int] = mapped_column(primary_key=True)  # insertion order: "newest" = highest
    id: Mapped[str] = mapped_column(String(64), unique=True)
    harness_name: Mapped[str] = mapped_column(Text)
    parent_pk: Mapped[int | None] = mapped_column(ForeignKey("harness_versions.pk"))
    tree_pk: Mapped[int] = mapped_column(ForeignKey("harness_trees.pk"))
    message: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


class HarnessLabel(Base):
    __tablename__ = "harness_labels"

    harness_name: Mapped[str] = mapped_column(Text, primary_key=True)
    label: Mapped[str] = mapped_column(Text, primary_key=True)
    version_pk: Mapped[int] = mapped_column(ForeignKey("harness_versions.pk"), index=True)
    updated_at: Mapped[datetime]


class TrustedHookSource(Base):
    __tablename__ = "trusted_hook_sources"
    __table_args__ = ({"sqlite_with_rowid": False},)

    hash: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    created_at: Mapped[datetime]
