"""Promotion in the studio: a trained adapter onto the Chat page's running server, rollback,
and what is live there (core/serving/promote.py does the work; this binds it to a ChatServer).

    done = promote_on(store, chat_server, "sft-1")     # the server's endpoint follows
    done = rollback_on(store, chat_server)
    view = live_view(store, chat_server)               # the panel's line; follows the record
    name = run_adapter(run, stages)                    # what a run would promote

Every function blocks (HTTP, a restart); the studio calls them in worker threads. After a
promotion or a rollback the ChatServer's endpoint names the live model id (and, when the
server was restarted for it, the server's new address), so the next chat turn is answered by
it. `live_view` also follows promotions made elsewhere (`hat models promote`): the endpoint
is moved to the live record's model id while the server lists it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from core.serving.promote import (
    PromoteError,
    Promotion,
    ServingTarget,
    describe,
    follow_live,
    probe_target,
    promote,
    rollback,
    target_of,
)
from core.store import Store
from core.store.live import LiveRecord
from core.store.training import RunRecord
from studio.logic.chat_server import ChatServer, Endpoint


@dataclass(frozen=True)
class LiveView:
    """What the server card says about the live model."""

    text: str
    """"Live: sft-1 · promoted 2026-12-08 14:02 · run sft-…", or "" when nothing was promoted."""
    tooltip: str
    can_roll_back: bool
    endpoint: Endpoint | None
    """The endpoint the chat uses now (moved when the record named another model id)."""
    moved: bool = False
    """The endpoint changed: the card tells the page."""


def serving_target(server: ChatServer) -> ServingTarget:
    """The promotion target of the card's server: the one it started, or the one it attached."""
    if server.server is not None and server.server.alive:
        return target_of(server.server)
    endpoint = server.endpoint
    if endpoint is None:
        raise PromoteError("no model server is running on the Chat page", kind="unreachable")
    return probe_target(endpoint.base_url, endpoint.model_id)


def _label(record: LiveRecord) -> str:
    return f"{record.base_model}+{record.adapter}" if record.adapter else record.model


def _adopt(server: ChatServer, done: Promotion) -> None:
    """Point the card's endpoint (and, for a restarted server, its request) at what is live."""
    endpoint = server.endpoint
    if endpoint is None:
        return
    live = done.live
    model_id = live.served_name
    base_url = endpoint.base_url
    managed = server.server
    if done.restarted and managed is not None:
        base_url, model_id = managed.base_url, managed.model_id
        if server.request is not None:
            server.request = replace(
                server.request, model=live.base_model if live.adapter else live.model,
                adapter=live.adapter,
            )  # fmt: skip
    server.endpoint = replace(endpoint, base_url=base_url, model_id=model_id, model=_label(live))


def promote_on(
    store: Store, server: ChatServer, ref: str, *, on_phase: Callable[[str], None] | None = None
) -> Promotion:
    """Promote the adapter `ref` names (or its run's) onto the card's server."""
    return _swap(server, lambda target: promote(store, target, ref, on_phase=on_phase))


def rollback_on(
    store: Store, server: ChatServer, *, on_phase: Callable[[str], None] | None = None
) -> Promotion:
    """Make what was live before the current promotion on the card's server answer again."""
    return _swap(server, lambda target: rollback(store, target, on_phase=on_phase))


def _swap(server: ChatServer, change: Callable[[ServingTarget], Promotion]) -> Promotion:
    """Run a promotion or rollback on the card's server: a restart it may need is no crash
    (`swapping`), a failed one leaves the card on what runs again, a done one is adopted."""
    server.swapping.set()
    try:
        done = change(serving_target(server))
    except PromoteError:
        _resync(server)
        raise
    finally:
        server.swapping.clear()
    _adopt(server, done)
    return done


def _resync(server: ChatServer) -> None:
    """After a failed restart-promotion the old model runs again, maybe on another port."""
    managed, endpoint = server.server, server.endpoint
    if managed is None or endpoint is None or not managed.alive or managed.port is None:
        return
    if endpoint.base_url != managed.base_url:
        server.endpoint = replace(endpoint, base_url=managed.base_url)


def default_model_id(server: ChatServer) -> str | None:
    """What the card's server answers with when nothing promoted applies: the model it was
    started with (attached: the model id the card was given)."""
    if server.server is not None:
        return server.server.model_id if server.server.alive else None
    request = server.request
    if request is not None and request.model_id:
        return request.model_id
    return server.endpoint.model_id if server.endpoint is not None else None


def live_view(store: Store, server: ChatServer) -> LiveView:
    """The live line of the card's server, its endpoint moved to the live record's model id
    when that changed (a promotion elsewhere, or one that a restart has since undone)."""
    endpoint = server.endpoint
    default = default_model_id(server)
    if endpoint is None or default is None:
        return LiveView("", "", False, None)
    now = follow_live(store, endpoint.base_url, default)
    record = now.record
    moved = now.model_id != endpoint.model_id
    if moved:
        label = _label(record) if record is not None else _started_label(server, endpoint)
        endpoint = replace(endpoint, model_id=now.model_id, model=label)
        server.endpoint = endpoint
    if record is None:
        return LiveView("", "", False, endpoint, moved)
    since = record.since.astimezone().strftime("%Y-%m-%d %H:%M") if record.since else "—"
    how = {"serving": "started with it, recorded", "promote": "promoted", "rollback": "rolled back"}
    parts = [f"Live: {record.model}", f"{how.get(record.action, record.action)} {since}"]
    if record.run:
        parts.append(f"run {record.run}")
    tooltip = (
        f"{describe(record)}\nRequests name {record.served_name!r} on {record.server}."
        + (f"\n{record.note}" if record.note else "")
        + ("\nRoll back makes what was live before answer again." if record.previous else "")
    )
    return LiveView("  ·  ".join(parts), tooltip, record.previous is not None, endpoint, moved)


def _started_label(server: ChatServer, endpoint: Endpoint) -> str:
    """The endpoint's label as the card's start made it (what answers once no promotion
    applies any more)."""
    request = server.request
    if request is None or request.engine == "url":
        return endpoint.model_id if request is None else (request.model_id or endpoint.model_id)
    model = request.model or endpoint.model_id
    return f"{model}+{request.adapter}" if request.adapter else model


def run_adapter(run: RunRecord, stages: Sequence[RunRecord] = ()) -> str | None:
    """The registered adapter a finished run would promote (a pipeline: its last stage's that
    has one; `stages` in their order); None when it registered none. A run registers its
    adapter first (core/train/runs.py `register_outputs`)."""
    if not run.finished:
        return None
    for candidate in [run, *reversed(list(stages))]:
        registered = candidate.outputs.get("registered") or []
        if candidate.outputs.get("adapter") and registered:
            return str(registered[0])
    return None
