"""A task file's gold that meets a tool error is a broken gold, never a pass (#34 A2), and a
gold naming a tool the harness lacks is refused before an evaluation runs (#34 B15).

Real agent loop, real Python-bound tools (tests/fixtures/binding_tools.py) under the support
desk fixture harness; the CLI check runs the real `hat eval run` against a real store.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.main import app
from core.episode.open_world import open_world
from core.harness.folder import import_folder
from core.harness.models import Harness
from core.taskfile.gold import returned_error
from core.taskfile.models import GoldCall, OwnTask, load_task_file

ROOT = Path(__file__).parents[1]
DESK = ROOT / "tests/fixtures/support_desk"
TASKS = ROOT / "tests/fixtures/support_desk_tasks.jsonl"
ORDER_DESK = ROOT / "resources/examples/order_desk"


def _desk_with_lookup(function: str) -> Harness:
    harness = import_folder(DESK, trust_python_hooks=True)
    binding = f"python:tests.fixtures.binding_tools:{function}"
    tools = [
        t.model_copy(update={"binding": binding}) if t.name == "lookup_order" else t
        for t in harness.tools
    ]
    return harness.model_copy(update={"tools": tools})


def _status_task(*, expect_error: bool = False) -> OwnTask:
    task = next(t for t in load_task_file(TASKS) if t.id == "status-2")
    call = GoldCall(
        tool="lookup_order", arguments={"order_id": "NW-10423"}, expect_error=expect_error
    )
    return task.model_copy(update={"gold_calls": [call]})


def _unplayable(harness: Harness, task: OwnTask) -> dict[str, str]:
    async def run() -> dict[str, str]:
        async with open_world(harness, task_file=True) as world:
            return await world.unplayable_golds([task])

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("function", "how"),
    [("answers_error", "returned an error"), ("answers_error_text", "returned an error"),
     ("not_found", "raised an error")],
)  # fmt: skip
def test_a_gold_call_that_meets_a_tool_error_breaks_the_gold(function: str, how: str) -> None:
    found = _unplayable(_desk_with_lookup(function), _status_task())
    assert set(found) == {"status-2"}
    message = found["status-2"]
    assert "gold_calls[0] (lookup_order)" in message and how in message, message
    assert "expect_error" in message  # says how to mark a refusal that is the answer


def test_a_refusal_marked_expect_error_is_the_answer_and_a_missing_one_is_not() -> None:
    # the tool's own ToolError, marked as the expected answer: the gold plays (its reply then
    # grades on the facts as usual, so the check below only looks at the tool call)
    refused = _unplayable(_desk_with_lookup("not_found"), _status_task(expect_error=True))
    assert "gold_calls[0]" not in refused.get("status-2", "")
    # a refusal the file expects that the tool does not give
    answered = _unplayable(_desk_with_lookup("lookup"), _status_task(expect_error=True))
    assert "a refusal was expected" in answered["status-2"]
    # a crash stays a failed gold even when a refusal was expected
    crashed = _unplayable(_desk_with_lookup("broken"), _status_task(expect_error=True))
    assert "RuntimeError" in crashed["status-2"] or "failed" in crashed["status-2"]


def test_the_fixture_and_the_order_desk_golds_all_play() -> None:
    """The bundled files mark every refusal they rely on: no gold of theirs is broken."""
    desk = import_folder(DESK, trust_python_hooks=True)
    assert _unplayable_all(desk, load_task_file(TASKS)) == {}
    order = import_folder(ORDER_DESK / "harness", trust_python_hooks=True)
    order = order.model_copy(
        update={"tools": [t.model_copy(update={"trusted": True}) for t in order.tools]}
    )
    tasks = load_task_file(ORDER_DESK / "tasks.jsonl")
    assert any(c.expect_error for t in tasks for c in t.gold_calls)
    assert _unplayable_all(order, tasks) == {}


def _unplayable_all(harness: Harness, tasks: list[OwnTask]) -> dict[str, str]:
    async def run() -> dict[str, str]:
        async with open_world(harness, task_file=True) as world:
            return await world.unplayable_golds(tasks)

    return asyncio.run(run())


@given(
    text=st.text(max_size=40).filter(
        lambda t: not t.lstrip().lower().startswith(("error", "exception", "traceback"))
    ),
    key=st.text(min_size=1, max_size=10).filter(lambda k: k != "error"),
)
def test_a_returned_error_is_an_error_object_or_text_that_opens_with_error(
    text: str, key: str
) -> None:
    assert returned_error({"error": text or "no order"}) == (text or "no order")[:200]
    assert returned_error(f"Error: {text}") is not None
    assert returned_error(f"  exception {text}") is not None
    # an answer that is not an error, whatever it says
    assert returned_error(text) is None
    assert returned_error({key: text, "error": None}) is None
    assert returned_error([text, "Error: x"]) is None


def test_an_evaluation_whose_gold_names_a_missing_tool_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    imported = runner.invoke(
        app, ["harness", "import", str(ORDER_DESK / "harness"), "--trust", "-m", "desk"]
    )
    assert imported.exit_code == 0, imported.output
    line: dict[str, Any] = json.loads((ORDER_DESK / "tasks.jsonl").read_text().splitlines()[0])
    line["gold_calls"][0]["tool"] = "lookup_ordr"
    line["split"] = "test"
    bad = tmp_path / "tasks.jsonl"
    bad.write_text(json.dumps(line) + "\n")
    result = runner.invoke(
        app, ["eval", "run", "--oracle", "--suite", "tasks", "--tasks", str(bad),
              "--harness", "order-desk"],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "gold_calls[0] names tool 'lookup_ordr'" in result.output
    assert "Traceback" not in result.output
    listed = runner.invoke(app, ["eval", "list"])
    assert "no evaluation runs" in listed.output.lower(), (
        listed.output
    )  # refused before storing a run


def test_validate_with_tasks_names_each_broken_gold_and_passes_a_good_file(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    good = runner.invoke(app, ["harness", "validate", str(DESK), "--trust", "--tasks", str(TASKS)])
    assert good.exit_code == 0, good.output
    assert "every gold plays to full marks" in good.output
    lines = TASKS.read_text().splitlines()
    refusal = json.loads(lines[0])
    refusal["id"] = "refusal-1"
    refusal["gold_calls"] = [{"tool": "lookup_order", "arguments": {"order_id": "NW-99999"}}]
    missing = json.loads(lines[0])
    missing["id"] = "missing-1"
    missing["gold_calls"] = [{"tool": "lookup_ordr", "arguments": {}}]
    bad = tmp_path / "tasks.jsonl"
    bad.write_text("\n".join([*lines, json.dumps(refusal)]) + "\n")
    played = runner.invoke(app, ["harness", "validate", str(DESK), "--trust", "--tasks", str(bad)])
    assert played.exit_code == 1
    assert "refusal-1" in played.output and "expect_error" in played.output
    bad.write_text("\n".join([*lines, json.dumps(missing)]) + "\n")
    named = runner.invoke(app, ["harness", "validate", str(DESK), "--tasks", str(bad)])
    assert named.exit_code == 1  # names are checked without trust, nothing runs
    assert "missing-1" in named.output and "lookup_ordr" in named.output
    assert "Traceback" not in named.output + played.output


def test_no_live_room_word_reaches_a_task_file_harness_training_rows(tmp_path: Path) -> None:
    """HSA data of a harness without viewers (originals and variants) never says "viewer"
    (#34 A3): the tool block, HSA's phrases and reminders all speak the harness's words."""
    out = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(app, [
        "data", "generate", "--teacher", "oracle", "--tasks", str(TASKS), "--harness", str(DESK),
        "--trust", "-k", "2", "--out", str(out),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    text = out.read_text()
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert len(rows) > 10
    said = [
        m["content"]
        for r in rows
        for m in r["messages"]
        if "viewer" in str(m.get("content")).lower()
    ]
    assert said == []
