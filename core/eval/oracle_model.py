"""The oracle as a model: a perfect player of every agent suite, served as a ClientFactory.

It is the ceiling of the agent suites and the deterministic stand-in for a served model in
tests; `memorised` fixes it on one harness version's names, a stand-in for a model fine-tuned
on that version (what a harness edit breaks). The CLI (`hat eval run|impact --oracle`) and the
studio's Evaluate page both build it here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.eval.types import ClientFactory, EvalError, EvalItem

if TYPE_CHECKING:
    from core.harness.models import Harness
    from core.runtime.client import ChatClient
    from core.sim.models import Catalog
    from core.sim.surface import HarnessSurface
    from core.store import Store

ORACLE = "oracle"
"""The model name runs of the plain oracle are stored under."""
ORACLE_FIXED = "oracle-fixed"


def fixed_name(version_id: str) -> str:
    """The model name runs of the oracle fixed on `version_id` are stored under (its own
    "model" per version it memorised, so runs of the plain oracle, or one fixed on another
    version, are never reused for it)."""
    return f"{ORACLE_FIXED}@{version_id[:10]}"


def oracle_factory(store: Store, fixed_on: str | None = None) -> ClientFactory:
    """The oracle's ClientFactory, fixed on the stored version `fixed_on` when given."""
    from core.sim.catalog import load_catalog

    memorised = store.load(fixed_on) if fixed_on else None
    return oracle_clients(load_catalog(), memorised=memorised)


def oracle_clients(catalog: Catalog, *, memorised: Harness | None = None) -> ClientFactory:
    """A ClientFactory of oracle clients (core/sim/oracle.py): a perfect model, the ceiling
    of every agent suite and a deterministic stand-in for a served model in tests.

    `memorised`: the oracle reads and writes names through THIS harness's surface whatever
    harness the item runs under: a stand-in for a model fine-tuned on one fixed harness,
    which keeps calling tools and skills by their old names after an edit."""
    from core.sim.oracle import OracleClient
    from core.sim.surface import HarnessSurface

    fixed = HarnessSurface(memorised, {}, {}, {}) if memorised is not None else None

    def make(item: EvalItem, harness: Harness, surface: HarnessSurface) -> ChatClient:
        from core.taskfile.gold import gold_client
        from core.taskfile.models import OwnTask

        if item.task is None:
            raise EvalError(f"the oracle answers agent tasks only, not {item.suite.value} items")
        if isinstance(item.task, OwnTask):
            return gold_client(item.task, memorised or harness)
        return OracleClient(
            item.task, fixed.harness if fixed else harness, catalog, surface=fixed or surface
        )

    return make
