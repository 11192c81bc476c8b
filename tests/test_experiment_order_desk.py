"""The mini-replication in a task-file world: `hat experiment replicate --profile order-desk-ci`.

Fast tests: the task-file world's profile settings (each error names its field; the live
room's profiles are untouched by them) and how the replication picks the file's tasks.

The slow test runs the `order-desk-ci` profile end to end for real, like the `ci` test of
tests/test_experiment.py: oracle rows on the desk's train split through its Python tools and
MCP policy server, fixed SFT and the HAT pipeline (SFT -> OPD -> RL on the file's train tasks
under the stored harness version), three model servers, the `tasks` / `hv-tasks` suites, IFEval
and the `tasks` suite under the edited harness, the report; then a resume that re-runs nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.experiment.profiles import load_profile, parse_profile
from core.experiment.task_world import pick_per_category, read_tasks, split, write_tasks
from core.train.config import ConfigError
from tests.test_experiment import ifeval_prompts

ROOT = Path(__file__).resolve().parents[1]
DESK = ROOT / "resources" / "examples" / "order_desk"

runner = CliRunner()


# ----------------------------------------------------------------------------- profiles


@pytest.mark.parametrize("name", ["order-desk-ci", "order-desk"])
def test_order_desk_profiles_load_in_the_task_file_world(name: str) -> None:
    profile = load_profile(name)
    assert profile.world == "task-file"
    assert profile.harness_folder == str(DESK / "harness")
    assert profile.task_file == str(DESK / "tasks.jsonl")
    assert profile.edited_harness_folder == str(DESK / "harness-edited")
    hat = profile.hat
    assert profile.fixed_sft().max_steps == hat.total_steps
    assert profile.eval.edit <= profile.eval.ls_qa


def test_task_file_world_settings_name_their_field(tmp_path: Path) -> None:
    data = load_profile("order-desk-ci").model_dump(mode="json")
    for key in ("harness_folder", "task_file", "edited_harness_folder"):
        data[key] = None
    data["categories"] = ["price"]
    with pytest.raises(ConfigError) as info:
        parse_profile(data)
    text = str(info.value)
    for key in ("harness_folder", "task_file", "edited_harness_folder"):
        assert f"profile.{key}: required in `world: task-file`" in text
    assert "profile.categories: the live room's task categories" in text

    data = load_profile("order-desk-ci").model_dump(mode="json")
    data["edited_harness_folder"] = str(tmp_path / "nowhere")
    data["task_file"] = "resources/examples/order_desk/harness"  # a folder, not a file
    with pytest.raises(ConfigError) as info:
        parse_profile(data)
    text = str(info.value)
    assert f"profile.edited_harness_folder: {tmp_path / 'nowhere'}: no such folder" in text
    assert "profile.task_file: resources/examples/order_desk/harness: no such file" in text

    live = load_profile("ci").model_dump(mode="json")
    live["task_file"] = "resources/examples/order_desk/tasks.jsonl"
    with pytest.raises(ConfigError, match=r"profile\.task_file: only for `world: task-file`"):
        parse_profile(live)
    assert load_profile("ci").world == "live-room"


def test_relative_paths_are_read_from_the_project_root_and_kept_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not the project root: the bundled paths still resolve
    profile = load_profile("order-desk-ci")
    assert profile.task_file == str(DESK / "tasks.jsonl")
    again = parse_profile(profile.model_dump(mode="json"))  # what a resume reads back
    assert again.harness_folder == profile.harness_folder


def test_tasks_per_category_span_every_category_and_write_back_as_a_task_file(
    tmp_path: Path,
) -> None:
    train = split(read_tasks(DESK / "tasks.jsonl"), "train")
    categories = list(dict.fromkeys(t.category for t in train))
    chosen = pick_per_category(train, 2, seed=0)
    assert len(chosen) == 2 * len(categories)
    assert [t.category for t in chosen[: len(categories)]] == categories  # round-robin
    assert pick_per_category(train, 2, seed=0) == chosen
    assert pick_per_category(train, 2, seed=1) != chosen
    assert len(pick_per_category(train, 10_000, seed=0)) == len(train)
    path = write_tasks(chosen, tmp_path / "rl.jsonl")
    assert read_tasks(path) == chosen


# ----------------------------------------------------------------------------- the edit test


def _in_edited_names(task: Any, original: Any, edited: Any) -> list[Any]:
    """The task's gold turns as a perfect agent writes them under the edited harness: skills
    by role, tools by binding, parameters through each tool's binding_args."""
    from core.runtime.trajectory import AssistantTurn, ToolCall
    from core.taskfile.gold import gold_reply

    loader = edited.settings.load_skill_tool
    calls = [
        ToolCall(name=loader, arguments={"name": next(
            s.name for s in edited.skills if (s.metadata.get("role") or s.name) == skill
        )}, id=f"s{i}")
        for i, skill in enumerate(task.skills)
    ]  # fmt: skip
    for i, gold in enumerate(task.gold_calls):
        was = original.tool(gold.tool)
        now = next(t for t in edited.tools if t.binding == was.binding)
        to_binding = {k: was.binding_args.get(k, k) for k in gold.arguments}
        from_binding = {v: k for k, v in now.binding_args.items()}
        arguments = {from_binding.get(to_binding[k], to_binding[k]): v
                     for k, v in gold.arguments.items()}  # fmt: skip
        calls.append(ToolCall(name=now.name, arguments=arguments, id=f"c{i}"))
    return [AssistantTurn(tool_calls=calls), AssistantTurn(content=gold_reply(task))]


