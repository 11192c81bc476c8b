"""The studio's Train and Runs pages, driven as a user would (offscreen Qt, real store).

- Forms come from the stage config models: every field, its default and its help; a bad value
  is reported under the field it names (pydantic's own message); the machine checks
  (`check_launch`) and the command preview follow the form.
- The live monitor reads the event stream incrementally (core/train/monitor.py) and folds a
  resume into one curve.
- Slow: a real SFT run of the demo model launched from the Train page: the loss curve (one
  curve object) receives points; Stop saves and ends it; Resume continues the step count; the
  studio is closed, the child killed, the studio reopened: the run shows failed with the
  reason and offers Resume, which finishes it with one continuous curve.

CPU budget: 4 rows with the compact prompt, max_length 288, batch 1, 6 steps, a checkpoint
every step (three short processes). HAT_TEST_MODEL_CACHE=<folder> keeps the imported demo
model between test runs. HAT_SCREENSHOTS=<folder> also writes the page screenshots there
(docs/screenshots/train-*.png, runs-*.png are made that way).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.store import Store
from core.store.training import RunRecord, add_run, get_run, list_runs, run_events
from core.train.config import STAGE_MODELS, ConfigError, LaunchSettings, parse_stage
from core.train.events import EventWriter
from core.train.monitor import MonitorState, RunFollower, attach_runs, can_resume
from studio.logic.train_forms import field_errors, flatten, form_data, form_fields
from tests.test_training import BASE, demo_folder, rows  # noqa: F401 - rows is a fixture

SCREENSHOTS = os.environ.get("HAT_SCREENSHOTS")


# ----------------------------------------------------------------------------- forms (Qt-free)


@pytest.mark.parametrize("stage", ["sft", "opd", "rl"])
def test_forms_cover_every_field_and_defaults_round_trip(stage: str) -> None:
    model = STAGE_MODELS[stage]
    specs = form_fields(model, exclude={"launch"})
    paths = {s.path for s in specs}
    for name, info in model.model_fields.items():
        if name in ("stage", "launch"):
            continue
        nested = getattr(info.annotation, "model_fields", None)
        if nested:
            assert {f"{name}.{sub}" for sub in nested} <= paths
        else:
            assert name in paths
    assert all(s.help for s in specs), [s.path for s in specs if not s.help]
    default = model().model_dump(mode="json")
    raw = {s.path: (v if s.kind in ("bool", "choice") else s.text(v))
           for s, v in ((s, flatten(default, [s]).get(s.path)) for s in specs)}  # fmt: skip
    data, missing = form_data(specs, raw)
    assert not missing
    data["launch"] = LaunchSettings().model_dump(mode="json")
    assert parse_stage(data, stage).model_dump() == model().model_dump()


NUMERIC = [s for s in form_fields(STAGE_MODELS["rl"], exclude={"launch"})
           if s.kind in ("int", "float")]  # fmt: skip


@given(
    spec=st.sampled_from(NUMERIC),
    text=st.sampled_from(["abc", "-5", "1e999x", "0x", "--1", "-0.5"]),
)
def test_a_bad_number_is_reported_under_its_field(spec: Any, text: str) -> None:
    specs = form_fields(STAGE_MODELS["rl"], exclude={"launch"})
    data, _missing = form_data(specs, {spec.path: text})
    try:
        parse_stage(data, "rl")
    except ConfigError as exc:
        found, other = field_errors(exc.problems, specs, prefix="rl")
        assert set(found) == {spec.path} and not other, (found, other)
    else:  # a value the model accepts (e.g. -5 for a field without a lower bound)
        assert text in ("-5", "-0.5")


def test_model_level_errors_name_their_field() -> None:
    specs = form_fields(STAGE_MODELS["sft"], exclude={"launch"})
    with pytest.raises(ConfigError) as err:
        parse_stage({"output_name": "two words"}, "sft")
    found, other = field_errors(err.value.problems, specs, prefix="sft")
    assert list(found) == ["output_name"] and "must be letters" in found["output_name"]
    assert not other


# ----------------------------------------------------------------------------- monitor (Qt-free)


def test_follower_reads_only_new_whole_lines_and_the_log_tail(tmp_path: Path) -> None:
    writer = EventWriter(tmp_path)
    follower = RunFollower(tmp_path, log_tail_bytes=64)
    (tmp_path / "child.log").write_text("x" * 100 + "\nfirst line\nsecond", encoding="utf-8")
    writer.phase("loading")
    writer.emit("log", step=1, total=3, loss=2.0, elapsed_s=1.0, eta_s=2.0)
    events, log = follower.read()
    assert [e["event"] for e in events] == ["phase", "log"]
    assert log == "first line\n"  # the tail starts at a whole line; "second" is not ended yet
    with (tmp_path / "events.jsonl").open("a") as handle:
        handle.write('{"seq": 3, "event": "log", "step": 2')  # a torn line
    with (tmp_path / "child.log").open("a") as handle:
        handle.write(" half\n")
    events, log = follower.read()
    assert events == [] and log == "second half\n"
    assert follower.read() == ([], "")


def test_state_folds_a_resume_into_one_curve() -> None:
    state = MonitorState()
    logs = [{"event": "log", "step": s, "total": 5, "loss": 1.0 / s, "elapsed_s": s,
             "eta_s": 5 - s, "time": 100.0 + s} for s in (1, 2, 3)]  # fmt: skip
    state.apply([{"event": "phase", "phase": "training", "total": 5}, *logs])
    curve = state.series["loss"]
    assert curve.xs == [1, 2, 3]
    changed = state.apply([{"event": "resume", "from_step": 2, "time": 200.0}])
    assert "loss" in changed and curve.xs == [1, 2] and state.step == 2
    state.apply([{"event": "log", "step": 3, "total": 5, "loss": 0.3, "elapsed_s": 1.0,
                  "eta_s": 2.0, "time": 201.0}])  # fmt: skip
    assert state.series["loss"] is curve and curve.xs == [1, 2, 3] and curve.ys[-1] == 0.3
    assert state.elapsed(running=False) == pytest.approx(3 + 1)  # segments add up
    rl = {"event": "log", "step": 1, "rewards": {"accuracy": 0.5}, "metrics": {
        "reward": 0.7, "completions/mean_length": 12.0}}  # fmt: skip
    state.apply([rl])
    assert {"reward/accuracy", "reward", "completion_length"} <= set(state.series)


def test_a_vanished_process_is_failed_with_the_reason_on_attach(hat_home: Path) -> None:
    """A real process that ended while nobody watched: the store still says running."""
    proc = subprocess.Popen([sys.executable, "-c", "print('bye')"])
    proc.wait()
    run_dir = hat_home / "runs" / "sft-gone"
    (run_dir / "checkpoints" / "checkpoint-2").mkdir(parents=True)
    (run_dir / "checkpoints" / "checkpoint-2" / "trainer_state.json").write_text("{}")
    (run_dir / "child.log").write_text("step 2 done\n")
    with Store.open() as store:
        add_run(store, RunRecord(id="sft-gone", stage="sft", status="running", config="{}",
                                 run_dir=str(run_dir), pid=proc.pid))  # fmt: skip
        runs = attach_runs(store)
        run = get_run(store, "sft-gone")
    assert [r.id for r in runs] == ["sft-gone"]
    assert run.status == "failed" and run.reason is not None
    assert "ended without a final event" in run.reason and "step 2 done" in run.reason
    assert can_resume(run)


def test_a_removed_run_folder_replays_from_the_store(hat_home: Path) -> None:
    import shutil

    from core.train.monitor import RunTracker
    from core.train.runs import sync

    run_dir = hat_home / "runs" / "sft-old"
    writer = EventWriter(run_dir)
    writer.phase("training", total=2)
    for step in (1, 2):
        writer.emit("log", step=step, total=2, loss=1.0 / step, elapsed_s=step, eta_s=0)
    writer.phase("done")
    writer.close()
    with Store.open() as store:
        add_run(store, RunRecord(id="sft-old", stage="sft", status="done", config="{}",
                                 run_dir=str(run_dir)))  # fmt: skip
        sync(store, "sft-old")
        shutil.rmtree(run_dir)
        update = RunTracker("sft-old").poll(store)
    state = MonitorState()
    state.apply(update.events)
    assert state.series["loss"].xs == [1, 2] and state.phase == "done"


def test_a_pipeline_runs_in_its_own_detached_process(hat_home: Path, tmp_path: Path) -> None:
    """The real orchestrator (`python -m core.train.orchestrate <id>`), given a stage that
    cannot start (an unknown model name passes the form but not the registry): the pipeline
    ends failed with that stage's reason, in the workspace it was launched for."""
    from core.train.config import parse_pipeline
    from core.train.launch_checks import detect_environment
    from core.train.launcher import launch_pipeline

    data = tmp_path / "rows.jsonl"
    data.write_text('{"messages": []}\n')
    config = parse_pipeline({"model": "no-such-model", "sft": {"data": [str(data)]}})
    workspace = tmp_path / "workspace"
    with Store.open(workspace / "hat.db") as store:
        run, proc = launch_pipeline(store, config, detect_environment())
        assert proc.wait(timeout=300) == 1
        run = get_run(store, run.id)
    assert Path(run.run_dir).parent == workspace / "runs"
    assert run.status == "failed" and run.reason is not None
    assert "stage sft could not start" in run.reason and "no-such-model" in run.reason
    assert "pipeline" in (Path(run.run_dir) / "pipeline.log").read_text()


