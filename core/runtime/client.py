"""The model behind the agent loop: any OpenAI-compatible chat-completions endpoint.

The loop depends only on `ChatClient`; the serving layer provides the streaming HTTP client and
tests provide `ScriptedClient`, which replays a known trajectory so loop behaviour is tested
without a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.harness.tool_calls import format_tool_call
from core.runtime.trajectory import AssistantTurn, ToolCall

Message = dict[str, Any]
DeltaCallback = Callable[[str], None]


@dataclass
class CallTiming:
    """Latency of one model call (DESIGN.md §3): TTFT, TPOT, end to end, token counts."""

    ttft_s: float | None = None
    e2e_s: float = 0.0
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    token_source: str | None = None
    """Where output_tokens came from: "usage" (the server), "tokenizer" or "chunks"."""

    @property
    def tpot_s(self) -> float | None:
        if self.ttft_s is None or not self.output_tokens or self.output_tokens < 2:
            return None
        return (self.e2e_s - self.ttft_s) / (self.output_tokens - 1)


@dataclass
class ModelReply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    timing: CallTiming = field(default_factory=CallTiming)
    finish_reason: str | None = None
    model: str | None = None
    """The model id the server named as the one that answered (a promoted adapter's served
    name on vLLM); None when it did not say."""


class ModelError(Exception):
    """The model call failed (HTTP error, timeout, server gone); the loop records it."""


class ChatClient(Protocol):
    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply: ...


class ScriptedClient:
    """Replays assistant turns in order. For tests and for the oracle teacher.

    With `native=False` tool calls are written into the text as `<tool_call>` blocks, exactly
    what a model using the `prompt` protocol would emit.
    """

    def __init__(self, turns: Sequence[AssistantTurn], *, native: bool = False) -> None:
        self.turns = list(turns)
        self.native = native
        self.calls: list[list[Message]] = []

    def rewind(self) -> None:
        """Start again from the first turn (an episode played once more)."""
        self.calls = []

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        self.calls.append([dict(m) for m in messages])
        index = len(self.calls) - 1
        if index >= len(self.turns):
            raise ModelError(f"scripted client has only {len(self.turns)} turns")
        turn = self.turns[index]
        if self.native:
            content, calls = turn.content, list(turn.tool_calls)
        else:
            blocks = [format_tool_call(c.name, c.arguments) for c in turn.tool_calls]
            content = "\n".join(p for p in (turn.content, *blocks) if p)
            calls = []
        if on_delta is not None and content:
            on_delta(content)
        return ModelReply(content=content, tool_calls=calls, timing=CallTiming(0.0, 0.0))
