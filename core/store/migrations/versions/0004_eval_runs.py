"""Evaluation runs and their per-item rows: eval_runs, eval_results.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "eval_runs",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("adapter", sa.Text(), nullable=True),
        sa.Column("harness", sa.Text(), nullable=False),
        sa.Column("harness_version", sa.String(length=64), nullable=True),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("started_at", sa.String(length=32), nullable=True),
        sa.Column("finished_at", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_eval_runs")),
        sa.UniqueConstraint("id", name=op.f("uq_eval_runs_id")),
    )
    op.create_index(
        "ix_eval_runs_model_fingerprint",
        "eval_runs",
        ["model", "fingerprint", "harness_version"],
        unique=False,
    )
    op.create_table(
        "eval_results",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("run_pk", sa.Integer(), nullable=False),
        sa.Column("item_key", sa.Text(), nullable=False),
        sa.Column("suite", sa.String(length=16), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("sample", sa.Integer(), nullable=False),
        sa.Column("variant_seed", sa.Integer(), nullable=True),
        sa.Column("dimension", sa.String(length=32), nullable=True),
        sa.Column("category", sa.String(length=32), nullable=True),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("trace_id", sa.String(length=64), nullable=True),
        sa.Column("latency_s", sa.Float(), nullable=True),
        sa.Column("grades", sa.JSON(), nullable=False),
        sa.Column("trace", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_pk"],
            ["eval_runs.pk"],
            name=op.f("fk_eval_results_run_pk_eval_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_eval_results")),
    )
    op.create_index(
        "ix_eval_results_run_pk_item_key", "eval_results", ["run_pk", "item_key"], unique=True
    )
    op.create_index(
        "ix_eval_results_run_pk_suite", "eval_results", ["run_pk", "suite"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_eval_results_run_pk_suite", table_name="eval_results")
    op.drop_index("ix_eval_results_run_pk_item_key", table_name="eval_results")
    op.drop_table("eval_results")
    op.drop_index("ix_eval_runs_model_fingerprint", table_name="eval_runs")
    op.drop_table("eval_runs")
