"""From registry names to a server: `server_for(store, "vllm", "demo", adapter="sft-1")`.

The one way core gets a managed model server (tests/test_server_seam.py checks that no other
module of core constructs `ManagedServer`): the CLI's `hat serve`, the evaluation runner, the
studio's chat and the replication all come here.

A base or merged model is served from its folder (or hub id). An adapter is served on top of
its base: vLLM gets `--model BASE --enable-lora --lora-modules NAME=FOLDER` and requests name
the adapter. transformers serve loads full folders only, so there the adapter's merged model
is served (merged on first use). With `by_location` the model is given by where it lies (a
folder or hub id) and served as it is, for a caller that holds models that way (the
replication records its trained models' folders, and its stored evaluation requests name
the model id that folder was served under).

A caller that keeps one server across long work (the replication's suites) calls `revive`
after each piece: a server that crashed meanwhile is started again instead of ending the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from core.models.merge import merged_model
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
    by_location: bool = False,
) -> ManagedServer:
    """A (not yet started) ManagedServer for the registered `model` (and `adapter`).

    transformers serve cannot load an adapter, so with that engine the adapter is served as
    its merged model, merged now if it never was (`core.models.merge`; `on_phase` hears of
    it): any registered adapter is servable by any engine.

    `by_location`: `model` is a folder or hub id, served as it is under its own path as the
    model id (no registry lookup, no adapter): the registry's name would change the id that
    earlier requests to the same model were stored with."""
    if by_location:
        if adapter is not None:
            raise RegistryError("an adapter is served on a registered base, not on a location")
        return ManagedServer(
            config, model, port=port, startup_timeout_s=startup_timeout_s, log_dir=log_dir
        )
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


def revive(server: ManagedServer) -> bool:
    """Start `server` again when its process has died (True), on its old port when that is
    still free; False when it is running. Policy for a server kept across long work: a crash
    costs one restart and the caller resumes what it was doing (ServerError when the server
    cannot start again)."""
    if server.alive:
        return False
    server.restart()
    return True
