"""A chat session: viewer messages through the agent loop, history across turns, latency rows.

    chat = ChatSession(harness, client, bindings, store=store, engine="transformers")
    trace = await chat.ask("how much is link 5?", on_delta=print)
    chat.history                   # what the next request sees before its viewer message

History grows only with requests that ended in an accepted reply (status ok). A request that
failed — the server died, the request timed out (`model_error`), the retry budget ran out —
leaves the history as it was, so the viewer can ask again (after `server.restart()`) and the
model sees the same conversation. Every request is stored as a latency row of the session;
the first one is flagged as warm-up (it pays for cold caches) and left out of statistics.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from core.harness.models import Harness
from core.runtime.bindings import Bindings
from core.runtime.client import ChatClient, DeltaCallback, Message
from core.runtime.loop import AgentLoop, EventCallback
from core.runtime.trace import Trace
from core.serving.latency import RecordingClient, request_row
from core.store import Store
from core.store.serving import RequestRow, add_latency


class ChatSession:
    def __init__(
        self,
        harness: Harness,
        client: ChatClient,
        bindings: Bindings,
        *,
        store: Store | None = None,
        session: str | None = None,
        engine: str | None = None,
        model: str | None = None,
        warmup: int = 1,
    ) -> None:
        self.harness = harness
        self.client = client
        self.bindings = bindings
        self.store = store
        self.session = session or f"chat-{uuid.uuid4().hex[:12]}"
        self.engine = engine
        self.model = model
        self.warmup = warmup
        self.history: list[Message] = []
        self.traces: list[Trace] = []
        self.rows: list[RequestRow] = []

    async def ask(
        self,
        message: str,
        *,
        on_delta: DeltaCallback | None = None,
        on_event: EventCallback | None = None,
        context: dict[str, Any] | None = None,
    ) -> Trace:
        recorder = RecordingClient(self.client)
        loop = AgentLoop(self.harness, recorder, self.bindings)
        trace = await loop.run(
            message, history=self.history, on_delta=on_delta, on_event=on_event, context=context
        )
        self.traces.append(trace)
        if trace.ok:
            self.history = trace.next_history()
        row = request_row(
            trace,
            session=self.session,
            source="chat",
            engine=self.engine,
            model=self.model,
            warmup=len(self.rows) < self.warmup,
            timings=recorder.timings,
        )
        self.rows.append(row)
        if self.store is not None:
            await asyncio.to_thread(add_latency, self.store, [row])
        return trace
