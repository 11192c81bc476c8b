"""The one resolver of task sources and the one default-harness rule, shared by data
generation, the studio, RL, stage configs and evaluation (real store, real files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.harness.demo import demo_harness_path, load_demo_harness
from core.sim.models import Task
from core.store import Store
from core.store.errors import StoreError
from core.store.harness_ref import resolve_harness, resolve_stored
from core.taskfile.models import OwnTask
from core.taskfile.sources import TaskSourceError, load_live_source, load_source, source_problem

DESK = Path(__file__).parents[1] / "resources/examples/order_desk"


def test_splits_suites_and_files_mean_the_same_everywhere(tmp_path: Path) -> None:
    assert source_problem("train") is None and source_problem("robustness") is None
    assert "is not a split" in (source_problem("nope") or "")
    tasks = load_source(str(DESK / "tasks.jsonl"))
    assert tasks and all(isinstance(t, OwnTask) and t.split.value == "train" for t in tasks)
    refused = source_problem(str(DESK / "tasks.jsonl"), task_files=False)
    assert refused is not None and "task file" in refused
    with pytest.raises(TaskSourceError, match="task file"):
        load_live_source(str(DESK / "tasks.jsonl"))
    live = load_live_source("dev", per_category=1)
    assert live and all(isinstance(t, Task) for t in live)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"message": "hi"}\n', encoding="utf-8")
    with pytest.raises(TaskSourceError, match=r"bad.jsonl:1: id"):
        load_source(str(bad))


def test_one_default_harness_rule(tmp_path: Path) -> None:
    with Store.open(tmp_path / "hat.db") as store:
        harness, version = resolve_harness(store, None)
        assert harness.name == "live-host" and version is None  # the bundled demo, not stored
        first = store.commit(load_demo_harness(), "v1")
        assert resolve_harness(store, None)[1] == first.id  # now live-host@head
        edited = load_demo_harness().model_copy(update={"description": "edited"})
        second = store.commit(edited, "v2")
        store.tag("production", first.id)
        assert resolve_harness(store, None)[1] == first.id  # production wins over head
        assert resolve_stored(store, "live-host")[2] == first.id  # a bare name: the same rule
        assert resolve_stored(store, "live-host@head")[2] == second.id
        folder, none = resolve_harness(store, str(demo_harness_path()))
        assert folder.name == "live-host" and none is None
        with pytest.raises(StoreError):
            resolve_stored(store, "no-such-harness")


def test_a_suite_at_a_seed_is_the_same_tasks_for_every_command() -> None:
    """#36 item 1: the robustness suite at seed 3 was the bundled seed-0 file for training
    stages and regenerated for evaluation and the latency bench. One rule now (bundled at seed
    0, generated otherwise), and evaluation's planning, RL/data's sources and the bench's
    pool all go through it."""
    from core.eval.planning import plan_items
    from core.eval.types import EvalRequest
    from core.serving.bench import select_tasks
    from core.sim.tasks import load_suite
    from core.taskfile.sources import suite_tasks

    bundled = [t.id for t in load_suite("robustness")]
    assert (
        [t.id for t in load_source("robustness")]
        == bundled
        == [t.id for t in suite_tasks("robustness", 0)]
    )
    seeded = suite_tasks("robustness", 3)
    assert [t.id for t in load_source("robustness", seed=3)] == [t.id for t in seeded]
    assert [t.viewer_message for t in seeded] != [
        t.viewer_message for t in load_suite("robustness")
    ]  # generated, not the seed-0 file
    benched = select_tasks("robustness", len(seeded), seed=3)
    assert sorted(t.viewer_message for t in benched) == sorted(t.viewer_message for t in seeded)
    request = EvalRequest(model="m", suites=("robustness",), seed=3, limit=None)
    planned = {i.task_id for i in plan_items(request)}
    assert planned <= {t.id for t in seeded} and planned
