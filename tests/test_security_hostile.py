"""Issue 34 part B: what a hostile harness, hook, server or URL can make the product do
(hang, leave processes behind, store secrets, write through links, exhaust memory, reach
the network). Each test failed on the code before its fix."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.harness.demo import load_demo_harness
from core.harness.models import Hook
from core.harness.schema import argument_errors
from core.runtime import Decision, HookInput, run_hook, run_python_hook

# ----------------------------------------------------------------------------- B10. ReDoS

# repeated overlapping alternatives backtrack exponentially on "a" * n + "!" (under `re`
# for minutes; the `regex` engine optimises simpler nestings such as (a+)+ away)
_ALTERNATIVES = st.sampled_from(["a|aa", "aa|a", "a|a", "a|aa|aaa"])
_ENDINGS = st.sampled_from(["$", "b", "z$"])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=st.builds(lambda alt, end: f"({alt})+{end}", _ALTERNATIVES, _ENDINGS),
    where=st.sampled_from(["pattern", "patternProperties", "additionalProperties"]),
    n=st.integers(min_value=34, max_value=60),
)
def test_a_backtracking_schema_pattern_is_a_rejected_call_not_a_hang(
    pattern: str, where: str, n: int
) -> None:
    evil = "a" * n + "!"
    schema: dict[str, Any]
    if where == "pattern":
        schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}}
        arguments: dict[str, Any] = {"q": evil}
    elif where == "patternProperties":
        schema = {"type": "object", "patternProperties": {pattern: {"type": "integer"}}}
        arguments = {evil: 1}
    else:
        schema = {
            "type": "object",
            "patternProperties": {pattern: {"type": "integer"}},
            "additionalProperties": False,
        }
        arguments = {evil: 1}
    start = time.monotonic()
    errors = argument_errors(schema, arguments, timeout_s=0.2)
    assert time.monotonic() - start < 2.0
    assert errors and any("limit" in e for e in errors), errors


def test_schema_patterns_still_match_normally() -> None:
    schema = {
        "type": "object",
        "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d+$"}},
        "patternProperties": {"^x_": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert argument_errors(schema, {"sku": "ABC-12", "x_n": 3}) == []
    errors = argument_errors(schema, {"sku": "abc", "x_n": "no", "other": 1})
    assert len(errors) == 3, errors


def test_validate_tool_args_hook_obeys_its_timeout() -> None:
    hook = Hook(
        name="h",
        event="before_tool",
        kind="validate_tool_args",
        params={"schema": {"type": "object", "properties": {"q": {"pattern": "(a|aa)+$"}}}},
        timeout=0.3,
    )
    data = HookInput(
        event=hook.event,
        request_id="r",
        viewer_message="",
        tool="t",
        arguments={"q": "a" * 60 + "!"},
    )
    start = time.monotonic()
    result = asyncio.run(run_hook(hook, data, load_demo_harness()))
    assert time.monotonic() - start < 3.0
    assert result.decision is Decision.BLOCK
    assert "0.3 s limit" in result.reason


def test_schema_regexes_are_checked_at_import() -> None:
    from core.harness.schema import check_parameters_schema

    with pytest.raises(ValueError, match="unevaluatedProperties beside patternProperties"):
        check_parameters_schema(
            {"type": "object", "patternProperties": {"^x": {}}, "unevaluatedProperties": False}
        )
    with pytest.raises(ValueError, match=r"properties/q/pattern.*not a valid regex"):
        check_parameters_schema({"type": "object", "properties": {"q": {"pattern": "(?<n>a"}}})


# ----------------------------------------------------------------------------- B11. hook children


def _gone(pid: int, within_s: float = 5.0) -> bool:
    import psutil

    end = time.monotonic() + within_s
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


_CRASHER = """
import os, signal, time
def check(event):
    if os.fork() == 0:
        os.setsid()
        if {double} and os.fork():
            os._exit(0)
        with open({path!r}, "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(120)
        os._exit(0)
    end = time.time() + 5
    while not os.path.exists({path!r}) and time.time() < end:
        time.sleep(0.01)
    time.sleep(0.05)
    {crash}
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
@pytest.mark.parametrize(
    ("crash", "double"),
    [
        ("os._exit(3)", False),
        ("os._exit(3)", True),
        ("os.kill(os.getpid(), signal.SIGKILL)", False),
        ("raise RuntimeError('boom')", True),
    ],
)
def test_a_crashed_python_hook_leaves_no_process_behind(
    tmp_path: Path, crash: str, double: bool
) -> None:
    """A hook that starts a child in a session of its own and then dies (exits, is killed,
    raises) takes the child with it, and the decision names what happened."""
    pid_file = tmp_path / "pid"
    source = _CRASHER.format(path=str(pid_file), double=double, crash=crash)
    hook = Hook(name="py", event="before_reply", kind="python", source=source, timeout=20)
    result = asyncio.run(run_python_hook(hook, {"reply": "hi"}))
    pid = int(pid_file.read_text())
    try:
        assert result.decision is Decision.ERROR, result
        assert _gone(pid), f"the crashed hook's child {pid} is still running"
        if "_exit" in crash:
            assert "exit code 3" in result.reason, result.reason
        elif "SIGKILL" in crash:
            assert "crashed" in result.reason and "SIGKILL" in result.reason, result.reason
        else:
            assert "boom" in result.reason
    finally:
        if not _gone(pid, 0):
            os.kill(pid, 9)


# ----------------------------------------------------------------------------- B12. URL secrets

_SECRETS = ("s3cret", "t0k3n", "k3yk3y", "pw0rd", "s1gn")


def _no_secret_under(*folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                for secret in _SECRETS:
                    assert secret.encode() not in data, f"{secret} stored in {path}"


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("http://user:pw@host:8000/v1", "http://host:8000/v1"),
        ("https://h/v1?token=t&x=1&api_key=k", "https://h/v1?x=1"),
        ("https://h/v1?X-Api-Key=k&Signature=s&sig=s&access_token=a&page=2", "https://h/v1?page=2"),
        ("https://h/v1?apikey=1&key=2&secret=3&password=4", "https://h/v1"),
        ("http://localhost:8000/v1", "http://localhost:8000/v1"),
    ],
)
def test_redact_url(url: str, clean: str) -> None:
    from core.serving.client import redact_url

    assert redact_url(url) == clean


