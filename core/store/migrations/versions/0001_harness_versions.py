"""Harness versions: content-addressed blobs and trees, versions, labels, trusted hook sources.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "harness_paths",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_harness_paths")),
        sa.UniqueConstraint("path", name=op.f("uq_harness_paths_path")),
    )
    op.create_table(
        "harness_blobs",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("base_pk", sa.Integer(), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["base_pk"], ["harness_blobs.pk"], name=op.f("fk_harness_blobs_base_pk_harness_blobs")
        ),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_harness_blobs")),
        sa.UniqueConstraint("hash", name=op.f("uq_harness_blobs_hash")),
    )
    op.create_table(
        "harness_trees",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("base_pk", sa.Integer(), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["base_pk"], ["harness_trees.pk"], name=op.f("fk_harness_trees_base_pk_harness_trees")
        ),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_harness_trees")),
        sa.UniqueConstraint("hash", name=op.f("uq_harness_trees_hash")),
    )
    op.create_table(
        "harness_tree_entries",
        sa.Column("tree_pk", sa.Integer(), nullable=False),
        sa.Column("path_pk", sa.Integer(), nullable=False),
        sa.Column("blob_pk", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["blob_pk"],
            ["harness_blobs.pk"],
            name=op.f("fk_harness_tree_entries_blob_pk_harness_blobs"),
        ),
        sa.ForeignKeyConstraint(
            ["path_pk"],
            ["harness_paths.pk"],
            name=op.f("fk_harness_tree_entries_path_pk_harness_paths"),
        ),
        sa.ForeignKeyConstraint(
            ["tree_pk"],
            ["harness_trees.pk"],
            name=op.f("fk_harness_tree_entries_tree_pk_harness_trees"),
        ),
        sa.PrimaryKeyConstraint("tree_pk", "path_pk", name=op.f("pk_harness_tree_entries")),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "harness_versions",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("harness_name", sa.Text(), nullable=False),
        sa.Column("parent_pk", sa.Integer(), nullable=True),
        sa.Column("tree_pk", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["parent_pk"],
            ["harness_versions.pk"],
            name=op.f("fk_harness_versions_parent_pk_harness_versions"),
        ),
        sa.ForeignKeyConstraint(
            ["tree_pk"],
            ["harness_trees.pk"],
            name=op.f("fk_harness_versions_tree_pk_harness_trees"),
        ),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_harness_versions")),
        sa.UniqueConstraint("id", name=op.f("uq_harness_versions_id")),
    )
    op.create_index(
        "ix_harness_versions_name_pk", "harness_versions", ["harness_name", "pk"], unique=False
    )
    op.create_table(
        "harness_labels",
        sa.Column("harness_name", sa.Text(), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("version_pk", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["version_pk"],
            ["harness_versions.pk"],
            name=op.f("fk_harness_labels_version_pk_harness_versions"),
        ),
        sa.PrimaryKeyConstraint("harness_name", "label", name=op.f("pk_harness_labels")),
    )
    op.create_index(
        op.f("ix_harness_labels_version_pk"), "harness_labels", ["version_pk"], unique=False
    )
    op.create_table(
        "trusted_hook_sources",
        sa.Column("hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("hash", name=op.f("pk_trusted_hook_sources")),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("trusted_hook_sources")
    op.drop_index(op.f("ix_harness_labels_version_pk"), table_name="harness_labels")
    op.drop_table("harness_labels")
    op.drop_index("ix_harness_versions_name_pk", table_name="harness_versions")
    op.drop_table("harness_versions")
    op.drop_table("harness_tree_entries")
    op.drop_table("harness_trees")
    op.drop_table("harness_blobs")
    op.drop_table("harness_paths")
