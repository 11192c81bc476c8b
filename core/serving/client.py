"""The streaming OpenAI-compatible client behind the agent loop (`core.runtime.ChatClient`).

    client = OpenAIChatClient(server.base_url, server.model_id, max_tokens=256)
    trace = await AgentLoop(harness, client, bindings).run("how much is link 5?")
    await client.aclose()

Every call streams (`stream=True`) and measures, on the client side (DESIGN.md §3, Latency):

* TTFT: request sent -> first chunk that carries output (text or a tool-call delta, or the
  finish reason when the only token generated was the end of the turn). Servers send a
  role-only chunk before generating anything (transformers serve does so at once), so that
  chunk does not count.
* e2e: request sent -> end of the stream.
* output tokens: the server's `usage.completion_tokens` when it reports usage (we ask for it
  with `stream_options={"include_usage": true}`; vLLM needs that, transformers serve always
  sends usage in its last chunk), else a count by the model's tokenizer (`token_counter`, e.g.
  `tokenizer_counter(folder)`), else the number of chunks that carried text. Which one was used
  is `CallTiming.token_source` ("usage" | "tokenizer" | "chunks").
* TPOT = (e2e - TTFT) / (output tokens - 1), `CallTiming.tpot_s`.

Every failure becomes a `ModelError` whose message names the cause (server unreachable,
HTTP status, request timeout, stream cut mid-reply, error event in the stream), so the loop
records status `model_error` and a chat can keep its history and go on once the server is back.
Messages name the server by `redact_url(base_url)`: traces and reports keep them, so no
credentials of the URL (userinfo, `?token=`-like query values) may reach them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

import httpx
import openai

from core.runtime.client import CallTiming, DeltaCallback, Message, ModelError, ModelReply
from core.runtime.trajectory import ToolCall

TokenCounter = Callable[[str], int]
UNPARSED_ARGUMENTS = "_unparsed_arguments"


@dataclass
class GenerationOptions:
    """Sampling parameters sent with every call (greedy by default, for reproducible runs)."""

    max_tokens: int | None = 256
    temperature: float = 0.0
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] | None = None

    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            data["max_tokens"] = self.max_tokens
        if self.top_p is not None:
            data["top_p"] = self.top_p
        if self.seed is not None:
            data["seed"] = self.seed
        if self.stop:
            data["stop"] = list(self.stop)
        return data


_SECRET_QUERY_NAMES = frozenset(
    {
        "token", "key", "apikey", "secret", "password", "passwd", "pwd", "pass", "sig",
        "signature", "auth", "authorization", "credential", "credentials", "session",
        "sessionid", "jwt", "bearer", "code",
    }
)  # fmt: skip
_SECRET_QUERY_SUFFIXES = ("_token", "_key", "_secret", "_password", "_signature", "_sig", "_auth")


def secret_query_name(name: str) -> bool:
    """Whether a URL query parameter called `name` looks like it carries a secret
    (`token`, `api_key`, `X-Api-Key`, `access_token`, `sig`, `client_secret`, ...)."""
    folded = unquote_plus(name).strip().lower().replace("-", "_")
    return folded in _SECRET_QUERY_NAMES or folded.endswith(_SECRET_QUERY_SUFFIXES)


def redact_url(url: str) -> str:
    """`url` as it may be stored or shown: without `user:password@` and without the query
    parameters whose names look secret (`secret_query_name`); everything else is kept as
    written. Keys belong in the environment or the OS keyring, never in a stored URL. A URL
    that does not parse is replaced by a placeholder when it holds `@` or `?`."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a URL that does not parse)" if "@" in url or "?" in url else url
    netloc = parts.netloc.rsplit("@", 1)[1] if "@" in parts.netloc else parts.netloc
    query = "&".join(
        pair
        for pair in parts.query.split("&")
        if pair and not secret_query_name(pair.split("=", 1)[0])
    )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class OpenAIChatClient:
    """Async streaming chat-completions client; implements `core.runtime.ChatClient`.

    `timeout_s` bounds one whole call (connect, prefill and decode); `connect_timeout_s` how
    long connecting may take. `extra_body` is merged into every request (engine-specific
    fields such as vLLM's `continue_final_message`). `max_retries` > 0 lets the `openai`
    client retry a failed connection or a 429/5xx answer (hosted APIs). Safe for concurrent
    calls.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        options: GenerationOptions | None = None,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 5.0,
        include_usage: bool = True,
        token_counter: TokenCounter | None = None,
        extra_body: dict[str, Any] | None = None,
        api_key: str = "hat-studio",
        max_retries: int = 0,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.options = options or GenerationOptions()
        self.timeout_s = timeout_s
        self.include_usage = include_usage
        self.token_counter = token_counter
        self.extra_body = dict(extra_body or {})
        self._settings: dict[str, Any] = {
            "api_key": api_key,
            "max_retries": max_retries,
            "timeout": httpx.Timeout(timeout_s, connect=connect_timeout_s),
        }
        self._client = openai.AsyncOpenAI(base_url=self.base_url, **self._settings)

    @property
    def shown_url(self) -> str:
        """`base_url` as messages show it (`redact_url`)."""
        return redact_url(self.base_url)

    async def aclose(self) -> None:
        await self._client.close()

    async def rebase(self, base_url: str) -> None:
        """Point the client at `base_url` (a restarted server on a new port); the old
        connection pool is closed."""
        old = self._client
        self.base_url = base_url.rstrip("/")
        self._client = openai.AsyncOpenAI(base_url=self.base_url, **self._settings)
        await old.close()

    async def __aenter__(self) -> OpenAIChatClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
    ) -> dict[str, Any]:
        """The JSON body of one call (what `complete` posts)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "stream": True,
            **self.options.body(),
        }
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = list(tools)
        body.update(self.extra_body)
        return body

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        body = self.request_body(messages, tools)
        call = _Call(on_delta)
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._stream_once_more_on_a_stale_connection(body, call)
        except TimeoutError:
            raise ModelError(
                f"request timeout: no complete reply from {self.shown_url} within "
                f"{self.timeout_s:g} s ({call.describe_progress()})"
            ) from None
        except openai.APITimeoutError:
            raise ModelError(
                f"request timeout: the model server at {self.shown_url} did not answer within "
                f"{self.timeout_s:g} s"
            ) from None
        except openai.APIConnectionError as exc:
            cause = _root_cause(exc)
            if call.started_output or call.chunks:
                raise ModelError(
                    f"the model server at {self.shown_url} closed the stream mid-reply "
                    f"({call.describe_progress()}): {cause}"
                ) from None
            raise ModelError(
                f"cannot reach the model server at {self.shown_url}: {cause} (is it running?)"
            ) from None
        except openai.APIStatusError as exc:
            raise ModelError(
                f"the model server at {self.shown_url} answered HTTP {exc.status_code}: "
                f"{_status_detail(exc)}"
            ) from None
        except openai.APIError as exc:  # an error event inside the stream
            raise ModelError(
                f"the model server reported an error mid-stream: {exc.message}"
            ) from None
        except (httpx.TransportError, httpx.StreamError) as exc:
            raise ModelError(
                f"the model server at {self.shown_url} closed the stream mid-reply "
                f"({call.describe_progress()}): {type(exc).__name__}: {exc or 'connection lost'}"
            ) from None
        return call.reply(self.token_counter)

    async def _stream_once_more_on_a_stale_connection(
        self, body: dict[str, Any], call: _Call
    ) -> None:
        """Stream `body`; a connection that fails before any byte came back is tried once
        more on a fresh pool.

        A pooled keep-alive connection to a server that has since died or restarted fails
        with a read error on reuse, which says nothing useful; a fresh connection either
        works (a restarted server) or fails with the real cause (connection refused).
        """
        try:
            await self._stream(body, call)
        except openai.APIConnectionError as exc:
            if call.chunks or isinstance(exc, openai.APITimeoutError):
                raise
            await self.rebase(self.base_url)
            call.restart()
            await self._stream(body, call)

    async def _stream(self, body: dict[str, Any], call: _Call) -> None:
        payload = dict(body)
        model = payload.pop("model")
        messages = payload.pop("messages")
        payload.pop("stream", None)
        known = {"max_tokens", "temperature", "top_p", "seed", "stop", "stream_options", "tools"}
        kwargs = {k: payload.pop(k) for k in list(payload) if k in known}
        call.start = time.monotonic()
        stream = await self._client.chat.completions.create(
            model=model,
            messages=messages,
            stream=True,
            extra_body=payload or None,
            **kwargs,
        )
        async with stream:
            async for chunk in stream:
                call.feed(chunk)
        if call.finish_reason is None:
            raise httpx.RemoteProtocolError("the stream ended without a finish reason")
        call.end = time.monotonic()


