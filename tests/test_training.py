"""The real stages on the real demo model (SmolLM2-135M-Instruct), on CPU, a few steps each.

- SFT overfits 4 rows (loss falls by more than half), the adapter is registered, loads back
  and generates; the assistant-only mask is checked token by token on a real row.
- A run killed (SIGKILL) after a checkpoint is failed with the signal named; `resume`
  continues from the checkpoint and the step count and metric curve have no gap or repeat.
- The pipeline runs SFT -> OPD -> RL on a harness of the user's own (Python-bound tools, a task
  file): OPD and RL complete and log their metrics (RL: every reward component, from the task
  file's graders), every stage's adapter is registered, the last one generates and is
  evaluated on Harness-Variant QA of the task file by a real server.

CPU budget: rows use the compact harness prompt (`system_prompt: compact`, ~200 tokens instead
of the demo's ~2.5k) and `max_length` 288 (the first assistant turn of every row fits), batch
2-4, 2-8 steps. The demo model is imported once per test process (HAT_TEST_MODEL_CACHE=<folder>
keeps it between runs).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store
from core.store.training import run_checkpoints, run_events
from core.train.config import parse_pipeline, parse_stage
from core.train.events import effective_logs, events_path, read_events
from core.train.launch_checks import detect_environment

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

BASE = "smollm2-135m-instruct"
runner = CliRunner()


@cache
def demo_folder() -> Path:
    """The demo model imported with the registry's own `add_demo` (once per process)."""
    from core.models import add_demo

    cached = os.environ.get("HAT_TEST_MODEL_CACHE")
    if cached:
        home = Path(cached).expanduser()
        home.mkdir(parents=True, exist_ok=True)
    else:
        home = Path(tempfile.mkdtemp(prefix="hat-train-model-"))
        atexit.register(shutil.rmtree, home, True)
    previous = os.environ.get("HAT_HOME")
    os.environ["HAT_HOME"] = str(home)
    try:
        with Store.open(home / "hat.db") as store:
            record, _ = add_demo(store)
    finally:
        if previous is None:
            os.environ.pop("HAT_HOME", None)
        else:
            os.environ["HAT_HOME"] = previous
    return Path(record.location)


@pytest.fixture(autouse=True)
def no_orphans() -> Any:
    """Kill any stage child a failing test left running (they run in their own sessions)."""
    yield
    from core.store.training import list_runs

    with Store.open() as store:
        for run in list_runs(store):
            if run.pid is not None and not run.finished:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(run.pid, signal.SIGKILL)