def test_eval_run_stores_no_credentials_of_its_urls(hat_home: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from core.cli.main import app
    from core.eval.api import list_eval_runs, load_results
    from core.serving.server import free_port
    from core.store import Store

    port = free_port()
    base = f"http://user:s3cret@127.0.0.1:{port}/v1?token=t0k3n&x=1"
    judge = f"http://judge:pw0rd@127.0.0.1:{port}/v1?api_key=k3yk3y&sig=s1gn"
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app,
        [
            "eval", "run", "--base-url", base, "--model-id", "m", "--judge-url", judge,
            "--judge-model", "j", "--suite", "ls-qa", "--limit", "2", "--concurrency", "1",
            "--out", str(out),
        ],
    )  # fmt: skip
    assert "Traceback" not in result.output
    assert (out / "report.json").exists() and (out / "report.md").exists(), result.output
    store = Store.open(hat_home / "hat.db")
    try:
        (run,) = list_eval_runs(store)
        text = run.request.model_dump_json() + str(run.reason)
        text += "".join(str(r.reason) for r in load_results(store, run.id))
        assert f"127.0.0.1:{port}" in text
        for secret in _SECRETS:
            assert secret not in text
        assert run.request.base_url == f"http://127.0.0.1:{port}/v1?x=1"
    finally:
        store.close()
    _no_secret_under(hat_home, out)


def test_data_generate_rejects_store_no_token_of_the_teacher_url(
    hat_home: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from core.cli.main import app
    from core.serving.server import free_port

    port = free_port()
    url = f"http://u:s3cret@127.0.0.1:{port}/v1?token=t0k3n&api-key=k3yk3y"
    out = tmp_path / "data" / "rows.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "data", "generate", "--out", str(out), "--teacher-url", url, "--teacher-model", "m",
            "--limit", "1", "--concurrency", "1", "--sampler", "identity",
        ],
    )  # fmt: skip
    assert "Traceback" not in result.output
    rejects = out.with_name(out.name + ".rejects.jsonl").read_text()
    assert f"127.0.0.1:{port}" in rejects, rejects[:500]
    _no_secret_under(hat_home, out.parent)


