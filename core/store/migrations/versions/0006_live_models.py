"""What each model server answers with, as promotions changed it: live_models.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-08
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "live_models",
        sa.Column("pk", sa.Integer(), nullable=False),
        sa.Column("server", sa.Text(), nullable=False),
        sa.Column("engine", sa.String(length=32), nullable=True),
        sa.Column("base_model", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("adapter", sa.Text(), nullable=True),
        sa.Column("served_name", sa.Text(), nullable=False),
        sa.Column("run", sa.Text(), nullable=True),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("previous_pk", sa.Integer(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("since", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["previous_pk"], ["live_models.pk"], name=op.f("fk_live_models_previous_pk_live_models")
        ),
        sa.PrimaryKeyConstraint("pk", name=op.f("pk_live_models")),
    )
    op.create_index("ix_live_models_server_pk", "live_models", ["server", "pk"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_live_models_server_pk", table_name="live_models")
    op.drop_table("live_models")
