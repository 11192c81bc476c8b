"""The SQLite store (SQLAlchemy 2 + alembic): versioned harnesses, later runs/metrics/evals.

Usage: ``with Store.open() as store:`` (the home folder's hat.db, migrated to head), then
``v = store.commit(harness, "first")``, ``store.tag("production", v.id)``,
``store.load("production", harness.name)``, ``store.diff(a, b)``, ``store.rollback(ref)``.
"""

from core.store.errors import StoreError
from core.store.harness_versions import ComponentDiff, VersionInfo
from core.store.store import Store

__all__ = ["ComponentDiff", "Store", "StoreError", "VersionInfo"]
