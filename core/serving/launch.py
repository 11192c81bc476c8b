"""From registry names to a server: `server_for(store, "vllm", "demo", adapter="sft-1")`.

A base or merged model is served from its folder (or hub id). An adapter is served on top of
its base: vLLM gets `--model BASE --enable-lora --lora-modules NAME=FOLDER` and requests name
the adapter. transformers serve loads full folders only, so there the adapter's merged model
is served (merged on first use).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from core.models.registry import RegistryError, get
from core.serving.engines import EngineConfig
from core.serving.server import ManagedServer
from core.store import Store


def server_for(
    store: Store,
    config: EngineConfig,
    model: str,
    *,
    adapter: str | None = None,
    port: int | None = None,
    startup_timeout_s: float = 600.0,
    log_dir: str | Path | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> ManagedServer:
    """A (not yet started) ManagedServer for the registered `model` (and `adapter`).

    transformers serve cannot load an adapter, so with that engine the adapter is served as
    its merged model, merged now if it never was (`core.models.merge`; `on_phase` hears of
    it): any registered adapter is servable by any engine."""
    record = get(store, model)
    if record.kind == "adapter":
        if adapter is not None:
            raise RegistryError(f"{model!r} is itself an adapter; pass its base as the model")
        adapter, record = record.name, get(store, record.base or "")
    adapters = dict(config.adapters)
    if adapter is not None:
        adapter_record = get(store, adapter)
        if adapter_record.kind != "adapter":
            raise RegistryError(f"{adapter!r} is a {adapter_record.kind} model, not an adapter")
        if adapter_record.base != record.name:
            raise RegistryError(
                f"adapter {adapter!r} was trained on {adapter_record.base!r}, not {record.name!r}"
            )
        if config.engine == "transformers":
            from core.models.merge import merged_model

            record = merged_model(store, adapter, on_phase=on_phase)
        else:
            adapters[adapter] = adapter_record.location
    config = replace(config, adapters=adapters)
    location = record.location
    return ManagedServer(
        config,
        location,
        port=port,
        served_name=record.name,
        startup_timeout_s=startup_timeout_s,
        log_dir=log_dir,
    )
