"""Model servers as managed child processes: start, health-wait, stop, restart.

    server = ManagedServer(EngineConfig("transformers"), model="/path/to/folder")
    server.start()                        # free port on 127.0.0.1, waits for /health
    client = OpenAIChatClient(server.base_url, server.model_id)
    ...
    server.restart()                      # same port when it is still free
    server.stop()

* The server runs in its own process group (vLLM starts engine and worker processes), so
  `stop` ends all of it: SIGTERM, then SIGKILL after `stop_timeout_s`. Servers still running
  when the interpreter exits are stopped too.
* The engine dies with its parent, even one killed with SIGKILL: it is started under a tiny
  watchdog (`WATCHDOG`, stdlib only, run by the engine's own interpreter) in the same process
  group, which holds the read end of a pipe whose write end only this process has. When this
  process ends in any way the pipe reads EOF and the watchdog kills the whole group.
  (`PR_SET_PDEATHSIG` fires when the forking *thread* ends, and the studio starts servers
  from worker threads, so it would kill healthy servers.)
* Output goes to a log file (`log_path`): `<engine>-<port>.log` in the user's own home
  (`core.paths.server_logs_dir`, not the shared temporary folder), opened `O_NOFOLLOW` and
  truncated, so a link planted at the name is refused (`open_log`) instead of written
  through; every error carries its last lines.
* Start-up failures name their cause: interpreter missing, port in use, model folder broken,
  engine not installed in that environment, the process dying, or no healthy answer within
  `startup_timeout_s`.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import re
import signal
import socket
import subprocess
import threading
import time
import weakref
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import httpx

from core.exits import exit_words, tail_lines
from core.models.folder import FolderError, check_adapter_folder, check_model_folder
from core.paths import server_logs_dir
from core.serving.engines import EngineConfig, LaunchSpec, build_launch

_LIVE: weakref.WeakSet[ManagedServer] = weakref.WeakSet()
# Phrases in an engine's log that mean it could not load the model folder.
_LOAD_FAILURES = (
    "config.json",
    "safetensors",
    "does not appear to have",
    "processing classes",
    "can't load",
    "error while deserializing",
)


WATCHDOG = r"""
import os, signal, subprocess, sys, threading

engine = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)
# stop() signals the whole group, the engine included; a second SIGTERM from here would make
# uvicorn skip its graceful shutdown, so the watchdog itself ignores both
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)


def parent_gone():
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except (OSError, ValueError):
        pass
    if engine.poll() is None:
        try:
            os.killpg(0, signal.SIGKILL)
        except OSError:
            engine.kill()


threading.Thread(target=parent_gone, daemon=True).start()
code = engine.wait()
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


