"""Tool bindings the harness brings itself: python:, mcp: and http(s) (core/runtime/tool_runtime).

Real parts only: a real stdio MCP server (tests/fixtures/mcp_shop_server.py, written with the
SDK), a real local HTTP server in a thread, real Python callables (tests/fixtures/).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.harness.folder import export_folder, import_folder
from core.harness.models import (
    Harness,
    McpServer,
    PromptPipeline,
    PromptSection,
    Settings,
    Tool,
)
from core.runtime import AgentLoop, AssistantTurn, Bindings, ScriptedClient, ToolCall, ToolContext
from core.runtime.bindings import ToolError, ToolErrorKind
from core.runtime.tool_runtime import (
    BindingProblem,
    ToolRuntime,
    binding_problems,
    parse_binding,
    probe_bindings,
)

SERVER_SCRIPT = Path(__file__).parent / "fixtures" / "mcp_shop_server.py"
FIXTURES = "tests.fixtures.binding_tools"
SHOP = McpServer(command=sys.executable, args=[str(SERVER_SCRIPT)], env={"SHOP_REGION": "eu"})


def tool(tool_name: str, binding: str, **props: Any) -> Tool:
    properties = {k: {"type": v} for k, v in props.items()}
    return Tool(
        name=tool_name,
        description=f"{tool_name} tool",
        parameters={"type": "object", "properties": properties},
        binding=binding,
    )


PROMPT = PromptPipeline(sections=[PromptSection(id="tools", title="Tools", kind="tool_block")])


def harness(
    *tools: Tool, servers: dict[str, McpServer] | None = None, settings: Settings | None = None
) -> Harness:
    return Harness(
        name="own-tools",
        prompt=PROMPT,
        tools=list(tools),
        mcp_servers=servers or {},
        settings=settings or Settings(),
    )


def ctx(name: str, **context: Any) -> ToolContext:
    return ToolContext(tool=name, call_id="c1", request_id="r1", context=context)


async def call(bindings: Bindings, binding: str, args: dict[str, Any], name: str = "t") -> Any:
    return await bindings.call(binding, args, ctx(name), timeout_s=30)


async def failure(bindings: Bindings, binding: str, args: dict[str, Any], name: str = "t") -> Any:
    with pytest.raises(ToolError) as caught:
        await call(bindings, binding, args, name)
    return caught.value


# ----------------------------------------------------------------------------- the parser


def test_parse_binding_forms() -> None:
    assert parse_binding("sim.get_product").kind == "sim"
    assert parse_binding("hsa.distractor.weather").kind == "hsa"
    py = parse_binding("python:shop.tools:lookup_order")
    assert (py.kind, py.module, py.function, py.problem) == (
        "python",
        "shop.tools",
        "lookup_order",
        None,
    )
    mcp = parse_binding("mcp:shop/lookup.order")
    assert (mcp.kind, mcp.server, mcp.tool, mcp.problem) == ("mcp", "shop", "lookup.order", None)
    http = parse_binding("https://api.example.com/v1/lookup")
    assert (http.kind, http.url, http.problem) == (
        "http",
        "https://api.example.com/v1/lookup",
        None,
    )
    assert parse_binding("lookup_order").kind == "unknown"
    assert parse_binding("python:shop.tools").problem is not None
    assert parse_binding("python:shop tools:x").problem is not None
    assert parse_binding("mcp:shop").problem is not None
    assert parse_binding("mcp:/tool").problem is not None
    assert parse_binding("http://").problem is not None


IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
DOTTED = st.lists(IDENT, min_size=1, max_size=3).map(".".join)
MCP_NAME = st.from_regex(r"[A-Za-z0-9_.-]{1,20}", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(module=DOTTED, function=DOTTED, server=MCP_NAME, mcp_tool=MCP_NAME, path=IDENT)
def test_parse_binding_takes_back_what_was_written(
    module: str, function: str, server: str, mcp_tool: str, path: str
) -> None:
    py = parse_binding(f"python:{module}:{function}")
    assert (py.kind, py.module, py.function, py.problem) == ("python", module, function, None)
    mcp = parse_binding(f"mcp:{server}/{mcp_tool}")
    assert (mcp.kind, mcp.server, mcp.tool, mcp.problem) == ("mcp", server, mcp_tool, None)
    url = f"http://localhost:8080/{path}"
    assert parse_binding(url) == parse_binding(url) and parse_binding(url).problem is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_parse_binding_never_raises(text: str) -> None:
    target = parse_binding(text)
    assert target.binding == text
    if target.kind == "unknown":
        assert not text.startswith(("sim.", "hsa.", "python:", "mcp:", "http://", "https://"))


# ----------------------------------------------------------------------------- python:


def test_python_sync_async_ctx_and_raising_callables() -> None:
    h = harness(
        tool("lookup", f"python:{FIXTURES}:lookup", order_id="string", verbose="boolean"),
        tool("lookup_async", f"python:{FIXTURES}:lookup_async", order_id="string"),
        tool("who", f"python:{FIXTURES}:who_calls", order_id="string"),
        tool("broken", f"python:{FIXTURES}:broken", order_id="string"),
        tool("refused", f"python:{FIXTURES}:refused", order_id="string"),
    )
    assert binding_problems(h) == []

    async def run() -> None:
        async with ToolRuntime(h) as runtime:
            bindings = runtime.register(Bindings())
            got = await call(bindings, f"python:{FIXTURES}:lookup", {"order_id": "A1"})
            assert got == {"order_id": "A1", "status": "shipped", "verbose": False}
            got = await call(bindings, f"python:{FIXTURES}:lookup_async", {"order_id": "A2"})
            assert got == {"order_id": "A2", "status": "async"}
            got = await bindings.call(
                f"python:{FIXTURES}:who_calls",
                {"order_id": "A3"},
                ctx("who", marker="m"),
                timeout_s=5,
            )
            assert got == {"order_id": "A3", "tool": "who", "seen": "m"}
            err = await failure(bindings, f"python:{FIXTURES}:broken", {"order_id": "A4"})
            assert err.kind is ToolErrorKind.ERROR
            assert "RuntimeError: database down for A4" in err.message
            err = await failure(bindings, f"python:{FIXTURES}:refused", {"order_id": "A5"})
            assert err.kind is ToolErrorKind.PERMISSION_DENIED

    asyncio.run(run())


@pytest.mark.parametrize(
    ("binding", "reason"),
    [
        ("python:no_such_pkg_hat.tools:lookup", "module no_such_pkg_hat.tools not found"),
        (f"python:{FIXTURES}:missing", f"module {FIXTURES} has no attribute missing"),
        (f"python:{FIXTURES}:NOT_CALLABLE", "is a int, not callable"),
        ("lookup_order", "has no implementation"),
        ("python:shop", "python:<module>:<function>"),
    ],
)
def test_python_bad_input_is_a_clear_problem_and_error(binding: str, reason: str) -> None:
    h = harness(tool("lookup_order", binding, order_id="string"))
    problems = binding_problems(h)
    assert len(problems) == 1 and reason in problems[0].reason
    assert problems[0].message.startswith(f"tool 'lookup_order' (binding {binding!r}): ")

    async def run() -> ToolError:
        async with ToolRuntime(h) as runtime:
            bindings = runtime.register(Bindings())
            return await failure(bindings, binding, {"order_id": "A"}, "lookup_order")  # type: ignore[no-any-return]

    err = asyncio.run(run())
    assert reason in err.message and "lookup_order" in err.message


def test_untrusted_tools_never_import_or_start(tmp_path: Path) -> None:
    os.environ.pop("HAT_TEST_UNTOUCHABLE_IMPORTED", None)
    binding = "python:tests.fixtures.binding_untouchable:tool"
    h = harness(
        tool("touch", binding),
        tool("shop_add", "mcp:shop/add", a="integer", b="integer"),
        tool("sim_tool", "sim.get_product"),
        tool("distractor", "hsa.distractor.weather"),
        servers={"shop": SHOP},
    )
    export_folder(h, tmp_path / "h")
    untrusted = import_folder(tmp_path / "h")  # no trust given
    by_name = {t.name: t for t in untrusted.tools}
    assert not by_name["touch"].trusted and not by_name["shop_add"].trusted
    assert by_name["sim_tool"].trusted and by_name["distractor"].trusted
    assert import_folder(tmp_path / "h", trust_python_hooks=True).tools[0].trusted

    problems = binding_problems(untrusted)
    assert [p.tool for p in problems] == ["touch", "shop_add"]
    assert all("re-import with --trust" in p.reason for p in problems)

    async def run() -> list[ToolError]:
        async with ToolRuntime(untrusted) as runtime:
            bindings = runtime.register(Bindings())
            errors = [await failure(bindings, binding, {}, "touch")]
            errors.append(await failure(bindings, "mcp:shop/add", {"a": 1, "b": 2}, "shop_add"))
            assert runtime._servers == {}  # nothing started
            return errors

    for err in asyncio.run(run()):
        assert err.message.startswith(("tool 'touch' is not trusted", "tool 'shop_add' is not"))
        assert "re-import with --trust" in err.message
    assert "HAT_TEST_UNTOUCHABLE_IMPORTED" not in os.environ
    assert "tests.fixtures.binding_untouchable" not in sys.modules


def test_agent_loop_calls_a_python_tool_of_a_renamed_variant() -> None:
    """The loop translates renamed parameters (binding_args); the binding string stays."""
    original = tool("lookup", f"python:{FIXTURES}:lookup", order_id="string")
    variant_tool = Tool(
        name="fetch_order",
        description="renamed",
        parameters={"type": "object", "properties": {"oid": {"type": "string"}}},
        binding=original.binding,
        binding_args={"oid": "order_id"},
    )
    variant = Harness(
        name="variant", prompt=PROMPT, tools=[variant_tool], settings=Settings(max_turns=3)
    )
    client = ScriptedClient(
        [
            AssistantTurn(tool_calls=[ToolCall(name="fetch_order", arguments={"oid": "Z9"})]),
            AssistantTurn(content="Your order Z9 has shipped."),
        ]
    )

    async def run() -> Any:
        async with ToolRuntime(harness(original)) as runtime:
            loop = AgentLoop(variant, client, runtime.register(Bindings()))
            assert loop.missing_bindings() == []
            return await loop.run("where is my order Z9?")

    trace = asyncio.run(run())
    steps = [s for s in trace.steps if type(s).__name__ == "ToolCallStep"]
    assert steps and steps[0].result == {"order_id": "Z9", "status": "shipped", "verbose": False}
    assert trace.final_reply == "Your order Z9 has shipped."


# ----------------------------------------------------------------------------- mcp:


def test_mcp_tools_share_one_server_and_restart_after_it_dies() -> None:
    h = harness(
        tool("lookup_order", "mcp:shop/lookup_order", order_id="string"),
        tool("add", "mcp:shop/add", a="integer", b="integer"),
        tool("echo", "mcp:shop/echo_text", text="string"),
        tool("refund", "mcp:shop/refund", order_id="string"),
        tool("crash", "mcp:shop/crash"),
        tool("env_value", "mcp:shop/env_value", name="string"),
        tool("slow", "mcp:shop/slow", seconds="number"),
        servers={"shop": SHOP},
    )
    assert binding_problems(h) == []
    os.environ["HAT_TEST_SECRET_TOKEN"] = "s3cret"

    async def run() -> None:
        async with ToolRuntime(h) as runtime:
            bindings = runtime.register(Bindings())
            lookups = await asyncio.gather(
                *(call(bindings, "mcp:shop/lookup_order", {"order_id": f"A{i}"}) for i in range(4))
            )
            assert lookups[2] == {"order_id": "A2", "status": "shipped"}
            assert runtime._servers["shop"].starts == 1  # one server for all callers
            with pytest.raises(ToolError) as caught:  # a call past its timeout ...
                await bindings.call("mcp:shop/slow", {"seconds": 5}, ctx("slow"), timeout_s=0.5)
            assert caught.value.kind is ToolErrorKind.TIMEOUT
            # ... leaves the session to the next call
            assert await call(bindings, "mcp:shop/add", {"a": 2, "b": 3}) == {"result": 5}
            assert runtime._servers["shop"].starts == 1
            assert await call(bindings, "mcp:shop/echo_text", {"text": '{"a": 1}'}) == {"a": 1}
            assert await call(bindings, "mcp:shop/echo_text", {"text": "plain"}) == "plain"
            env = await call(bindings, "mcp:shop/env_value", {"name": "SHOP_REGION"})
            assert env == {"result": "eu"}
            env = await call(bindings, "mcp:shop/env_value", {"name": "HAT_TEST_SECRET_TOKEN"})
            assert env == {"result": "<unset>"}  # the parent's variables are scrubbed
            err = await failure(bindings, "mcp:shop/refund", {"order_id": "A1"}, "refund")
            assert "order A1 cannot be refunded" in err.message and "'shop'" in err.message
            assert not err.crashed  # the tool's own answer
            err = await failure(bindings, "mcp:shop/crash", {}, "crash")
            assert "MCP server 'shop'" in err.message and "stopped during the call" in err.message
            assert err.crashed  # not an answer of the tool's: an item that met it is re-run
            assert str(SERVER_SCRIPT) in err.message  # names the command
            again = await call(bindings, "mcp:shop/lookup_order", {"order_id": "B1"})
            assert again == {"order_id": "B1", "status": "shipped"}
            assert runtime._servers["shop"].starts == 2

    try:
        asyncio.run(run())
    finally:
        del os.environ["HAT_TEST_SECRET_TOKEN"]


def test_a_call_that_times_out_while_the_server_starts_does_not_cancel_the_start() -> None:
    h = harness(tool("add", "mcp:shop/add", a="integer", b="integer"), servers={"shop": SHOP})

    async def run() -> None:
        async with ToolRuntime(h) as runtime:
            bindings = runtime.register(Bindings())
            with pytest.raises(ToolError) as caught:  # a Python process takes longer to start
                await bindings.call("mcp:shop/add", {"a": 1, "b": 1}, ctx("add"), timeout_s=0.01)
            assert caught.value.kind is ToolErrorKind.TIMEOUT
            assert await call(bindings, "mcp:shop/add", {"a": 1, "b": 1}) == {"result": 2}
            assert runtime._servers["shop"].starts == 1

    asyncio.run(run())


def test_mcp_bad_servers_are_clear(tmp_path: Path) -> None:
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nprint('no config file found', file=sys.stderr)\nsys.exit(2)\n")
    h = harness(
        tool("undeclared", "mcp:nowhere/lookup"),
        tool("missing_cmd", "mcp:ghost/lookup"),
        tool("exits", "mcp:quits/lookup"),
        tool("unlisted", "mcp:shop/no_such_tool"),
        tool("fine", "mcp:py/add"),  # "python" is HAT's own interpreter, not PATH's first
        servers={
            "py": McpServer(command="python", args=[str(SERVER_SCRIPT)]),
            "ghost": McpServer(command="hat-no-such-mcp-server-cmd", args=["--stdio"]),
            "quits": McpServer(command=sys.executable, args=[str(exits)]),
            "shop": SHOP,
        },
    )
    static = {p.tool: p.reason for p in binding_problems(h)}
    assert set(static) == {"undeclared", "missing_cmd"}
    assert "MCP server 'nowhere' is not declared in mcp.json" in static["undeclared"]
    assert "'hat-no-such-mcp-server-cmd' is not on PATH" in static["missing_cmd"]

    probed = {p.tool: p.reason for p in asyncio.run(probe_bindings(h, timeout_s=20))}
    assert set(probed) == {"undeclared", "missing_cmd", "exits", "unlisted"}
    assert "MCP server 'quits'" in probed["exits"] and str(exits) in probed["exits"]
    assert "exited before it answered" in probed["exits"]
    assert "no config file found" in probed["exits"]  # its stderr is shown
    assert (
        "has no tool 'no_such_tool'" in probed["unlisted"] and "lookup_order" in probed["unlisted"]
    )

    async def run() -> list[ToolError]:
        async with ToolRuntime(h) as runtime:
            bindings = runtime.register(Bindings())
            return [
                await failure(bindings, "mcp:ghost/lookup", {}, "missing_cmd"),
                await failure(bindings, "mcp:quits/lookup", {}, "exits"),
            ]

    ghost, quits = asyncio.run(run())
    assert "MCP server 'ghost' (command: hat-no-such-mcp-server-cmd --stdio)" in ghost.message
    assert "could not start" in ghost.message
    assert "MCP server 'quits'" in quits.message and "exited before it answered" in quits.message


# ----------------------------------------------------------------------------- http(s)


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"null")
        if self.path == "/lookup":
            self._send(200, json.dumps({"order_id": body["order_id"], "via": "http"}))
        elif self.path == "/boom":
            self._send(500, "database exploded")
        elif self.path == "/text":
            self._send(200, "not json at all")
        else:
            self._send(404, "no such endpoint")

    def _send(self, status: int, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def http_base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_http_endpoints(http_base: str) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/lookup"
    h = harness(
        tool("lookup", f"{http_base}/lookup", order_id="string"),
        tool("boom", f"{http_base}/boom"),
        tool("text", f"{http_base}/text"),
        tool("down", down),
        settings=Settings(allow_private_http=True),  # 127.0.0.1 is called only on opt-in
    )
    assert binding_problems(h) == []

    async def run() -> None:
        async with ToolRuntime(h) as runtime:
            bindings = runtime.register(Bindings())
            got = await call(bindings, f"{http_base}/lookup", {"order_id": "H1"})
            assert got == {"order_id": "H1", "via": "http"}
            err = await failure(bindings, f"{http_base}/boom", {})
            assert f"HTTP endpoint {http_base}/boom answered 500" in err.message
            assert "database exploded" in err.message
            err = await failure(bindings, f"{http_base}/text", {})
            assert err.kind is ToolErrorKind.MALFORMED and "not JSON" in err.message
            err = await failure(bindings, down, {})
            assert f"HTTP endpoint {down} is unreachable" in err.message

    asyncio.run(run())


def test_malformed_url_is_a_problem() -> None:
    problems = binding_problems(harness(tool("bad", "http://exa mple.com/x")))
    assert (
        problems == [BindingProblem("bad", "http://exa mple.com/x", problems[0].reason)]
        and "white space" in problems[0].reason
    )


# ----------------------------------------------------------------------------- the CLI


def hat(*args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from core.cli.main import app

    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_validate_reports_every_binding_it_cannot_run(tmp_path: Path) -> None:
    from core.harness.demo import demo_harness_path

    code, out = hat("harness", "validate", str(demo_harness_path()))
    assert code == 0 and "binding" not in out  # sim.* bindings are the simulator's

    h = harness(
        tool("lookup", f"python:{FIXTURES}:lookup", order_id="string"),
        tool("gone", "python:no_such_pkg_hat.tools:lookup"),
        tool("undeclared", "mcp:nowhere/lookup"),
        tool("unlisted", "mcp:shop/no_such_tool"),
        tool("bare", "lookup_order"),
        tool("distractor", "hsa.distractor.weather"),
        servers={"shop": SHOP},
    )
    folder = tmp_path / "h"
    export_folder(h, folder)
    assert json.loads((folder / "mcp.json").read_text())["mcpServers"]["shop"]["args"] == [
        str(SERVER_SCRIPT)
    ]
    code, out = hat("harness", "validate", str(folder))
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("binding ")]
    assert lines == [
        "binding tool 'undeclared' (binding 'mcp:nowhere/lookup'): MCP server 'nowhere' is not "
        "declared in mcp.json (declared: shop)",
        "binding tool 'bare' (binding 'lookup_order'): has no implementation: a binding is "
        "sim.<name>, python:<module>:<function>, mcp:<server>/<tool> or an http(s):// URL",
    ]
    assert "not checked (their code runs only once trusted): lookup, gone, unlisted" in out

    code, out = hat("harness", "validate", str(folder), "--trust")
    assert code == 1
    assert "'gone' (binding 'python:no_such_pkg_hat.tools:lookup'): module no_such" in out
    assert "unlisted" not in out  # its server is declared and its command found

    code, out = hat("harness", "validate", str(folder), "--trust", "--probe")
    assert code == 1
    assert "MCP server 'shop' has no tool 'no_such_tool'" in out
    assert "tool 'lookup'" not in out and "tool 'distractor'" not in out


def test_import_mcp_adds_the_servers_tools_all_or_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "shop-agent"
    code, out = hat(
        "harness",
        "import-mcp",
        "--into",
        str(folder),
        "--name",
        "shop",
        "--command",
        sys.executable,
        "--arg",
        str(SERVER_SCRIPT),
        "--env",
        "SHOP_REGION=eu",
        "--rename",
        "lookup_order=find_order",
    )
    assert code == 0, out
    assert "added 7 tool(s)" in out
    h = import_folder(folder, trust_python_hooks=True)
    by_name = {t.name: t for t in h.tools}
    assert by_name["find_order"].binding == "mcp:shop/lookup_order"
    assert by_name["add"].binding == "mcp:shop/add"
    assert by_name["add"].output_schema is not None
    assert h.mcp_servers == {"shop": SHOP}
    assert binding_problems(h) == []
    assert asyncio.run(probe_bindings(h)) == []

    async def run() -> Any:
        async with ToolRuntime(h) as runtime:
            bindings = runtime.register(Bindings())
            return await call(bindings, "mcp:shop/lookup_order", {"order_id": "Q1"})

    assert asyncio.run(run()) == {"order_id": "Q1", "status": "shipped"}

    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    code, out = hat(  # the same tools again: refused, nothing written
        "harness", "import-mcp", "--into", str(folder), "--name", "shop2",
        "--command", sys.executable, "--arg", str(SERVER_SCRIPT),
    )  # fmt: skip
    assert code == 1 and "already has a tool named 'add'" in out
    code, out = hat(
        "harness", "import-mcp", "--into", str(folder), "--name", "ghost",
        "--command", "hat-no-such-mcp-server-cmd",
    )  # fmt: skip
    assert code == 1
    assert "MCP server 'ghost' (command: hat-no-such-mcp-server-cmd) could not start" in out
    assert "nothing was added" in out
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert not (tmp_path / "never").exists()
    code, out = hat(
        "harness", "import-mcp", "--into", str(tmp_path / "never"), "--name", "quits",
        "--command", sys.executable, "--arg", "-c", "--arg", "import sys; sys.exit(4)",
    )  # fmt: skip
    assert code == 1 and "exited before it answered" in out
    assert not (tmp_path / "never").exists()


def test_mcp_json_round_trips_and_is_versioned(tmp_path: Path) -> None:
    from core.store import Store

    h = harness(
        tool("add", "mcp:shop/add", a="integer", b="integer"),
        tool("lookup", f"python:{FIXTURES}:lookup", order_id="string"),
        servers={"shop": SHOP, "other": McpServer(command="srv", cwd="/tmp", env={"A": "1"})},
    )
    first, second = tmp_path / "first", tmp_path / "second"
    export_folder(h, first)
    again = import_folder(first, trust_python_hooks=True)
    assert again.mcp_servers == h.mcp_servers
    export_folder(again, second)
    assert (first / "mcp.json").read_bytes() == (second / "mcp.json").read_bytes()
    # Claude Code's "type": "stdio" is read; other transports are named
    data = json.loads((first / "mcp.json").read_text())
    data["mcpServers"]["shop"]["type"] = "stdio"
    (first / "mcp.json").write_text(json.dumps(data))
    assert import_folder(first).mcp_servers["shop"] == SHOP
    data["mcpServers"]["shop"]["type"] = "sse"
    data["mcpServers"]["bad/name"] = {"command": "x"}
    (first / "mcp.json").write_text(json.dumps(data))
    from core.harness.errors import HarnessError

    with pytest.raises(HarnessError) as caught:
        import_folder(first)
    text = str(caught.value)
    assert "mcp.json" in text and "only stdio servers" in text and "bad/name" in text
    # a harness without servers: export removes an earlier export's mcp.json
    export_folder(harness(tool("add", "sim.add")), second)
    assert not (second / "mcp.json").exists()

    with Store.open(tmp_path / "hat.db") as store:
        trusted = store.commit(again, "with servers")
        changed = again.model_copy(deep=True)
        changed.mcp_servers["other"] = McpServer(command="srv2")
        assert store.commit(changed, "other command").tree_hash != trusted.tree_hash
        loaded = store.load(trusted.id)
        assert loaded.mcp_servers == h.mcp_servers
        assert all(t.trusted for t in loaded.tools)  # trust recorded at commit
        stranger = again.model_copy(deep=True)
        stranger.mcp_servers["shop"] = McpServer(command="other-shop-server")
        for t in stranger.tools:
            t.trusted = False
        info = store.commit(stranger, "untrusted")
        assert [t.trusted for t in store.load(info.id).tools] == [False, True]
        store.trust_tools(stranger)
        assert [t.trusted for t in store.load(info.id).tools] == [True, True]
