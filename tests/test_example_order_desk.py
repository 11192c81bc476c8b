"""The second example harness (resources/examples/order_desk, a bookshop's customer service)
runs the whole loop with nothing from the live room: its tools are Python functions and an
MCP server (started for real over stdio), its tasks a task file.

- every binding resolves, the gold of every task gets full marks through the real tools
  (`hat eval run --oracle --suite tasks`), an untrusted copy runs none of its code;
- a model teacher (the demo model on the session's real `transformers serve`) generates data
  through the episode runner, `hat eval run --suite tasks` evaluates the served model, and a
  chat lane answers through the agent loop with the harness's own tools.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from core.cli.main import app
from core.harness.folder import import_folder
from core.runtime.client import ScriptedClient
from core.runtime.tool_runtime import binding_problems
from core.runtime.trace import ModelCallStep, ToolCallStep
from core.runtime.trajectory import AssistantTurn, ToolCall
from core.taskfile.models import TaskSplit, load_task_file

EXAMPLE = Path(__file__).parents[1] / "resources/examples/order_desk"
FOLDER = EXAMPLE / "harness"
TASKS = EXAMPLE / "tasks.jsonl"
runner = CliRunner()


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_binding_resolves_and_an_untrusted_copy_runs_none_of_its_code() -> None:
    trusted = import_folder(FOLDER, trust_python_hooks=True)
    assert {t.binding.split(":", 1)[0] for t in trusted.tools} == {"python", "mcp"}
    assert binding_problems(trusted) == []
    untrusted = binding_problems(import_folder(FOLDER))
    assert {p.tool for p in untrusted} == {t.name for t in trusted.tools}
    assert all("trust" in p.message for p in untrusted)


def test_every_gold_gets_full_marks_through_the_real_tools() -> None:
    _ok(["harness", "import", str(FOLDER), "--trust"])
    out = _ok(
        [
            "eval",
            "run",
            "--oracle",
            "--suite",
            "tasks",
            "--tasks",
            str(TASKS),
            "--harness",
            "order-desk",
        ]
    )
    from core.eval.api import list_eval_runs, load_results
    from core.store import Store

    with Store.open() as store:
        run = list_eval_runs(store)[-1]
        rows = load_results(store, run.id)
    tests = [t for t in load_task_file(TASKS) if t.split is TaskSplit.TEST]
    assert len(rows) == len(tests), out
    assert all(r.passed for r in rows), [(r.task_id, r.grades) for r in rows if not r.passed]


def test_the_task_file_is_the_scripts_and_every_gold_passes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """scripts/make_order_desk_tasks.py --check: tasks.jsonl is what the script writes from
    the shop (seeded, byte for byte), train and test share no phrasing and no generated
    entity, the desk's HSA banks validate and are disjoint, and every task's gold (train and
    test) gets full marks through the real tools, under the desk and under its operator edit
    (harness-edited/, names translated by binding, binding_args and skill role)."""
    import importlib.util

    path = Path(__file__).parents[1] / "scripts/make_order_desk_tasks.py"
    spec = importlib.util.spec_from_file_location("make_order_desk_tasks", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up
    spec.loader.exec_module(script)
    assert script.main(["--check"]) == 0, capsys.readouterr().out
    tasks = load_task_file(TASKS)
    splits = {s: [t for t in tasks if t.split is s] for s in TaskSplit}
    assert len(splits[TaskSplit.TRAIN]) >= 150 and len(splits[TaskSplit.TEST]) >= 60
    for split in splits.values():  # every category in both splits
        assert {t.category for t in split} == {t.category for t in tasks}
    assert {"returns-1", "tracking-1", "judge-1"} <= {t.id for t in tasks}


def test_hsa_sample_draws_from_the_desks_own_bank(tmp_path: Path) -> None:
    out = tmp_path / "variants"
    args = ["hsa", "sample", "-n", "6", "--out", str(out), "--harness", str(FOLDER)]
    _ok([*args, "--bank-dir", str(EXAMPLE / "hsa"), "--strength", "heavy"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["variants"]) == 6
    bank = yaml.safe_load((EXAMPLE / "hsa/train/tools.yaml").read_text(encoding="utf-8"))

    def key(name: str) -> str:  # a distractor may come restyled (author-events, authorEvents)
        return name.replace("_", "").replace("-", "").lower()

    own = {key(d["name"]) for d in bank["distractor_tools"]}  # the desk bank's distractors
    names: set[str] = set()
    for entry in manifest["variants"]:
        variant = import_folder(out / entry["folder"])
        names |= {key(t.name) for t in variant.tools}
        assert not any(t.binding.startswith("sim.") for t in variant.tools)
    assert names & own, names


def test_hsa_preview_verifies_a_variant_on_a_task_file_gold() -> None:
    out = _ok(
        [
            "hsa", "preview", "--harness", str(FOLDER), "--trust", "--tasks", str(TASKS),
            "--task", "returns-1", "--seed", "3", "--strength", "heavy", "--no-prompt",
        ]
    )  # fmt: skip
    assert "gold trajectory: returns-1 (ok)" in out
    assert "RT-" in out  # the gold reply quotes the return id the real start_return made
    failed = runner.invoke(app, ["hsa", "preview", "--harness", str(FOLDER), "--tasks", str(TASKS)])
    assert failed.exit_code == 1 and "not trusted" in failed.output


def test_the_chat_lane_calls_the_python_and_mcp_tools() -> None:
    """A scripted model stands in for the served one here (what it writes is fixed, so the
    test is about the tools); the served model's run is the slow test below."""
    from studio.logic.chat_lane import ChatLane
    from studio.logic.chat_server import Endpoint

    harness = import_folder(FOLDER, trust_python_hooks=True)
    turns = [
        AssistantTurn(
            tool_calls=[
                ToolCall(name="lookup_order", arguments={"order_id": "PT-1042"}),
                ToolCall(name="get_policy", arguments={"topic": "refunds"}),
            ]
        ),
        AssistantTurn(content="PT-1042 is on its way; refunds take 5 working days."),
    ]
    lane = ChatLane("A", harness)
    endpoint = Endpoint(base_url="http://127.0.0.1:9/v1", model_id="scripted")
    trace = asyncio.run(
        lane.ask("where is PT-1042?", endpoint, client_factory=lambda *_: ScriptedClient(turns))
    )
    calls = {s.name: s for s in trace.steps_of(ToolCallStep)}
    assert calls["lookup_order"].result["tracking_no"] == "RM503377GB"
    assert calls["get_policy"].result["window_days"] == 5, calls["get_policy"]
    assert trace.ok and "5 working days" in (trace.final_reply or "")


