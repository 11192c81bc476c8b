"""Evaluation rows an infrastructure failure ended become `error` rows.

Rows stored before the `error` status (ResultStatus.ERROR) recorded a server error, a timeout
or a crash as `failed` with the kind as the reason's first word; this moves them to `error`
once, so every reader (scores, counts, resume) sees one status and none needs a special case.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KINDS = ("crash", "model_error", "timeout")
"""core.eval.results.INFRA_FAILURES as of this revision (a migration does not import the app)."""


def upgrade() -> None:
    matches = " OR ".join(f"reason = '{k}' OR reason LIKE '{k}:%'" for k in KINDS)
    op.execute(f"UPDATE eval_results SET status = 'error' WHERE status = 'failed' AND ({matches})")


def downgrade() -> None:
    op.execute("UPDATE eval_results SET status = 'failed' WHERE status = 'error'")
