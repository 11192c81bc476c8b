"""Teacher data generation: oracle rows, bad teachers, resume, pruning, variants, CLI.

Bad-teacher tests use small fake ChatClient classes (and a tiny local HTTP server speaking the
OpenAI chat-completions protocol): no real model can be made to return garbage, broken tool
calls, unknown tools or endless loops on demand, and the point is what the pipeline does with
such output, not the model.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.datagen import (
    GenerateConfig,
    GenerateSummary,
    HarnessVariant,
    OpenAITeacher,
    Teacher,
    TeacherSpec,
    done_keys,
    generate,
    keep_whole,
    variant_seed,
)
from core.episode.gold import gold_trajectory
from core.harness.demo import load_demo_harness
from core.harness.models import Harness, ToolProtocol
from core.runtime import ModelError, ModelReply
from core.runtime.client import ChatClient, DeltaCallback, Message
from core.serving.judge import http_judge
from core.sim.catalog import load_catalog
from core.sim.judge import grade_with_judge, majority, parse_vote
from core.sim.models import Catalog, Split, Task
from core.sim.oracle import OracleClient
from core.sim.tasks import generate_tasks, load_suite


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def demo() -> Harness:
    return load_demo_harness()


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return generate_tasks(Split.TRAIN, per_category=3)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_gen(
    tasks: list[Task],
    harness: Harness,
    catalog: Catalog,
    teacher: Teacher,
    config: GenerateConfig,
    **kw: Any,
) -> GenerateSummary:
    return asyncio.run(generate(tasks, harness, catalog, teacher, config, **kw))


# ----------------------------------------------------------------------------- the oracle


def test_oracle_rows(tmp_path: Path, tasks: list[Task], demo: Harness, catalog: Catalog) -> None:
    out = tmp_path / "sft.jsonl"
    config = GenerateConfig(out=out, variants=1, concurrency=3)
    summary = run_gen(tasks, demo, catalog, Teacher.oracle(catalog), config)
    assert summary.written == 2 * len(tasks) and summary.rejected == 0
    data = rows(out)
    assert len({r["key"] for r in data}) == len(data)
    row = next(r for r in data if r["key"].endswith("#v1"))
    prov = row["provenance"]
    assert prov["harness"] == "live-host" and prov["teacher"] == {"kind": "oracle"}
    # HSA-SFT by default: variant 1 is a train-bank HSA variant, its record kept as provenance
    assert prov["variant"]["index"] == 1 and prov["variant"]["sampler"] == "hsa"
    assert prov["variant"]["seed"] == variant_seed(0, row["task_id"], 1)
    record = prov["variant"]["mapping"]
    assert record["policy"]["bank"] == "train" and record["policy"]["strength"] == "medium"
    assert record["seed"] == prov["variant"]["seed"] and record["applied"]
    assert row["grades"]["accuracy"]["score"] == 1
    messages = row["messages"]
    assert messages[0]["role"] == "system" and messages[1]["role"] == "user"
    assert messages[-1]["role"] == "assistant" and "<tool_call>" not in messages[-1]["content"]
    assert row["tools"][0]["function"]["name"] == "load_skill"
    assert row["trajectory"]["turns"][-1]["content"] == messages[-1]["content"]
    assert all(not r["hook_retry"] for r in data)
    assert config.rejects_path.read_text() == ""


def test_rows_are_reproducible(
    tmp_path: Path, tasks: list[Task], demo: Harness, catalog: Catalog
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for path in (a, b):
        run_gen(
            tasks[:12],
            demo,
            catalog,
            Teacher.oracle(catalog),
            GenerateConfig(out=path, concurrency=1),
        )
    assert a.read_bytes() == b.read_bytes()


def test_cli_generate_oracle(tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    args = ["data", "generate", "--teacher", "oracle", "--tasks", "train", "--per-category", "10"]
    started = time.monotonic()
    result = CliRunner().invoke(app, [*args, "--out", str(out), "-k", "1"])
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output
    assert len(rows(out)) == 240
    assert "wrote 240 rows" in result.output
    # not a terminal: progress comes as plain lines (issue 19, item 15), ending with the total
    assert re.search(r"^generate: 240/240 \(100%\) · [\d.]+ items/s · done in", result.output, re.M)
    samplers = {
        r["provenance"]["variant"]["sampler"] for r in rows(out) if r["key"].endswith("#v1")
    }
    assert samplers == {"hsa"}  # the default sampler
    assert elapsed < 30
    again = CliRunner().invoke(app, [*args, "--out", str(out), "-k", "1"])
    assert (
        again.exit_code == 0
        and "wrote 0 rows" in again.output
        and "240 already done" in again.output
    )


def test_cli_needs_a_teacher(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["data", "generate", "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 1
    result = CliRunner().invoke(
        app, ["data", "generate", "--teacher", "openai", "--out", str(tmp_path / "x.jsonl")]
    )
    assert result.exit_code == 1


# ----------------------------------------------------------------------------- bad teachers


class FakeModel:
    """A fake model that answers every call with `reply(call_index, messages)`."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.n = 0

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        self.n += 1
        result = self.reply(self.n, messages)
        if isinstance(result, BaseException):
            raise result
        if asyncio.iscoroutine(result):
            result = await result
        return result if isinstance(result, ModelReply) else ModelReply(content=str(result))


