"""Issue 19, items 9 and 10: recovery paths of managed servers and clients.

No real model server runs here: a stand-in engine (a few lines of http.server, written into
the test's folder) answers /health and /v1/models the way `transformers serve` does, which is
all `ManagedServer` needs to start, health-wait and be killed. That keeps these checks at a
fraction of a second of CPU instead of loading a model.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.serving.client import OpenAIChatClient
from core.serving.server import free_port, port_in_use
from tests.test_serving_support import fake_model_folder

STAND_IN = textwrap.dedent(
    """
    import json, os, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1])
    model = args[args.index("serve") + 1]
    with open(os.environ["STAND_IN_PID_FILE"], "w") as fh:
        fh.write(str(os.getpid()))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = b"ok" if self.path == "/health" else json.dumps(
                {"data": [{"id": model}]}).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    HTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


def _fake_interpreter(tmp_path: Path) -> Path:
    """An 'interpreter' that runs the watchdog (-c) with real Python and anything else (the
    engine's `-m transformers... serve`) as the stand-in server."""
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    python = tmp_path / "python"
    python.write_text(
        f'#!/bin/sh\nif [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi\n'
        f'exec {sys.executable} {script} "$@"\n'
    )
    python.chmod(0o755)
    return python


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# ----------------------------------------------------------------------------- 9. port check


def test_port_of_a_just_closed_server_reads_as_free() -> None:
    """The server closes its side first, so its port sits in TIME_WAIT (~60 s on Linux):
    the old check (bind without SO_REUSEADDR) called it taken."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    conn, _ = server.accept()
    conn.close()  # server side closes first -> TIME_WAIT on the server's port
    time.sleep(0.05)
    client.close()
    server.close()
    assert not port_in_use(port)


def test_a_listening_port_still_reads_as_taken() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert port_in_use(sock.getsockname()[1])


def test_client_rebase_follows_a_moved_server() -> None:
    async def run() -> tuple[str, str]:
        client = OpenAIChatClient("http://127.0.0.1:1/v1", "m")
        await client.rebase("http://127.0.0.1:2/v1/")
        try:
            return client.base_url, str(client._client.base_url)
        finally:
            await client.aclose()

    assert asyncio.run(run()) == ("http://127.0.0.1:2/v1", "http://127.0.0.1:2/v1/")


def test_chat_restart_points_the_client_at_the_new_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """/restart used to report success while the client kept talking to the old port."""
    from core.cli import chat_cmd

    class Server:
        base_url = "http://127.0.0.1:1111/v1"

        def restart(self) -> None:
            self.base_url = "http://127.0.0.1:2222/v1"

    class Chat:
        def __init__(self) -> None:
            self.history: list[object] = []
            self.client = OpenAIChatClient("http://127.0.0.1:1111/v1", "m")

    lines = iter(["/restart", "/quit"])
    monkeypatch.setattr("builtins.input", lambda _prompt: next(lines))
    chat = Chat()

    async def run() -> None:
        try:
            await chat_cmd._repl(chat, Server())  # type: ignore[arg-type]
        finally:
            await chat.client.aclose()

    asyncio.run(run())
    assert chat.client.base_url == "http://127.0.0.1:2222/v1"


# ----------------------------------------------------------------------------- 10. orphans


PARENT = textwrap.dedent(
    """
    import sys, time
    from core.serving.engines import EngineConfig
    from core.serving.server import ManagedServer
    server = ManagedServer(
        EngineConfig("transformers", python=sys.argv[1]), sys.argv[2], startup_timeout_s=30,
        log_dir=sys.argv[3],
    )
    server.start()
    print(server.port, flush=True)
    time.sleep(120)
    """
)


@pytest.mark.skipif(os.name != "posix", reason="POSIX process groups")
def test_engine_dies_when_hat_serve_is_killed(tmp_path: Path) -> None:
    python = _fake_interpreter(tmp_path)
    folder = fake_model_folder(tmp_path / "m")
    pid_file = tmp_path / "engine.pid"
    env = {**os.environ, "STAND_IN_PID_FILE": str(pid_file), "PYTHONPATH": os.getcwd()}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(python), str(folder), str(tmp_path)],
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    engine = None
    try:
        assert parent.stdout is not None
        port = int(parent.stdout.readline() or 0)
        assert port, "the stand-in server did not start"
        engine = int(pid_file.read_text())
        assert _alive(engine)
        parent.send_signal(signal.SIGKILL)  # what kill -9 of `hat serve` does
        parent.wait(10)
        end = time.monotonic() + 10
        while _alive(engine) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _alive(engine), "the engine outlived its killed parent"
        assert not port_in_use(port)
    finally:
        if parent.poll() is None:
            parent.kill()
        if engine is not None and _alive(engine):
            os.kill(engine, signal.SIGKILL)


def test_stop_still_ends_the_engine_gracefully(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.serving.engines import EngineConfig
    from core.serving.server import ManagedServer

    python = _fake_interpreter(tmp_path)
    pid_file = tmp_path / "engine.pid"
    monkeypatch.setenv("STAND_IN_PID_FILE", str(pid_file))
    server = ManagedServer(
        EngineConfig("transformers", python=str(python)),
        str(fake_model_folder(tmp_path / "m")),
        startup_timeout_s=30,
        log_dir=tmp_path,
    )
    server.start()
    engine = int(pid_file.read_text())
    try:
        port = server.port
        assert port is not None and _alive(engine)
        server.restart()
        assert server.port == port  # the same port, right after the old server went away
        second = int(pid_file.read_text())
        assert second != engine and not _alive(engine)
        server.stop()
        assert not _alive(second) and not server.alive
    finally:
        server.stop()
        for pid in {engine, int(pid_file.read_text())}:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- 10. bench


def test_bench_latency_against_a_dead_server_fails() -> None:
    from core.cli.main import app

    port = free_port()
    result = CliRunner().invoke(
        app,
        [
            "bench", "latency", "--url", f"http://127.0.0.1:{port}/v1", "--model-id", "m",
            "-n", "2", "--warmup", "0", "--tasks", "test",
        ],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "no request got a reply" in result.output
    assert f"127.0.0.1:{port}" in result.output
