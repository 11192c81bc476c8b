"""The harness's own tool implementations: Python callables, MCP servers, HTTP endpoints.

A tool's `binding` names what the loop calls. The forms (docs/harness-formats.md, "Tool
bindings"):

- `sim.<name>`: the live-room simulator; the episode runner registers these itself.
- `hsa.<...>`: HSA's distractor tools; `core.hsa` registers them. Left alone here.
- `python:<module>:<function>`: a callable importable from sys.path, called as
  `fn(**arguments)`, plus `ctx=ToolContext` when it has a parameter named `ctx`. Sync
  functions run the way `Bindings.call` runs every sync binding (a daemon thread under the
  call's timeout), async ones are awaited.
- `mcp:<server>/<tool>`: tool `<tool>` of the MCP server `<server>` the harness declares
  (its mcp.json), started over stdio with the official `mcp` SDK.
- `http://...` / `https://...`: the arguments POSTed as JSON; a 2xx JSON body is the result.
  The host is resolved first and every address it has is checked: a link-local one
  (169.254.0.0/16, fe80::/10: cloud metadata services) is always refused, a private,
  loopback or otherwise non-public one unless the harness opts in
  (`settings.allow_private_http`); the request then goes to the checked address (the host
  name still in `Host` and TLS SNI), so a second DNS answer cannot swap it. The answer is read
  as a stream and abandoned past `MAX_HTTP_RESPONSE_BYTES`; redirects are not followed.

`python:` and `mcp:` bindings run code on this machine and HTTP bindings send the model's
arguments from it, so a tool imported without trust (`Tool.trusted` False) fails every call
with "not trusted": its module is never imported, its server never started, its URL never
called.

One `ToolRuntime` per run (an eval run, a datagen run, a chat session): it starts each MCP
server once, on the first call that needs it, shares the session across concurrent episodes,
and stops the servers when the run ends. A server that fails to start or dies is a ToolError
naming the server and its command; the next call starts it again (at most `MAX_STARTS`
times a run, so a server that cannot start does not cost a start per call forever).

`binding_problems` checks a harness without starting anything, `probe_bindings` also starts
each MCP server and looks the tools up in its tools/list: `hat harness validate [--probe]`
and every run that plays the harness's own tools call them first.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import ipaddress
import json
import os
import re
import shlex
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Literal

from core.harness.folder import PYTHON_ROOTS, remembered_python_roots
from core.harness.models import Harness, McpServer, Tool
from core.runtime.bindings import Bindings, ToolContext, ToolError, ToolErrorKind
from core.runtime.python_hooks import hook_environment

if TYPE_CHECKING:
    import httpx
    from mcp import ClientSession

BindingKind = Literal["sim", "hsa", "python", "mcp", "http", "unknown"]

_IDENT_PATH_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_MCP_SERVER_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_MCP_TOOL_RE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
MAX_STARTS = 3
"""How often one runtime starts one MCP server (the first start and two restarts)."""
START_TIMEOUT_S = 30.0
"""How long a server may take to start and answer `initialize`."""
_SHOWN = 300
MAX_HTTP_RESPONSE_BYTES = 4 * 1024 * 1024
"""The largest answer an HTTP binding reads (after content decoding); past it the call is an
error result and the rest is never read."""


@dataclass(frozen=True)
class BindingTarget:
    """A binding string taken apart; `problem` says why a string of a known form is malformed."""

    binding: str
    kind: BindingKind
    module: str = ""
    function: str = ""
    server: str = ""
    tool: str = ""
    url: str = ""
    problem: str | None = None


def parse_binding(binding: str) -> BindingTarget:
    """Which form `binding` has and its parts; never raises (a malformed one has a problem)."""
    if binding.startswith("sim."):
        return BindingTarget(binding, "sim")
    if binding.startswith("hsa."):
        return BindingTarget(binding, "hsa")
    if binding.startswith("python:"):
        module, sep, function = binding[len("python:") :].partition(":")
        target = BindingTarget(binding, "python", module=module, function=function)
        if not sep or not _IDENT_PATH_RE.match(module) or not _IDENT_PATH_RE.match(function):
            problem = (
                "a python binding is python:<module>:<function>, a dotted module path and a "
                "(dotted) attribute of it, e.g. python:shop.tools:lookup_order"
            )
            return BindingTarget(binding, "python", module, function, problem=problem)
        return target
    if binding.startswith("mcp:"):
        server, sep, tool = binding[len("mcp:") :].partition("/")
        if not sep or not _MCP_SERVER_RE.match(server) or not _MCP_TOOL_RE.match(tool):
            problem = (
                "an MCP binding is mcp:<server>/<tool>: a server name of mcp.json (1-64 of "
                "A-Z a-z 0-9 _ . -) and the server's tool name (1-128 of the same)"
            )
            return BindingTarget(binding, "mcp", server=server, tool=tool, problem=problem)
        return BindingTarget(binding, "mcp", server=server, tool=tool)
    if binding.startswith(("http://", "https://")):
        return BindingTarget(binding, "http", url=binding, problem=_url_problem(binding))
    return BindingTarget(binding, "unknown")


def _url_problem(url: str) -> str | None:
    import httpx

    if any(c.isspace() or ord(c) < 0x20 for c in url):
        return "the URL holds white space or a control character"
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        return f"not a well-formed URL: {exc}"
    if not parsed.host:
        return "the URL names no host"
    return None


# ----------------------------------------------------------------------------- problems


@dataclass(frozen=True)
class BindingProblem:
    """A tool whose binding the runtime cannot run, and why."""

    tool: str
    binding: str
    reason: str
    needs_trust: bool = False
    """The binding was not checked further because the tool is not trusted."""

    @property
    def message(self) -> str:
        return f"tool {self.tool!r} (binding {self.binding!r}): {self.reason}"


def _command_line(server: McpServer) -> str:
    return shlex.join([server.command, *server.args])


def _untrusted_reason(target: BindingTarget) -> str:
    what = {
        "python": "its Python code does not run",
        "mcp": "its MCP server does not run",
        "http": "its HTTP endpoint is not called",
    }.get(target.kind, "it does not run")
    return f"not trusted: the harness was imported without trust, so {what}; re-import with --trust"


def address_problem(address: str, *, allow_private: bool) -> str | None:
    """Why an HTTP binding may not connect to IP `address`, or None. Link-local addresses
    (169.254.0.0/16 with the cloud metadata service, fe80::/10), multicast and reserved ones
    are always refused; private, loopback, unspecified and other non-public ones unless
    `allow_private` (the harness's `settings.allow_private_http`)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    private = ip.is_loopback or ip.is_private or ip.is_unspecified
    if ip.is_link_local or ip.is_multicast or (ip.is_reserved and not private):
        return (
            f"{ip} is a link-local, multicast or reserved address (a cloud metadata service "
            "lives at 169.254.169.254); HTTP bindings never call one"
        )
    if (private or not ip.is_global) and not allow_private:
        return (
            f"{ip} is a private or loopback address; a harness calls one only when it sets "
            "settings.allow_private_http: true"
        )
    return None


def _literal_address_problem(url: str, *, allow_private: bool) -> str | None:
    """`address_problem` for a URL whose host is an IP literal or `localhost` (checked
    without resolving anything, so `hat harness validate` shows it)."""
    import httpx

    try:
        host = httpx.URL(url).host
    except (httpx.InvalidURL, ValueError):
        return None
    if host.lower() in ("localhost", "localhost.") or host.lower().endswith(".localhost"):
        host = "127.0.0.1"
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return None
    return address_problem(host, allow_private=allow_private)


STATE_FUNCTION = "world_state"
"""A `python:` tool module's function that returns the world's initial state (see
`ToolRuntime.state_factories`)."""


def _import_module(module: str, harness_name: str | None = None) -> Any:
    """`importlib.import_module`, then, when the module (or its package) is missing, again
    with the harness folders read in this process and their parents on the path
    (core/harness/folder/python_roots.py PYTHON_ROOTS, appended after the rest of sys.path)."""

    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name == module or (exc.name and module.startswith(f"{exc.name}."))
        stored = remembered_python_roots(harness_name) if harness_name else []
        extra = [root for root in [*PYTHON_ROOTS, *stored] if root not in sys.path]
        if not missing or not extra:
            raise
    sys.path.extend(extra)
    importlib.invalidate_caches()
    return importlib.import_module(module)


def _where_looked() -> str:

    roots = ", ".join(PYTHON_ROOTS) or "no harness folder read in this process"
    return (
        f"looked in the harness folder and its parent ({roots}) and this Python's path "
        f"({len(sys.path)} entries, {sys.executable}; PYTHONPATH adds to it)"
    )


def _import_target(
    module: str, function: str, harness_name: str | None = None
) -> Callable[..., Any]:
    """The callable `module:function` names, or ToolError(error) saying what is missing
    (`harness_name`: also look beside the folder that harness was imported from)."""
    try:
        mod = _import_module(module, harness_name)
    except ModuleNotFoundError as exc:
        if exc.name == module or (exc.name and module.startswith(f"{exc.name}.")):
            raise ToolError(
                ToolErrorKind.ERROR, f"module {module} not found: {_where_looked()}"
            ) from None
        raise ToolError(ToolErrorKind.ERROR, f"importing {module} failed: {exc}") from None
    except (Exception, SystemExit) as exc:
        message = f"importing {module} raised {type(exc).__name__}: {exc}"[:_SHOWN]
        raise ToolError(ToolErrorKind.ERROR, message) from None
    value: Any = mod
    for part in function.split("."):
        if not hasattr(value, part):
            raise ToolError(ToolErrorKind.ERROR, f"module {module} has no attribute {function}")
        value = getattr(value, part)
    if not callable(value):
        kind = type(value).__name__
        raise ToolError(ToolErrorKind.ERROR, f"{module}.{function} is a {kind}, not callable")
    return value  # type: ignore[no-any-return]


def _static_problem(tool: Tool, target: BindingTarget, harness: Harness) -> str | None:
    if target.kind in ("sim", "hsa"):
        return None
    if target.kind == "unknown":
        return (
            "has no implementation: a binding is sim.<name>, python:<module>:<function>, "
            "mcp:<server>/<tool> or an http(s):// URL"
        )
    if target.problem is not None:
        return target.problem
    if target.kind == "python":
        if not tool.trusted:
            return _untrusted_reason(target)
        try:
            _import_target(target.module, target.function, harness.name)
        except ToolError as exc:
            return exc.message
        return None
    if target.kind == "mcp":
        server = harness.mcp_servers.get(target.server)
        if server is None:
            declared = ", ".join(sorted(harness.mcp_servers)) or "none"
            return (
                f"MCP server {target.server!r} is not declared in mcp.json (declared: {declared})"
            )
        if _find_command(server) is None:  # looking it up runs nothing: checked untrusted too
            return (
                f"MCP server {target.server!r}: its command {server.command!r} is not on PATH "
                "and is not a file"
            )
        if not tool.trusted:
            return _untrusted_reason(target)
    if target.kind == "http":
        allow = harness.settings.allow_private_http
        found = _literal_address_problem(target.url, allow_private=allow)
        if found is not None:
            return found
        if not tool.trusted:
            return _untrusted_reason(target)
    return None


PYTHON_COMMANDS = frozenset({"python", "python3"})
"""Commands that start the interpreter HAT runs on (`sys.executable`): a harness folder cannot
name a virtual environment's path portably, and a server written in Python needs the packages
(the `mcp` SDK) installed where HAT is, not whatever `python` PATH finds first."""


def server_command(server: McpServer) -> str:
    """The executable a server is started with (`python` is HAT's own interpreter)."""
    return sys.executable if server.command in PYTHON_COMMANDS else server.command


def _find_command(server: McpServer) -> str | None:
    command = server_command(server)
    if os.sep in command or (os.altsep and os.altsep in command):
        base = server.cwd if server.cwd and not os.path.isabs(command) else None
        path = os.path.join(base, command) if base else command
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(command)


def binding_problems(harness: Harness) -> list[BindingProblem]:
    """Every tool whose binding the runtime cannot run, found without starting a process:
    a malformed or unknown binding, a python: module that does not import or lacks the
    function (trusted ones are imported to check), an untrusted python:/mcp:/http(s) tool, an
    MCP server that mcp.json does not declare or whose command is not found, an HTTP URL whose
    host is an address it may not call (`address_problem`). sim.* and hsa.*
    bindings are the simulator's and HSA's, and fine here."""
    problems = []
    for tool in harness.tools:
        target = parse_binding(tool.binding)
        reason = _static_problem(tool, target, harness)
        if reason is not None:
            untrusted = reason == _untrusted_reason(target)
            problems.append(BindingProblem(tool.name, tool.binding, reason, untrusted))
    return problems


async def probe_bindings(harness: Harness, *, timeout_s: float = 20) -> list[BindingProblem]:
    """`binding_problems`, then each MCP server that passed them started (within
    `timeout_s`) and asked for its tools/list: a tool it does not list is a problem."""
    problems = binding_problems(harness)
    failed = {p.tool for p in problems}
    wanted: dict[str, list[tuple[Tool, BindingTarget]]] = {}
    for tool in harness.tools:
        target = parse_binding(tool.binding)
        if target.kind == "mcp" and tool.name not in failed:
            wanted.setdefault(target.server, []).append((tool, target))
    for name, tools in sorted(wanted.items()):
        try:
            listed = await list_server_tools(name, harness.mcp_servers[name], timeout_s=timeout_s)
        except ToolError as exc:
            problems.extend(BindingProblem(t.name, t.binding, exc.message) for t, _ in tools)
            continue
        names = {str(entry.get("name")) for entry in listed}
        for tool, target in tools:
            if target.tool not in names:
                shown = ", ".join(sorted(names)) or "none"
                reason = f"MCP server {name!r} has no tool {target.tool!r} (it lists: {shown})"
                problems.append(BindingProblem(tool.name, tool.binding, reason))
    return problems


# ----------------------------------------------------------------------------- MCP servers


class _McpConnection:
    """One MCP server of a runtime: started on demand in a task of its own (the SDK's stdio
    client is an anyio context that must be entered and left in one task), shared by every
    caller, restarted after it died."""

    def __init__(self, name: str, server: McpServer, *, start_timeout_s: float) -> None:
        self.name = name
        self.server = server
        self.start_timeout_s = start_timeout_s
        self.starts = 0
        self._lock = asyncio.Lock()
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[ClientSession] | None = None
        self._errlog: IO[str] | None = None

    @property
    def what(self) -> str:
        return f"MCP server {self.name!r} (command: {_command_line(self.server)})"

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [line.strip() for line in self._errlog.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f"; its last output: {lines[-1][:_SHOWN]}" if lines else ""

    async def session(self) -> ClientSession:
        """The live session, starting the server when there is none. The start runs in a task
        of its own: a caller whose call times out while the server starts does not cancel it
        (the next call finds the server up)."""
        async with self._lock:
            if self._session is not None and self._task is not None and not self._task.done():
                return self._session
            starting = self._starting
            if starting is None or starting.done():
                await self._shutdown()
                if self.starts >= MAX_STARTS:
                    raise ToolError(
                        ToolErrorKind.ERROR,
                        f"{self.what} was started {self.starts} times this run and is not "
                        "running; not starting it again",
                    )
                self.starts += 1
                starting = asyncio.create_task(self._start(), name=f"start-mcp-{self.name}")
                starting.add_done_callback(_retrieve)
                self._starting = starting
        return await asyncio.shield(starting)

    async def _start(self) -> ClientSession:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=server_command(self.server),
            args=list(self.server.args),
            env={**hook_environment(), **self.server.env},
            cwd=self.server.cwd,
        )
        # kept open while the server runs (closed in _shutdown): its stderr, for messages
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[ClientSession] = loop.create_future()
        stop = asyncio.Event()
        errlog = self._errlog

        async def serve() -> None:
            try:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    if not ready.done():
                        ready.set_result(session)
                    await stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise

        self._stop = stop
        self._task = asyncio.create_task(serve(), name=f"mcp-server-{self.name}")
        try:
            session = await asyncio.wait_for(asyncio.shield(ready), self.start_timeout_s)
        except TimeoutError:
            tail = self._stderr_tail()
            await self._shutdown()
            raise ToolError(
                ToolErrorKind.ERROR,
                f"{self.what} did not answer within {self.start_timeout_s:g} s of starting{tail}",
            ) from None
        except OSError as exc:
            await self._shutdown()
            reason = exc.strerror or str(exc)
            raise ToolError(ToolErrorKind.ERROR, f"{self.what} could not start: {reason}") from None
        except Exception as exc:
            tail = self._stderr_tail()
            await self._shutdown()
            raise ToolError(
                ToolErrorKind.ERROR,
                f"{self.what} failed to start: {_mcp_reason(exc)}{tail}",
            ) from None
        self._session = session
        return session

    def died(self, session: ClientSession) -> None:
        """The call on `session` found the connection closed: the next call restarts."""
        if self._session is session:
            self._session = None
            if self._stop is not None:
                self._stop.set()

    async def _shutdown(self) -> None:
        self._session = None
        if self._stop is not None:
            self._stop.set()
        task, self._task, self._stop = self._task, None, None
        if task is not None:
            try:
                await asyncio.wait_for(task, 10.0)
            except (Exception, asyncio.CancelledError):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None

    async def close(self) -> None:
        async with self._lock:
            starting, self._starting = self._starting, None
            if starting is not None and not starting.done():
                starting.cancel()
            if starting is not None:
                with contextlib.suppress(BaseException):
                    await starting
            await self._shutdown()

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        import anyio
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        session = await self.session()
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                tail = self._stderr_tail()
                self.died(session)
                raise ToolError(
                    ToolErrorKind.ERROR,
                    f"{self.what} stopped during the call to {tool!r}{tail}; the next call "
                    "starts it again",
                    crashed=True,
                ) from None
            raise ToolError(
                ToolErrorKind.ERROR, f"{self.what} refused the call to {tool!r}: {exc.message}"
            ) from None
        except Exception as exc:  # a broken pipe, a result the SDK rejects, ...
            dead = isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError) or (
                self._task is None or self._task.done()
            )
            if dead:
                self.died(session)
            raise ToolError(
                ToolErrorKind.ERROR,
                f"{self.what}: the call to {tool!r} failed: {_mcp_reason(exc)}",
                crashed=dead,
            ) from None
        return _call_result(self.name, tool, result)

    async def list_tools(self) -> list[dict[str, Any]]:
        from mcp_types import PaginatedRequestParams

        session = await self.session()
        out: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(1000):  # a server that pages forever is cut off
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                page = await session.list_tools(params=params)
            except Exception as exc:
                self.died(session)
                raise ToolError(
                    ToolErrorKind.ERROR, f"{self.what} failed to list its tools: {_mcp_reason(exc)}"
                ) from None
            out.extend(
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools
            )
            cursor = page.next_cursor
            if not cursor:
                break
        return out


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a start's failure as seen: every caller that waited for it was told, and one whose
    call timed out meanwhile must not leave a "never retrieved" warning behind."""
    if not task.cancelled():
        task.exception()


def _mcp_reason(exc: BaseException) -> str:
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "it exited before it answered"
    if isinstance(exc, BaseExceptionGroup):
        inner = exc.exceptions[0] if exc.exceptions else exc
        return _mcp_reason(inner)
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:_SHOWN]


def _call_result(server: str, tool: str, result: Any) -> Any:
    """A CallToolResult as the data the model sees: structuredContent when there is one,
    else the text (JSON-decoded when it is JSON); `isError` becomes a ToolError."""
    texts = [block.text for block in result.content if getattr(block, "type", "") == "text"]
    if result.is_error:
        detail = "\n".join(texts).strip()[:_SHOWN] or "no message"
        raise ToolError(
            ToolErrorKind.ERROR, f"MCP tool {tool!r} of server {server!r} failed: {detail}"
        )
    if result.structured_content is not None:
        return result.structured_content
    if len(texts) == len(result.content) and texts:
        text = "\n".join(texts)
        try:
            return json.loads(text)
        except ValueError:
            return text
    return [
        block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
    ]


async def list_server_tools(
    name: str, server: McpServer, *, timeout_s: float = START_TIMEOUT_S
) -> list[dict[str, Any]]:
    """Start `server`, read its whole tools/list (wire-format dicts: name, description,
    inputSchema, ...), stop it. ToolError naming the server and command when it fails."""
    connection = _McpConnection(name, server, start_timeout_s=timeout_s)
    try:
        return await asyncio.wait_for(connection.list_tools(), timeout_s + 5)
    except TimeoutError:
        raise ToolError(
            ToolErrorKind.ERROR,
            f"{connection.what} did not list its tools within {timeout_s:g} s",
        ) from None
    finally:
        await connection.close()


# ----------------------------------------------------------------------------- the runtime


class ToolRuntime:
    """The implementations of a harness's python:, mcp: and http(s) bindings for one run.

    Use as an async context manager; `register` adds them to a `Bindings` registry that the
    run's loops share. Leaving it stops the MCP servers and closes the HTTP client.
    """

    def __init__(self, harness: Harness, *, start_timeout_s: float = START_TIMEOUT_S) -> None:
        self.harness = harness
        self.start_timeout_s = start_timeout_s
        self._servers: dict[str, _McpConnection] = {}
        self._http: httpx.AsyncClient | None = None
        self._modules: dict[str, Callable[..., Any] | ToolError] = {}

    async def __aenter__(self) -> ToolRuntime:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every MCP server this runtime started and close the HTTP client."""
        servers, self._servers = list(self._servers.values()), {}
        for connection in servers:
            await connection.close()
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()

    def register(self, bindings: Bindings) -> Bindings:
        """Register every python:, mcp: and http(s) binding the harness's tools use (a variant
        of the harness keeps its tools' bindings, so one registration serves it too)."""
        by_binding: dict[str, list[Tool]] = {}
        for tool in self.harness.tools:
            by_binding.setdefault(tool.binding, []).append(tool)
        for binding, tools in by_binding.items():
            target = parse_binding(binding)
            if target.kind in ("sim", "hsa", "unknown"):
                continue
            if target.problem is not None:
                bindings.register(binding, _failing(target.problem), inline=True)
            elif target.kind in ("python", "mcp", "http") and not all(t.trusted for t in tools):
                bindings.register(binding, _failing(_untrusted_reason(target)), inline=True)
            elif target.kind == "python":
                self._register_python(bindings, target)
            elif target.kind == "mcp":
                bindings.register(binding, self._mcp_binding(target))
            else:
                bindings.register(binding, self._http_binding(target.url))
        return bindings

    def state_factories(self) -> dict[str, Callable[[], Any]]:
        """`world_state` of every trusted `python:` tool module that defines one (module ->
        the function): a world with state (a shop, a staging database) gives each episode a
        fresh copy of what it returns, as `ctx.context["state"]` (core/episode/task_file.py)."""
        found: dict[str, Callable[[], Any]] = {}
        for tool in self.harness.tools:
            target = parse_binding(tool.binding)
            if target.kind != "python" or not tool.trusted or target.module in found:
                continue
            try:
                fn = _import_target(target.module, STATE_FUNCTION, self.harness.name)
            except ToolError:
                continue
            found[target.module] = fn
        return found

    def _register_python(self, bindings: Bindings, target: BindingTarget) -> None:
        key = f"{target.module}:{target.function}"
        if key not in self._modules:
            try:
                self._modules[key] = _import_target(
                    target.module, target.function, self.harness.name
                )
            except ToolError as exc:
                self._modules[key] = exc
        found = self._modules[key]
        if isinstance(found, ToolError):
            bindings.register(target.binding, _failing(found.message), inline=True)
            return
        fn = found
        takes_ctx = _takes_ctx(fn)
        if _is_async(fn):

            async def call_async(args: dict[str, Any], ctx: ToolContext) -> Any:
                kwargs = {**args, "ctx": ctx} if takes_ctx else args
                return await fn(**kwargs)

            bindings.register(target.binding, call_async)
        else:

            def call_sync(args: dict[str, Any], ctx: ToolContext) -> Any:
                kwargs = {**args, "ctx": ctx} if takes_ctx else args
                return fn(**kwargs)

            bindings.register(target.binding, call_sync)

    def _connection(self, name: str) -> _McpConnection:
        connection = self._servers.get(name)
        if connection is None:
            server = self.harness.mcp_servers[name]
            connection = _McpConnection(name, server, start_timeout_s=self.start_timeout_s)
            self._servers[name] = connection
        return connection

    def _mcp_binding(self, target: BindingTarget) -> Callable[..., Any]:
        async def call(args: dict[str, Any], ctx: ToolContext) -> Any:
            if target.server not in self.harness.mcp_servers:
                raise ToolError(
                    ToolErrorKind.ERROR,
                    f"MCP server {target.server!r} is not declared in the harness's mcp.json",
                )
            return await self._connection(target.server).call(target.tool, args)

        return call

    def _client(self) -> httpx.AsyncClient:
        import httpx

        if self._http is None:
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(300.0), follow_redirects=False)
        return self._http

    def _http_binding(self, url: str) -> Callable[..., Any]:
        allow = self.harness.settings.allow_private_http

        async def call(args: dict[str, Any], ctx: ToolContext) -> Any:
            return await _post(self._client(), url, args, allow_private=allow)

        return call