async def _hang() -> ModelReply:
    await asyncio.sleep(30)
    return ModelReply(content="late")


BAD_TEACHERS: dict[str, tuple[Any, str]] = {
    "garbage": (lambda n, m: "asdf qwerty ]]] {{{ lorem", "retry_budget_exhausted"),
    "invalid_json_calls": (lambda n, m: '<tool_call>{"name": "load_skill", "argu', "max_turns"),
    "unknown_tools": (
        lambda n, m: '<tool_call>{"name": "buy_now", "arguments": {}}</tool_call>',
        "max_turns",
    ),
    "endless_tool_loop": (
        lambda n, m: '<tool_call>{"name": "get_live_room_status", "arguments": {}}</tool_call>',
        "max_turns",
    ),
    "http_error": (lambda n, m: ModelError("HTTP 503 from teacher: overloaded"), "model_error"),
    "client_bug": (lambda n, m: RuntimeError("boom"), "model_error"),
    "wrong_answer": (
        lambda n, m: (
            '<tool_call>{"name": "load_skill", "arguments": {"name": "chit-chat"}}</tool_call>'
            if n == 1
            else "Hello there, welcome to the show!"
        ),
        "effectiveness",
    ),
    "hangs": (lambda n, m: _hang(), "timeout"),
}


@pytest.mark.parametrize("name", list(BAD_TEACHERS))
def test_bad_teacher_is_a_graded_failure(
    name: str, tmp_path: Path, demo: Harness, catalog: Catalog
) -> None:
    reply, kind = BAD_TEACHERS[name]
    task = next(t for t in load_suite("ls-qa") if t.category.value == "price")
    teacher = Teacher(TeacherSpec("fake", model=name), lambda t, v, h: FakeModel(reply))
    config = GenerateConfig(out=tmp_path / "out.jsonl", job_timeout_s=0.5)
    summary = run_gen([task], demo, catalog, teacher, config)
    assert summary.written == 0 and summary.rejected == 1
    assert rows(config.out) == []
    (row,) = rows(config.rejects_path)
    assert row["rejected"] == kind, row
    assert row["reasons"] and row["provenance"]["teacher"]["model"] == name


def test_native_invalid_arguments_reach_the_model(demo: Harness, catalog: Catalog) -> None:
    from core.serving.client import UNPARSED_ARGUMENTS, parse_arguments

    assert parse_arguments('{"link_no": 3') == {UNPARSED_ARGUMENTS: '{"link_no": 3'}
    assert parse_arguments("[1, 2]") == {UNPARSED_ARGUMENTS: "[1, 2]"}
    assert parse_arguments("") == {}
    assert parse_arguments('{"link_no": 3}') == {"link_no": 3}