@pytest.fixture
def base_model() -> str:
    """The demo model registered (as a folder) in this test's home; returns its name."""
    from core.models import add_folder

    folder = demo_folder()
    with Store.open() as store:
        add_folder(store, BASE, folder)
    return BASE


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 real SFT rows (made once per module): the demo harness stored as a version (rows carry
    its id), the oracle as the teacher, the original harness and one HSA variant per task."""
    from core.harness.demo import demo_harness_path

    folder = tmp_path_factory.mktemp("rows")
    previous = os.environ.get("HAT_HOME")
    os.environ["HAT_HOME"] = str(folder / "home")
    try:
        result = runner.invoke(app, ["harness", "import", str(demo_harness_path()), "-m", "demo"])
        assert result.exit_code == 0, result.output
        out = folder / "sft4.jsonl"
        result = runner.invoke(
            app,
            ["data", "generate", "--teacher", "oracle", "--tasks", "train", "--per-category", "1",
             "--variants", "1", "--sampler", "hsa", "--harness-version", "head", "--limit", "4",
             "--out", str(out), "-j", "1"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    finally:
        if previous is None:
            os.environ.pop("HAT_HOME", None)
        else:
            os.environ["HAT_HOME"] = previous
    assert len(out.read_text().splitlines()) == 4
    return out


def sft_config(data: Path, **extra: Any) -> Any:
    settings = {
        "model": BASE,
        "data": [str(data)],
        "system_prompt": "compact",
        "max_length": 288,
        "per_device_batch_size": 2,
        "learning_rate": 2e-3,
        "lr_scheduler": "constant",
        "save_steps": 100,
        **extra,
    }
    return parse_stage(settings, "sft")


def generate(adapter: Path, base: Path, n: int = 4) -> str:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(adapter)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), adapter)
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "how much is link 7?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    out = model.generate(**inputs, max_new_tokens=n, do_sample=False)
    new = out[0][inputs["input_ids"].shape[1] :]
    assert len(new) >= 1
    return str(tokenizer.decode(new))


def test_assistant_mask_on_a_real_row(rows: Path) -> None:
    import json

    from transformers import AutoTokenizer

    from training.sft import tokenize_with_mask, trl_can_mask

    tokenizer = AutoTokenizer.from_pretrained(demo_folder())
    assert not trl_can_mask(tokenizer)  # SmolLM2's template: no generation markers, no patch
    row = json.loads(rows.read_text().splitlines()[0])
    item = tokenize_with_mask(tokenizer, {"messages": row["messages"]})
    ids, mask = item["input_ids"], item["assistant_masks"]
    # Contiguous masked runs decode to exactly the assistant messages, each with its end token.
    runs, current = [], []
    for token, bit in zip(ids, mask, strict=True):
        if bit:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    decoded = [tokenizer.decode(r) for r in runs]
    expected = [m["content"] + "<|im_end|>\n" for m in row["messages"] if m["role"] == "assistant"]
    assert decoded == expected
    assert tokenizer.decode(ids) == tokenizer.apply_chat_template(row["messages"], tokenize=False)


def test_sft_loss_falls_and_the_adapter_generates(base_model: str, rows: Path) -> None:
    from core.models import get
    from core.train.runs import run_stage

    config = sft_config(rows, max_steps=8, output_name="sft-overfit", merge=True)
    with Store.open() as store:
        run = run_stage(store, config, detect_environment())
        assert run.status == "done", run.reason
        logs = run_events(store, run.id, kind="log")
        assert [e["step"] for e in logs] == list(range(1, 9))
        losses = [e["loss"] for e in logs]
        assert losses[-1] < 0.5 * losses[0], losses
        for event in logs:
            assert event["total"] == 8 and event["learning_rate"] == pytest.approx(2e-3)
            assert event["grad_norm"] > 0 and event["elapsed_s"] > 0 and event["eta_s"] >= 0
        assert all(e["tokens_per_s"] > 0 for e in logs[1:])
        phases = [e["phase"] for e in run_events(store, run.id, kind="phase")]
        assert phases == ["loading", "training", "saving", "done"]
        info = {k: v for e in run_events(store, run.id, kind="info") for k, v in e.items()}
        assert info["mask"].startswith("prefix spans") and info["rows_usable"] == 4
        assert run.harness_version and run.dataset_hash and run.code_revision
        assert run.packages["trl"] and run.packages["torch"]
        assert run.outputs["registered"] == ["sft-overfit", "sft-overfit-merged"]
        record = get(store, "sft-overfit")
        assert record.kind == "adapter" and record.base == BASE
        merged = get(store, "sft-overfit-merged")
        assert merged.kind == "merged" and merged.base == BASE
    assert generate(Path(record.location), demo_folder())


def wait_for(path: Path, proc: Any, ready: Any, timeout: float = 1200) -> list[dict[str, Any]]:
    """Poll the event stream until `ready(events)` holds (or the child ends / time runs out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        events, _ = read_events(path)
        if ready(events):
            return events
        time.sleep(0.1)
    raise AssertionError("the event did not come before the child ended or the deadline")


def test_kill_stop_and_resume_continue_steps_and_curve(base_model: str, rows: Path) -> None:
    """SIGKILL after a checkpoint -> failed; resume; stop -> stopped (saved); resume -> done.
    One metric curve 1..6 throughout: no gap, no repeated step."""
    from core.train.runs import prepare, resume, start, stop, watch

    config = sft_config(rows, max_steps=6, save_steps=2, learning_rate=1e-3,
                        output_name="sft-resume")  # fmt: skip

    def steps(events: list[dict[str, Any]], kind: str) -> list[int]:
        return [e["step"] for e in events if e["event"] == kind]

    with Store.open() as store:
        run = prepare(store, config, detect_environment())
        path = events_path(Path(run.run_dir))
        proc = start(store, run.id)
        events = wait_for(
            path,
            proc,
            lambda ev: (
                steps(ev, "checkpoint") and max(steps(ev, "log")) > max(steps(ev, "checkpoint"))
            ),
        )
        checkpoint = max(steps(events, "checkpoint"))
        os.killpg(proc.pid, signal.SIGKILL)
        run = watch(store, run.id, proc)
        assert run.status == "failed" and "killed by SIGKILL" in (run.reason or "")
        killed_logs = {e["step"]: e["loss"] for e in run_events(store, run.id, kind="log")}

        proc = resume(store, run.id)
        seen = len(read_events(path)[0])
        wait_for(path, proc, lambda ev: any(e["event"] == "log" for e in ev[seen:]))
        stop(store, run.id)
        run = watch(store, run.id, proc)
        assert run.status == "stopped", run.reason
        stopped_at = run.step
        assert stopped_at < 6 and Path(run.outputs["adapter"]).is_dir()
        assert stopped_at in [c.step for c in run_checkpoints(store, run.id)]
        # a stop saves the adapter and registers it: servable at once (issue 23)
        assert run.outputs.get("registered") == ["sft-resume"]

        proc = resume(store, run.id)
        run = watch(store, run.id, proc)
        assert run.status == "done", run.reason
        events, _ = read_events(path)
        assert [e["from_step"] for e in events if e["event"] == "resume"] == [
            checkpoint,
            stopped_at,
        ]
        curve = effective_logs(events)
        assert [e["step"] for e in curve] == list(range(1, 7))  # no gap, no repeat
        stored = run_events(store, run.id, kind="log")
        assert [e["step"] for e in stored] == list(range(1, 7))
        replaced = [
            e["step"]
            for e in run_events(store, run.id, kind="log", include_superseded=True)
            if e not in stored
        ]
        assert replaced and all(s > checkpoint for s in replaced)
        # The resumed process recomputes the replaced steps from the same state and data.
        for event in curve:
            if checkpoint < event["step"] <= max(killed_logs):
                assert event["loss"] == pytest.approx(killed_logs[event["step"]], rel=1e-3)
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(seqs) and len(seqs) == len(set(seqs))
        phases = [e["phase"] for e in events if e["event"] == "phase"]
        assert phases.count("loading") == 3 and phases[-1] == "done" and "stopped" in phases
        assert run.outputs["registered"] == ["sft-resume"]


def test_pipeline_sft_opd_rl_on_a_users_harness(base_model: str, tmp_path: Path) -> None:
    """HAT end to end on a harness of the user's own (tests/fixtures/support_desk: six tools
    bound to Python functions, a refund that writes, a task file): oracle rows under train
    variants -> HSA-SFT -> OPD -> HSA-RL on the task file -> Harness-Variant QA of the task
    file by a real `transformers serve`. (The live room's pipeline runs end to end in the
    replication's CI profile, tests/test_experiment.py.)"""
    from core.eval.api import list_eval_runs, load_results
    from core.models import get
    from core.store.training import list_runs
    from core.taskfile.models import TaskSplit, load_task_file
    from core.train.pipeline import run_pipeline

    desk = Path(__file__).parent / "fixtures/support_desk"
    tasks = Path(__file__).parent / "fixtures/support_desk_tasks.jsonl"
    result = runner.invoke(app, ["harness", "import", str(desk), "--trust", "-m", "user's"])
    assert result.exit_code == 0, result.output
    rows = tmp_path / "hsa.jsonl"
    result = runner.invoke(app, [
        "data", "generate", "--teacher", "oracle", "--tasks", str(tasks),
        "--harness-version", "support-desk@head", "-k", "1", "--out", str(rows),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    train = [t for t in load_task_file(tasks) if t.split is TaskSplit.TRAIN]
    assert len(rows.read_text().splitlines()) == 2 * len(train)

    config = parse_pipeline(
        {
            "model": BASE,
            "name": "hat",
            "sft": {"data": [str(rows)], "system_prompt": "compact", "max_length": 320,
                    "per_device_batch_size": 2, "max_steps": 2, "save_steps": 100},
            "opd": {"max_prompts": 4, "max_steps": 2, "per_device_batch_size": 2,
                    "max_completion_length": 8, "save_steps": 100},
            "rl": {"tasks": str(tasks), "harness": "support-desk@head", "system_prompt": "compact",
                   "turn": "first", "sampler": "hsa", "max_steps": 2, "per_device_batch_size": 4,
                   "num_generations": 4, "max_completion_length": 16, "save_steps": 100},
        }
    )  # fmt: skip
    with Store.open() as store:
        pipeline = run_pipeline(store, config, detect_environment())
        stages = list_runs(store, parent=pipeline.id)
        assert pipeline.status == "done", (pipeline.reason, [(s.id, s.reason) for s in stages])
        assert [s.stage for s in stages] == ["sft", "opd", "rl"]
        assert all(s.status == "done" for s in stages)
        sft, opd, rl = stages
        # Each stage continues the previous adapter; OPD's teacher is the base model.
        assert parse_stage_of(opd)["adapter"] == sft.outputs["adapter"]
        assert parse_stage_of(opd)["teacher"] == str(demo_folder().resolve())
        assert parse_stage_of(rl)["adapter"] == opd.outputs["adapter"]

        opd_logs = run_events(store, opd.id, kind="log")
        assert [e["step"] for e in opd_logs] == [1, 2]
        assert all("loss" in e and "completions/mean_length" in e["metrics"] for e in opd_logs)
        rl_logs = run_events(store, rl.id, kind="log")
        assert [e["step"] for e in rl_logs] == [1, 2]
        components = {"accuracy", "effectiveness", "tool_rationality", "skill_selection", "length"}
        for event in rl_logs:
            assert set(event["rewards"]) == components
            assert "reward" in event["metrics"] and "loss" in event
        info = {k: v for e in run_events(store, rl.id, kind="info") for k, v in e.items()}
        assert info["sampler"] == "hsa" and info["groups"] >= 2 and not info["groups_dropped"]
        assert info["tasks"] == len(train)
        for stage in ("sft", "opd", "rl"):
            record = get(store, f"hat-{stage}")
            assert record.kind == "adapter" and record.base == BASE
        assert pipeline.outputs["final"]["adapter"] == rl.outputs["adapter"]
    assert generate(Path(rl.outputs["adapter"]), demo_folder())

    result = runner.invoke(app, [
        "eval", "run", "--model", BASE, "--adapter", "hat-rl", "--suite", "hv-tasks",
        "--tasks", str(tasks), "--harness", "support-desk", "--variants", "1", "--limit", "2",
        "--max-tokens", "16", "--engine", "transformers", "--concurrency", "2",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    with Store.open() as store:
        run = list_eval_runs(store)[-1]
        results = load_results(store, run.id)
    assert run.status.value == "done", run.reason
    assert len(results) == 2 and {r.suite.value for r in results} == {"hv-tasks"}
    # every item was played by the served model and graded (a failed one keeps its grades)
    assert all(r.grades for r in results), [(r.task_id, r.reason) for r in results]


def parse_stage_of(run: Any) -> dict[str, Any]:
    import yaml

    data: dict[str, Any] = yaml.safe_load((Path(run.run_dir) / "config.yaml").read_text())
    return data