def test_the_edit_test_grades_in_the_names_the_task_file_was_written_in(
    hat_home: Path, tmp_path: Path
) -> None:
    """The `tasks` suite under the edited harness (renamed tools, parameter and skill) gives
    a perfect run full marks when the request names the harness the file was written for
    (EvalRequest.task_file_harness, as the replication's edit test does); graded in the
    edited harness's own names, the file's gold calls name tools it no longer has, so the run
        is refused before it starts, naming the file and the missing tool."""
    from core.eval.api import EvalRequest, load_results, run_eval
    from core.eval.results import Suite
    from core.harness import import_folder
    from core.runtime.client import ScriptedClient
    from core.store import Store

    original = import_folder(DESK / "harness", trust_python_hooks=True)
    edited = import_folder(DESK / "harness-edited", trust_python_hooks=True)
    tasks = [t for t in split(read_tasks(DESK / "tasks.jsonl"), "test") if t.gold_calls]
    renamed = {t.name for t in original.tools} - {t.name for t in edited.tools}
    task = next(t for t in tasks if {c.tool for c in t.gold_calls} & renamed)
    task_file = write_tasks([task], tmp_path / "one.jsonl")
    turns = _in_edited_names(task, original, edited)

    def factory(item: Any, harness: Any, surface: Any) -> Any:
        return ScriptedClient(turns, native=False)

    with Store.open() as store:
        first = store.commit(original, "original", parent=None)
        second = store.commit(edited.model_copy(update={"name": original.name}), "edit",
                              parent=first.id)  # fmt: skip
        request = EvalRequest(model="scripted", suites=[Suite.TASKS], harness=second.id,
                              task_file=str(task_file), task_file_harness=first.id)  # fmt: skip
        run = run_eval(store, request, client_factory=factory)
        (row,) = load_results(store, run.id)
        assert row.passed, row.grades
        from core.eval.types import EvalError

        with pytest.raises(EvalError) as refused:
            run_eval(
                store,
                request.model_copy(update={"task_file_harness": None}),
                client_factory=factory,
            )
        message = str(refused.value)
        assert "which the harness does not have" in message and str(task_file) in message


# ----------------------------------------------------------------------------- end to end


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_order_desk_ci_replication_end_to_end(
    demo_model_folder: Path, hat_home: Path, tmp_path: Path
) -> None:
    from core.eval.api import get_eval_run
    from core.eval.results import Suite
    from core.models import add_folder
    from core.serving.engines import pick_engine
    from core.store import Store

    ifeval = ifeval_prompts(tmp_path)
    with Store.open() as store:
        add_folder(store, "smollm2-135m-instruct", demo_model_folder)
    folder = tmp_path / "rep"
    results = tmp_path / "results"
    args = ["experiment", "replicate", "--profile", "order-desk-ci", "--out", str(folder),
            "--ifeval", str(ifeval), "--results", str(results)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    state = json.loads((folder / "state.json").read_text())
    steps = state["steps"]
    assert all(steps[s]["status"] == "done" for s in steps), steps
    setup = steps["setup"]
    assert setup["task_file"] == str(DESK / "tasks.jsonl")
    assert setup["task_counts"]["train"] > 0 and setup["task_counts"]["test"] > 0
    assert steps["data"]["counts"]["rl_tasks"] > 0
    assert steps["train"]["hat"]["stages"].keys() == {"sft", "opd", "rl"}
    assert steps["train"]["fixed"]["merged"] and steps["train"]["hat"]["merged"]

    report = (results / "report.md").read_text()
    assert "World: **task-file**" in report and "the task file's **test split**" in report
    for model in ("base", "fixed-SFT", "HAT"):
        for suite in ("LS-QA", "HV-QA", "LS-QA, edited harness"):
            assert f"| {model} | {suite} | 1 |" in report, (model, suite)
        assert sum(line.startswith(f"| {model} | ") for line in report.splitlines()) >= 5
    data = json.loads((results / "report.json").read_text())
    with Store.open() as store:
        for model in ("base", "fixed", "hat"):
            m = data["models"][model]
            assert set(m["runs"]) == {"ls-qa", "hv-qa", "ifeval", "edit"}
            assert m["ls-qa"]["n"] == 1 and m["hv-qa"]["n"] == 1 and m["ifeval"]["n"] == 1
            assert m["edit"]["n"] == 1
            requests = {part: get_eval_run(store, rid).request for part, rid in m["runs"].items()}
            # vLLM where its venv exists (always in CI); the live room's CI run: transformers
            assert requests["ls-qa"].engine == pick_engine("vllm")[0]
            assert requests["ls-qa"].suites == [Suite.TASKS]
            assert requests["hv-qa"].suites == [Suite.HV_TASKS]
            assert requests["edit"].suites == [Suite.TASKS]
            assert requests["edit"].harness == setup["versions"]["edited"]
            assert requests["edit"].task_file_harness == setup["versions"]["original"]
    # Resume: nothing left to do, nothing re-run.
    walls = {k: v["wall_s"] for k, v in steps.items()}
    again = runner.invoke(app, ["experiment", "replicate", "--resume", str(folder)])
    assert again.exit_code == 0, again.output
    state = json.loads((folder / "state.json").read_text())
    assert {k: v["wall_s"] for k, v in state["steps"].items()} == walls