# ----------------------------------------------------------------------------- resume


def test_resume_after_interruption(
    tmp_path: Path, tasks: list[Task], demo: Harness, catalog: Catalog
) -> None:
    out = tmp_path / "resume.jsonl"
    config = GenerateConfig(out=out, variants=1, concurrency=2)

    class Interrupted(Exception):
        pass

    def stop_after_7(result: Any) -> None:
        if len(done_keys(out)) >= 7:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_gen(tasks, demo, catalog, Teacher.oracle(catalog), config, on_result=stop_after_7)
    first = rows(out)
    assert 7 <= len(first) < 2 * len(tasks)
    with out.open("a") as handle:  # a write torn by the interruption
        handle.write('{"key": "torn')
    summary = run_gen(tasks, demo, catalog, Teacher.oracle(catalog), config)
    assert summary.skipped == len(first)
    data = rows(out)
    keys = [r["key"] for r in data]
    assert len(keys) == len(set(keys)) == 2 * len(tasks)
    assert data[: len(first)] == first
    summary = run_gen(tasks, demo, catalog, Teacher.oracle(catalog), config)
    assert summary.jobs == 0 and summary.skipped == 2 * len(tasks)


def test_limit_then_resume_and_rejects_are_not_rerun(
    tmp_path: Path, demo: Harness, catalog: Catalog
) -> None:
    tasks = load_suite("ls-qa")[:6]
    out = tmp_path / "lim.jsonl"
    bad = Teacher(TeacherSpec("fake"), lambda t, v, h: FakeModel(lambda n, m: "nope"))
    summary = run_gen(tasks, demo, catalog, bad, GenerateConfig(out=out, limit=2))
    assert summary.jobs == 2 and summary.rejected == 2
    summary = run_gen(tasks, demo, catalog, Teacher.oracle(catalog), GenerateConfig(out=out))
    assert summary.skipped == 2 and summary.written == 4
    config = GenerateConfig(out=out, retry_rejects=True)
    summary = run_gen(tasks, demo, catalog, Teacher.oracle(catalog), config)
    assert summary.written == 2 and len(rows(out)) == 6


# ----------------------------------------------------------------------------- pruning


class StumblingOracle:
    """The oracle, after first answering without loading a skill (require-reply-skill blocks
    it) and calling a tool with a wrong argument type (the schema check rejects it)."""

    def __init__(self, oracle: OracleClient) -> None:
        self.oracle = oracle
        self.n = 0

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> ModelReply:
        self.n += 1
        if self.n == 1:
            return ModelReply(content="Sure, great choice!")
        if self.n == 2:
            bad = '<tool_call>{"name": "get_product_by_link", "arguments": {"link_no": "x"}}'
            return ModelReply(content=bad + "</tool_call>")
        return await self.oracle.complete(messages, tools=tools, on_delta=on_delta)


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_hook_retry_rows_are_pruned_except_a_fraction(
    fraction: float, tmp_path: Path, demo: Harness, catalog: Catalog
) -> None:
    tasks = [t for t in load_suite("ls-qa") if t.category.value == "price"][:3]

    def make(task: Task, variant: HarnessVariant, harness: Harness) -> ChatClient:
        return StumblingOracle(OracleClient(task, harness, catalog))

    config = GenerateConfig(out=tmp_path / "p.jsonl", keep_whole_fraction=fraction)
    summary = run_gen(tasks, demo, catalog, Teacher(TeacherSpec("stumbling"), make), config)
    assert summary.written == 3 and summary.hook_retry == 3
    for row in rows(config.out):
        text = json.dumps(row["messages"])
        assert row["hook_retry"] is True
        if fraction == 0.0:
            assert row["kept_whole"] is False and row["pruned_turns"] == 2
            assert "[Reminder]" not in text and "great choice" not in text
            assert "invalid_arguments" not in text
            gold = asyncio.run(
                gold_trajectory(next(t for t in tasks if t.id == row["task_id"]), demo, catalog)
            )
            # the same conversation as the gold one; after a reminder the oracle's reply is
            # the compact form (no call to action), so the last message may be shorter
            assert row["messages"][:-1] == gold.messages[:-1]
            assert gold.messages[-1]["content"].startswith(row["messages"][-1]["content"])
            assert len(row["trajectory"]["turns"]) == len(gold.trajectory.turns)
        else:
            assert row["kept_whole"] is True and row["pruned_turns"] == 0
            assert "[Reminder]" in text and "great choice" in text


