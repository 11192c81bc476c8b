"""Engine command lines and start-up faults that need no running model (fast)."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest

from core.machine import cpu_native_bf16
from core.runtime.client import ModelError
from core.serving import (
    EngineConfig,
    EngineError,
    GenerationOptions,
    ManagedServer,
    OpenAIChatClient,
    ServerError,
    build_launch,
    free_port,
)
from core.serving.client import tokenizer_counter
from core.serving.engines import cpu_dtype, cpu_reserved_cores, default_python
from tests.test_serving_support import fake_adapter_folder, fake_model_folder


def test_transformers_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    folder = fake_model_folder(tmp_path / "m")
    spec = build_launch(EngineConfig("transformers"), str(folder), port=8123)
    assert spec.argv[:5] == [
        sys.executable,
        "-m",
        "transformers.cli.transformers",
        "serve",
        str(folder),
    ]
    assert spec.argv[spec.argv.index("--host") + 1] == "127.0.0.1"
    assert spec.argv[spec.argv.index("--port") + 1] == "8123"
    assert spec.model_id == str(folder)
    assert spec.env["HF_HUB_OFFLINE"] == "1"  # a local folder never needs the hub
    assert "--compile" not in spec.argv  # eager unless asked
    compiled = build_launch(EngineConfig("transformers", enforce_eager=False), "m", port=1)
    assert "--compile" in compiled.argv


def test_vllm_command_line_cpu_defaults_tools_and_lora(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("core.serving.engines.has_gpu", lambda: False)
    config = EngineConfig(
        "vllm",
        python="/opt/vllm/bin/python",
        tool_parser="hermes",
        adapters={"sft-1": str(fake_adapter_folder(tmp_path / "a"))},
        runtime_lora=True,
    )
    spec = build_launch(config, "/models/base", port=9000, served_name="base")
    argv = spec.argv
    assert argv[:3] == ["/opt/vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--dtype") + 1] == cpu_dtype()
    # a fixed KV cache on a CPU, not a share of the machine's memory
    assert argv[argv.index("--kv-cache-memory-bytes") + 1] == str(2 * 2**30)
    assert "--gpu-memory-utilization" not in argv
    assert "--enforce-eager" in argv
    i = argv.index("--enable-auto-tool-choice")
    assert argv[i + 1 : i + 3] == ["--tool-call-parser", "hermes"]
    assert "--enable-lora" in argv and f"sft-1={tmp_path / 'a'}" in argv
    assert spec.env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "1"
    assert spec.model_id == "sft-1"  # requests name the adapter

    monkeypatch.setattr("core.serving.engines.has_gpu", lambda: True)
    gpu = build_launch(EngineConfig("vllm", python="p"), "/models/base", port=1)
    assert "--enforce-eager" not in gpu.argv and "--dtype" not in gpu.argv
    assert "VLLM_CPU_NUM_OF_RESERVED_CPU" not in gpu.env
    assert "--kv-cache-memory-bytes" not in gpu.argv  # vLLM sizes a GPU's cache itself
    assert "--gpu-memory-utilization" not in gpu.argv
    monkeypatch.setattr("core.serving.engines.has_gpu", lambda: False)
    share = build_launch(
        EngineConfig("vllm", python="p", gpu_memory_utilization=0.5), "/m", port=1
    ).argv
    assert share[share.index("--gpu-memory-utilization") + 1] == "0.5"
    assert "--kv-cache-memory-bytes" not in share  # a share the user asked for stands
    sized = build_launch(EngineConfig("vllm", python="p", kv_cache_gib=0.5), "/m", port=1).argv
    assert sized[sized.index("--kv-cache-memory-bytes") + 1] == str(2**29)


@pytest.mark.parametrize(
    ("cores", "reserved"), [(1, "0"), (2, "0"), (4, "0"), (5, None), (64, None)]
)
def test_a_small_cpu_keeps_no_core_out_of_vllms_pool(
    cores: int, reserved: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a few cores the scheduler's reserved core halves the compute (2 cores: the model
    ran on one); on many, vLLM's own default stands; a value the user set is never changed."""
    monkeypatch.setattr("core.serving.engines.has_gpu", lambda: False)
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(cores)), raising=False)
    monkeypatch.delenv("VLLM_CPU_NUM_OF_RESERVED_CPU", raising=False)
    assert cpu_reserved_cores() == reserved
    spec = build_launch(EngineConfig("vllm", python="p"), "/models/base", port=1)
    assert spec.env.get("VLLM_CPU_NUM_OF_RESERVED_CPU") == reserved
    monkeypatch.setenv("VLLM_CPU_NUM_OF_RESERVED_CPU", "1")
    spec = build_launch(EngineConfig("vllm", python="p"), "/models/base", port=1)
    assert "VLLM_CPU_NUM_OF_RESERVED_CPU" not in spec.env  # the user's own value goes through


