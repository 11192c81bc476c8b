"""The model server a chat talks to: one it starts (a ManagedServer) or one it attaches to by URL.

    server = ChatServer()
    endpoint = server.start(store, ServerRequest("transformers", model="smollm2-135m-instruct"))
    endpoint = server.attach("http://127.0.0.1:8000/v1")          # a server that already runs
    problem = server.diagnose(trace.reason)                       # after a model_error
    endpoint = server.restart()
    server.stop()

Every method blocks (health waits, HTTP checks); the studio calls them in worker threads.
Failures become `ServerProblem`s: a title and a sentence a user can act on (the engine's
interpreter is missing, the port is taken, the model folder is broken, the server died and
with which exit status), the server's last log lines, and what to offer (start, restart,
reconnect). `problem_from_exception` maps the exceptions of the registry, the engines and
`ManagedServer` to them; anything else keeps its message, never a traceback.

`stop` during a start ends the start: the waiting `start` call raises `ServerStopped` instead of
reporting the engine's death as a failure. `stop` on an attached server only forgets it: a
server this chat did not start is never stopped from here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from core.exits import exit_words
from core.models.registry import RegistryError
from core.serving.engines import (
    SPECULATIVE_TOKENS,
    EngineConfig,
    EngineError,
    parse_speculative,
)
from core.serving.launch import server_for
from core.serving.server import ManagedServer, ServerError
from core.store import Store, StoreError
from core.store.serving import ModelRecord, list_models

ENGINE_TITLES = {"transformers": "transformers serve", "vllm": "vLLM", "url": "server"}
SERVER_NAMES = {"transformers": "transformers server", "vllm": "vLLM server"}


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: the OpenAI base URL and the model id to name."""

    base_url: str
    model_id: str
    engine: str | None = None
    model: str | None = None
    """Registry name of what is served (latency rows); the model id for attached servers."""
    managed: bool = False
    """True when this chat started the server (it can restart and stop it)."""

    @property
    def label(self) -> str:
        """A short name: the registry name, else the model id (a folder path: its name)."""
        name = self.model or self.model_id
        if "/" in name and Path(name).is_absolute():
            return Path(name).name or name
        return name


@dataclass(frozen=True)
class ServerRequest:
    """What to serve: an engine and a registered model (+ adapter), or a URL to attach to."""

    engine: str = "transformers"
    model: str | None = None
    adapter: str | None = None
    port: int | None = None
    python: str | None = None
    url: str | None = None
    model_id: str | None = None
    startup_timeout_s: float = 600.0
    speculative: str | None = None
    """vLLM speculative decoding as `hat serve --speculative` takes it ("ngram:4"); None: off."""


@dataclass(frozen=True)
class ServerProblem:
    """Why there is no usable server, said so a user can act on it."""

    kind: str
    title: str
    message: str
    log_tail: str = ""
    action: str = "start"
    """What to offer: start | restart | reconnect | retry."""


class ServerStopped(Exception):
    """A start was ended by `stop` before the server became healthy."""