def test_keep_whole_fraction_is_seeded() -> None:
    keys = [f"t{i}#v0" for i in range(4000)]
    kept = sum(keep_whole(0, k, 0.1) for k in keys)
    assert 300 < kept < 500
    assert [keep_whole(0, k, 0.1) for k in keys[:50]] == [keep_whole(0, k, 0.1) for k in keys[:50]]


# ----------------------------------------------------------------------------- variants


def test_variant_sampler_hook(tmp_path: Path, demo: Harness, catalog: Catalog) -> None:
    """The HSA hook point: a sampler's renamed harness and mappings flow to oracle and graders."""
    from tests.test_sim_oracle import TOOL_NAMES, renamed

    def sampler(harness: Harness, seed: int) -> HarnessVariant:
        variant, mapping = renamed(harness)
        return HarnessVariant(
            harness=variant,
            seed=seed,
            sampler="test-rename",
            mapping={"tools": TOOL_NAMES},
            **mapping,
        )

    tasks = load_suite("ls-qa")[::45]
    config = GenerateConfig(out=tmp_path / "v.jsonl", variants=2, sampler=sampler)
    summary = run_gen(tasks, demo, catalog, Teacher.oracle(catalog), config)
    assert summary.written == 3 * len(tasks) and summary.rejected == 0
    renamed_rows = [r for r in rows(config.out) if r["provenance"]["variant"]["index"] > 0]
    for row in renamed_rows:
        assert row["provenance"]["variant"]["sampler"] == "test-rename"
        assert row["provenance"]["variant"]["mapping"] == {"tools": TOOL_NAMES}
        names = {t["function"]["name"] for t in row["tools"]}
        assert "open_playbook" in names and "get_product_by_link" not in names
        assert all(
            v == 1 for v in (row["grades"][g]["score"] for g in ("accuracy", "effectiveness"))
        )


# ----------------------------------------------------------------------------- a fake server


