"""Merged copies of adapters, grouped under the adapter they copy.

A registered adapter can have a merged copy: the one its training run registered
(`<adapter>-merged`, with `merge: true`) or the one made on first use for an engine that cannot
load adapters (`core.models.merge`, meta `adapter`). Serving the adapter already uses that copy
where it helps, so a model list that shows each copy beside the bases crowds the operator's
choices with names that serve nothing new. Lists group them: the copy is left out of the
models and told beside its adapter. A merged model whose adapter is not registered (removed,
or a full fine-tune's output) is a model of its own and stays listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from core.store.serving import ModelRecord

MERGED_SUFFIX = "-merged"


def merge_source(record: ModelRecord, adapters: Mapping[str, ModelRecord]) -> str | None:
    """The name of the registered adapter `record` is a merged copy of, or None: its meta
    names the adapter, or it is `<adapter>-merged`; either way on that adapter's base."""
    if record.kind != "merged":
        return None
    named = record.meta.get("adapter")
    if not named and record.name.endswith(MERGED_SUFFIX):
        named = record.name.removesuffix(MERGED_SUFFIX)
    adapter = adapters.get(str(named)) if named else None
    if adapter is None or adapter.kind != "adapter" or adapter.base != record.base:
        return None
    return adapter.name


@dataclass(frozen=True)
class GroupedModels:
    """A registry as a model list shows it."""

    models: list[ModelRecord] = field(default_factory=list)
    """Bases and merged models that are not a registered adapter's copy, in registry order."""
    adapters: dict[str, list[ModelRecord]] = field(default_factory=dict)
    """Base name -> its adapters."""
    copies: dict[str, ModelRecord] = field(default_factory=dict)
    """Adapter name -> its merged copy."""


def group_models(records: Iterable[ModelRecord]) -> GroupedModels:
    """`records` grouped: adapters under their base, merged copies under their adapter."""
    records = list(records)
    adapters = {r.name: r for r in records if r.kind == "adapter"}
    grouped = GroupedModels()
    for record in records:
        if record.kind == "adapter":
            if record.base is not None:
                grouped.adapters.setdefault(record.base, []).append(record)
            continue
        source = merge_source(record, adapters)
        if source is not None and source not in grouped.copies:
            grouped.copies[source] = record
            continue
        grouped.models.append(record)
    return grouped
