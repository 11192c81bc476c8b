"""Training runs: train_runs, train_events, train_checkpoints.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "train_runs",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("parent_pk", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("harness_version", sa.Text(), nullable=True),
        sa.Column("dataset_hash", sa.String(length=64), nullable=True),
        sa.Column("packages", sa.Text(), nullable=False),
        sa.Column("code_revision", sa.Text(), nullable=True),
        sa.Column("run_dir", sa.Text(), nullable=False),
        sa.Column("command", sa.Text(), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("total_steps", sa.Integer(), nullable=True),
        sa.Column("events_offset", sa.Integer(), nullable=False),
        sa.Column("outputs", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("started_at", sa.String(length=32), nullable=True),
        sa.Column("ended_at", sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(
            ["parent_pk"], ["train_runs.pk"], name=op.f("fk_train_runs_parent_pk_train_runs")
        ),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_train_runs")),
        sa.UniqueConstraint("id", name=op.f("uq_train_runs_id")),
    )
    op.create_index(op.f("ix_train_runs_parent_pk"), "train_runs", ["parent_pk"], unique=False)
    op.create_table(
        "train_events",
        sa.Column("run_pk", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("superseded", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_pk"],
            ["train_runs.pk"],
            name=op.f("fk_train_events_run_pk_train_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_pk", "seq", name=op.f("pk_train_events")),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "train_checkpoints",
        sa.Column("run_pk", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_pk"],
            ["train_runs.pk"],
            name=op.f("fk_train_checkpoints_run_pk_train_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_pk", "step", name=op.f("pk_train_checkpoints")),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("train_checkpoints")
    op.drop_table("train_events")
    op.drop_index(op.f("ix_train_runs_parent_pk"), table_name="train_runs")
    op.drop_table("train_runs")