class ChatServerError(Exception):
    """A chat server operation failed; `problem` says why and what to offer."""

    def __init__(self, problem: ServerProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


# ----------------------------------------------------------------------------- choices


@dataclass(frozen=True)
class ModelChoices:
    """Servable models of the registry: bases and merged models, adapters per base, and the
    merged copies of adapters, told beside their adapter rather than listed
    (core.models.grouping)."""

    models: list[ModelRecord] = field(default_factory=list)
    adapters: dict[str, list[ModelRecord]] = field(default_factory=dict)
    copies: dict[str, ModelRecord] = field(default_factory=dict)


def model_choices(store: Store) -> ModelChoices:
    from core.models import group_models

    grouped = group_models(list_models(store))
    return ModelChoices(grouped.models, grouped.adapters, grouped.copies)


def has_adapters(store: Store, model: str | None) -> bool:
    """Whether adapters are registered on `model` (or it is one): a vLLM server for it starts
    with runtime LoRA, so that promoting one of them (the Runs page) needs no restart. A base
    without adapters starts without it (not every architecture vLLM serves takes LoRA)."""
    records = list_models(store)
    named = next((r for r in records if r.name == model), None)
    if named is not None and named.kind == "adapter":
        return True
    return any(r.kind == "adapter" and r.base == model for r in records)


# ----------------------------------------------------------------------------- problems


def describe_exit(code: int | None) -> str:
    """An exit status in words (`core.exits`), or that the server is still running."""
    return "it is still running" if code is None else exit_words(code)


def problem_from_exception(exc: BaseException, *, engine: str = "") -> ServerProblem:
    """A `ServerProblem` for whatever starting or attaching raised."""
    title_engine = ENGINE_TITLES.get(engine, engine or "server")
    if isinstance(exc, ChatServerError):
        return exc.problem
    if isinstance(exc, ServerStopped):
        return ServerProblem(
            "stopped", "Start cancelled", str(exc) or "stopped before it was ready"
        )
    if isinstance(exc, ServerError):
        titles = {
            "binary_missing": f"{title_engine} is not installed here",
            "not_installed": f"{title_engine} is not installed in its environment",
            "port_in_use": "Port already in use",
            "model_broken": "The model cannot be loaded",
            "startup_timeout": f"{title_engine} did not start in time",
            "died": f"{title_engine} stopped during start-up",
        }
        action = "restart" if exc.kind in ("died", "startup_timeout") else "start"
        return ServerProblem(
            exc.kind,
            titles.get(exc.kind, f"{title_engine} could not start"),
            _first_paragraph(str(exc)),
            exc.log_tail,
            action,
        )
    if isinstance(exc, RegistryError | StoreError):
        return ServerProblem("registry", "Model not available", str(exc))
    if isinstance(exc, EngineError):
        return ServerProblem("engine", f"{title_engine} cannot serve this", str(exc))
    if isinstance(exc, httpx.HTTPError):
        return ServerProblem("unreachable", "Cannot reach the server", str(exc), action="reconnect")
    message = str(exc) or type(exc).__name__
    return ServerProblem("error", f"{title_engine} failed", message)


def _first_paragraph(text: str) -> str:
    """The message without the log lines `ManagedServer` appends (shown apart)."""
    head, _, _ = text.partition("; last log lines:")
    return head.strip()


# ----------------------------------------------------------------------------- the server


class ChatServer:
    """One server slot of the chat (see the module doc). Thread-safe for one start at a time."""

    def __init__(self, *, log_dir: str | Path | None = None) -> None:
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.server: ManagedServer | None = None
        self.endpoint: Endpoint | None = None
        self.request: ServerRequest | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self.phase = ""
        """What a start is doing before the server's own start-up (merging an adapter for
        an engine that cannot load one); "" otherwise. Read by the UI's timer."""
        self.swapping = threading.Event()
        """Set while a promotion restarts the server (studio.logic.promotion): its exit then
        is no crash."""

    # ------------------------------------------------------------------ state

    @property
    def managed(self) -> bool:
        return self.server is not None

    @property
    def alive(self) -> bool:
        """A started server's process runs (attached servers: True while attached)."""
        if self.server is not None:
            return self.server.alive
        return self.endpoint is not None

    @property
    def exit_code(self) -> int | None:
        process = self.server.process if self.server is not None else None
        return process.poll() if process is not None else None

    def log_tail(self, lines: int = 30) -> str:
        return self.server.log_tail(lines) if self.server is not None else ""

    # ------------------------------------------------------------------ lifecycle

    def start(self, store: Store, request: ServerRequest) -> Endpoint:
        """Start `request` (or attach when it names a URL); ChatServerError says why not."""
        if request.engine == "url" or request.url:
            return self.attach(request.url or "", request.model_id)
        with self._lock:
            if self.server is not None:  # starting again replaces the previous server
                self.server.stop()
                self.server = None
            self._forget()
            self._stopping.clear()
            self.request = request
            self.phase = ""
            try:
                method, tokens = (
                    parse_speculative(request.speculative) if request.speculative else (None, None)
                )
                config = EngineConfig(
                    request.engine,
                    python=request.python,
                    speculative=method,
                    speculative_tokens=SPECULATIVE_TOKENS if tokens is None else tokens,
                    # promoting a trained adapter onto it loads without a restart
                    runtime_lora=request.engine == "vllm"
                    and method is None
                    and has_adapters(store, request.model),
                )
                server = server_for(
                    store,
                    config,
                    request.model or "",
                    adapter=request.adapter,
                    port=request.port,
                    startup_timeout_s=request.startup_timeout_s,
                    log_dir=self.log_dir,
                    on_phase=self._set_phase,
                )
                self.phase = ""
                server.start(wait=False)
            except (ServerError, RegistryError, StoreError, EngineError) as exc:
                raise ChatServerError(problem_from_exception(exc, engine=request.engine)) from None
            self.server = server
        return self._wait(server, request)

    def _set_phase(self, phase: str) -> None:
        self.phase = phase

    def _wait(self, server: ManagedServer, request: ServerRequest) -> Endpoint:
        try:
            server.wait_healthy()
        except ServerError as exc:
            if self._stopping.is_set():
                raise ServerStopped("stopped before it was ready") from None
            raise ChatServerError(problem_from_exception(exc, engine=request.engine)) from None
        if self._stopping.is_set():
            server.stop()
            raise ServerStopped("stopped before it was ready")
        model = request.model or server.model_id
        if request.adapter:
            model = f"{model}+{request.adapter}"
        self.endpoint = Endpoint(server.base_url, server.model_id, request.engine, model, True)
        return self.endpoint

    def attach(
        self, base_url: str, model_id: str | None = None, timeout_s: float = 5.0
    ) -> Endpoint:
        """Use a server that already runs at `base_url` (an OpenAI base URL, .../v1)."""
        url = base_url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ChatServerError(
                ServerProblem(
                    "bad_url",
                    "Not a server address",
                    f"{base_url!r} is not an http(s) URL; give the OpenAI base URL, e.g. "
                    "http://127.0.0.1:8000/v1",
                    action="reconnect",
                )
            )
        ids = self._list_models(url, timeout_s)
        if model_id is None:
            if not ids:
                raise ChatServerError(
                    ServerProblem(
                        "no_models",
                        "The server lists no model",
                        f"{url}/models returned an empty list",
                        action="reconnect",
                    )
                )
            model_id = ids[0]
        elif ids and model_id not in ids:
            raise ChatServerError(
                ServerProblem(
                    "unknown_model",
                    "Model not served there",
                    f"{url} serves {', '.join(ids)}, not {model_id!r}",
                    action="reconnect",
                )
            )
        with self._lock:
            self._forget()
            self.request = ServerRequest("url", url=url, model_id=model_id)
            self.endpoint = Endpoint(url, model_id, None, model_id, False)
        return self.endpoint

    @staticmethod
    def _list_models(url: str, timeout_s: float) -> list[str]:
        try:
            response = httpx.get(f"{url}/models", timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise ChatServerError(
                ServerProblem(
                    "unreachable",
                    "Cannot reach the server",
                    f"no answer from {url}/models: {type(exc).__name__}: {exc}",
                    action="reconnect",
                )
            ) from None
        if response.status_code != 200:
            raise ChatServerError(
                ServerProblem(
                    "unreachable",
                    "Not an OpenAI-compatible server",
                    f"{url}/models answered HTTP {response.status_code}",
                    action="reconnect",
                )
            )
        try:
            data = response.json().get("data", [])
            return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
        except (ValueError, AttributeError):
            return []

    def stop(self) -> None:
        """Stop a server this chat started (also one still starting); forget an attached one."""
        self._stopping.set()
        server = self.server
        if server is not None:
            server.stop()
        with self._lock:
            self._forget()

    def _forget(self) -> None:
        self.endpoint = None
        if self.server is not None and not self.server.alive:
            self.server = None

    def restart(self, store: Store | None = None) -> Endpoint:
        """Start the same server again (same port when free); reattach an attached one."""
        request = self.request
        if request is None:
            raise ChatServerError(ServerProblem("stopped", "No server", "nothing to restart"))
        if request.engine == "url":
            return self.attach(request.url or "", request.model_id)
        server = self.server
        if server is None:
            if store is None:
                raise ChatServerError(ServerProblem("stopped", "No server", "start it first"))
            return self.start(store, request)
        self._stopping.clear()
        self.endpoint = None
        try:
            server.restart(wait=False)
        except ServerError as exc:
            raise ChatServerError(problem_from_exception(exc, engine=request.engine)) from None
        return self._wait(server, request)

    # ------------------------------------------------------------------ faults

    def reachable(self, timeout_s: float = 3.0) -> bool:
        endpoint = self.endpoint
        if endpoint is None:
            return False
        try:
            return httpx.get(f"{endpoint.base_url}/models", timeout=timeout_s).status_code == 200
        except httpx.HTTPError:
            return False

    def died(self) -> ServerProblem | None:
        """The problem when a server this chat started has exited on its own, else None."""
        server = self.server
        if server is None or server.process is None or self._stopping.is_set():
            return None
        if self.swapping.is_set():
            return None
        code = server.process.poll()
        if code is None:
            return None
        name = SERVER_NAMES.get(server.engine, "model server")
        return ServerProblem(
            "died",
            f"The {name} stopped",
            f"It exited unexpectedly ({describe_exit(code)}). Restart it to go on.",
            server.log_tail(),
            "restart",
        )

    def diagnose(self, reason: str | None, *, history: int = 0) -> ServerProblem:
        """Why a request ended with a model error, after the fact: the server died, is
        unreachable, or answered badly (timeout, HTTP error). `history` is the number of
        messages the chat kept, for the message."""
        kept = (
            f" The conversation is kept ({history} messages); ask again once it is back."
            if history
            else " Nothing was lost; ask again once it is back."
        )
        dead = self.died()
        if dead is not None:
            during = "during the reply" if reason and "mid-reply" in reason else "while answering"
            name = SERVER_NAMES.get(self.server.engine if self.server else "", "model server")
            return ServerProblem(
                "died",
                f"The {name} stopped {during}",
                f"It exited ({describe_exit(self.exit_code)}).{kept}",
                dead.log_tail,
                "restart",
            )
        detail = reason or "the model call failed"
        if self.endpoint is not None and not self.managed and not self.reachable():
            return ServerProblem(
                "unreachable",
                "The server went away",
                f"{self.endpoint.base_url} no longer answers ({detail}).{kept}",
                action="reconnect",
            )
        return ServerProblem(
            "model_error", "The model call failed", f"{detail}.{kept}", action="retry"
        )
