"""The studio's Chat page and the Qt-free pieces behind it.

Fast tests (no model server):
- `core.serving.chat_cards`: the cards and the latency row of a real agent request (the real
  loop, the real simulated room; the model is a `ScriptedClient`, the test double the runtime
  tests use, because here only the mapping from steps to cards is under test);
- `core.serving.viewer_stream`: presets cover every task category; the live-room replay keeps
  arrival order, never answers two messages at once, and counts waiting times (hypothesis);
- `core.serving.chat_server` and the server card: a URL that answers nothing, a missing engine
  interpreter and a port already taken are reported with their cause, on the card.

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
from core.serving.chat_cards import cards_for_trace, reply_latency, session_summary
from core.serving.chat_lane import ChatLane, harness_choices
from core.serving.chat_server import (
    ChatServer,
    ChatServerError,
    Endpoint,
    ServerRequest,
    describe_exit,
)
from core.serving.viewer_stream import (
    ReplaySchedule,
    ViewerPreset,
    live_stream,
    room_bindings,
    viewer_presets,
)
from core.sim.models import Split, TaskCategory
from core.sim.tasks import generate_tasks
from core.store import Store

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
    room = room_bindings(task)
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
    assert agent.n == 3  # 5 requests - 1 warm-up - 1 model error
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
    assert describe_exit(-9) == "killed by SIGKILL" and describe_exit(3) == "exit status 3"


# ----------------------------------------------------------------------------- the page


def _open(home: Path) -> Any:
    from tests.test_studio_gui import open_studio

    win = open_studio(home, busy_timeout=0.5)
    win.show_page("chat")
    page = win.page("chat")
    from tests.test_studio_gui import idle

    idle()
    return win, page


def _shut(win: Any) -> None:
    from tests.test_studio_gui import shut

    win.page("chat").shutdown()
    shut(win)


def test_server_card_shows_missing_engine_and_taken_port(qapp: Any, hat_home: Path) -> None:  # noqa: ARG001
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
