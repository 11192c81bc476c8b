"""Promote a trained adapter onto a running model server, and roll it back, without a restart.

    target = target_of(server)                    # a server started here (ManagedServer)
    target = probe_target("http://127.0.0.1:8000/v1")       # or one that runs elsewhere
    done = promote(store, target, "sft-1")        # an adapter's name, or its training run's id
    done.live.served_name                         # the model id requests name from now on
    rollback(store, target)                       # what was live before answers again
    follow_live(store, target.base_url, "base")   # what a chat names on its next turn

On vLLM (`hat serve --engine vllm --runtime-lora`: VLLM_ALLOW_RUNTIME_LORA_UPDATING=1) the
adapter is loaded with POST /v1/load_lora_adapter under a served name of its own (its
registered name; `NAME-2`, ... when that name is taken on the server by another folder), then
asked one short chat request (the health prompt). Only when that answers, and the answer names
the served name as its `model`, does the store's live record switch (`core.store.live`); until
then, and whenever anything fails, what was live stays live: a load vLLM refused, or a health
prompt that did not answer (the adapter is unloaded again, POST /v1/unload_lora_adapter), is a
PromoteError with vLLM's own reason. The previous adapter stays loaded, so a rollback is one
health prompt and one store write.

vLLM has no alias for a served model: a chat follows the store (`follow_live`) and names the
live served name on each turn. A server that restarted has forgotten what was loaded into it;
a record whose served name the server no longer lists is ignored there.

Refused before anything is sent to the server: an adapter trained on another base model than
the server's (the registry's base, or the folder its adapter_config.json names, against the
server's base), a name that is no adapter, a server that is not vLLM and was not started here.

transformers serve cannot load an adapter while it runs, and neither can a vLLM server started
here without runtime LoRA: promoting onto such a server started here (a ManagedServer) restarts
it with the adapter (merged into its base for transformers, `core.models.merge`) and says so in
`Promotion.message`; when the new model does not come up healthy, the server is restarted with
what it served before.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from core.models.grouping import merge_source
from core.models.registry import RegistryError
from core.serving.launch import server_for
from core.serving.server import ManagedServer, ServerError
from core.store import Store, StoreError
from core.store.live import LiveRecord, add_live, get_live, live_row
from core.store.serving import ModelRecord, find_model, list_models
from core.store.training import find_run, list_runs

HEALTH_PROMPT = "Reply with one word: ready."
HEALTH_MAX_TOKENS = 8
HEALTH_TIMEOUT_S = 120.0
LOAD_TIMEOUT_S = 120.0
LIST_TIMEOUT_S = 10.0

Phase = Callable[[str], None]


class PromoteError(Exception):
    """A promotion or rollback did not happen; the message says why and what is live.

    kind: unknown (no such adapter or run), not_adapter, base_mismatch, not_vllm (a server
    that cannot load adapters and was not started here), unreachable, load_refused,
    unhealthy, restart_failed, nothing_to_roll_back, changed (another promotion won)."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class ServingTarget:
    """A running server as a promotion sees it."""

    base_url: str
    """The OpenAI base URL (…/v1), the key of the server's live records."""
    engine: str | None
    """vllm | transformers | None (a server elsewhere that is not vLLM)."""
    base_model: str
    """The id the server serves its base model under (a registered name when started here)."""
    model_id: str
    """What requests name when no promotion is live (the model the server was started with)."""
    base_root: str | None = None
    """The base's folder or hub id, as the server has it."""
    server: ManagedServer | None = None
    """The server, when this process started it (it can be restarted)."""


@dataclass(frozen=True)
class Promotion:
    """A promotion or rollback that happened."""

    live: LiveRecord
    previous: LiveRecord | None
    restarted: bool
    message: str
    base_url: str
    seconds: float = 0.0


@dataclass(frozen=True)
class Following:
    """The model id a chat names now, and the live record behind it (None: none applies)."""

    model_id: str
    record: LiveRecord | None = None


# ----------------------------------------------------------------------------- addresses