_STATUS_KINDS = {
    401: ToolErrorKind.PERMISSION_DENIED,
    403: ToolErrorKind.PERMISSION_DENIED,
    408: ToolErrorKind.TIMEOUT,
    429: ToolErrorKind.RATE_LIMIT,
    504: ToolErrorKind.TIMEOUT,
}


async def _checked_address(url: httpx.URL, shown: str, *, allow_private: bool) -> str:
    """The address to connect to for `url`: its host resolved, every address checked
    (`address_problem`); ToolError naming the URL and the address otherwise."""
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        found = await asyncio.get_running_loop().getaddrinfo(
            url.host, port, type=socket.SOCK_STREAM
        )
    except (OSError, UnicodeError) as exc:
        raise ToolError(
            ToolErrorKind.ERROR, f"HTTP endpoint {shown}: cannot resolve {url.host!r}: {exc}"
        ) from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses:
        raise ToolError(ToolErrorKind.ERROR, f"HTTP endpoint {shown}: {url.host!r} has no address")
    for address in addresses:
        problem = address_problem(address, allow_private=allow_private)
        if problem is not None:
            raise ToolError(
                ToolErrorKind.PERMISSION_DENIED, f"HTTP endpoint {shown} refused: {problem}"
            )
    return addresses[0].split("%", 1)[0]