@pytest.mark.slow
def test_a_model_teacher_generates_data_and_the_served_model_is_evaluated(
    transformers_server: Any, tmp_path: Path
) -> None:
    out = tmp_path / "rows.jsonl"
    _ok(
        [
            "data", "generate", "--harness", str(FOLDER), "--trust", "--tasks", str(TASKS),
            "--teacher-url", transformers_server.base_url,
            "--teacher-model", transformers_server.model_id,
            "--variants", "1", "--limit", "2", "--max-tokens", "32", "--concurrency", "2",
            # the train split has a reference-only task: the served model is its judge here
            "--judge-url", transformers_server.base_url,
            "--judge-model", transformers_server.model_id,
            "--out", str(out),
        ]
    )  # fmt: skip
    kept = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    rejects = out.with_name(out.name + ".rejects.jsonl")
    rejected = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert len(kept) + len(rejected) == 2
    for row in kept + rejected:
        assert row["provenance"]["teacher"]["kind"] == "openai"
        assert row["split"] == "train"
    graded = [r for r in kept + rejected if "grades" in r]
    assert graded, rejected  # the teacher answered: its runs were graded, not transport failures

    _ok(["harness", "import", str(FOLDER), "--trust"])
    report = _ok(
        [
            "eval", "run", "--base-url", transformers_server.base_url,
            "--model-id", transformers_server.model_id, "--suite", "tasks",
            "--tasks", str(TASKS), "--harness", "order-desk", "--limit", "2",
            "--max-tokens", "32", "--concurrency", "2",
        ]
    )  # fmt: skip
    assert "tasks" in report

    # chat: the served model through the agent loop, with the harness's own tools bound
    from core.serving.client import GenerationOptions
    from studio.logic.chat_lane import ChatLane
    from studio.logic.chat_server import Endpoint

    lane = ChatLane("A", import_folder(FOLDER, trust_python_hooks=True))
    endpoint = Endpoint(transformers_server.base_url, transformers_server.model_id)
    trace = asyncio.run(
        lane.ask("Where is my order PT-1042?", endpoint, options=GenerationOptions(max_tokens=32))
    )
    assert trace.steps_of(ModelCallStep) and not any(
        s.error for s in trace.steps_of(ModelCallStep)
    ), trace.reason
    assert "lookup_order" in trace.messages[0]["content"]  # the order desk's tools, not the room's


def test_a_gold_call_on_a_number_the_customer_never_wrote_waits_for_its_result() -> None:
    """tracking-1 asks about an order; the gold's `track_parcel` takes the tracking number
    `lookup_order` returns, so it comes in the next turn, through the real tools, and the
    gold still gets full marks. A direct tracking number (tracking-77) needs one turn."""
    from core.episode.task_file import TaskFileWorld
    from core.runtime.tool_runtime import ToolRuntime

    harness = import_folder(FOLDER, trust_python_hooks=True)
    tasks = {t.id: t for t in load_task_file(TASKS)}

    async def turns(task_id: str) -> list[list[str]]:
        async with ToolRuntime(harness) as tools:
            world = TaskFileWorld(harness, tools)
            trace = await world.checked_gold(tasks[task_id])  # full marks, or it raises
        loader = harness.settings.load_skill_tool
        calls = [s for s in trace.steps_of(ModelCallStep) if s.tool_calls]
        return [[c.name for c in s.tool_calls if c.name != loader] for s in calls]

    assert asyncio.run(turns("tracking-1")) == [["lookup_order"], ["track_parcel"]]
    assert asyncio.run(turns("tracking-77")) == [["track_parcel"]]
