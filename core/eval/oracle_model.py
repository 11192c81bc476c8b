"""The oracle as a model: a perfect player of every agent suite, served as a ClientFactory.

It is the ceiling of the agent suites and the deterministic stand-in for a served model in
tests; `memorised` fixes it on one harness version's names, a stand-in for a model fine-tuned
on that version (what a harness edit breaks). The CLI (`hat eval run|impact --oracle`) and the
studio's Evaluate page both build it here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from core.episode.variant import HarnessVariant
from core.eval.types import EvalError, EvalItem
from core.sim.catalog import load_catalog
from core.sim.surface import HarnessSurface

if TYPE_CHECKING:
    from core.episode.variant import HarnessVariant
    from core.episode.world import World
    from core.harness.models import Harness
    from core.runtime.client import ChatClient
    from core.sim.models import Catalog
    from core.store import Store

ORACLE = "oracle"
"""The model name runs of the plain oracle are stored under."""
ORACLE_FIXED = "oracle-fixed"


def fixed_name(version_id: str) -> str:
    """The model name runs of the oracle fixed on `version_id` are stored under (its own
    "model" per version it memorised, so runs of the plain oracle, or one fixed on another
    version, are never reused for it)."""
    return f"{ORACLE_FIXED}@{version_id[:10]}"


def oracle_factory(store: Store, fixed_on: str | None = None) -> OracleModel:
    """The oracle's ClientFactory, fixed on the stored version `fixed_on` when given."""

    memorised = store.load(fixed_on) if fixed_on else None
    return oracle_clients(load_catalog(), memorised=memorised)


class OracleModel:
    """The oracle as an evaluation's model: in every world, the world's gold
    (`World.gold`: the live room's oracle, which reads any variant; a task file's gold run,
    remapped onto a variant), or with `memorised` the gold written in that harness's names
    whatever harness the item runs under: a stand-in for a model fine-tuned on one fixed
    harness, which keeps calling tools and skills by their old names after an edit.

    Items call `client` (it needs the item's world); it is also a plain ClientFactory, for
    callers that only hold live-room items."""

    def __init__(self, catalog: Catalog, *, memorised: Harness | None = None) -> None:
        self.catalog = catalog
        self.memorised = memorised

    async def client(
        self, world: World[Any], task: Any, harness: Harness, variant: HarnessVariant | None
    ) -> ChatClient:
        """The oracle's client for `task` played in `world` under `harness`; `variant`: the
        HV item's heldout variant (its policy and seed), None under the run's harness."""

        if task is None:
            raise EvalError("the oracle answers agent tasks only")
        if self.memorised is not None:
            fixed = HarnessVariant(harness=self.memorised)
            return (await world.gold(task, fixed)).client
        if variant is not None:
            variant = replace(variant, harness=harness)
        wanted = variant if variant is not None else HarnessVariant(harness=harness)
        return (await world.gold(task, wanted)).client

    def __call__(self, item: EvalItem, harness: Harness, surface: HarnessSurface) -> ChatClient:
        from core.sim.oracle import OracleClient  # heavy: jsonschema, regex

        task: Any = item.task
        if task is None:
            raise EvalError(f"the oracle answers agent tasks only, not {item.suite.value} items")
        if self.memorised is not None:
            fixed = HarnessSurface(self.memorised, {}, {}, {})
            return OracleClient(task, self.memorised, self.catalog, surface=fixed)
        return OracleClient(task, harness, self.catalog, surface=surface)


def oracle_clients(catalog: Catalog, *, memorised: Harness | None = None) -> OracleModel:
    """The oracle as a model (`OracleModel`): the ceiling of every agent suite and a
    deterministic stand-in for a served model in tests."""
    return OracleModel(catalog, memorised=memorised)