# ----------------------------------------------------------------------------- B13. server logs


@pytest.mark.skipif(os.name != "posix", reason="symbolic links")
def test_a_planted_server_log_link_is_refused(
    hat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from core.paths import server_logs_dir
    from core.serving.engines import EngineConfig
    from core.serving.server import ManagedServer, ServerError, free_port
    from tests.test_serving_support import fake_model_folder

    shared = tmp_path / "shared-tmp"  # stands for /tmp, where anyone may plant a link
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    port = free_port()
    for folder in (shared / "hat-studio-servers", server_logs_dir()):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"transformers-{port}.log").symlink_to(victim)
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexit 3\n")
    python.chmod(0o755)
    server = ManagedServer(
        EngineConfig("transformers", python=str(python)),
        str(fake_model_folder(tmp_path / "m")),
        port=port,
        startup_timeout_s=5,
    )
    with pytest.raises(ServerError) as info:
        server.start(wait=False)
    assert "symbolic link" in str(info.value) and f"transformers-{port}.log" in str(info.value)
    assert victim.read_text() == "precious"
    assert server.process is None
    assert server_logs_dir().is_relative_to(hat_home)


# ----------------------------------------------------------------------------- B14. big files


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    import shutil

    from core.harness.demo import demo_harness_path

    target = tmp_path / "live-host"
    shutil.copytree(demo_harness_path(), target)
    return target


def _problems(path: Path) -> list[Any]:
    from core.harness import HarnessError, import_folder

    with pytest.raises(HarnessError) as info:
        import_folder(path)
    return list(info.value.problems)


def _a_skill(folder: Path) -> Path:
    return next(p for p in sorted((folder / "skills").iterdir()) if p.is_dir())


@pytest.mark.parametrize("size", [1_500_000_000, 10 * 1024 * 1024 + 1])
def test_a_huge_file_is_refused_by_its_size_before_it_is_read(demo_copy: Path, size: int) -> None:
    from core.harness.folder import MAX_FOLDER_FILE_BYTES

    big = _a_skill(demo_copy) / "assets" / "big.bin"
    big.parent.mkdir(exist_ok=True)
    with big.open("wb") as fh:
        fh.truncate(size)  # sparse: costs no disk and no time unless read
    start = time.monotonic()
    problems = _problems(demo_copy)
    assert time.monotonic() - start < 5
    found = [p for p in problems if p.file.endswith("assets/big.bin")]
    assert found, problems
    assert f"{size:,} bytes" in found[0].message
    assert f"{MAX_FOLDER_FILE_BYTES:,}" in found[0].message


def test_files_past_the_folder_total_are_not_read(
    demo_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.harness.folder.safe_read as safe_read

    monkeypatch.setattr(safe_read, "MAX_FOLDER_BYTES", 200_000)
    assets = _a_skill(demo_copy) / "assets"
    assets.mkdir(exist_ok=True)
    for i in range(4):
        (assets / f"part{i}.bin").write_bytes(b"x" * 60_000)
    problems = _problems(demo_copy)
    assert any("200,000" in p.message and "together" in p.message for p in problems), problems


# ----------------------------------------------------------------------------- B17. hard links


@pytest.mark.skipif(not hasattr(os, "link"), reason="hard links")
def test_a_hard_link_to_a_file_outside_the_folder_is_refused(
    demo_copy: Path, tmp_path: Path
) -> None:
    from core.harness import HarnessError
    from core.harness.folder import read_files

    outside = tmp_path / "passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    inside = _a_skill(demo_copy) / "references" / "notes.md"
    inside.parent.mkdir(exist_ok=True)
    os.link(outside, inside)
    with pytest.raises(HarnessError) as info:
        read_files(demo_copy)
    (problem,) = info.value.problems
    assert problem.file.endswith("references/notes.md")
    assert "hard link" in problem.message
    assert "root:x" not in str(info.value)


def _ref_chain(n: int) -> dict[str, Any]:
    defs: dict[str, Any] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(n)}
    defs[f"d{n}"] = {"type": "string"}
    return {"type": "object", "properties": {"q": {"$ref": "#/$defs/d0"}}, "$defs": defs}