def test_engine_options_are_validated() -> None:
    with pytest.raises(EngineError, match="unknown engine"):
        EngineConfig("llamacpp")
    with pytest.raises(EngineError, match="vLLM options"):
        EngineConfig("transformers", tool_parser="hermes")


def test_vllm_python_is_configurable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HAT_VLLM_VENV", str(tmp_path / "venv"))
    assert default_python("vllm") == str(tmp_path / "venv" / "bin" / "python")
    monkeypatch.setenv("HAT_VLLM_PYTHON", "/x/python")
    assert default_python("vllm") == "/x/python"
    monkeypatch.setenv("HAT_TRANSFORMERS_PYTHON", "/y/python")
    assert default_python("transformers") == "/y/python"


def test_missing_engine_binary_is_named(tmp_path: Path) -> None:
    folder = fake_model_folder(tmp_path / "m")
    server = ManagedServer(
        EngineConfig("vllm", python=str(tmp_path / "no-venv/bin/python")), str(folder)
    )
    with pytest.raises(ServerError, match=r"vllm engine's Python was not found: .*no-venv") as err:
        server.start()
    assert err.value.kind == "binary_missing" and "setup-vllm.sh" in str(err.value)


def test_port_taken_is_refused_before_starting(tmp_path: Path) -> None:
    folder = fake_model_folder(tmp_path / "m")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        server = ManagedServer(EngineConfig("transformers"), str(folder), port=port)
        with pytest.raises(ServerError, match=f"port {port} on 127.0.0.1 is already in use") as err:
            server.start()
    assert err.value.kind == "port_in_use" and server.process is None


def test_engine_not_installed_in_that_env_dies_with_the_log(tmp_path: Path) -> None:
    """An interpreter without the engine: the process dies at once and the error says why."""
    folder = fake_model_folder(tmp_path / "m")
    venv = tmp_path / "bare"
    import venv as venv_module

    venv_module.create(venv, with_pip=False)
    server = ManagedServer(
        EngineConfig("vllm", python=str(venv / "bin" / "python")), str(folder), log_dir=tmp_path
    )
    with pytest.raises(ServerError, match="not installed in that Python environment") as err:
        server.start()
    assert "No module named 'vllm'" in err.value.log_tail
    assert not server.alive


def test_unreachable_server_is_a_model_error() -> None:
    port = free_port()

    async def run() -> None:
        async with OpenAIChatClient(
            f"http://127.0.0.1:{port}/v1", "m", options=GenerationOptions(max_tokens=4)
        ) as client:
            await client.complete([{"role": "user", "content": "hi"}])

    with pytest.raises(ModelError, match=r"cannot reach the model server .* connection refused"):
        asyncio.run(run())


_SSE_REPLY = (
    'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
    '"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
    '"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
)


async def _dropping_server(drops: int) -> tuple[asyncio.Server, list[int]]:
    """A real HTTP server on a socket whose first `drops` connections read the request
    and hang up without a byte, as a pooled connection to a killed server does; later
    connections stream one reply. (An engine cannot be made to drop a connection on
    cue, so this small server stands in for one.)"""
    seen: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(1)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        if len(seen) <= drops:
            writer.close()
            return
        body = _SSE_REPLY.encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, seen