async def _post(
    client: httpx.AsyncClient, url: str, args: dict[str, Any], *, allow_private: bool = False
) -> Any:
    import httpx

    target = httpx.URL(url)
    address = await _checked_address(target, url, allow_private=allow_private)
    pinned = target.copy_with(host=address)
    headers = {"Host": target.netloc.decode("ascii")}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    limit = MAX_HTTP_RESPONSE_BYTES
    try:
        async with client.stream(
            "POST", pinned, json=args, headers=headers, extensions=extensions
        ) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise ToolError(
                    ToolErrorKind.ERROR,
                    f"HTTP endpoint {url} answered {int(declared):,} bytes; a tool result may "
                    f"hold at most {limit:,} (not read)",
                )
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise ToolError(
                        ToolErrorKind.ERROR,
                        f"HTTP endpoint {url} answered more than {limit:,} bytes, the most a "
                        "tool result may hold (the rest was not read)",
                    )
                chunks.append(chunk)
            body = b"".join(chunks)
    except httpx.TimeoutException as exc:
        raise ToolError(ToolErrorKind.TIMEOUT, f"HTTP endpoint {url} timed out: {exc}") from None
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise ToolError(
            ToolErrorKind.ERROR, f"HTTP endpoint {url} is unreachable: {reason}"[:_SHOWN]
        ) from None
    if not 200 <= response.status_code < 300:
        text = " ".join(body.decode("utf-8", errors="replace").split())[:200]
        detail = f": {text}" if text else ""
        kind = _STATUS_KINDS.get(response.status_code, ToolErrorKind.ERROR)
        raise ToolError(
            kind,
            f"HTTP endpoint {url} answered {response.status_code} {response.reason_phrase}{detail}",
        )
    try:
        return json.loads(body)
    except ValueError:
        raise ToolError(
            ToolErrorKind.MALFORMED,
            f"HTTP endpoint {url} answered {response.status_code} with a body that is not JSON",
        ) from None


def _failing(reason: str) -> Callable[[dict[str, Any], ToolContext], Any]:
    def fail(args: dict[str, Any], ctx: ToolContext) -> Any:
        raise ToolError(ToolErrorKind.ERROR, f"tool {ctx.tool!r} {_phrase(reason)}")

    return fail


def _phrase(reason: str) -> str:
    """`reason` as the rest of a sentence that starts with "tool 'x'"."""
    if reason.startswith(("not trusted", "has no")):
        return f"is {reason}" if reason.startswith("not") else reason
    return f"cannot run: {reason}"


def _takes_ctx(fn: Callable[..., Any]) -> bool:
    try:
        return "ctx" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _is_async(fn: Callable[..., Any]) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


__all__ = [
    "MAX_HTTP_RESPONSE_BYTES",
    "MAX_STARTS",
    "BindingProblem",
    "BindingTarget",
    "ToolRuntime",
    "address_problem",
    "binding_problems",
    "list_server_tools",
    "parse_binding",
    "probe_bindings",
]