class _Handler(BaseHTTPRequestHandler):
    """A hosted OpenAI-compatible API with scripted replies (streamed as server-sent events):
    the teacher's remote endpoint, which cannot run on this machine; the tests with real
    servers use `transformers serve`."""

    replies: ClassVar[list[dict[str, Any]]] = []
    requests: ClassVar[list[dict[str, Any]]] = []
    status: ClassVar[int] = 200

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        if type(self).status != 200:
            self.send_response(type(self).status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "overloaded"}}')
            return
        message = type(self).replies[(len(type(self).requests) - 1) % len(type(self).replies)]
        delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [
                {"index": i, **call} for i, call in enumerate(message["tool_calls"])
            ]
        chunks = [
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
        ]
        head = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        data = b"".join(
            b"data: " + json.dumps({**head, **chunk}).encode() + b"\n\n" for chunk in chunks
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data + b"data: [DONE]\n\n")))
        self.end_headers()
        self.wfile.write(data + b"data: [DONE]\n\n")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_server() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("H", (_Handler,), {"replies": [], "requests": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()


def test_openai_teacher_native_round_trip(
    fake_server: tuple[str, type[_Handler]], demo: Harness, catalog: Catalog, tmp_path: Path
) -> None:
    url, handler = fake_server
    call = {"id": "c1", "type": "function", "function": {"name": "load_skill", "arguments": "{bad"}}
    handler.replies = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "assistant", "content": "Hi there!"},
    ]
    native = demo.model_copy(deep=True)
    native.settings.tool_protocol = ToolProtocol.NATIVE
    teacher = OpenAITeacher(url, "fake-model", max_retries=0, timeout_s=5)
    task = next(t for t in load_suite("ls-qa") if t.category.value == "price")
    config = GenerateConfig(out=tmp_path / "n.jsonl")

    async def go() -> GenerateSummary:
        try:
            return await generate(
                [task], native, catalog, Teacher.shared(teacher.spec, teacher), config
            )
        finally:
            await teacher.close()

    summary = asyncio.run(go())
    assert summary.rejected == 1
    (row,) = rows(config.rejects_path)
    assert row["provenance"]["teacher"] == {
        "kind": "openai",
        "model": "fake-model",
        "url": url,
        "temperature": 0.0,
    }
    assert handler.requests[0]["tools"][0]["function"]["name"] == "load_skill"
    second = handler.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "load_skill"
    # the unparseable arguments reached the loop as such, and the loop told the model
    arguments = json.loads(second[-2]["tool_calls"][0]["function"]["arguments"])
    assert arguments == {"_unparsed_arguments": "{bad"}
    assert second[-1]["role"] == "tool" and '"kind": "unknown_skill"' in second[-1]["content"]


def test_openai_teacher_http_errors_are_model_errors(
    fake_server: tuple[str, type[_Handler]],
) -> None:
    url, handler = fake_server
    handler.status = 503

    async def go() -> None:
        teacher = OpenAITeacher(url, "m", max_retries=0, timeout_s=5)
        try:
            with pytest.raises(ModelError, match="503"):
                await teacher.complete([{"role": "user", "content": "hi"}])
        finally:
            await teacher.close()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dead = OpenAITeacher(f"http://127.0.0.1:{port}/v1", "m", max_retries=0, timeout_s=2)
        try:
            with pytest.raises(ModelError, match="cannot reach"):
                await dead.complete([{"role": "user", "content": "hi"}])
        finally:
            await dead.close()

    asyncio.run(go())


# ----------------------------------------------------------------------------- the judge


def test_judge_votes() -> None:
    assert parse_vote('{"score": 0.5, "reason": "half"}') == (0.5, "half")
    assert parse_vote('sure! {"score": 1}') == (1.0, "")
    assert parse_vote('{"score": 0.7}') is None and parse_vote("no json") is None
    assert majority([1.0, 1.0, 0.0]) == 1.0 and majority([0.0, 0.5, 1.0]) == 0.5


def test_judge_majority_over_a_fake_server(
    fake_server: tuple[str, type[_Handler]], demo: Harness, catalog: Catalog
) -> None:
    url, handler = fake_server
    handler.replies = [
        {"role": "assistant", "content": '{"score": 0.5, "reason": "partly"}'},
        {"role": "assistant", "content": "I think it is fine"},
        {"role": "assistant", "content": '{"score": 0.5, "reason": "half"}'},
    ]
    task = next(t for t in load_suite("ls-qa") if t.category.value == "multi_intent")

    async def go() -> Any:
        trace = await gold_trajectory(task, demo, catalog)
        judge = http_judge(url, "judge", max_retries=0, timeout_s=5)
        try:
            return await grade_with_judge(task, trace, demo, catalog, judge)
        finally:
            await judge.close()

    grades = asyncio.run(go())
    assert grades.effectiveness.score == 0.5
    assert grades.effectiveness.reasons[0].startswith("judge votes [0.5, 0.5]")
    assert grades.accuracy.score == 1
    assert "What the viewer wants" in handler.requests[0]["messages"][1]["content"]
