"""From registry names to a server: `server_for(store, "vllm", "demo", adapter="sft-1")`.

A base or merged model is served from its folder (or hub id). An adapter is served on top of
its base: vLLM gets `--model BASE --enable-lora --lora-modules NAME=FOLDER` and requests name
the adapter. transformers serve loads full folders only, so an adapter there is refused
(EngineError) in favour of the merged model training registers.
"""

from __future__ import annotations

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
) -> ManagedServer:
    """A (not yet started) ManagedServer for the registered `model` (and `adapter`)."""
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
