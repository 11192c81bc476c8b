"""Tool implementations the agent loop calls, looked up by a tool's `binding` name.

A binding is `fn(args, ctx)`, sync or async, returning JSON-able data. It signals a failure the
model should see by raising `ToolError(kind, message)`; the live-room simulator raises these for
fault injection (timeouts, malformed results, permission denials, rate limits, empty results).
Any other exception becomes kind `error`: a binding can never crash the loop.

Sync bindings run in a daemon worker thread by default, for two reasons: the per-call timeout
holds even for a function that blocks, and a slow binding does not freeze the event loop (the
studio runs the loop on the Qt main thread through qasync). The thread is a daemon, so a binding
that never returns cannot hold up `asyncio.run` or interpreter exit; it is abandoned, not killed
(Python threads cannot be killed). Register cheap pure functions with `inline=True` to call them
directly on the event loop (no thread, no timeout), e.g. simulator handlers that share state with
the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from core.harness.models import Harness

T = TypeVar("T")


class ToolErrorKind(StrEnum):
    """Why a tool call produced no usable result.

    The first six are what a binding may raise; the rest are produced by the loop itself.
    """

    TIMEOUT = "timeout"
    MALFORMED = "malformed"
    PERMISSION_DENIED = "permission_denied"
    RATE_LIMIT = "rate_limit"
    EMPTY = "empty"
    ERROR = "error"
    # Raised by the loop, never by a binding:
    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    BLOCKED = "blocked"
    UNKNOWN_SKILL = "unknown_skill"


BINDING_ERROR_KINDS: frozenset[ToolErrorKind] = frozenset(
    {
        ToolErrorKind.TIMEOUT,
        ToolErrorKind.MALFORMED,
        ToolErrorKind.PERMISSION_DENIED,
        ToolErrorKind.RATE_LIMIT,
        ToolErrorKind.EMPTY,
        ToolErrorKind.ERROR,
    }
)


class ToolError(Exception):
    """A tool failure shown to the model as `{"error": {"kind": ..., "message": ...}}`."""

    def __init__(self, kind: ToolErrorKind | str, message: str, *, crashed: bool = False) -> None:
        self.kind = ToolErrorKind(kind)
        self.message = message
        self.crashed = crashed
        """The binding raised something other than a ToolError (a bug, not an answer)."""
        super().__init__(f"{self.kind.value}: {message}")

    def to_result(self) -> dict[str, Any]:
        return {"error": {"kind": self.kind.value, "message": self.message}}


@dataclass(frozen=True)
class ToolContext:
    """What a binding knows about the call besides its arguments."""

    tool: str
    call_id: str
    request_id: str
    harness: Harness | None = None
    turn: int = 0
    context: dict[str, Any] = field(default_factory=dict)
    """The `context` the caller passed to `AgentLoop.run` (e.g. a simulator session)."""


BindingFn = Callable[[dict[str, Any], ToolContext], Any]


@dataclass(frozen=True)
class Binding:
    name: str
    fn: BindingFn
    timeout_s: float | None = None
    inline: bool = False

    @property
    def is_async(self) -> bool:
        call = getattr(self.fn, "__call__", None)  # noqa: B004 - async callable objects
        return inspect.iscoroutinefunction(self.fn) or inspect.iscoroutinefunction(call)


class Bindings:
    """Registry of binding name -> implementation."""

    def __init__(self, mapping: Mapping[str, BindingFn] | None = None) -> None:
        self._items: dict[str, Binding] = {}
        if mapping:
            self.register_many(mapping)

    def register(
        self,
        name: str,
        fn: BindingFn,
        *,
        timeout_s: float | None = None,
        inline: bool = False,
    ) -> None:
        """Bind `name` to `fn`; `timeout_s` overrides the loop's per-call timeout."""
        if not callable(fn):
            raise TypeError(f"binding {name!r} is not callable")
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self._items[name] = Binding(name, fn, timeout_s, inline)

    def register_many(self, mapping: Mapping[str, BindingFn]) -> None:
        for name, fn in mapping.items():
            self.register(name, fn)

    def get(self, name: str) -> Binding | None:
        return self._items.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    @property
    def names(self) -> list[str]:
        return sorted(self._items)

    def missing(self, names: Iterable[str]) -> list[str]:
        return sorted({n for n in names if n not in self._items})

    async def call(
        self, name: str, args: dict[str, Any], ctx: ToolContext, *, timeout_s: float
    ) -> Any:
        """Run binding `name` and return its result as plain JSON data.

        Raises ToolError for every failure: a missing binding, the binding's own ToolError, a
        timeout, any other exception (kind `error`), or a result that is not JSON (`malformed`).
        """
        binding = self._items.get(name)
        if binding is None:
            message = f"tool {ctx.tool!r} has no implementation (binding {name!r})"
            raise ToolError(ToolErrorKind.ERROR, message)
        limit = binding.timeout_s if binding.timeout_s is not None else timeout_s
        try:
            if binding.is_async:
                result = await asyncio.wait_for(binding.fn(args, ctx), limit)
            elif binding.inline:
                result = binding.fn(args, ctx)
                if inspect.isawaitable(result):
                    result = await asyncio.wait_for(_as_coroutine(result), limit)
            else:
                started = time.monotonic()
                result = await asyncio.wait_for(_in_daemon_thread(binding.fn, args, ctx), limit)
                if inspect.isawaitable(result):
                    left = max(limit - (time.monotonic() - started), 0.001)
                    result = await asyncio.wait_for(_as_coroutine(result), left)
        except ToolError:
            raise
        except TimeoutError:
            message = f"{ctx.tool or name} timed out after {limit:g} s"
            raise ToolError(ToolErrorKind.TIMEOUT, message) from None
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            raise ToolError(ToolErrorKind.ERROR, message, crashed=True) from exc
        return to_json_data(result)


def to_json_data(value: Any) -> Any:
    """`value` as plain JSON data (tuples become lists), or ToolError(malformed)."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ToolError(ToolErrorKind.MALFORMED, f"result is not JSON data: {exc}") from None


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _in_daemon_thread(fn: BindingFn, args: dict[str, Any], ctx: ToolContext) -> asyncio.Future[Any]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # timed out or cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = fn(args, ctx)
        except StopIteration as exc:  # a future cannot carry StopIteration
            error = RuntimeError(f"StopIteration: {exc}")
        except Exception as exc:
            error = exc
        except BaseException as exc:  # SystemExit, KeyboardInterrupt inside a binding
            error = RuntimeError(f"binding raised {type(exc).__name__}")
        with contextlib.suppress(RuntimeError):  # the event loop closed while it ran
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"binding-{ctx.tool}", daemon=True).start()
    return future
