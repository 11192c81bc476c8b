"""One column of the studio chat: a harness version and a `ChatSession` against an endpoint.

    lane = ChatLane("A", harness, store=store)
    trace = await lane.ask("how much is link 5?", endpoint, task=preset.task,
                           on_delta=..., on_event=...)
    lane.session.rows           # latency rows (the first is the warm-up)

A/B mode runs two lanes on the same viewer message: two harness versions against one server, or
one harness against two servers. Each lane keeps its own history and latency rows.

Each request gets a new client (`client_factory`, default `OpenAIChatClient`), closed when the
request ends: the studio runs requests either on its qasync loop or, without one, with
`asyncio.run` in a worker thread, and an HTTP client must not outlive the loop it was made on.
Each request also gets its world's fresh bindings (`core.episode.open_world.chat_world`: a new
simulated room for its task when the harness binds simulator tools) and, when the harness
binds tools elsewhere (Python functions, MCP servers, HTTP endpoints), its own `ToolRuntime`
for the request: like the HTTP client, an MCP session must not outlive the loop it was opened
on, so it lives exactly as long as the request (MCP servers start on their first call).

On a vLLM endpoint the lane reads the server's speculative decoding counters (/metrics) before
and after each request: `lane.spec_decode` is their change over the last request (acceptance
for its latency row), None where the server runs without speculative decoding or is not vLLM.
The chat queue runs one request at a time, so the change is that request's alone.

`fresh=True` answers the message without the conversation so far and leaves that conversation
as it was (a live-room replay, where viewers' questions are independent). A failed request
leaves the history unchanged (`ChatSession`), so after a restart the viewer can ask again.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from core.harness.models import Harness
from core.runtime.bindings import Bindings
from core.runtime.client import ChatClient, DeltaCallback, Message, ModelError, ModelReply
from core.runtime.loop import EventCallback
from core.runtime.trace import Trace
from core.serving.chat import ChatSession
from core.serving.client import GenerationOptions, OpenAIChatClient
from core.serving.metrics import SpecDecode, spec_decode_counts
from core.sim.models import Task
from core.store import Store
from studio.logic.chat_server import Endpoint


class ClosableClient(ChatClient, Protocol):
    async def aclose(self) -> None: ...


ClientFactory = Callable[[Endpoint, GenerationOptions, "ChatLane"], ChatClient]


def default_client(
    endpoint: Endpoint, options: GenerationOptions, lane: ChatLane, *, timeout_s: float = 120.0
) -> ChatClient:
    del lane
    return OpenAIChatClient(
        endpoint.base_url, endpoint.model_id, options=options, timeout_s=timeout_s
    )


class _NoClient:
    """The session's client between requests (each request brings its own)."""

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        raise ModelError("no model server is connected")


class ChatLane:
    def __init__(
        self,
        name: str,
        harness: Harness,
        *,
        store: Store | None = None,
        harness_label: str = "",
        warmup: int = 1,
    ) -> None:
        self.name = name
        self.store = store
        self.warmup = warmup
        self.harness = harness
        self.harness_label = harness_label or harness.name
        self.session = self._new_session(harness)
        self.spec_decode: SpecDecode | None = None
        """Speculative decoding counts of the last request (module doc)."""

    def _new_session(self, harness: Harness) -> ChatSession:
        return ChatSession(
            harness,
            _NoClient(),
            Bindings(),
            store=self.store,
            session=f"chat-{self.name.lower()}-{uuid.uuid4().hex[:10]}",
            warmup=self.warmup,
        )

    def reset(self, harness: Harness | None = None, harness_label: str | None = None) -> None:
        """A new conversation (and latency session), optionally under another harness."""
        if harness is not None:
            self.harness = harness
            self.harness_label = harness_label or harness.name
        self.session = self._new_session(self.harness)

    @property
    def history(self) -> list[Message]:
        return self.session.history

    async def ask(
        self,
        message: str,
        endpoint: Endpoint,
        *,
        task: Task | None = None,
        options: GenerationOptions | None = None,
        client_factory: ClientFactory | None = None,
        on_delta: DeltaCallback | None = None,
        on_event: EventCallback | None = None,
        fresh: bool = False,
    ) -> Trace:
        """One agent request of this lane (see the module doc)."""
        session = self.session
        factory = client_factory or default_client
        client = factory(endpoint, options or GenerationOptions(), self)
        session.client = client
        session.engine = endpoint.engine
        session.model = endpoint.model
        kept = session.history
        if fresh:
            session.history = []
        self.spec_decode = None
        spec_before = await _spec_counts(endpoint)
        try:
            async with contextlib.AsyncExitStack() as world:
                session.bindings = await request_bindings(self.harness, task, world)
                return await session.ask(message, on_delta=on_delta, on_event=on_event)
        finally:
            if spec_before is not None:
                spec_after = await _spec_counts(endpoint)
                if spec_after is not None:
                    self.spec_decode = spec_after.minus(spec_before)
            if fresh:
                session.history = kept
            session.client = _NoClient()
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()


async def _spec_counts(endpoint: Endpoint) -> SpecDecode | None:
    """The speculative decoding counters of a vLLM endpoint's /metrics; None for other
    engines, a server without them, or one that does not answer in time (the readout is an
    extra, never a reason for a request to fail)."""
    if endpoint.engine != "vllm":
        return None
    import httpx

    url = endpoint.base_url.rstrip("/").removesuffix("/v1") + "/metrics"

    def read() -> SpecDecode | None:
        try:
            response = httpx.get(url, timeout=2.0)
        except httpx.HTTPError:
            return None
        return spec_decode_counts(response.text) if response.status_code == 200 else None

    return await asyncio.to_thread(read)


async def request_bindings(
    harness: Harness, task: Task | None, world: contextlib.AsyncExitStack
) -> Bindings:
    """Everything one chat request can call: its world's fresh bindings (a new live room for
    `sim.*` tools, the harness's own tools through a ToolRuntime entered on `world`, HSA's
    distractors)."""
    from core.episode.open_world import chat_world
    from core.sim.surface import HarnessSurface

    played_in = await chat_world(harness, world)
    return played_in.bindings(task, harness, HarnessSurface(harness, {}, {}, {}))


# ----------------------------------------------------------------------------- harness choices


@dataclass(frozen=True)
class HarnessChoice:
    """A stored harness version the chat can run under."""

    harness: str
    version_id: str
    labels: tuple[str, ...]
    message: str

    @property
    def label(self) -> str:
        tags = f" · {', '.join(self.labels)}" if self.labels else ""
        return f"{self.harness} @ {self.version_id[:10]}{tags}"


def harness_choices(store: Store, *, per_harness: int = 30) -> list[HarnessChoice]:
    """Versions of every stored harness, newest first within each harness."""
    out: list[HarnessChoice] = []
    for name in store.harness_names():
        for info in store.log(name, limit=per_harness):
            out.append(HarnessChoice(name, info.id, tuple(info.labels), info.message))
    return out
