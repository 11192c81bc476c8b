"""`hat chat`: a terminal chat with the served model through the agent loop.

    hat chat                                   demo harness, demo model on transformers serve
    hat chat --engine vllm --model demo-sft
    hat chat --url http://127.0.0.1:8000/v1 --model-id NAME    a server that already runs

Every message is one agent request (the harness's system prompt, the conversation so far, the
viewer message) against the live-room simulator; model output streams as it is generated and
a latency line follows each reply. History grows with each accepted reply; a failed request
(server gone, timeout) leaves it unchanged, so after `/restart` the same question can be asked
again. Requests are stored as latency rows of the chat session.

Commands: /restart (restart the managed server), /reset (forget the history), /history,
/quit.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from core.cli.common import TrustOpt, console, err_console, esc, fail, open_store, printable
from core.cli.serve_cmd import (
    AdapterOpt,
    EngineOpt,
    ModelOpt,
    PythonOpt,
    engine_config,
    start_server,
)
from core.store.harness_ref import DEFAULT_RULE

if TYPE_CHECKING:
    from core.harness.models import Harness
    from core.runtime.trace import Step
    from core.serving.chat import ChatSession
    from core.serving.server import ManagedServer
    from core.store import Store

app = typer.Typer(help="Chat with the served model through the agent loop.")

HELP = "commands: /restart  /reset  /history  /quit"


def load_harness(spec: str | None, *, trust: bool = False) -> Harness:
    """A harness folder (its Python code and MCP servers run only with `trust`), a stored
    version (`name@label`, id), or nothing: the one default rule of core/store/harness_ref.py
    (live-host@production, else @head, else the bundled demo), as evaluation and RL use it."""
    return load_harness_version(spec, trust=trust)[0]


def load_harness_version(spec: str | None, *, trust: bool = False) -> tuple[Harness, str | None]:
    """`load_harness` with the stored version id (None for a folder or the bundled demo)."""
    from core.harness import HarnessError
    from core.store import StoreError
    from core.store.harness_ref import resolve_harness

    try:
        with open_store() as store:
            return resolve_harness(store, spec, trust=trust)
    except HarnessError as exc:
        fail(f"the harness folder {spec} does not validate:\n{exc}")
    except StoreError as exc:
        fail(f"harness {spec!r}: {exc}")


def trained_harness_warning(model: str | None, version: str | None) -> str | None:
    """The model card's warning when `model` was trained on another harness version than the
    one it is about to serve, with the impact gate's verdict on that difference when it was
    measured (core/eval/card.py `harness_notice`); None when it was not, or nothing is known."""
    from core.eval.card import harness_notice

    if model is None:
        return None
    with open_store() as store:
        return harness_notice(store, model, version)


def _print_step(step: Step) -> None:
    from core.runtime.trace import ModelCallStep, SkillLoadStep, ToolCallStep

    if isinstance(step, ModelCallStep):
        sys.stdout.write("\n")
        sys.stdout.flush()
    elif isinstance(step, SkillLoadStep):
        status = "ok" if step.ok else f"error: {step.error}"
        console.print(f"  [dim]· skill {esc(step.name)}: {esc(status)}[/dim]")
    elif isinstance(step, ToolCallStep):
        status = "ok" if step.error is None else f"{step.error_kind}: {step.error}"
        console.print(f"  [dim]· tool {esc(step.name)}: {esc(status)}[/dim]")


def live_follower(
    store: Store, chat: ChatSession, default_id: str, default_model: str
) -> Callable[[], str | None]:
    """What runs before each turn: point the chat's client at what is live on its server now
    (a promoted adapter's served name while the server lists it, else `default_id`,
    core/serving/promote.py `follow_live`); returns a line to print when that changed."""
    from core.serving.client import OpenAIChatClient
    from core.serving.promote import describe, follow_live

    last = [default_id]

    def follow() -> str | None:
        client = chat.client
        base_url = getattr(client, "base_url", None)
        if not isinstance(client, OpenAIChatClient) or base_url is None:
            return None
        now = follow_live(store, base_url, default_id)
        client.model = now.model_id
        chat.model = now.record.model if now.record is not None else default_model
        if now.model_id == last[0]:
            return None
        last[0] = now.model_id
        if now.record is None:
            return f"now answering: {now.model_id} (what the server was started with)"
        return f"now answering: {describe(now.record)}"

    return follow


async def _repl(
    chat: ChatSession,
    server: ManagedServer | None,
    follow: Callable[[], str | None] | None = None,
) -> None:
    console.print(f"[dim]{HELP}[/dim]")
    while True:
        try:
            line = input("viewer> ")
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        message = line.strip()
        if not message:
            continue
        if message in ("/quit", "/exit"):
            return
        if message == "/help":
            console.print(HELP)
            continue
        if message == "/reset":
            chat.history = []
            console.print("[dim]history cleared[/dim]")
            continue
        if message == "/history":
            console.print(f"[dim]{len(chat.history)} message(s) of history[/dim]")
            continue
        if message == "/restart":
            if server is None:
                console.print("[dim]attached to an external server: nothing to restart[/dim]")
                continue
            from core.serving.server import ServerError

            try:
                await asyncio.to_thread(server.restart)
            except ServerError as exc:
                err_console.print(f"[red]restart failed:[/red] {esc(exc, multiline=True)}")
                continue
            # a restart may land on a new port: the client must follow the server
            rebase = getattr(chat.client, "rebase", None)
            if rebase is not None and getattr(chat.client, "base_url", None) != server.base_url:
                await rebase(server.base_url)
            console.print(f"[dim]server restarted at {esc(server.base_url)}[/dim]")
            continue

        def on_delta(text: str) -> None:
            sys.stdout.write(printable(text, multiline=True))
            sys.stdout.flush()

        from core.serving.latency import latency_line

        if follow is not None:  # a promotion since the last turn: name the live model
            note = await asyncio.to_thread(follow)
            if note is not None:
                console.print(f"[dim]{esc(note)}[/dim]", soft_wrap=True)
        trace = await chat.ask(message, on_delta=on_delta, on_event=_print_step)
        if trace.ok:
            reply = esc(trace.final_reply, multiline=True)
            console.print(f"[bold]host>[/bold] {reply}", markup=True, highlight=False)
        else:
            reason = esc(trace.reason, multiline=True)
            console.print(f"[red]no reply ({trace.status.value}):[/red] {reason}")
            if trace.status.value == "model_error":
                console.print("[dim]history kept; /restart restarts the server[/dim]")
        console.print(f"[dim]{esc(latency_line(trace))}[/dim]")


@app.callback(invoke_without_command=True)
def chat(
    engine: EngineOpt = "transformers",
    model: ModelOpt = None,
    adapter: AdapterOpt = None,
    python: PythonOpt = None,
    url: Annotated[
        str | None, typer.Option("--url", help="Attach to a running server (OpenAI base URL).")
    ] = None,
    model_id: Annotated[
        str | None, typer.Option("--model-id", help="Model id at --url (default: its first).")
    ] = None,
    harness: Annotated[
        str | None,
        typer.Option(
            "--harness",
            help=f"Harness folder or stored version (default: {DEFAULT_RULE}).",
        ),
    ] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Per model call.")] = 256,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per model call.")] = 120.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the simulated room.")] = 0,
    trust: TrustOpt = False,
) -> None:
    """Chat in the terminal; one latency line per reply. The harness's tools run where they
    are bound: the live-room simulator, Python functions, MCP servers, HTTP endpoints."""
    from core.runtime.tool_runtime import binding_problems
    from core.serving.chat import ChatSession
    from core.serving.client import GenerationOptions, OpenAIChatClient

    the_harness, version = load_harness_version(harness, trust=trust)
    warning = trained_harness_warning(adapter or model, version)
    if warning is not None:
        err_console.print(f"warning: {warning}", style="yellow", markup=False, soft_wrap=True)
    problems = binding_problems(the_harness)
    if problems:
        listed = "\n".join(f"  {p.message}" for p in problems)
        fail(f"the harness has tools the runtime cannot run:\n{listed}")
    server = None
    with open_store() as store:
        if url is None:
            config = engine_config(engine, python=python)
            server = start_server(store, config, model, adapter=adapter)
            base_url, mid = server.base_url, server.model_id
        else:
            base_url = url
            mid = model_id or _first_model(url)
        try:

            async def run() -> None:
                from contextlib import AsyncExitStack

                from core.episode.open_world import chat_world
                from core.sim.surface import HarnessSurface

                async with AsyncExitStack() as stack:
                    world = await chat_world(the_harness, stack, seed=seed)
                    surface = HarnessSurface(the_harness, {}, {}, {})
                    bindings = world.bindings(None, the_harness, surface)
                    client = OpenAIChatClient(
                        base_url,
                        mid,
                        options=GenerationOptions(max_tokens=max_tokens),
                        timeout_s=timeout,
                    )
                    session = ChatSession(
                        the_harness,
                        client,
                        bindings,
                        store=store,
                        engine=engine if url is None else None,
                        model=model or mid,
                    )
                    follow = live_follower(store, session, mid, model or mid)
                    try:
                        await _repl(session, server, follow)
                    finally:
                        await client.aclose()

            asyncio.run(run())
        finally:
            if server is not None:
                server.stop()


def _first_model(url: str) -> str:
    import httpx

    try:
        data = httpx.get(url.rstrip("/") + "/models", timeout=10).json()
        return str(data["data"][0]["id"])
    except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
        fail(f"cannot list the models at {url}: {exc}")
