"""Model registry and per-request latency: models, latency_requests, latency_calls.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "models",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("revision", sa.Text(), nullable=True),
        sa.Column("managed", sa.Boolean(), nullable=False),
        sa.Column("base_pk", sa.Integer(), nullable=True),
        sa.Column("architecture", sa.Text(), nullable=True),
        sa.Column("parameters", sa.Integer(), nullable=True),
        sa.Column("weight_bytes", sa.Integer(), nullable=True),
        sa.Column("dtype", sa.String(length=16), nullable=True),
        sa.Column("meta", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["base_pk"], ["models.pk"], name=op.f("fk_models_base_pk_models")),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_models")),
        sa.UniqueConstraint("name", name=op.f("uq_models_name")),
    )
    op.create_index(op.f("ix_models_base_pk"), "models", ["base_pk"], unique=False)
    op.create_table(
        "latency_requests",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("session", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("engine", sa.String(length=32), nullable=True),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("harness", sa.Text(), nullable=True),
        sa.Column("task_id", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("warmup", sa.Boolean(), nullable=False),
        sa.Column("e2e_s", sa.Float(), nullable=False),
        sa.Column("model_calls", sa.Integer(), nullable=False),
        sa.Column("tool_calls", sa.Integer(), nullable=False),
        sa.Column("hook_retries", sa.Integer(), nullable=False),
        sa.Column("hook_blocks", sa.Integer(), nullable=False),
        sa.Column("viewer_message", sa.Text(), nullable=False),
        sa.Column("final_reply", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_latency_requests")),
        sa.UniqueConstraint("request_id", name=op.f("uq_latency_requests_request_id")),
    )
    op.create_index(
        "ix_latency_requests_session_pk", "latency_requests", ["session", "pk"], unique=False
    )
    op.create_table(
        "latency_calls",
        sa.Column("request_pk", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("ttft_s", sa.Float(), nullable=True),
        sa.Column("tpot_s", sa.Float(), nullable=True),
        sa.Column("e2e_s", sa.Float(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("token_source", sa.String(length=16), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["request_pk"],
            ["latency_requests.pk"],
            name=op.f("fk_latency_calls_request_pk_latency_requests"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("request_pk", "idx", name=op.f("pk_latency_calls")),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("latency_calls")
    op.drop_index("ix_latency_requests_session_pk", table_name="latency_requests")
    op.drop_table("latency_requests")
    op.drop_index(op.f("ix_models_base_pk"), table_name="models")
    op.drop_table("models")
