"""`hat serve`: run a model server in the foreground.

    hat serve                                            the demo model on transformers serve
    hat serve --engine vllm --model demo-sft --adapter sft-1
    hat serve --engine vllm --model qwen3 --tool-parser hermes --runtime-lora   (GPU)
    hat serve --engine vllm --speculative ngram:4       n-gram prompt lookup, 4 tokens a step
    hat serve --engine vllm --model big --draft-model /models/small --speculative draft:3

The server binds 127.0.0.1 on a free port (or --port) and prints its OpenAI base URL and the
model id to use; Ctrl-C stops it. The interpreter of each engine is configurable (--python,
or HAT_TRANSFORMERS_PYTHON / HAT_VLLM_PYTHON / HAT_VLLM_VENV; the vLLM environment comes from
scripts/setup-vllm.sh).
"""

from __future__ import annotations

import signal
import time
from typing import TYPE_CHECKING, Annotated

import typer

from core.cli.common import console, err_console, fail, open_store

if TYPE_CHECKING:
    from core.serving.engines import EngineConfig
    from core.serving.server import ManagedServer
    from core.store import Store

app = typer.Typer(help="Serve a registered model over the OpenAI-compatible API.")

EngineOpt = Annotated[str, typer.Option("--engine", help="transformers | vllm")]
ModelOpt = Annotated[
    str | None, typer.Option("--model", help="Registered model (default: the demo model).")
]
AdapterOpt = Annotated[
    str | None, typer.Option("--adapter", help="Registered adapter to serve on the model.")
]
PythonOpt = Annotated[
    str | None, typer.Option("--python", help="Interpreter of the engine's environment.")
]
PortOpt = Annotated[int | None, typer.Option("--port", help="Port (default: a free one).")]
SpeculativeOpt = Annotated[
    str | None,
    typer.Option(
        "--speculative",
        help="vLLM speculative decoding: ngram[:N] (prompt lookup, any model), draft[:N] "
        "(with --draft-model) or mtp[:N] (models with an MTP head); N tokens a step, default 4.",
    ),
]
DraftModelOpt = Annotated[
    str | None,
    typer.Option("--draft-model", help="vLLM: draft model folder or hub id (speculative)."),
]


def engine_config(
    engine: str,
    *,
    python: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    eager: bool | None = None,
    tool_parser: str | None = None,
    runtime_lora: bool = False,
    max_model_len: int | None = None,
    speculative: str | None = None,
    draft_model: str | None = None,
) -> EngineConfig:
    from core.serving import engines

    try:
        method, tokens = engines.parse_speculative(speculative) if speculative else (None, None)
        return engines.EngineConfig(
            engine=engine,
            python=python,
            device=device,
            dtype=dtype,
            enforce_eager=eager,
            tool_parser=tool_parser,
            runtime_lora=runtime_lora,
            max_model_len=max_model_len,
            speculative=method,
            speculative_tokens=engines.SPECULATIVE_TOKENS if tokens is None else tokens,
            draft_model=draft_model,
        )
    except engines.EngineError as exc:
        fail(str(exc))


def start_server(
    store: Store,
    config: EngineConfig,
    model: str | None,
    *,
    adapter: str | None = None,
    port: int | None = None,
    startup_timeout_s: float = 600.0,
    quiet: bool = False,
) -> ManagedServer:
    """Start a server for a registered model (the demo model by default), or fail clearly."""
    from core.models import DEMO_MODEL_NAME, RegistryError
    from core.serving.engines import EngineError
    from core.serving.launch import server_for
    from core.serving.server import ServerError

    name = model or DEMO_MODEL_NAME
    try:
        server = server_for(
            store,
            config,
            name,
            adapter=adapter,
            port=port,
            startup_timeout_s=startup_timeout_s,
            on_phase=lambda phase: err_console.print(f"{phase}…", markup=False),
        )
    except RegistryError as exc:
        hint = " (run: hat models add-demo)" if name == DEMO_MODEL_NAME else ""
        fail(f"{exc}{hint}")
    except EngineError as exc:
        fail(str(exc))
    if not quiet:
        err_console.print(f"starting {config.engine} for {name} ...", markup=False)
    started = time.monotonic()
    try:
        server.start()
    except ServerError as exc:
        fail(str(exc))
    if not quiet:
        err_console.print(
            f"{config.engine} ready in {time.monotonic() - started:.1f} s at {server.base_url} "
            f"(model id {server.model_id!r}, log {server.log_path})",
            markup=False,
        )
    return server


@app.callback(invoke_without_command=True)
def serve(
    engine: EngineOpt = "transformers",
    model: ModelOpt = None,
    adapter: AdapterOpt = None,
    port: PortOpt = None,
    python: PythonOpt = None,
    device: Annotated[
        str | None, typer.Option("--device", help="transformers: cpu|cuda|auto")
    ] = None,
    dtype: Annotated[str | None, typer.Option("--dtype", help="float32 | bfloat16 | auto")] = None,
    eager: Annotated[
        bool | None,
        typer.Option(
            "--eager/--no-eager",
            help="Skip torch.compile. vLLM compiles unless on CPU; transformers serve compiles "
            "only with --no-eager (its --compile).",
        ),
    ] = None,
    tool_parser: Annotated[
        str | None,
        typer.Option("--tool-parser", help="vLLM: enable native tool calls (e.g. hermes)."),
    ] = None,
    runtime_lora: Annotated[
        bool, typer.Option("--runtime-lora", help="vLLM: allow POST /v1/load_lora_adapter.")
    ] = False,
    max_model_len: Annotated[
        int | None, typer.Option("--max-model-len", help="vLLM: context length.")
    ] = None,
    speculative: SpeculativeOpt = None,
    draft_model: DraftModelOpt = None,
    startup_timeout: Annotated[
        float, typer.Option("--startup-timeout", help="Seconds to wait for health.")
    ] = 600.0,
) -> None:
    """Serve a model until Ctrl-C."""
    config = engine_config(
        engine,
        python=python,
        device=device,
        dtype=dtype,
        eager=eager,
        tool_parser=tool_parser,
        runtime_lora=runtime_lora,
        max_model_len=max_model_len,
        speculative=speculative,
        draft_model=draft_model,
    )
    with open_store() as store:
        server = start_server(
            store, config, model, adapter=adapter, port=port, startup_timeout_s=startup_timeout
        )
    console.print(f"OPENAI_BASE_URL={server.base_url}", markup=False)
    console.print(f"model={server.model_id}", markup=False)
    stopping = False

    def on_signal(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    try:
        while not stopping:
            if not server.alive:
                fail(f"the {engine} server stopped; last log lines:\n{server.log_tail()}")
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        err_console.print("server stopped", markup=False)