# ----------------------------------------------------------------------------- GUI helpers


def _open(home: Path, timeout: float = 120) -> Any:
    from tests.studio_helpers import open_studio

    return open_studio(home, size=(1440, 900), timeout=timeout)


def _shut(win: Any) -> None:
    from tests.studio_helpers import shut

    shut(win)


def _grab(win: Any, name: str) -> None:
    if SCREENSHOTS:
        from tests.studio_helpers import spin

        spin(300)
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        win.grab().save(str(Path(SCREENSHOTS) / f"{name}.png"))


def _train_page(win: Any) -> Any:
    from tests.studio_helpers import wait_until

    win.show_page("train")
    page = win.page("train")
    wait_until(lambda: page.env is not None and page.hub.attached, timeout=60)
    return page


def _checked(page: Any) -> None:
    """Wait until the machine checks of the current form are back."""
    from tests.studio_helpers import wait_until

    wait_until(lambda: page._checked_token == page._token or page.config is None, timeout=60)


@pytest.fixture
def registered(hat_home: Path) -> str:
    from core.models import add_folder

    with Store.open() as store:
        add_folder(store, BASE, demo_folder())
    return BASE


# ----------------------------------------------------------------------------- GUI


def test_train_form_validates_as_you_type(qapp: Any, hat_home: Path) -> None:
    from PySide6.QtTest import QTest

    from tests.studio_helpers import wait_until

    data = hat_home / "rows.jsonl"
    data.write_text('{"messages": []}\n')
    win = _open(hat_home)
    try:
        page = _train_page(win)
        form = page.forms["sft"]
        assert page.devices_body.count() and not page.gpu_boxes  # this machine: the CPU
        assert form.value("learning_rate") == "0.0002" and form.value("lr_scheduler") == "cosine"
        assert "Peak learning rate." in form.fields["learning_rate"].toolTip()
        # a bad value: the model's message under the field, Start disabled
        edit = form.line_edit("learning_rate")
        edit.clear()
        QTest.keyClicks(edit, "fast")
        assert "valid number" in form.fields["learning_rate"].error.text()
        assert not page.start_button.isEnabled()
        edit.clear()
        QTest.keyClicks(edit, "1e-4")
        assert not form.fields["learning_rate"].error.text()
        assert form.fields["learning_rate"].aside.text() == "default: 0.0002"
        # machine checks: a missing model and data file, named by field
        form.set_values({"model": "", "data": "nowhere.jsonl"})
        _checked(page)
        assert "no such file" in form.fields["data"].error.text()
        assert any(p.startswith("sft.model:") for p in page.problems)
        assert not page.start_button.isEnabled()
        form.set_values({"model": "any-model", "data": str(data)})
        _checked(page)
        wait_until(page.start_button.isEnabled)
        command = page.command_view.toPlainText()
        assert f"hat train sft --config {hat_home}/runs/{page.run_id}/request.yaml" in command
        assert f"-m training sft --config {hat_home}/runs/{page.run_id}/config.yaml" in command
        # scale-out: a GPU-only strategy on this CPU machine is refused under its field
        page.launch_form.set_values({"launch.distributed": "fsdp2"})
        _checked(page)
        assert "needs a GPU" in page.launch_form.fields["launch.distributed"].error.text()
        page.launch_form.set_values({"launch.distributed": "auto"})
        # CPU processes: more than the cores is refused under the field; two run DDP on gloo
        cores = len(os.sched_getaffinity(0))
        page.launch_form.set_values({"launch.num_processes": str(cores + 1)})
        _checked(page)
        error = page.launch_form.fields["launch.num_processes"].error.text()
        assert f"{cores + 1} CPU processes on {cores} core(s)" in error
        assert not page.start_button.isEnabled()
        page.launch_form.set_values({"launch.num_processes": "1"})
        _checked(page)
        assert not page.launch_form.fields["launch.num_processes"].error.text()
        assert "accelerate" not in page.command_view.toPlainText()  # one process: plain python
        page.launch_form.set_values({"launch.num_processes": ""})
        # the pipeline: model set once, stages from their tabs, the hat train line
        page.mode_picker.set_value("pipeline", emit=True)
        assert page.start_button.text() == "Start pipeline"
        assert not form.fields["model"].isEnabled()  # the pipeline sets it
        page.pipeline_form.set_values({"model": "any-model"})
        page.include["opd"].setChecked(False)
        page.include["rl"].setChecked(False)
        _checked(page)
        assert "hat train pipeline --config" in page.command_view.toPlainText()
        assert page.config is not None and page.config.opd is None
        assert page.config.sft.learning_rate == pytest.approx(1e-4)
    finally:
        _shut(win)


