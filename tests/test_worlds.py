"""HAT on a harness of the user's own: one World interface, golds under variants, HV-QA of a
task file, RL rewards from a task file, and a world with state.

The user's harness is tests/fixtures/support_desk (a retail customer-service agent: six tools
bound to Python functions, one of them a write, `issue_refund`, and a world state) with its
tasks in tests/fixtures/support_desk_tasks.jsonl; everything plays through the real agent loop
and the real tools. The order desk (resources/examples/order_desk) is the bundled example.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.main import app
from core.episode.open_world import open_world
from core.episode.play import play
from core.episode.task_file import TaskFileWorld
from core.episode.variant import HarnessVariant
from core.harness.folder import import_folder
from core.harness.models import Harness
from core.hsa.policy import Policy
from core.runtime.client import ScriptedClient
from core.runtime.trajectory import AssistantTurn, ToolCall
from core.taskfile.models import OwnTask, TaskSplit, load_task_file

ROOT = Path(__file__).parents[1]
DESK = ROOT / "tests/fixtures/support_desk"
TASKS = ROOT / "tests/fixtures/support_desk_tasks.jsonl"
runner = CliRunner()


def desk() -> Harness:
    return import_folder(DESK, trust_python_hooks=True)


def tasks(split: TaskSplit | None = None) -> list[OwnTask]:
    return [t for t in load_task_file(TASKS) if split is None or t.split is split]


def task(task_id: str) -> OwnTask:
    return next(t for t in tasks() if t.id == task_id)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def full_marks(row: dict[str, Any]) -> bool:
    return all(row["grades"][g]["score"] == 1 for g in
               ("accuracy", "effectiveness", "tool_rationality", "skill_selection"))  # fmt: skip


# ----------------------------------------------------------------------------- the interface


def test_no_caller_switches_on_the_kind_of_task() -> None:
    """Every caller takes a World: the only type switch on a task-file task would be inside the
    task-file world, and the live room's tool wiring exists once."""
    switches, room_bindings = [], []
    for folder in ("core", "studio", "training"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            where = str(path.relative_to(ROOT))
            if re.search(r"isinstance\(.*OwnTask", text) and where != "core/episode/task_file.py":
                switches.append(where)
            room_bindings += [where for _ in re.finditer(r"^def room_bindings\(", text, re.M)]
    assert switches == []
    assert room_bindings == ["core/sim/room.py"]


def test_every_gold_of_the_users_harness_plays_to_full_marks() -> None:
    async def run() -> dict[str, str]:
        async with open_world(desk(), task_file=True) as world:
            return await world.unplayable_golds(tasks())

    assert asyncio.run(run()) == {}


# ----------------------------------------------------------------------------- state


def test_every_episode_starts_from_a_fresh_state_and_the_end_state_is_graded() -> None:
    """A refund of the wrong amount answers plausibly but leaves the shop in another state
    than the gold's: tool rationality says so. Episodes never see each other's writes."""
    refund = task("refund-1")
    harness = desk()
    wrong = [
        AssistantTurn(tool_calls=[
            ToolCall(name="load_skill", arguments={"name": "refund-help"}, id="a"),
            ToolCall(name="lookup_order", arguments={"order_id": "NW-10421"}, id="b"),
            ToolCall(name="issue_refund", arguments={"order_id": "NW-10421", "amount": 5},
                     id="c"),
        ]),
        AssistantTurn(content="Refunded 89.9; it arrives in 3 to 5 working days."),
    ]  # fmt: skip

    async def run() -> tuple[Any, Any, Any]:
        async with open_world(harness, task_file=True) as world:
            gold = await world.gold(refund, HarnessVariant(harness=harness))
            good = await play(refund, harness, gold.client, world)
            bad = await play(refund, harness, ScriptedClient(wrong), world)
            again = await play(
                refund, harness, (await world.gold(refund, gold.variant)).client, world
            )
            return good, bad, again

    good, bad, again = asyncio.run(run())
    assert good.grades.full_marks, good.grades
    assert bad.grades.tool_rationality.score == 0
    assert "end state" in bad.grades.tool_rationality.reasons[0]
    # the wrong refund stayed in its own episode: the next gold run starts clean again
    assert again.grades.full_marks
    assert good.request.context["state"]["refunds"] == [{"order_id": "NW-10421", "amount": 89.9}]
    assert again.request.context["state"]["refunds"] == [{"order_id": "NW-10421", "amount": 89.9}]


def test_a_tool_that_crashes_mid_run_gets_the_episode_played_once_more() -> None:
    """A binding that raises (a backend dropping the connection, an MCP server dying) is a
    crash, not the tool's answer: the episode is played once more from the start, and a
    second crash stays in the trace it is graded on."""
    from core.runtime.trace import ToolCallStep
    from tests.fixtures import binding_tools

    harness = desk()
    tools = [
        t.model_copy(update={"binding": "python:tests.fixtures.binding_tools:flaky"})
        if t.name == "lookup_order" else t
        for t in harness.tools
    ]  # fmt: skip
    flaky = harness.model_copy(update={"tools": tools})
    status = task("status-2")

    async def run(failures: int) -> Any:
        binding_tools.FLAKY["failures_left"] = failures
        async with open_world(flaky, task_file=True) as world:
            gold = await world.gold(status, HarnessVariant(harness=flaky))
            return await play(status, flaky, gold.client, world, retry_crashed=True)

    once = asyncio.run(run(1))
    assert once.trace.request_id.endswith("-retry")
    assert not any(s.crashed for s in once.trace.steps_of(ToolCallStep))
    assert once.grades.tool_rationality.score == 1
    twice = asyncio.run(run(2))
    crashed = [s for s in twice.trace.steps_of(ToolCallStep) if s.crashed]
    assert crashed and "ConnectionResetError" in (crashed[0].error or "")  # retried once only
    assert twice.trace.request_id.endswith("-retry")


# ----------------------------------------------------------------------------- golds under variants


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**31 - 1), which=st.sampled_from(
    ["status-1", "refund-2", "ticket-1", "help-1"]))  # fmt: skip
