"""Bindings: sync/async/inline implementations, timeouts and error mapping."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from core.runtime import Bindings, ToolContext, ToolError, ToolErrorKind

CTX = ToolContext(tool="get_product", call_id="call_1_0", request_id="r1")


def call(bindings: Bindings, name: str, args: dict[str, Any], timeout_s: float = 1.0) -> Any:
    return asyncio.run(bindings.call(name, args, CTX, timeout_s=timeout_s))


def test_sync_async_inline_and_callable_object_bindings() -> None:
    threads: dict[str, str] = {}

    def sync_fn(args: dict[str, Any], ctx: ToolContext) -> Any:
        threads["sync"] = threading.current_thread().name
        return (args["x"], ctx.tool)  # tuples come back as JSON lists

    def inline_fn(args: dict[str, Any], ctx: ToolContext) -> Any:
        threads["inline"] = threading.current_thread().name
        return {"x": args["x"]}

    async def async_fn(args: dict[str, Any], ctx: ToolContext) -> Any:
        await asyncio.sleep(0)
        return {"call": ctx.call_id}

    class AsyncObject:
        async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> Any:
            return "object"

    bindings = Bindings({"sync": sync_fn, "async": async_fn})
    bindings.register("inline", inline_fn, inline=True)
    bindings.register("object", AsyncObject())
    assert call(bindings, "sync", {"x": 1}) == [1, "get_product"]
    assert call(bindings, "inline", {"x": 2}) == {"x": 2}
    assert call(bindings, "async", {}) == {"call": "call_1_0"}
    assert call(bindings, "object", {}) == "object"
    assert threads["sync"] == "binding-get_product"
    assert threads["inline"] == threading.main_thread().name
    assert bindings.names == ["async", "inline", "object", "sync"]
    assert "sync" in bindings and "nope" not in bindings
    assert bindings.missing(["sync", "nope", "nope"]) == ["nope"]


def test_timeouts_for_async_and_blocking_sync_bindings() -> None:
    async def hang(args: dict[str, Any], ctx: ToolContext) -> Any:
        await asyncio.sleep(10)

    def block(args: dict[str, Any], ctx: ToolContext) -> Any:
        time.sleep(3)

    bindings = Bindings({"hang": hang, "block": block})
    bindings.register("quick", hang, timeout_s=0.05)  # per-binding override
    for name, limit, shown in [("hang", 0.2, "0.2"), ("block", 0.2, "0.2"), ("quick", 5, "0.05")]:
        started = time.monotonic()
        with pytest.raises(ToolError) as err:
            call(bindings, name, {}, timeout_s=limit)
        assert time.monotonic() - started < 1.0
        assert err.value.kind is ToolErrorKind.TIMEOUT
        assert err.value.message == f"get_product timed out after {shown} s"


def test_errors_map_to_tool_error_kinds() -> None:
    def denied(args: dict[str, Any], ctx: ToolContext) -> Any:
        raise ToolError("permission_denied", "host only")

    def broken(args: dict[str, Any], ctx: ToolContext) -> Any:
        raise ValueError("bad link")

    def exits(args: dict[str, Any], ctx: ToolContext) -> Any:
        raise SystemExit(1)

    def nan(args: dict[str, Any], ctx: ToolContext) -> Any:
        return {"price": float("nan")}

    bindings = Bindings({"denied": denied, "broken": broken, "exits": exits, "nan": nan})
    cases = {
        "denied": ("permission_denied", "host only"),
        "broken": ("error", "ValueError: bad link"),
        "exits": ("error", "RuntimeError: binding raised SystemExit"),
        "missing": ("error", "tool 'get_product' has no implementation (binding 'missing')"),
    }
    for name, (kind, message) in cases.items():
        with pytest.raises(ToolError) as err:
            call(bindings, name, {})
        assert (err.value.kind.value, err.value.message) == (kind, message)
    with pytest.raises(ToolError) as err:
        call(bindings, "nan", {})
    assert err.value.kind is ToolErrorKind.MALFORMED
    assert err.value.to_result()["error"]["kind"] == "malformed"


def test_registration_is_checked() -> None:
    bindings = Bindings()
    with pytest.raises(TypeError):
        bindings.register("x", "not callable")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        bindings.register("x", lambda a, c: None, timeout_s=0)
    with pytest.raises(ValueError):
        ToolError("kaboom", "no such kind")