class _Call:
    """Accumulates one streamed reply and its timing."""

    def __init__(self, on_delta: DeltaCallback | None) -> None:
        self.on_delta = on_delta
        self.restart()

    def restart(self) -> None:
        """Forget everything received: the request goes out again."""
        self.start = 0.0
        self.end = 0.0
        self.first: float | None = None
        self.text: list[str] = []
        self.chunks = 0
        self.output_chunks = 0
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.tools: dict[int, dict[str, str]] = {}

    @property
    def started_output(self) -> bool:
        return self.first is not None

    def describe_progress(self) -> str:
        if self.first is None:
            return "before the first token"
        return f"after {self.output_chunks} streamed chunk(s)"

    def feed(self, chunk: Any) -> None:
        self.chunks += 1
        if self.model is None and getattr(chunk, "model", None):
            self.model = str(chunk.model)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.prompt_tokens = usage.prompt_tokens
            self.completion_tokens = usage.completion_tokens
        for choice in chunk.choices or []:
            if choice.index != 0:
                continue
            delta = choice.delta
            produced = False
            if delta is not None and delta.content:
                self.text.append(delta.content)
                produced = True
                if self.on_delta is not None:
                    self.on_delta(delta.content)
            if delta is not None and delta.tool_calls:
                produced = True
                for tc in delta.tool_calls:
                    slot = self.tools.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
            if produced:
                self.output_chunks += 1
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
            if self.first is None and (produced or choice.finish_reason is not None):
                self.first = time.monotonic()

    def reply(self, counter: TokenCounter | None) -> ModelReply:
        content = "".join(self.text)
        if self.completion_tokens is not None:
            tokens, source = self.completion_tokens, "usage"
        elif counter is not None:
            tokens, source = counter(content + self._tool_text()), "tokenizer"
        else:
            tokens, source = self.output_chunks, "chunks"
        timing = CallTiming(
            ttft_s=None if self.first is None else self.first - self.start,
            e2e_s=self.end - self.start,
            prompt_tokens=self.prompt_tokens,
            output_tokens=tokens,
            token_source=source,
        )
        calls = [self._tool_call(i, slot) for i, slot in sorted(self.tools.items())]
        return ModelReply(
            content=content,
            tool_calls=calls,
            timing=timing,
            finish_reason=self.finish_reason,
            model=self.model,
        )

    def _tool_text(self) -> str:
        return "".join(s["name"] + s["arguments"] for s in self.tools.values())

    @staticmethod
    def _tool_call(index: int, slot: dict[str, str]) -> ToolCall:
        arguments = parse_arguments(slot["arguments"])
        return ToolCall(name=slot["name"], arguments=arguments, id=slot["id"] or f"call_{index}")


