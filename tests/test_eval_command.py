"""The Evaluate form's command line is the request it runs: the line core writes
(core/eval/command.py) is parsed back by the real `hat eval run` and must give the same
EvalRequest. `run_eval` is replaced by a catcher (the request is what is compared; running it
is the runner's tests' job)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.main import app
from core.eval.command import RUN_DEFAULTS
from core.eval.types import EvalRequest
from studio.logic.eval_view import LaunchRequest
from studio.logic.requests import RequestError

runner = CliRunner()
DESK = Path(__file__).resolve().parents[1] / "resources/examples/order_desk/tasks.jsonl"


class _Caught(Exception):
    pass


def _parsed(line: str, monkeypatch: pytest.MonkeyPatch) -> EvalRequest:
    """The request `hat eval run` builds from `line` (run_eval raises it back)."""
    seen: list[EvalRequest] = []

    def catch(_store: Any, request: EvalRequest, **_kw: Any) -> Any:
        seen.append(request)
        raise _Caught

    monkeypatch.setattr("core.eval.api.run_eval", catch)
    words = shlex.split(line)
    assert words[:3] == ["hat", "eval", "run"], line
    result = runner.invoke(app, words[1:])
    assert seen, f"{line}\n{result.output}"
    return seen[0]


launches = st.builds(
    LaunchRequest,
    model=st.sampled_from(["demo", "my model", "smol-hat-merged"]),
    kind=st.sampled_from(["model", "model", "oracle"]),
    adapter=st.one_of(st.none(), st.just("hat-adapter")),
    harness=st.one_of(st.none(), st.text("0123456789abcdef", min_size=12, max_size=12)),
    suites=st.lists(
        st.sampled_from(["ls-qa", "hv-qa", "robustness", "tasks", "hv-tasks"]),
        min_size=1,
        max_size=3,
        unique=True,
    ).map(tuple),
    limit=st.one_of(st.none(), st.integers(1, 60)),
    variants=st.integers(1, 16),
    samples=st.integers(1, 4),
    concurrency=st.integers(1, 24),
    max_tokens=st.integers(16, 2048),
    call_timeout_s=st.sampled_from([1.0, 20.0, 120.0, 300.5]),
    item_timeout_s=st.sampled_from([300.5, 600.0, 900.0]),
    server=st.sampled_from(["managed", "url"]),
    engine=st.just("transformers"),
    base_url=st.just("http://127.0.0.1:8765/v1"),
    model_id=st.sampled_from(["", "served-name"]),
    task_file=st.just(str(DESK)),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(launch=launches)
def test_the_previewed_line_runs_the_same_request(
    launch: LaunchRequest, hat_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    request = launch.eval_request()
    back = _parsed(launch.command(), monkeypatch)
    ignore = {"engine"} if request.base_url else set()  # a URL's server has its own engine
    assert back.model_dump(exclude=ignore) == request.model_dump(exclude=ignore)


def test_the_clis_defaults_are_the_forms(hat_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A form left at its defaults previews a line with none of the tuning options, and the
    CLI runs that line with the form's values (it once ran 8 in flight and vLLM where the
    preview, without the options, meant 1 and transformers)."""
    launch = LaunchRequest(model="demo", suites=("ls-qa",), limit=5)
    line = launch.command()
    assert line == "hat eval run --model demo -s ls-qa --limit 5 --engine transformers"
    back = _parsed(line, monkeypatch)
    assert back.concurrency == RUN_DEFAULTS["concurrency"] == launch.concurrency
    assert back.engine == "transformers"


def test_the_fixed_oracle_has_a_line_too(hat_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.harness.demo import demo_harness_path

    result = runner.invoke(app, ["harness", "import", str(demo_harness_path()), "-m", "demo"])
    assert result.exit_code == 0, result.output
    from core.store import Store

    with Store.open() as store:
        version = store.resolve("live-host@head")
    launch = LaunchRequest(model="oracle-fixed", kind="oracle-fixed", fixed_on=version, limit=3)
    line = launch.command()
    assert f"--oracle-fixed {version}" in line and "--model" not in line
    assert _parsed(line, monkeypatch) == launch.eval_request()
    result = runner.invoke(app, ["eval", "run", "--oracle-fixed", "nothing-stored"])
    assert result.exit_code == 1 and "--oracle-fixed:" in result.output


def test_a_url_with_credentials_is_previewed_without_them() -> None:
    launch = LaunchRequest(model="demo", server="url", base_url="http://me:secret@h:1/v1?token=t")
    line = launch.command()
    assert "secret" not in line and "token=t" not in line and "--base-url http://h:1/v1" in line


def test_core_refuses_an_item_shorter_than_a_call_for_the_form_and_the_cli(
    hat_home: Path,
) -> None:
    with pytest.raises(RequestError) as err:
        LaunchRequest(model="demo", call_timeout_s=60, item_timeout_s=30).validate()
    assert err.value.field == "item_timeout_s" and "at least one model call" in err.value.message
    with pytest.raises(RequestError) as err:
        LaunchRequest(model="demo", variants=0).validate()
    assert err.value.field == "variants"
    result = runner.invoke(app, ["eval", "run", "--call-timeout", "60", "--item-timeout", "30"])
    assert result.exit_code == 1 and "at least one model call" in " ".join(result.output.split())