class ServerError(Exception):
    """A server could not be started or reached; the message names the cause."""

    def __init__(self, message: str, *, kind: str = "error", log_tail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.log_tail = log_tail


def open_log(path: Path) -> BinaryIO:
    """`path` opened for writing from scratch (created 0600, truncated), never through a
    symbolic link: a link at the name is a ServerError naming it, and nothing is written."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise ServerError(
                f"the server log {path} is a symbolic link; HAT Studio does not write through "
                "links (remove it and start again)",
                kind="log_refused",
            ) from None
        raise ServerError(
            f"cannot open the server log {path}: {exc.strerror}", kind="log_refused"
        ) from None
    return os.fdopen(fd, "wb")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something listens on (or holds) `port`. SO_REUSEADDR, as every server sets it,
    so a port whose last connections sit in TIME_WAIT (a server killed a moment ago) reads
    as free; on Windows that option means something else, so it is left off there."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if os.name == "posix":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


class ManagedServer:
    """One engine serving one model (optionally with adapters) on 127.0.0.1."""

    def __init__(
        self,
        config: EngineConfig,
        model: str,
        *,
        port: int | None = None,
        served_name: str | None = None,
        startup_timeout_s: float = 600.0,
        stop_timeout_s: float = 15.0,
        log_dir: str | Path | None = None,
    ) -> None:
        self.config = config
        self.model = model
        self.requested_port = port
        self.served_name = served_name
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.spec: LaunchSpec | None = None
        self.log_path: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.started_s: float | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ properties

    @property
    def engine(self) -> str:
        return self.config.engine

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise ServerError("the server has not been started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return self.base_url.removesuffix("/v1")

    @property
    def model_id(self) -> str:
        if self.spec is None:
            raise ServerError("the server has not been started")
        return self.spec.model_id

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def log_tail(self, lines: int = 30) -> str:
        """The server log's last lines, without the route table vLLM prints at start."""
        if self.log_path is None:
            return ""
        return tail_lines(self.log_path, lines, noise=lambda line: "Route:" in line)

    # ------------------------------------------------------------------ lifecycle

    def start(self, *, wait: bool = True) -> ManagedServer:
        """Start the process (and, with `wait`, block until it answers healthy)."""
        with self._lock:
            if self.alive:
                raise ServerError(f"the {self.engine} server is already running on {self.base_url}")
            self._check_model()
            port = self.requested_port if self.requested_port is not None else free_port()
            if port_in_use(port, self.host):
                raise ServerError(
                    f"port {port} on {self.host} is already in use; choose another port or "
                    "stop what listens there",
                    kind="port_in_use",
                )
            self.port = port
            self.spec = build_launch(
                self.config, self.model, port=port, host=self.host, served_name=self.served_name
            )
            interpreter = Path(self.spec.argv[0])
            if not interpreter.exists():
                raise ServerError(
                    f"the {self.engine} engine's Python was not found: {interpreter}"
                    + _install_hint(self.engine),
                    kind="binary_missing",
                )
            log_dir = self.log_dir or server_logs_dir()
            try:
                log_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ServerError(
                    f"cannot create the server log folder {log_dir}: {exc.strerror}",
                    kind="log_refused",
                ) from None
            self.log_path = log_dir / f"{self.engine}-{port}.log"
            env = {**os.environ, **self.spec.env, "PYTHONUNBUFFERED": "1"}
            with open_log(self.log_path) as log:
                log.write(f"$ {' '.join(self.spec.argv)}\n".encode())
                log.flush()
                try:
                    self.process = subprocess.Popen(
                        [self.spec.argv[0], "-c", WATCHDOG, *self.spec.argv],
                        stdin=subprocess.PIPE,  # the lifeline: EOF when this process is gone
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                except OSError as exc:
                    raise ServerError(
                        f"cannot start the {self.engine} server ({interpreter}): {exc.strerror}",
                        kind="binary_missing",
                    ) from None
            self.started_s = time.monotonic()
            _LIVE.add(self)
        if wait:
            self.wait_healthy()
        return self

    def _check_model(self) -> None:

        looks_local = self.model.startswith(("/", ".", "~")) or Path(self.model).exists()
        if looks_local:
            try:
                check_model_folder(self.model)
            except FolderError as exc:
                raise ServerError(f"model folder broken: {exc}", kind="model_broken") from None
        for name, folder in self.config.adapters.items():
            try:
                check_adapter_folder(folder)
            except FolderError as exc:
                raise ServerError(
                    f"adapter {name!r} folder broken: {exc}", kind="model_broken"
                ) from None

    def wait_healthy(self, timeout_s: float | None = None) -> None:
        """Poll /health until it answers 200; ServerError when the process dies or time is up."""
        timeout = self.startup_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        url = f"{self.root_url}/health"
        with httpx.Client(timeout=2.0) as http:
            while True:
                process = self.process
                if process is None:
                    raise ServerError("the server has not been started")
                code = process.poll()
                if code is not None:
                    raise self._died(code)
                try:
                    if http.get(url).status_code == 200 and self._serves_model(http):
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    tail = self.log_tail()
                    self.stop()
                    raise ServerError(
                        f"the {self.engine} server did not become healthy within {timeout:g} s "
                        f"(stopped it); last log lines:\n{tail}",
                        kind="startup_timeout",
                        log_tail=tail,
                    )
                time.sleep(0.5)

    def _serves_model(self, http: httpx.Client) -> bool:
        """True when /v1/models lists our model (guards against another server on the port)."""
        try:
            response = http.get(f"{self.base_url}/models")
        except httpx.HTTPError:
            return False
        if response.status_code != 200:
            return False
        ids = {m.get("id") for m in response.json().get("data", []) if isinstance(m, dict)}
        return self.model_id in ids

    def _died(self, code: int) -> ServerError:
        tail = self.log_tail()
        low = tail.lower()
        if "address already in use" in low:
            cause, kind = f"port {self.port} is already in use", "port_in_use"
        elif re.search(r"no module named '?(vllm|transformers|fastapi|uvicorn)", low):
            cause, kind = "the engine is not installed in that Python environment", "not_installed"
        elif "out of memory" in low or code in (-9, 137):
            cause, kind = "it was killed (out of memory?)", "died"
        elif any(s in low for s in _LOAD_FAILURES):
            cause, kind = "it could not load the model folder", "model_broken"
        else:
            cause, kind = (exit_words(code) if code is not None else "it ended"), "died"
        return ServerError(
            f"the {self.engine} server exited during start-up ({cause}); last log lines:\n{tail}",
            kind=kind,
            log_tail=tail,
        )

    def stop(self) -> None:
        """Stop the server and everything it started (SIGTERM, then SIGKILL)."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            _signal_group(process, signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=10)
        # Engine helper processes may outlive their parent; end the group for good.
        _signal_group(process, signal.SIGKILL)
        _close_lifeline(process)
        _LIVE.discard(self)

    def kill(self) -> None:
        """Kill the whole process group at once (what a crash looks like to clients)."""
        process = self.process
        if process is not None and process.poll() is None:
            _signal_group(process, signal.SIGKILL)
            process.wait(timeout=10)
        if process is not None:
            _close_lifeline(process)

    def restart(self, *, wait: bool = True) -> ManagedServer:
        """Stop and start again, on the same port when it is free (else a new free port)."""
        previous = self.port
        self.stop()
        if self.requested_port is None and previous is not None and not port_in_use(previous):
            self.requested_port = previous
            try:
                return self.start(wait=wait)
            finally:
                self.requested_port = None
        return self.start(wait=wait)

    def __enter__(self) -> ManagedServer:
        if not self.alive:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ engine endpoints

    def metrics_text(self, timeout_s: float = 10.0) -> str:
        """The Prometheus text of /metrics (vLLM); ServerError when there is none."""
        try:
            response = httpx.get(f"{self.root_url}/metrics", timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise ServerError(f"cannot read {self.root_url}/metrics: {exc}") from None
        if response.status_code != 200:
            raise ServerError(
                f"{self.root_url}/metrics answered HTTP {response.status_code}", kind="no_metrics"
            )
        return response.text

    def load_lora_adapter(self, name: str, path: str, timeout_s: float = 120.0) -> None:
        """Load an adapter into a running vLLM server (needs `runtime_lora=True`)."""
        if self.engine != "vllm":
            raise ServerError("runtime LoRA loading is a vLLM feature")
        body: dict[str, Any] = {"lora_name": name, "lora_path": path}
        try:
            response = httpx.post(
                f"{self.base_url}/load_lora_adapter", json=body, timeout=timeout_s
            )
        except httpx.HTTPError as exc:
            raise ServerError(f"cannot load adapter {name!r}: {exc}") from None
        if response.status_code != 200:
            raise ServerError(
                f"vLLM refused adapter {name!r} (HTTP {response.status_code}): "
                f"{response.text[:500]}"
            )


def _close_lifeline(process: subprocess.Popen[bytes]) -> None:
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _install_hint(engine: str) -> str:
    if engine == "vllm":
        return (
            " (create the vLLM environment with scripts/setup-vllm.sh, or set HAT_VLLM_PYTHON "
            "/ HAT_VLLM_VENV)"
        )
    return " (set HAT_TRANSFORMERS_PYTHON to an interpreter with transformers[serving])"


@atexit.register
def _stop_all() -> None:  # pragma: no cover - interpreter exit
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop()