def parse_arguments(text: str) -> dict[str, Any]:
    """A native tool call's `arguments` string as a dict.

    Text that is not a JSON object is passed on as `{"_unparsed_arguments": "<raw text>"}`:
    the loop's schema check rejects it as `invalid_arguments` (every demo tool forbids
    additional properties) and tells the model, so the bad call shows in the trace."""
    raw = text.strip()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return {UNPARSED_ARGUMENTS: raw[:2000]}
    if not isinstance(data, dict):
        return {UNPARSED_ARGUMENTS: raw[:2000]}
    return data


def _root_cause(exc: BaseException) -> str:
    seen: BaseException = exc
    while seen.__cause__ is not None:
        seen = seen.__cause__
    text = str(seen) or type(seen).__name__
    if "Connection refused" in text or "ConnectError" in type(seen).__name__:
        return f"connection refused ({text})"
    return f"{type(seen).__name__}: {text}"


def _status_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or body.get("error") or body
        return str(detail)[:500]
    return (exc.message or "")[:500]


def tokenizer_counter(model_dir: str | Path) -> TokenCounter | None:
    """A token counter from the folder's tokenizer.json (HF `tokenizers`), None without one.

    The fallback for servers that report no usage; it counts the reply text, so special
    tokens the server generated (end of turn) are not counted.
    """
    path = Path(model_dir) / "tokenizer.json"
    if not path.is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    tokenizer = Tokenizer.from_file(str(path))

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return count