@settings(max_examples=10, deadline=None)
@given(n=st.one_of(st.integers(min_value=49, max_value=300), st.just(5000)))
def test_a_long_reference_chain_is_refused_at_validate_time(n: int) -> None:
    from core.harness.schema import MAX_SCHEMA_DEPTH, check_parameters_schema

    with pytest.raises(ValueError, match=f"chain of more than {MAX_SCHEMA_DEPTH} references"):
        check_parameters_schema(_ref_chain(n))


@settings(max_examples=10, deadline=None)
@given(n=st.integers(min_value=0, max_value=46))
def test_a_short_reference_chain_validates_and_applies(n: int) -> None:
    from core.harness.schema import check_parameters_schema

    schema = _ref_chain(n)
    check_parameters_schema(schema)
    assert argument_errors(schema, {"q": "x"}) == []
    assert argument_errors(schema, {"q": 1}) == ["q: 1 is not of type 'string'"]


# ----------------------------------------------------------------------------- B18. HTTP bindings


class _Endpoint:
    """A real local HTTP server: /ok answers JSON, /big streams `big` bytes (chunked, or
    with Content-Length under /big-declared); it counts requests and bytes sent."""

    def __init__(self, big: int = 100 * 1024 * 1024) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        endpoint = self
        self.hits = 0
        self.sent = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                endpoint.hits += 1
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/ok":
                    data = b'{"ok": true}'
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if self.path == "/big-declared":
                    self.send_header("Content-Length", str(big))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b"[" + b"1," * 32767 + b"1"
                try:
                    while endpoint.sent < big:
                        if self.path == "/big-declared":
                            self.wfile.write(chunk)
                        else:
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        endpoint.sent += len(chunk)
                except OSError:
                    pass
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Any:
    server = _Endpoint()
    yield server
    server.close()


def _http_harness(url: str, *, allow_private: bool = True, trusted: bool = True) -> Any:
    from core.harness.models import Harness, PromptPipeline, PromptSection, Settings, Tool

    tool = Tool(
        name="lookup",
        description="lookup",
        parameters={"type": "object", "properties": {}},
        binding=url,
        trusted=trusted,
    )
    return Harness(
        name="web",
        prompt=PromptPipeline(sections=[PromptSection(id="t", title="Tools", kind="tool_block")]),
        tools=[tool],
        settings=Settings(allow_private_http=allow_private),
    )


def _call(harness: Any, binding: str) -> Any:
    from core.runtime.bindings import Bindings, ToolContext, ToolError
    from core.runtime.tool_runtime import ToolRuntime

    async def run() -> Any:
        async with ToolRuntime(harness) as runtime:
            bindings = runtime.register(Bindings())
            ctx = ToolContext(tool="lookup", call_id="c", request_id="r")
            try:
                return await bindings.call(binding, {}, ctx, timeout_s=30)
            except ToolError as exc:
                return exc

    return asyncio.run(run())


def test_an_http_binding_needs_trust(endpoint: _Endpoint, tmp_path: Path) -> None:
    from core.harness import export_folder, import_folder
    from core.runtime.bindings import ToolError
    from core.runtime.tool_runtime import binding_problems

    url = f"{endpoint.base}/ok"
    export_folder(_http_harness(url), tmp_path / "web")
    untrusted = import_folder(tmp_path / "web")
    assert not untrusted.tools[0].trusted
    (problem,) = binding_problems(untrusted)
    assert problem.needs_trust and "not trusted" in problem.reason
    failed = _call(untrusted, url)
    assert isinstance(failed, ToolError) and "not trusted" in failed.message
    assert "HTTP endpoint is not called" in failed.message
    assert endpoint.hits == 0
    trusted = import_folder(tmp_path / "web", trust_python_hooks=True)
    assert _call(trusted, url) == {"ok": True} and endpoint.hits == 1