@pytest.mark.parametrize("drops", [1, 2])
def test_a_connection_dropped_before_any_byte_is_tried_once_more(drops: int) -> None:
    """One hang-up before the reply is a stale connection: the request goes out once
    more on a fresh pool and succeeds. Two in a row are the server's answer."""

    async def run() -> str:
        server, seen = await _dropping_server(drops)
        port = server.sockets[0].getsockname()[1]
        try:
            async with OpenAIChatClient(
                f"http://127.0.0.1:{port}/v1", "m", options=GenerationOptions(max_tokens=4)
            ) as client:
                reply = await client.complete([{"role": "user", "content": "hi"}])
                return reply.content
        finally:
            assert len(seen) == 2  # never a third attempt
            server.close()

    if drops == 1:
        assert asyncio.run(run()) == "hi"
    else:
        with pytest.raises(ModelError, match=r"cannot reach the model server"):
            asyncio.run(run())


def test_request_body_asks_for_usage_and_passes_options() -> None:
    client = OpenAIChatClient(
        "http://127.0.0.1:1/v1",
        "m",
        options=GenerationOptions(max_tokens=7, temperature=0.0, seed=3, stop=["</x>"]),
        extra_body={"top_k": 1},
    )
    body = client.request_body([{"role": "user", "content": "hi"}], tools=None)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert (body["max_tokens"], body["seed"], body["stop"], body["top_k"]) == (7, 3, ["</x>"], 1)
    assert "tools" not in body
    asyncio.run(client.aclose())


def test_tokenizer_counter_fallback(tmp_path: Path) -> None:
    assert tokenizer_counter(tmp_path) is None
    from tests.test_serving_support import demo_model

    count = tokenizer_counter(demo_model().folder)
    assert count is not None and 1 <= count("Hello there, how are you?") <= 10


def test_registry_names_to_a_vllm_server_with_its_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.models import RegistryError, add_folder, register_adapter
    from core.serving.launch import server_for
    from core.store import Store

    monkeypatch.setattr("core.serving.engines.has_gpu", lambda: False)
    with Store.open() as store:
        add_folder(store, "base", fake_model_folder(tmp_path / "base"))
        add_folder(store, "other", fake_model_folder(tmp_path / "other"))
        register_adapter(store, "sft", fake_adapter_folder(tmp_path / "sft"), base="base")
        server = server_for(store, EngineConfig("vllm", python="p"), "base", adapter="sft")
        assert server.config.adapters == {"sft": str((tmp_path / "sft").resolve())}
        spec = build_launch(server.config, server.model, port=1, served_name=server.served_name)
        assert spec.model_id == "sft" and "--lora-modules" in spec.argv
        # naming the adapter alone serves it on its base
        assert server_for(store, EngineConfig("vllm", python="p"), "sft").model.endswith("base")
        with pytest.raises(RegistryError, match="was trained on 'base', not 'other'"):
            server_for(store, EngineConfig("vllm", python="p"), "other", adapter="sft")
        # transformers serve gets the adapter merged on demand (a real merge child: these
        # fake folders hold no weights, so it fails, naming the adapter)
        with pytest.raises(RegistryError, match="merging 'sft' failed"):
            server_for(store, EngineConfig("transformers"), "base", adapter="sft")


def test_cpu_serving_dtype_follows_native_bf16() -> None:
    """bf16 only where the CPU multiplies it natively: on an AVX2-only CPU vLLM's bf16 is
    emulated and slower than fp32, so a fixed bf16 (as the cpu profile had) cost speed there."""
    amd = "processor\t: 0\nflags\t\t: fpu sse2 avx fma f16c avx2\n"
    intel = "flags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n"
    assert not cpu_native_bf16(amd) and cpu_native_bf16(intel)
    assert not cpu_native_bf16("") and cpu_dtype() in ("bfloat16", "float32")


def test_one_answer_about_the_machine_for_configs_serving_and_the_training_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """#36 item 5: the training configs' Environment, the serving dtype and the training
    child's bf16 choice read the same flags and GPU list (core/machine.py)."""
    from core.machine import gpu_names
    from core.train.launch_checks import detect_environment
    from training.common import cpu_has_bf16

    env = detect_environment()
    assert env.cpu_bf16 == cpu_native_bf16() == cpu_has_bf16()
    assert cpu_dtype() == ("bfloat16" if env.cpu_bf16 else "float32")
    monkeypatch.setenv("HAT_GPU_COUNT", "3")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert len(gpu_names()) == 3 == detect_environment().gpus  # the override is the answer
    monkeypatch.delenv("HAT_GPU_COUNT")
    assert len(gpu_names()) <= 2  # whatever is here, narrowed to the visible ones
