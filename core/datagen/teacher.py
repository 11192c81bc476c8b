"""Teachers for data generation: a remote OpenAI-compatible model, or the oracle.

`OpenAITeacher` is a minimal non-streaming `ChatClient` over any OpenAI-compatible
chat-completions endpoint (vLLM, `transformers serve`, a hosted API), built on the `openai`
async client. The serving layer brings the full streaming client with latency statistics; this
one only has to be correct and never crash the generation job:

- every transport or HTTP failure (connection refused, timeout, 4xx/5xx, a response that is not
  a chat completion) becomes `ModelError`, which the agent loop records as status
  `model_error`; the job grades that as a failure with the reason and moves on;
- a native tool call whose `arguments` are not a JSON object is passed on as
  `{"_unparsed_arguments": "<raw text>"}`: the loop's schema check rejects it as
  `invalid_arguments` (every demo tool forbids additional properties) and tells the model, so
  the bad call is visible in the trace and costs tool-rationality marks;
- with the `prompt` protocol the model's text is returned as is; the loop parses `<tool_call>`
  blocks and reports malformed ones to the model.

`TeacherSpec` says which teacher a job uses and is what a data row records as provenance.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.runtime.client import CallTiming, DeltaCallback, Message, ModelError, ModelReply
from core.runtime.trajectory import ToolCall

UNPARSED_ARGUMENTS = "_unparsed_arguments"


@dataclass(frozen=True)
class TeacherSpec:
    """Which teacher generated a row: `oracle`, or `openai` with its endpoint and model."""

    kind: str
    model: str | None = None
    url: str | None = None
    temperature: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.model is not None:
            out["model"] = self.model
        if self.url is not None:
            out["url"] = self.url
        if self.temperature is not None:
            out["temperature"] = self.temperature
        return out


ORACLE = TeacherSpec("oracle")


class OpenAITeacher:
    """A non-streaming ChatClient for an OpenAI-compatible endpoint (see the module doc).

    `api_key` defaults to $OPENAI_API_KEY, or "EMPTY" (local servers ignore it).
    `extra_body` is merged into every request (e.g. `{"top_k": 20}` for vLLM).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = 1024,
        timeout_s: float = 120.0,
        max_retries: int = 2,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        from openai import AsyncOpenAI

        self.base_url = base_url
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self._client = AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY",
            timeout=timeout_s,
            max_retries=max_retries,
        )

    @property
    def spec(self) -> TeacherSpec:
        return TeacherSpec("openai", self.model, self.base_url, self.temperature)

    async def close(self) -> None:
        await self._client.close()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        import openai

        request: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if tools:
            request["tools"] = list(tools)
        if self.extra_body:
            request["extra_body"] = self.extra_body
        started = time.monotonic()
        try:
            response = await self._client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            raise ModelError(f"HTTP {exc.status_code} from {self.base_url}: {exc.message}") from exc
        except openai.APITimeoutError as exc:
            raise ModelError(f"timeout talking to {self.base_url}") from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"cannot reach {self.base_url}: {exc}") from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"{type(exc).__name__}: {exc}") from exc
        elapsed = time.monotonic() - started
        return _reply(response, elapsed, on_delta)


def _reply(response: Any, elapsed: float, on_delta: DeltaCallback | None) -> ModelReply:
    choices = getattr(response, "choices", None)
    if not choices:
        raise ModelError(f"the server returned no choices: {str(response)[:200]}")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise ModelError("the server returned a choice without a message")
    content = message.content if isinstance(message.content, str) else ""
    calls: list[ToolCall] = []
    for raw in message.tool_calls or []:
        function = getattr(raw, "function", None)
        name = getattr(function, "name", None) or ""
        arguments_text = getattr(function, "arguments", None) or ""
        calls.append(
            ToolCall(
                name=str(name), arguments=parse_arguments(arguments_text), id=str(raw.id or "")
            )
        )
    usage = getattr(response, "usage", None)
    timing = CallTiming(
        ttft_s=None,
        e2e_s=elapsed,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
    )
    if on_delta is not None and content:
        on_delta(content)
    return ModelReply(
        content=content,
        tool_calls=calls,
        timing=timing,
        finish_reason=getattr(choice, "finish_reason", None),
    )


def parse_arguments(text: str) -> dict[str, Any]:
    """A native tool call's `arguments` string as a dict (see the module doc for bad ones)."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {UNPARSED_ARGUMENTS: text[:2000]}
    if not isinstance(data, dict):
        return {UNPARSED_ARGUMENTS: text[:2000]}
    return data