@pytest.mark.parametrize("path", ["/big", "/big-declared"])
def test_an_http_answer_is_read_up_to_the_cap(endpoint: _Endpoint, path: str) -> None:
    import psutil

    from core.runtime.bindings import ToolError
    from core.runtime.tool_runtime import MAX_HTTP_RESPONSE_BYTES

    url = endpoint.base + path
    before = psutil.Process().memory_info().rss
    failed = _call(_http_harness(url), url)
    grown = psutil.Process().memory_info().rss - before
    assert isinstance(failed, ToolError), failed
    assert f"{MAX_HTTP_RESPONSE_BYTES:,}" in failed.message and url in failed.message
    assert endpoint.sent < 50 * 1024 * 1024  # the 100 MB answer was abandoned
    assert grown < 64 * 1024 * 1024


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/x",
        "http://[::ffff:169.254.169.254]/x",
    ],
)
def test_link_local_addresses_are_refused_even_with_the_opt_in(url: str) -> None:
    from core.runtime.bindings import ToolError, ToolErrorKind
    from core.runtime.tool_runtime import binding_problems

    harness = _http_harness(url, allow_private=True)
    (problem,) = binding_problems(harness)
    assert "link-local" in problem.reason
    start = time.monotonic()
    failed = _call(harness, url)
    assert time.monotonic() - start < 5  # refused before any connection
    assert isinstance(failed, ToolError) and failed.kind is ToolErrorKind.PERMISSION_DENIED
    assert "link-local" in failed.message and url in failed.message


def test_private_addresses_need_the_opt_in(endpoint: _Endpoint) -> None:
    from core.runtime.bindings import ToolError
    from core.runtime.tool_runtime import binding_problems

    port = endpoint.server.server_address[1]
    for url in (f"{endpoint.base}/ok", f"http://localhost:{port}/ok"):
        closed = _http_harness(url, allow_private=False)
        assert any("allow_private_http" in p.reason for p in binding_problems(closed))
        failed = _call(closed, url)
        assert isinstance(failed, ToolError) and "allow_private_http" in failed.message
    assert endpoint.hits == 0
    assert _call(_http_harness(f"{endpoint.base}/ok"), f"{endpoint.base}/ok") == {"ok": True}


@settings(max_examples=60, deadline=None)
@given(
    address=st.one_of(
        st.ip_addresses(network="169.254.0.0/16"),
        st.ip_addresses(network="fe80::/10"),
        st.ip_addresses(network="169.254.0.0/16").map(lambda ip: f"::ffff:{ip}"),
    ),
    allow=st.booleans(),
)
def test_address_problem_refuses_every_link_local_address(address: Any, allow: bool) -> None:
    from core.runtime.tool_runtime import address_problem

    assert address_problem(str(address), allow_private=allow) is not None


@settings(max_examples=60, deadline=None)
@given(
    address=st.one_of(
        st.ip_addresses(network="10.0.0.0/8"),
        st.ip_addresses(network="172.16.0.0/12"),
        st.ip_addresses(network="192.168.0.0/16"),
        st.ip_addresses(network="127.0.0.0/8"),
        st.ip_addresses(network="fc00::/7"),
        st.just("::1"),
    )
)
def test_address_problem_allows_private_addresses_only_on_opt_in(address: Any) -> None:
    from core.runtime.tool_runtime import address_problem

    assert "allow_private_http" in str(address_problem(str(address), allow_private=False))
    assert address_problem(str(address), allow_private=True) is None


def test_allow_private_http_is_validated_and_written_only_when_set(demo_copy: Path) -> None:
    from core.harness import export_folder, import_folder
    from core.harness.folder import folder_files

    assert "allow_private_http" not in folder_files(import_folder(demo_copy))["harness.yaml"]
    manifest = demo_copy / "harness.yaml"
    text = manifest.read_text()
    manifest.write_text(text.replace("settings:\n", "settings:\n  allow_private_http: 'yes'\n"))
    problems = _problems(demo_copy)
    assert any(p.file == "harness.yaml" and "allow_private_http" in p.field for p in problems)
    manifest.write_text(text.replace("settings:\n", "settings:\n  allow_private_http: true\n"))
    harness = import_folder(demo_copy)
    assert harness.settings.allow_private_http
    export_folder(harness, demo_copy.parent / "out")
    assert "allow_private_http: true" in (demo_copy.parent / "out" / "harness.yaml").read_text()