def test_a_gold_under_any_train_variant_replays_to_full_marks(seed: int, which: str) -> None:
    """The task file's gold, remapped through a variant's own chain (tools by binding,
    parameters by binding_args, skills by role), runs through the real tools under the
    variant and grades like the original in the original's names."""
    harness = desk()
    wanted = HarnessVariant(
        harness=harness, index=1, seed=seed, policy=Policy("train", "medium"), original=harness
    )

    async def run() -> Any:
        async with open_world(harness, task_file=True) as world:
            gold = await world.gold(task(which), wanted)
            episode = await play(
                task(which), gold.harness, gold.client, world, surface=gold.surface
            )
            return gold, episode

    gold, episode = asyncio.run(run())
    assert episode.grades.full_marks, (gold.variant.mapping.get("applied"), episode.grades)
    assert gold.variant.mapping["seed"] == seed


def test_oracle_data_for_the_users_harness_under_variants(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    result = runner.invoke(app, [
        "data", "generate", "--teacher", "oracle", "--tasks", str(TASKS), "--harness", str(DESK),
        "--trust", "-k", "3", "--out", str(out), "-j", "2",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    written = rows(out)
    train = tasks(TaskSplit.TRAIN)
    assert len(written) == 4 * len(train)
    assert all(full_marks(r) for r in written)
    variants = [r for r in written if r["provenance"]["variant"]["index"] > 0]
    assert all(r["provenance"]["variant"]["mapping"]["applied"] for r in variants)
    # the variants reach the model: some row's tool list or calls differ from the original's
    original = {r["task_id"]: r for r in written if r["provenance"]["variant"]["index"] == 0}
    changed = [r for r in variants if r["messages"][0] != original[r["task_id"]]["messages"][0]]
    assert len(changed) == len(variants)
    assert not out.with_name("rows.jsonl.rejects.jsonl").read_text().strip()


def test_a_gold_that_cannot_play_is_refused_before_anything_runs(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.jsonl"
    lines = TASKS.read_text().splitlines()
    broken = json.loads(lines[0])
    broken["id"] = "broken-1"
    broken["gold_calls"] = [{"tool": "lookup_order", "arguments": {"order_id": "NW-99999"},
                             "expect_error": True},
                            {"tool": "read_ticket_log", "arguments": {"ticket_id": 7}}]  # fmt: skip
    bad.write_text("\n".join([*lines, json.dumps(broken)]) + "\n")
    out = tmp_path / "rows.jsonl"
    result = runner.invoke(app, [
        "data", "generate", "--teacher", "oracle", "--tasks", str(bad), "--harness", str(DESK),
        "--trust", "-k", "1", "--out", str(out),
    ])  # fmt: skip
    assert result.exit_code == 1
    assert "broken-1" in result.output and "read_ticket_log" in result.output
    assert "nothing was run" in result.output
    assert not out.exists() or not out.read_text().strip()


# ----------------------------------------------------------------------------- HV-QA of a task file


def test_hv_tasks_suite_grades_the_gold_full_marks_under_heldout_variants() -> None:
    imported = runner.invoke(app, ["harness", "import", str(DESK), "--trust", "-m", "desk"])
    assert imported.exit_code == 0, imported.output
    result = runner.invoke(app, [
        "eval", "run", "--oracle", "--suite", "hv-tasks", "--tasks", str(TASKS),
        "--harness", "support-desk", "--variants", "3",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    from core.eval.api import list_eval_runs, load_results
    from core.store import Store

    with Store.open() as store:
        run = list_eval_runs(store)[-1]
        results = load_results(store, run.id)
    test = tasks(TaskSplit.TEST)
    assert len(results) == 3 * len(test)
    assert {r.suite.value for r in results} == {"hv-tasks"}
    assert len({r.variant_seed for r in results}) == len(results)
    assert all(r.passed for r in results), [(r.task_id, r.reason) for r in results if not r.passed]


def test_hv_tasks_names_a_gold_that_does_not_play(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.jsonl"
    row = json.loads(TASKS.read_text().splitlines()[3])  # a test task
    row["facts"] = ["it costs 4321 euros"]  # a number no tool result supports
    bad.write_text(json.dumps(row) + "\n")
    assert runner.invoke(app, ["harness", "import", str(DESK), "--trust"]).exit_code == 0
    result = runner.invoke(app, [
        "eval", "run", "--oracle", "--suite", "hv-tasks", "--tasks", str(bad),
        "--harness", "support-desk", "--variants", "1",
    ])  # fmt: skip
    from core.eval.api import list_eval_runs, load_results
    from core.store import Store

    with Store.open() as store:
        (only,) = load_results(store, list_eval_runs(store)[-1].id)
    assert not only.passed and only.reason is not None
    assert only.reason.startswith("variant:") and "below full marks" in only.reason, result.output


# ----------------------------------------------------------------------------- RL on a task file


def test_rl_rewards_come_from_the_task_files_graders_through_the_world() -> None:
    from core.train.rl_env import RlEnvironment

    env = RlEnvironment(desk(), None, tasks(TaskSplit.TRAIN), sampler="hsa", fault_rate=0.0,
                        turn="final", seed=3, task_file=True)  # fmt: skip
    try:
        prompts, dropped = env.build_prompts(6)
        assert len(prompts) == 6, dropped
        assert len({p.task.id for p in prompts}) >= 4
        for prompt in prompts[:3]:
            gold = env.gold_trace(prompt.task, prompt.variant_seed)
            reply = gold.final_reply or ""
            good = env.score(prompt.task, prompt.variant_seed, prompt.turn, reply, 10)
            assert good.scores["accuracy"] == 1 and good.scores["effectiveness"] == 1, good
            bad = env.score(prompt.task, prompt.variant_seed, prompt.turn, "It costs 4321.", 10)
            assert bad.scores["effectiveness"] < 1 and bad.scores["accuracy"] == 0, bad
        # every group's system prompt is its own variant's
        assert any(p.messages[0]["content"] != prompts[0].messages[0]["content"] for p in prompts)
    finally:
        env.close()


@pytest.mark.parametrize("source", [str(TASKS), "train", "no-such-file.jsonl"])
def test_the_rl_stage_accepts_a_task_file(source: str) -> None:
    from core.train.config import parse_stage
    from core.train.launch_checks import check_launch, detect_environment

    config = parse_stage({"model": "m", "tasks": source}, "rl")
    problems = [p for p in check_launch(config, detect_environment()) if "tasks" in p]
    assert bool(problems) == (source == "no-such-file.jsonl"), problems


def test_task_file_world_is_one_class() -> None:
    """What a third world must write: the abstract methods of World (a short list)."""
    from core.episode.world import World

    assert sorted(World.__abstractmethods__) == [
        "bindings", "gold", "gold_trace", "grade", "request", "task_info",
    ]  # fmt: skip
    assert not TaskFileWorld.__abstractmethods__