def test_the_rl_stage_takes_a_task_file(qapp: Any, hat_home: Path) -> None:
    """HSA-RL on the operator's own tasks: the RL form's tasks field takes a task file (with
    a Browse button), and a missing file is refused under the field."""
    from tests.studio_helpers import wait_until

    tasks = Path(__file__).parent / "fixtures/support_desk_tasks.jsonl"
    win = _open(hat_home)
    try:
        page = _train_page(win)
        page.mode_picker.set_value("rl", emit=True)
        assert "task file" in page.blurb.text()
        form = page.forms["rl"]
        assert form.editors["tasks"].browse is not None  # a file picker beside the field
        form.set_values({"model": "any-model", "tasks": str(hat_home / "missing.jsonl")})
        _checked(page)
        assert "not a split" in form.fields["tasks"].error.text()
        assert not page.start_button.isEnabled()
        form.set_values({"tasks": str(tasks), "harness": "support-desk@head"})
        _checked(page)
        assert not form.fields["tasks"].error.text()
        assert page.config is not None and page.config.tasks == str(tasks)
        wait_until(lambda: "hat train rl --config" in page.command_view.toPlainText())
    finally:
        _shut(win)


def test_gpu_choice_and_scale_out_shape_the_command(
    qapp: Any, hat_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HAT_GPU_COUNT (the project's override of GPU detection) stands in for the GPUs this
    machine does not have; nothing is launched."""
    monkeypatch.setenv("HAT_GPU_COUNT", "2")
    data = hat_home / "rows.jsonl"
    data.write_text('{"messages": []}\n')
    win = _open(hat_home)
    try:
        page = _train_page(win)
        assert [b.text() for b in page.gpu_boxes] == ["GPU 0 · GPU 0", "GPU 1 · GPU 1"]
        page.forms["sft"].set_values({"model": "any-model", "data": str(data)})
        _checked(page)
        command = page.command_view.toPlainText()
        assert "-m accelerate.commands.launch --config_file" in command
        assert "--num_processes 2" in command and "distributed_type: MULTI_GPU" in command
        page.gpu_boxes[0].setChecked(False)  # only GPU 1
        _checked(page)
        assert page.devices() == ({"num_gpus": 1}, [1])
        command = page.command_view.toPlainText()
        assert "CUDA_VISIBLE_DEVICES=1 " in command and "--num_processes 1" in command
        page.gpu_boxes[0].setChecked(True)
        page.launch_form.set_values({"launch.distributed": "fsdp2"})
        _checked(page)
        assert "distributed_type: FSDP" in page.command_view.toPlainText()
        page.launch_form.set_values({"launch.num_machines": "2"})
        _checked(page)
        error = page.launch_form.fields["launch.main_process_ip"].error.text()
        assert "required for a multi-node run" in error  # the model's own check, its field
        page.launch_form.set_values({"launch.main_process_ip": "10.0.0.1"})
        _checked(page)
        command = page.command_view.toPlainText()
        assert "--num_machines 2" in command and "--main_process_ip 10.0.0.1" in command
        assert "--num_processes 4" in command
        page.launch_form.set_values({"launch.num_processes": "3"})
        _checked(page)
        error = page.launch_form.fields["launch.num_processes"].error.text()
        assert "3 processes with 2 GPU(s): accelerate runs one process per GPU" in error
    finally:
        _shut(win)


def test_closing_the_workspace_stops_the_run_hub(qapp: Any, hat_home: Path) -> None:
    """The hub polls the store from its own thread: once the workspace closes, no poll may
    start (it would read a closed store, or deliver to a hub being destroyed)."""
    win = _open(hat_home)
    try:
        hub = _train_page(win).hub
        assert hub._timer.isActive()
        win.ctx.close()
        assert not hub._timer.isActive()
        assert hub._poller.run(lambda: None) is None
        hub.follow("any-run")
        assert not hub._timer.isActive()
        # the workspace opens again (a switch reopens the same context): polling resumes
        from tests.studio_helpers import wait_until

        win.ctx.open()
        wait_until(lambda: hub.attached and hub._timer.isActive(), timeout=60)
        assert hub._poller.run(lambda: None) is not None
    finally:
        _shut(win)


# ----------------------------------------------------------------------------- a real run


@pytest.fixture
def no_orphans() -> Any:
    yield
    with Store.open() as store:
        for run in list_runs(store):
            if run.pid is not None and not run.finished:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(run.pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_launch_watch_stop_resume_and_reattach_after_a_kill(
    qapp: Any,
    hat_home: Path,
    registered: str,
    rows: Path,  # noqa: F811 - the fixture imported above
    no_orphans: Any,
) -> None:
    from tests.studio_helpers import spin, wait_until

    win = _open(hat_home)
    page = _train_page(win)
    form = page.forms["sft"]
    form.set_values({
        "model": registered, "data": str(rows), "system_prompt": "compact", "max_length": 288,
        "per_device_batch_size": 1, "max_steps": 6, "save_steps": 1, "learning_rate": "2e-3",
        "lr_scheduler": "constant", "output_name": "studio-sft",
    })  # fmt: skip
    _checked(page)
    wait_until(page.start_button.isEnabled, timeout=60)
    _grab(win, "train-form")
    page.start_button.click()
    monitor = page.monitor
    wait_until(lambda: monitor.run_id is not None, timeout=120)
    run_id = monitor.run_id
    assert page.tabs.currentIndex() == 1
    chart = monitor.charts["loss"]

    # the chart receives points: one curve object, its data grows
    wait_until(lambda: chart.point_count("loss") >= 1, timeout=900)
    curve = chart.curves["loss"]
    first = chart.point_count("loss")
    wait_until(monitor.stop_button.isEnabled)
    monitor.stop_button.click()
    wait_until(lambda: monitor.entry().run.status == "stopped", timeout=900)
    assert chart.curves["loss"] is curve and chart.point_count("loss") > first
    stopped_at = monitor.entry().run.step
    assert 1 < stopped_at < 5 and monitor.resume_button.isVisible()  # steps remain after it
    assert "Stopped" in monitor.banner.text.text()
    with Store.open() as store:  # a stop saves the adapter, and it is servable at once
        assert get_run(store, run_id).outputs.get("registered") == ["studio-sft"]

    # resume: the step count continues after the stop
    monitor.resume_button.click()
    wait_until(lambda: chart.point_count("loss") > stopped_at, timeout=900)
    assert list(curve.xData) == list(range(1, stopped_at + 2))
    assert monitor.entry().run.status == "running"
    # time so far and, once a step has a pace, the estimate left: "7.1 s training · 7.1 s left"
    clock = r"(\d+\.\d s|\d+ s|\d+:\d\d:\d\d)"
    assert re.fullmatch(f"{clock} training( · {clock} left)?", monitor.time_label.text())
    _grab(win, "train-monitor-live")

    # the studio closes; the child is killed while nobody watches; the studio reopens
    pid = get_run_pid(run_id)
    os.killpg(pid, signal.SIGSTOP)  # no progress while the window closes
    _shut(win)
    os.killpg(pid, signal.SIGKILL)
    # The harness page cannot restore its "overview" selection yet (component_tree.select_name
    # looks it up as a component list): start the reopened window on no selection.
    from studio.workspace import settings

    settings(hat_home).remove("harness/selected")
    win = _open(hat_home)
    try:
        win.show_page("runs")
        runs = win.page("runs")
        wait_until(lambda: run_id in runs.items, timeout=60)
        assert runs.items[run_id].text(2) == "failed"
        runs.select(run_id)
        wait_until(lambda: runs.monitor.entry() is not None and runs.monitor.entry().loaded)
        wait_until(lambda: runs.monitor.charts["loss"].point_count("loss") > stopped_at)
        banner = runs.monitor.banner.text.text()
        assert "Failed: the training process ended without a final event" in banner
        assert runs.monitor.resume_button.isVisible()
        _grab(win, "runs-failed")

        runs.monitor.resume_button.click()
        wait_until(lambda: runs.monitor.entry().run.status == "done", timeout=900)
        spin(100)
        loss = runs.monitor.charts["loss"]
        assert list(loss.curves["loss"].xData) == [1, 2, 3, 4, 5, 6]
        with Store.open() as store:
            logs = run_events(store, run_id, kind="log")
            run = get_run(store, run_id)
        assert [e["step"] for e in logs] == [1, 2, 3, 4, 5, 6]  # no gap, no repeat
        assert run.outputs["registered"] == ["studio-sft"]
        assert "Registered as studio-sft" in runs.monitor.banner.text.text()
        # training time and, for a finished run, start to end (the list's Duration)
        wait_until(lambda: runs.monitor.time_label.text().endswith(" in all"))
        assert "training · " in runs.monitor.time_label.text()
        if SCREENSHOTS:  # a second, live row for the list: Restart, then Cancel it
            runs.monitor.restart_button.click()
            wait_until(lambda: runs.monitor.run_id != run_id, timeout=120)
            again = runs.monitor.run_id
            wait_until(lambda: runs.monitor.entry().state.phase == "training", timeout=900)
            runs.select(run_id)
            wait_until(lambda: runs.monitor.charts["loss"].point_count("loss") == 6)
            _grab(win, "runs-list")
            runs.hub.cancel(again)
            wait_until(lambda: runs.hub.record(again).finished, timeout=900)
        win.show_page("train")
        page = win.page("train")
        page.tabs.setCurrentIndex(1)
        page.monitor.show_run(run_id)
        wait_until(lambda: page.monitor.charts["loss"].point_count("loss") == 6)
        _grab(win, "train-monitor")
        config = page.monitor.config_view.toPlainText()
        assert "output_name: studio-sft" in config and "max_steps: 6" in config
    finally:
        _shut(win)


def get_run_pid(run_id: str) -> int:
    with Store.open() as store:
        pid = get_run(store, run_id).pid
    assert pid is not None
    return pid


def test_runs_page_lists_runs_newest_first(qapp: Any, hat_home: Path) -> None:
    """Store rows shown as they are (no process involved): stage, status, model, step."""
    from tests.studio_helpers import wait_until

    config = json.dumps({"model": "smollm2", "data": ["x.jsonl"]})
    with Store.open() as store:
        for index, status in enumerate(("done", "stopped")):
            run_dir = hat_home / "runs" / f"sft-{index}"
            run_dir.mkdir(parents=True)
            add_run(store, RunRecord(id=f"sft-{index}", stage="sft", status=status,
                                     config=config, run_dir=str(run_dir)))  # fmt: skip
    win = _open(hat_home)
    try:
        win.show_page("runs")
        page = win.page("runs")
        wait_until(lambda: len(page.items) == 2, timeout=60)
        order = [page.tree.topLevelItem(i).text(0) for i in range(2)]
        assert order == ["sft-1", "sft-0"]
        assert [page.items["sft-1"].text(c) for c in (1, 2, 3)] == ["HSA-SFT", "stopped", "smollm2"]
        assert page.monitor.run_id == "sft-1"
        # stopped without a checkpoint: nothing to resume from, so Restart is offered
        wait_until(lambda: page.monitor.entry() is not None and page.monitor.entry().loaded)
        assert not page.monitor.resume_button.isVisible()
        assert page.monitor.restart_button.isVisible()
        assert page.monitor.config_view.toPlainText() == config
    finally:
        _shut(win)


def test_start_is_locked_while_a_run_trains_and_released_when_its_child_crashes(
    qapp: Any,
    hat_home: Path,
    registered: str,
    rows: Path,  # noqa: F811 - the fixture
) -> None:
    """#35 item 2: a run that ends while the studio is open (its child killed, no final
    event) gives Start back without a restart, and the locked Start says which run holds it."""
    from tests.studio_helpers import wait_until

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "training"])
    run_dir = hat_home / "runs" / "sft-elsewhere"
    run_dir.mkdir(parents=True)
    (run_dir / "child.log").write_text("loading\nRuntimeError: the child crashed\n")
    win = _open(hat_home)
    try:
        page = _train_page(win)
        page.forms["sft"].set_values({
            "model": registered, "data": str(rows), "system_prompt": "compact",
            "max_length": 288, "max_steps": 2, "output_name": "studio-locked",
        })  # fmt: skip
        _checked(page)
        wait_until(page.start_button.isEnabled, timeout=60)
        with Store.open() as store:  # started by `hat train ... --detach` in a terminal
            add_run(store, RunRecord(id="sft-elsewhere", stage="sft", status="running",
                                     config="{}", run_dir=str(run_dir), pid=proc.pid))  # fmt: skip
        page.hub.refresh()
        wait_until(lambda: not page.start_button.isEnabled(), timeout=60)
        assert "sft-elsewhere is training" in page.start_button.toolTip()
        proc.kill()
        proc.wait()
        wait_until(page.start_button.isEnabled, timeout=60)
        assert page.hub.record("sft-elsewhere").status == "failed"
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        _shut(win)


@pytest.mark.timeout(600)
def test_the_memory_estimate_follows_length_and_batch_and_refuses_a_run_that_will_not_fit(
    qapp: Any,
    hat_home: Path,
    rows: Path,  # noqa: F811
) -> None:
    """The Estimate card shows the memory the stage needs against what the machine has free,
    as soon as the form is valid, and follows max_length and the batch; a run that cannot fit
    (one ~100k-token row at full length) is refused under Start with both numbers."""
    from core.models import add_folder
    from core.train.measure import measure_rows
    from tests.studio_helpers import wait_until

    with Store.open() as store:
        add_folder(store, BASE, demo_folder())
    measured = measure_rows(demo_folder(), [rows], system_prompt="compact")
    long = measured.suggested_max_length()
    short = max(measured.first_reply) + 8
    assert short < measured.longest  # rows are cut at `short`: a shorter sequence
    win = _open(hat_home)
    try:
        page = _train_page(win)
        form = page.forms["sft"]

        def estimate_for(length: int, batch: int) -> Any:
            form.set_values({"max_length": str(length), "per_device_batch_size": str(batch)})
            page.validate()
            wait_until(lambda: page.memory is not None and page.memory.rows == min(batch, 4)
                       and page.memory.sequence == min(length, measured.longest),
                       timeout=120)  # fmt: skip
            return page.memory

        form.set_values({"model": BASE, "data": str(rows), "system_prompt": "compact",
                         "max_steps": 1, "lm_head_loss": "sliced"})  # fmt: skip
        first = estimate_for(long, 1)
        text = page.memory_text.text()
        assert "Memory: needs ~" in text and "GiB free" in text and "activations" in text
        wait_until(page.start_button.isEnabled, timeout=60)
        batch = estimate_for(long, 2)
        assert batch.total_bytes > first.total_bytes
        assert batch.parts["activations"] > first.parts["activations"]
        assert page.memory_text.text() != text
        cut = estimate_for(short, 2)
        assert cut.parts["activations"] < batch.parts["activations"]
        # the time: a few real steps in a training child, the window live meanwhile
        page.estimate_button.click()
        assert not page.estimate_button.isEnabled() and "running" in page.time_text.text()
        wait_until(page.estimate_button.isEnabled, timeout=300)
        timed = page.time_text.text()
        assert re.search(r"Time: [\d.]+ s per step, ~.+ for 1 step \(measured over 3 steps", timed)
        # a run that cannot fit: refused under Start, with the numbers
        huge = hat_home / "long.jsonl"
        messages = [
            {"role": "system", "content": "You help."},
            {"role": "user", "content": " ".join(["order"] * 100_000)},
            {"role": "assistant", "content": "hello"},
        ]
        huge.write_text(json.dumps({"messages": messages}) + "\n")
        form.set_values({"data": str(huge), "max_length": "120000", "lm_head_loss": "trl"})
        page.validate()
        wait_until(lambda: "memory: needs ~" in page.check_text.text(), timeout=180)
        assert "GiB free" in page.check_text.text()
        assert not page.start_button.isEnabled()
        assert page.memory is not None and not page.memory.fits
    finally:
        _shut(win)