def server_url(text: str) -> str:
    """An OpenAI base URL from what a user typed: a URL (with or without /v1), host:port, or
    a port of 127.0.0.1. The form live records are kept under."""
    value = text.strip().rstrip("/")
    if not value:
        raise PromoteError("no server given (a URL such as http://127.0.0.1:8000/v1, or a port)")
    if value.isdigit():
        value = f"http://127.0.0.1:{value}"
    elif "://" not in value:
        value = f"http://{value}"
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PromoteError(f"{text!r} is not a server address (e.g. http://127.0.0.1:8000/v1)")
    if parts.hostname == "localhost":  # one key per server, however it was typed
        value = value.replace("//localhost", "//127.0.0.1", 1)
    if not parts.path.endswith("/v1"):
        value = value + "/v1"
    return value


def target_of(server: ManagedServer) -> ServingTarget:
    """The target of a server this process started (and can restart)."""
    if not server.alive:
        raise PromoteError(f"the {server.engine} server is not running", kind="unreachable")
    return ServingTarget(
        base_url=server_url(server.base_url),
        engine=server.engine,
        base_model=server.served_name or server.model_id,
        model_id=server.model_id,
        base_root=server.model,
        server=server,
    )


def listed_models(base_url: str, timeout_s: float = LIST_TIMEOUT_S) -> dict[str, dict[str, Any]]:
    """{id: card} of what the server at `base_url` lists (GET /v1/models)."""
    try:
        response = httpx.get(f"{base_url}/models", timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise PromoteError(
            f"no answer from {base_url}/models: {type(exc).__name__}: {exc}", kind="unreachable"
        ) from None
    if response.status_code != 200:
        raise PromoteError(
            f"{base_url}/models answered HTTP {response.status_code}", kind="unreachable"
        )
    try:
        data = response.json().get("data", [])
    except (ValueError, AttributeError):
        data = []
    return {str(m["id"]): m for m in data if isinstance(m, dict) and "id" in m}


def probe_target(url: str, model_id: str | None = None) -> ServingTarget:
    """The target of a server that runs elsewhere, from its model list: vLLM says so
    (`owned_by`), lists its base without a `parent` and loaded adapters with one."""
    base_url = server_url(url)
    listed = listed_models(base_url)
    if not listed:
        raise PromoteError(f"{base_url}/models lists no model", kind="unreachable")
    vllm = any(card.get("owned_by") == "vllm" for card in listed.values())
    bases = [mid for mid, card in listed.items() if not card.get("parent")]
    base = bases[0] if bases else next(iter(listed))
    root = listed[base].get("root")
    return ServingTarget(
        base_url=base_url,
        engine="vllm" if vllm else None,
        base_model=base,
        model_id=model_id or next(iter(listed)),
        base_root=str(root) if root else None,
    )


# ----------------------------------------------------------------------------- what to promote


def resolve_adapter(store: Store, ref: str) -> ModelRecord:
    """The registered adapter `ref` names: its name, or a training run (id or unique prefix)
    whose registered outputs hold one (a pipeline: its last stage's)."""
    record = find_model(store, ref)
    if record is None:
        run = find_run(store, ref)
        if run is None:
            names = ", ".join(r.name for r in list_models(store) if r.kind == "adapter")
            raise PromoteError(
                f"no adapter or training run {ref!r} (adapters: {names or 'none registered'})",
                kind="unknown",
            )
        runs = [run]
        if run.stage == "pipeline":
            runs = list(reversed(list_runs(store, parent=run.id)))
        for candidate in runs:
            for name in candidate.outputs.get("registered") or []:
                found = find_model(store, str(name))
                if found is not None and found.kind == "adapter":
                    return found
        raise PromoteError(
            f"run {run.id} registered no adapter ({run.status}"
            + (f": {run.outputs['note']}" if run.outputs.get("note") else "")
            + ")",
            kind="not_adapter",
        )
    if record.kind != "adapter":
        raise PromoteError(
            f"{record.name!r} is a {record.kind} model, not an adapter: serve it as a model of "
            "its own (hat serve --model NAME)",
            kind="not_adapter",
        )
    return record


def _same_location(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    if a == b:
        return True
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except OSError:
        return False


def _adapter_config_base(adapter: ModelRecord) -> str | None:
    try:
        data = json.loads((Path(adapter.location) / "adapter_config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("base_model_name_or_path") if isinstance(data, dict) else None
    return str(value) if value else None


def server_base(store: Store, target: ServingTarget) -> str:
    """The registered base model the server serves (a merged model's base for a server that
    serves one), else the server's own id for it."""
    record = find_model(store, target.base_model)
    if record is not None and record.kind == "merged" and record.base:
        return record.base
    return record.name if record is not None else target.base_model


def check_base(store: Store, adapter: ModelRecord, target: ServingTarget) -> None:
    """PromoteError when `adapter` was trained on another base than the server serves.
    Reads the registry and the adapter's folder only: nothing goes to the server."""
    served = server_base(store, target)
    if adapter.base == served:
        return
    base = find_model(store, adapter.base or "")
    trained_on = _adapter_config_base(adapter)
    if target.base_root and (
        (base is not None and _same_location(base.location, target.base_root))
        or _same_location(trained_on, target.base_root)
    ):
        return
    raise PromoteError(
        f"{adapter.name!r} was trained on {adapter.base!r}, but the server at {target.base_url} "
        f"serves {served!r}: refused, nothing was sent to the server (promote it onto a server "
        f"of {adapter.base!r})",
        kind="base_mismatch",
    )


# ----------------------------------------------------------------------------- HTTP


def _detail(response: httpx.Response) -> str:
    """The reason in an error answer: vLLM's `error.message` / `message`, else the text."""
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:500] or f"HTTP {response.status_code}"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
        if isinstance(error, str) and error:
            return error[:500]
        if data.get("message"):
            return str(data["message"])[:500]
        if data.get("detail"):
            return str(data["detail"])[:500]
    return response.text.strip()[:500]


def _post(url: str, body: dict[str, Any], timeout_s: float) -> httpx.Response:
    try:
        return httpx.post(url, json=body, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise PromoteError(
            f"no answer from {url}: {type(exc).__name__}: {exc}", kind="unreachable"
        ) from None


def load_adapter(
    base_url: str, served: str, folder: str, timeout_s: float = LOAD_TIMEOUT_S
) -> None:
    """POST /v1/load_lora_adapter; PromoteError with vLLM's reason when it refuses."""
    response = _post(
        f"{base_url}/load_lora_adapter", {"lora_name": served, "lora_path": folder}, timeout_s
    )
    if response.status_code == 200:
        return
    missing = _detail(response) in ("Not Found", "Method Not Allowed")
    if response.status_code in (404, 405) and missing:
        # the route itself is missing (vLLM's own 404s say what they did not find)
        raise PromoteError(
            f"the server at {base_url} does not load adapters while it runs (HTTP "
            f"{response.status_code} on /v1/load_lora_adapter): start it with runtime LoRA "
            "(hat serve --engine vllm --runtime-lora)",
            kind="load_refused",
        )
    raise PromoteError(
        f"vLLM refused to load {served!r} from {folder} (HTTP {response.status_code}): "
        f"{_detail(response)}",
        kind="load_refused",
    )


def unload_adapter(base_url: str, served: str, timeout_s: float = 30.0) -> bool:
    """POST /v1/unload_lora_adapter; whether the server unloaded it (never raises)."""
    try:
        response = httpx.post(
            f"{base_url}/unload_lora_adapter", json={"lora_name": served}, timeout=timeout_s
        )
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def health_prompt(base_url: str, model_id: str, timeout_s: float = HEALTH_TIMEOUT_S) -> str:
    """Ask `model_id` one short chat request; its reply, or PromoteError saying why there is
    none. The answer must name `model_id` as the model that answered."""
    body = {
        "model": model_id,
        "messages": [{"role": "user", "content": HEALTH_PROMPT}],
        "max_tokens": HEALTH_MAX_TOKENS,
        "temperature": 0,
    }
    response = _post(f"{base_url}/chat/completions", body, timeout_s)
    if response.status_code != 200:
        raise PromoteError(
            f"{model_id!r} did not answer the health prompt (HTTP {response.status_code}): "
            f"{_detail(response)}",
            kind="unhealthy",
        )
    try:
        data = response.json()
        choice = data["choices"][0]
        text = str((choice.get("message") or {}).get("content") or "")
        answered_by = data.get("model")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise PromoteError(
            f"{model_id!r} answered the health prompt with no reply: {response.text[:300]}",
            kind="unhealthy",
        ) from None
    if answered_by not in (None, model_id):
        raise PromoteError(
            f"the health prompt to {model_id!r} was answered by {answered_by!r}",
            kind="unhealthy",
        )
    return text


# ----------------------------------------------------------------------------- the live record


def _valid(record: LiveRecord | None, listed: dict[str, dict[str, Any]] | None) -> bool:
    """A record still describes the server: it serves the record's model id (a server that
    restarted since has forgotten adapters loaded into it)."""
    return record is not None and (listed is None or record.served_name in listed)


def current_live(
    store: Store, target: ServingTarget
) -> tuple[LiveRecord | None, dict[str, dict[str, Any]] | None]:
    """(the server's live record when it still applies there, the server's model list). A
    transformers server started here is not asked: its record applies while the server
    serves the record's model id. None: no record, or one the server has forgotten."""
    record = live_row(store, target.base_url)
    server = target.server
    if server is not None and server.engine == "transformers":
        applies = record is not None and record.served_name == server.model_id
        return (record if applies else None), None
    listed = listed_models(target.base_url)
    return (record if _valid(record, listed) else None), listed


def follow_live(store: Store, base_url: str, default: str, *, timeout_s: float = 3.0) -> Following:
    """The model id a chat with the server at `base_url` names on its next turn: the live
    record's served name while the server lists it, else `default` (what the chat was
    started with). Never raises for the server's sake: a server that does not answer is the
    chat request's to report."""
    try:
        record = live_row(store, server_url(base_url))
    except (StoreError, PromoteError):
        return Following(default)
    if record is None:
        return Following(default)
    if record.served_name == default:
        return Following(default, record)
    try:
        listed = listed_models(server_url(base_url), timeout_s)
    except PromoteError:
        return Following(default)
    if record.served_name in listed:
        return Following(record.served_name, record)
    return Following(default)


def _baseline(store: Store, target: ServingTarget) -> LiveRecord:
    """What the server serves before its first recorded promotion: the model it was started
    with (an adapter, a merged copy of one, or the base)."""
    adapter: str | None = None
    model = target.model_id
    record = find_model(store, target.model_id) or (
        find_model(store, target.base_model) if target.engine == "transformers" else None
    )
    if record is not None:
        model = record.name
        if record.kind == "adapter":
            adapter = record.name
        elif record.kind == "merged":
            adapters = {r.name: r for r in list_models(store) if r.kind == "adapter"}
            adapter = merge_source(record, adapters)
    elif target.model_id != target.base_model:
        adapter = target.model_id
    run = None
    if adapter is not None:
        registered = find_model(store, adapter)
        if registered is not None:
            run = registered.meta.get("run")
    return LiveRecord(
        server=target.base_url,
        engine=target.engine,
        base_model=server_base(store, target),
        model=model,
        adapter=adapter,
        served_name=target.model_id,
        run=str(run) if run else None,
        action="serving",
    )


def _record(
    store: Store, record: LiveRecord, *, baseline: LiveRecord | None, current: LiveRecord | None
) -> LiveRecord:
    try:
        return add_live(store, record, baseline=baseline, expected=current.pk if current else None)
    except StoreError as exc:
        raise PromoteError(str(exc), kind="changed") from None


def _served_name(adapter: ModelRecord, listed: dict[str, dict[str, Any]]) -> tuple[str, bool]:
    """(served name, already loaded there): the adapter's name unless the server holds
    another folder under it."""
    name = adapter.name
    counter = 2
    while name in listed:
        card = listed[name]
        if card.get("parent") and _same_location(str(card.get("root") or ""), adapter.location):
            return name, True
        name = f"{adapter.name}-{counter}"
        counter += 1
    return name, False


def _restarts(target: ServingTarget) -> bool:
    """The server cannot load an adapter while it runs, but was started here."""
    server = target.server
    if server is None:
        return False
    return server.engine == "transformers" or not server.config.runtime_lora


def _cannot_load(target: ServingTarget) -> PromoteError:
    return PromoteError(
        f"the server at {target.base_url} is not vLLM, so it cannot load an adapter while it "
        "runs; promoting onto it means restarting it, which only the process that started it "
        "can do (the studio's Chat page restarts a server it started; for hat serve, stop it "
        "and start it with --adapter NAME)",
        kind="not_vllm",
    )


def _run_of(adapter: ModelRecord) -> str | None:
    run = adapter.meta.get("run")
    return str(run) if run else None


def promote(
    store: Store,
    target: ServingTarget,
    ref: str,
    *,
    on_phase: Phase | None = None,
    health_timeout_s: float = HEALTH_TIMEOUT_S,
) -> Promotion:
    """Make the adapter `ref` names (or its training run's) what the server answers with."""
    started = time.monotonic()
    say = on_phase or (lambda _text: None)
    adapter = resolve_adapter(store, ref)
    check_base(store, adapter, target)
    if target.engine != "vllm" and target.server is None:
        raise _cannot_load(target)
    current, listed = current_live(store, target)
    baseline = None if current is not None else _baseline(store, target)
    previous = current or baseline
    if previous is not None and previous.adapter == adapter.name:
        raise PromoteError(f"{adapter.name!r} is already live on {target.base_url}", kind="live")
    if _restarts(target):
        return _restart_onto(
            store, target, adapter, current, baseline, say, health_timeout_s, started
        )
    assert listed is not None
    served, loaded = _served_name(adapter, listed)
    live = previous.model if previous is not None else target.model_id
    try:
        if not loaded:
            say(f"Loading {adapter.name} into the server")
            load_adapter(target.base_url, served, adapter.location)
        say(f"Asking {adapter.name} the health prompt")
        try:
            health_prompt(target.base_url, served, health_timeout_s)
        except PromoteError:
            if not loaded:
                unload_adapter(target.base_url, served)
            raise
    except PromoteError as exc:
        raise PromoteError(f"{exc}; {live!r} stays live", kind=exc.kind) from None
    record = _record(
        store,
        LiveRecord(
            server=target.base_url,
            engine=target.engine,
            base_model=server_base(store, target),
            model=adapter.name,
            adapter=adapter.name,
            served_name=served,
            run=_run_of(adapter),
            action="promote",
            previous=current.pk if current is not None else None,
        ),
        baseline=baseline,
        current=current,
    )
    before = get_live(store, record.previous) if record.previous is not None else None
    kept = f"; {before.model} stays loaded for a rollback" if before is not None else ""
    return Promotion(
        record,
        before,
        False,
        f"{adapter.name} is live on {target.base_url} (model id {served!r}){kept}",
        target.base_url,
        time.monotonic() - started,
    )


def rollback(
    store: Store,
    target: ServingTarget,
    *,
    on_phase: Phase | None = None,
    health_timeout_s: float = HEALTH_TIMEOUT_S,
) -> Promotion:
    """Make what was live before the current promotion answer again (the same checks as a
    promotion: it must answer the health prompt before the record switches back)."""
    started = time.monotonic()
    say = on_phase or (lambda _text: None)
    if target.engine != "vllm" and target.server is None:
        raise _cannot_load(target)
    current, listed = current_live(store, target)
    if current is None or current.previous is None:
        raise PromoteError(
            f"nothing to roll back to on {target.base_url}: no promotion is live there",
            kind="nothing_to_roll_back",
        )
    back = get_live(store, current.previous)
    if _restarts(target):
        return _restart_back(store, target, current, back, say, health_timeout_s, started)
    assert listed is not None
    loaded_now = False
    try:
        if back.served_name not in listed:
            if back.adapter is None:
                raise PromoteError(
                    f"the server at {target.base_url} no longer serves {back.served_name!r}",
                    kind="unreachable",
                )
            adapter = resolve_adapter(store, back.adapter)
            say(f"Loading {adapter.name} into the server again")
            load_adapter(target.base_url, back.served_name, adapter.location)
            loaded_now = True
        say(f"Asking {back.model} the health prompt")
        try:
            health_prompt(target.base_url, back.served_name, health_timeout_s)
        except PromoteError:
            if loaded_now:
                unload_adapter(target.base_url, back.served_name)
            raise
    except PromoteError as exc:
        raise PromoteError(f"{exc}; {current.model!r} stays live", kind=exc.kind) from None
    record = _record(
        store,
        replace(back, server=target.base_url, action="rollback", note=None, since=None, pk=0),
        baseline=None,
        current=current,
    )
    return Promotion(
        record,
        current,
        False,
        f"rolled back on {target.base_url}: {back.model} answers again (model id "
        f"{back.served_name!r}); {current.model} stays loaded",
        target.base_url,
        time.monotonic() - started,
    )


# ----------------------------------------------------------------------------- restarts


def _restart_with(
    store: Store,
    server: ManagedServer,
    model: str,
    adapter: str | None,
    say: Phase,
    health_timeout_s: float,
) -> None:
    """Restart `server` serving the registered `model` (+ `adapter`); when that does not
    answer the health prompt, it serves what it served before again, and PromoteError says
    both."""
    old = (server.model, server.served_name, server.config)
    config = replace(server.config, adapters={})
    if server.engine == "vllm":
        config = replace(config, runtime_lora=True)
    try:
        fresh = server_for(store, config, model, adapter=adapter, port=server.port, on_phase=say)
    except RegistryError as exc:
        raise PromoteError(f"{exc}; nothing was changed", kind="restart_failed") from None
    what = adapter or model
    if adapter and server.engine == "transformers":
        what = f"{adapter} (merged into {model})"
    server.model, server.served_name, server.config = fresh.model, fresh.served_name, fresh.config
    say(f"Restarting the {server.engine} server with {what}")
    try:
        server.restart()
        health_prompt(server_url(server.base_url), server.model_id, health_timeout_s)
    except (ServerError, PromoteError) as exc:
        why = str(exc).split("; last log lines:")[0]
        server.model, server.served_name, server.config = old
        say(f"Restarting the {server.engine} server with what it served before")
        try:
            server.restart()
        except ServerError as again:
            raise PromoteError(
                f"the {server.engine} server did not come up with {what}: {why}; and it did "
                f"not start again with what it served before either: {again}",
                kind="restart_failed",
            ) from None
        raise PromoteError(
            f"the {server.engine} server did not come up with {what}: {why}; it was restarted "
            "with what it served before, which answers again",
            kind="restart_failed",
        ) from None


def _restart_note(server: ManagedServer) -> str:
    if server.engine == "transformers":
        return (
            "restarted the transformers server (transformers serve cannot load an adapter "
            "while it runs: it serves the adapter merged into its base)"
        )
    return (
        "restarted the vLLM server (it was started without runtime LoRA; it now has it, so "
        "later promotions load without a restart)"
    )


def _restart_onto(
    store: Store,
    target: ServingTarget,
    adapter: ModelRecord,
    current: LiveRecord | None,
    baseline: LiveRecord | None,
    say: Phase,
    health_timeout_s: float,
    started: float,
) -> Promotion:
    server = target.server
    assert server is not None
    base = server_base(store, target)
    _restart_with(store, server, base, adapter.name, say, health_timeout_s)
    url = server_url(server.base_url)
    note = _restart_note(server)
    record = _record(
        store,
        LiveRecord(
            server=url,
            engine=server.engine,
            base_model=base,
            model=adapter.name,
            adapter=adapter.name,
            served_name=server.model_id,
            run=_run_of(adapter),
            action="promote",
            note=note,
            previous=current.pk if current is not None else None,
        ),
        baseline=baseline,
        current=current if url == target.base_url else None,
    )
    before = get_live(store, record.previous) if record.previous is not None else None
    return Promotion(
        record, before, True, f"{note}; {adapter.name} is live on {url}", url,
        time.monotonic() - started,
    )  # fmt: skip


def _restart_back(
    store: Store,
    target: ServingTarget,
    current: LiveRecord,
    back: LiveRecord,
    say: Phase,
    health_timeout_s: float,
    started: float,
) -> Promotion:
    server = target.server
    assert server is not None
    model = back.model if back.adapter is None else back.base_model
    _restart_with(store, server, model, back.adapter, say, health_timeout_s)
    url = server_url(server.base_url)
    note = _restart_note(server).split(" (")[0]
    record = _record(
        store,
        replace(
            back,
            server=url,
            engine=server.engine,
            served_name=server.model_id,
            action="rollback",
            note=note,
            since=None,
            pk=0,
        ),
        baseline=None,
        current=current if url == target.base_url else None,
    )
    return Promotion(
        record, current, True, f"{note}; rolled back on {url}: {back.model} answers again", url,
        time.monotonic() - started,
    )  # fmt: skip


def describe(record: LiveRecord) -> str:
    """What is live, since when and from which run, in one line."""
    since = record.since.astimezone().strftime("%Y-%m-%d %H:%M") if record.since else "-"
    run = f", run {record.run}" if record.run else ""
    how = {"serving": "started with it, recorded", "promote": "promoted", "rollback": "rolled back"}
    return f"{record.model} ({how.get(record.action, record.action)} {since}{run})"
