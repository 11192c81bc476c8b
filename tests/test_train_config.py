"""Training without torch: configs and launch checks, scale-out commands, the event stream,
the run store, SFT rows, the OPD prompt bank, the RL environment's prompts and rewards, the
`hat train` CLI, and a real stage child failing on zero usable rows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store, StoreError
from core.store.training import (
    RunRecord,
    add_run,
    get_run,
    ingest_events,
    list_runs,
    run_checkpoints,
    run_events,
    update_run,
)
from core.train.config import (
    ConfigError,
    RlConfig,
    SftConfig,
    config_schema,
    load_config,
    parse_pipeline,
    parse_stage,
)
from core.train.data import DataError, chat_row, load_sft_rows
from core.train.events import (
    EventWriter,
    Resume,
    effective_logs,
    read_control,
    read_events,
    request_control,
)
from core.train.launch_checks import Environment, batch_plan, check_launch
from core.train.scaleout import accelerate_config, stage_command
from tests.ifeval_data import require_ifeval

CPU = Environment(gpus=0)
GPUS8 = Environment(gpus=8, gpu_names=tuple(f"GPU {i}" for i in range(8)))
runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def hat(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def problems(config: object, env: Environment = CPU) -> str:
    assert isinstance(config, SftConfig | RlConfig) or hasattr(config, "stage")
    return "\n".join(check_launch(config, env))  # type: ignore[arg-type]


@pytest.fixture
def sft_rows(tmp_path: Path) -> Path:
    """Real rows from the oracle teacher (hat data generate), one task per category."""
    out = tmp_path / "sft.jsonl"
    code, text = hat(
        "data", "generate", "--teacher", "oracle", "--tasks", "train", "--per-category", "1",
        "--variants", "1", "--out", str(out), "-j", "1",
    )  # fmt: skip
    assert code == 0, text
    return out


# ----------------------------------------------------------------------------- configs


def test_defaults_are_valid_and_documented() -> None:
    for stage in ("sft", "opd", "rl"):
        config = parse_stage({"model": "m"}, stage)
        assert config.stage == stage
        schema = config_schema(stage)
        # Every user-facing field carries help text for the studio's forms.
        undocumented = [
            name
            for name, prop in schema["properties"].items()
            if "description" not in prop and name not in ("stage", "lora", "launch",
                                                           "reward_weights", "vllm_mode")
        ]  # fmt: skip
        assert undocumented == [], (stage, undocumented)
    assert "sft" in config_schema("pipeline")["properties"]


def test_unknown_keys_are_rejected_with_the_field_named() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_stage({"model": "m", "lerning_rate": 1e-4, "lora": {"rank": 8}}, "sft")
    lines = exc.value.lines()
    assert "sft.lerning_rate: unknown key (did you mean 'learning_rate'?)" in lines
    assert any(line.startswith("sft.lora.rank: unknown key") for line in lines)


def test_impossible_values_are_named() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_stage({"model": "m", "learning_rate": -1, "beta": 2}, "opd")
    text = str(exc.value)
    assert "opd.learning_rate" in text and "opd.beta" in text
    with pytest.raises(ConfigError, match="this file is a 'rl' config"):
        parse_stage({"stage": "rl"}, "sft")
    with pytest.raises(ConfigError, match="main_process_ip"):
        parse_stage({"model": "m", "launch": {"num_machines": 2}}, "sft")


def test_rl_batch_must_divide_by_generations() -> None:
    config = parse_stage({"model": "m", "per_device_batch_size": 3, "num_generations": 4}, "rl")
    text = problems(config)
    assert "rl.num_generations: the global batch (3 = 3 per device x 1 process(es) x 1 " in text
    ok = parse_stage({"model": "m", "per_device_batch_size": 2, "num_generations": 4,
                      "gradient_accumulation_steps": 2}, "rl")  # fmt: skip
    assert "num_generations" not in problems(ok)


def test_missing_teacher_and_model_are_named() -> None:
    text = problems(parse_stage({}, "opd"))
    assert "opd.teacher: required" in text
    assert "opd.model: required" in text


def test_gpu_only_options_rejected_without_gpu() -> None:
    rl = parse_stage({"model": "m", "use_vllm": True, "precision": "fp16"}, "rl")
    text = problems(rl)
    assert "rl.use_vllm: vLLM generation needs a GPU" in text
    assert "rl.precision: fp16 needs a GPU" in text
    sft = parse_stage(
        {"model": "m", "data": [__file__], "launch": {"distributed": "fsdp2", "num_gpus": 2}}, "sft"
    )
    text = problems(sft)
    assert "sft.launch.distributed: fsdp2 needs a GPU" in text
    assert "sft.launch.num_gpus: 2 GPU(s)" in text
    # With GPUs the same settings pass.
    assert problems(sft, GPUS8) == ""
    assert "use_vllm" not in problems(parse_stage({"model": "m", "use_vllm": True}, "rl"), GPUS8)


def test_global_batch_stays_constant_as_gpus_change() -> None:
    for gpus, accumulation in ((1, 16), (2, 8), (4, 4), (8, 2)):
        config = parse_stage(
            {"model": "m", "global_batch_size": 64, "per_device_batch_size": 4,
             "launch": {"num_gpus": gpus}}, "sft",
        )  # fmt: skip
        plan = batch_plan(config, GPUS8)
        assert (plan.processes, plan.accumulation, plan.global_batch) == (gpus, accumulation, 64)
    odd = parse_stage({"model": "m", "global_batch_size": 60, "per_device_batch_size": 4,
                       "launch": {"num_gpus": 8}}, "sft")  # fmt: skip
    assert "sft.global_batch_size: 60 is not a multiple of per_device_batch_size 4 x 8" in problems(
        odd, GPUS8
    )


def test_pipeline_config() -> None:
    config = parse_pipeline({"model": "base", "sft": {"data": [__file__]}, "opd": {}, "rl": {}})
    assert [s.stage for s in config.stages()] == ["sft", "opd", "rl"]
    with pytest.raises(ConfigError, match="set by the pipeline"):
        parse_pipeline({"model": "base", "sft": {"model": "other"}})
    with pytest.raises(ConfigError, match="at least one stage"):
        parse_pipeline({"model": "base"})
    with pytest.raises(ConfigError) as exc:
        parse_pipeline({"model": "base", "rl": {"turns": "first"}})
    assert "pipeline.rl.turns: unknown key (did you mean 'turn'?)" in exc.value.lines()


# ----------------------------------------------------------------------------- scale-out


def test_cpu_command_is_plain_python(tmp_path: Path) -> None:
    config = parse_stage({"model": "m"}, "sft")
    argv, acc = stage_command(config, CPU, python="py", config_path=tmp_path / "c.yaml",
                              run_dir=tmp_path)  # fmt: skip
    assert acc is None
    assert argv == ["py", "-m", "training", "sft", "--config", str(tmp_path / "c.yaml"),
                    "--run-dir", str(tmp_path)]  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "dist_type"),
    [("single_gpu", "NO"), ("multi_gpu", "MULTI_GPU"), ("fsdp2", "FSDP"), ("zero3", "DEEPSPEED")],
)
def test_accelerate_configs(kind: str, dist_type: str) -> None:
    data = accelerate_config(kind, num_processes=8)
    assert data["distributed_type"] == dist_type
    if kind == "fsdp2":
        assert data["fsdp_config"]["fsdp_version"] == 2
    if kind == "zero3":
        assert data["deepspeed_config"]["zero_stage"] == 3


def test_multi_node_command(tmp_path: Path) -> None:
    launch = {"num_gpus": 8, "distributed": "zero3", "num_machines": 2, "machine_rank": 1,
              "main_process_ip": "10.0.0.1"}  # fmt: skip
    config = parse_stage({"model": "m", "launch": launch}, "rl")
    argv, acc = stage_command(config, GPUS8, python="py", config_path=tmp_path / "c.yaml",
                              run_dir=tmp_path, resume=True)  # fmt: skip
    joined = " ".join(argv)
    assert joined.startswith("py -m accelerate.commands.launch --config_file")
    assert "--num_processes 16 --num_machines 2 --machine_rank 1" in joined
    assert "--main_process_ip 10.0.0.1 --main_process_port 29500" in joined
    assert joined.endswith(f"-m training rl --config {tmp_path / 'c.yaml'} --run-dir {tmp_path} "
                           "--resume")  # fmt: skip
    assert acc is not None and acc["distributed_type"] == "DEEPSPEED"
    assert acc["num_machines"] == 2 and acc["main_process_ip"] == "10.0.0.1"


# ----------------------------------------------------------------------------- events


def test_event_stream_torn_lines_and_resume_curve(tmp_path: Path) -> None:
    writer = EventWriter(tmp_path)
    writer.phase("training")
    for step in (1, 2, 3):
        writer.emit("log", step=step, loss=1.0 / step)
    writer.emit("checkpoint", step=2, path="ckpt-2")
    writer.close()
    with (tmp_path / "events.jsonl").open("a") as handle:
        handle.write('{"seq": 99, "event": "log", "st')  # killed mid-write
    events, _ = read_events(tmp_path / "events.jsonl")
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    # A resumed child repairs the torn line and continues the numbering.
    writer = EventWriter(tmp_path)
    writer.emit("resume", from_step=2)
    for step in (3, 4):
        writer.emit("log", step=step, loss=0.1)
    writer.close()
    events, end = read_events(tmp_path / "events.jsonl")
    assert [e["seq"] for e in events] == list(range(1, 9))
    assert [e["step"] for e in effective_logs(events)] == [1, 2, 3, 4]
    assert read_events(tmp_path / "events.jsonl", end) == ([], end)


def test_control_flag(tmp_path: Path) -> None:
    assert read_control(tmp_path) is None
    request_control(tmp_path, "stop")
    assert read_control(tmp_path) == "stop"
    request_control(tmp_path, "cancel")
    request_control(tmp_path, "stop")  # cancel wins
    assert read_control(tmp_path) == "cancel"


# ----------------------------------------------------------------------------- store


def test_run_store_events_checkpoints_and_resume(tmp_path: Path) -> None:
    with Store.open(tmp_path / "hat.db") as store:
        pipe = add_run(store, RunRecord(id="pipeline-1", stage="pipeline", status="running",
                                        config="model: m\n", run_dir=str(tmp_path)))  # fmt: skip
        run = add_run(store, RunRecord(id="sft-20261130-abc", stage="sft", status="created",
                                       config="model: m\n", run_dir=str(tmp_path),
                                       parent=pipe.id, packages={"trl": "1.16.0"}))  # fmt: skip
        assert run.parent == "pipeline-1" and run.packages == {"trl": "1.16.0"}
        with pytest.raises(StoreError, match="already exists"):
            add_run(store, run)
        events = [
            {"seq": 1, "time": 1.0, "event": "phase", "phase": "training"},
            {"seq": 2, "time": 2.0, "event": "log", "step": 1, "total": 4, "loss": 2.0},
            {"seq": 3, "time": 3.0, "event": "log", "step": 2, "total": 4, "loss": 1.5},
            {"seq": 4, "time": 3.5, "event": "checkpoint", "step": 2, "path": "c2"},
            {"seq": 5, "time": 4.0, "event": "log", "step": 3, "total": 4, "loss": 1.2},
        ]
        run = ingest_events(store, "sft-2026", events, 100, resume_of=Resume.of)  # by unique prefix
        assert (run.step, run.total_steps, run.events_offset) == (3, 4, 100)
        ingest_events(store, run.id, events[-1:], 100, resume_of=Resume.of)  # a repeat is ignored
        resumed = [
            {"seq": 6, "time": 9.0, "event": "resume", "from_step": 2},
            {"seq": 7, "time": 10.0, "event": "log", "step": 3, "total": 4, "loss": 1.1},
            {"seq": 8, "time": 11.0, "event": "log", "step": 4, "total": 4, "loss": 1.0},
        ]
        run = ingest_events(store, run.id, resumed, 200, resume_of=Resume.of)
        logs = run_events(store, run.id, kind="log")
        assert [(e["step"], e["loss"]) for e in logs] == [(1, 2.0), (2, 1.5), (3, 1.1), (4, 1.0)]
        assert len(run_events(store, run.id, kind="log", include_superseded=True)) == 5
        assert [(c.step, c.path) for c in run_checkpoints(store, run.id)] == [(2, "c2")]
        update_run(store, run.id, status="done", outputs={"adapter": "a"})
        assert get_run(store, run.id).outputs == {"adapter": "a"}
        assert [r.id for r in list_runs(store, parent="pipeline-1")] == [run.id]
        with pytest.raises(StoreError, match="unknown run"):
            get_run(store, "nope")
        with pytest.raises(StoreError, match="status must be"):
            update_run(store, run.id, status="weird")


# ----------------------------------------------------------------------------- data


def test_sft_rows_usable_dropped_and_zero(sft_rows: Path, tmp_path: Path) -> None:
    good = sft_rows.read_text().splitlines()
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        "\n".join([good[0], "not json", json.dumps({"key": "x", "rejected": "accuracy"}),
                   json.dumps({"messages": [{"role": "user", "content": "hi"}]}), good[1]]) + "\n"
    )  # fmt: skip
    rows = load_sft_rows([mixed])
    assert len(rows.rows) == 2 and rows.read == 5
    assert rows.dropped == {"not valid JSON": 1, "a rejected job": 1, "no assistant turn": 1}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"key": "x", "rejected": "timeout"}) + "\n")
    with pytest.raises(DataError, match=r"zero usable rows in .*bad.jsonl \(1 read: 1 a rejected"):
        load_sft_rows([bad])


def test_compact_prompt_names_every_tool_and_skill(sft_rows: Path) -> None:
    row = json.loads(sft_rows.read_text().splitlines()[0])
    chat = chat_row(row, system_prompt="compact")
    prompt = chat["messages"][0]["content"]
    assert len(prompt) < len(row["messages"][0]["content"]) / 5
    for spec in row["tools"]:
        assert f"{spec['function']['name']}(" in prompt
    assert "product-qa" in prompt and "<tool_call>" in prompt
    assert chat["messages"][1:] == [{"role": m["role"], "content": m["content"]}
                                    for m in row["messages"][1:]]  # fmt: skip
    assert "tools" not in chat  # prompt protocol: the tools live in the system prompt
    # who the agent is comes from the row's own prompt, the loader from the loader's spec
    assert prompt.startswith('You are Mia, the digital host of "Luma Weekend Live"')
    assert "Skills (load with load_skill before replying): " in prompt
    assert len(prompt) < 900


def test_compact_prompt_of_another_harness_speaks_its_words(tmp_path: Path) -> None:
    """A harness that is not the live room: its compact prompt (SFT rows and RL prompts alike)
    holds no live-room wording, names its own loader however it is called, and says no persona
    it did not write."""
    from core.harness.folder import import_folder
    from core.harness.render import (
        compact_prompt,
        render_compact_system_prompt,
        render_system_prompt,
        tool_specs,
    )

    desk = import_folder(
        Path(__file__).resolve().parents[1] / "resources/examples/order_desk/harness",
        trust_python_hooks=True,
    )
    prompt = render_compact_system_prompt(desk)
    assert "live" not in prompt.lower() and "viewer" not in prompt.lower()
    assert prompt.splitlines()[0].startswith("You are") and prompt.splitlines()[0] in (
        render_system_prompt(desk)
    )
    renamed = desk.model_copy(
        update={"settings": desk.settings.model_copy(update={"load_skill_tool": "fetch_playbook"})}
    )
    specs = tool_specs(renamed)
    assert "(load with fetch_playbook before replying)" in compact_prompt(specs, persona=None)
    assert not compact_prompt(specs, persona=None).startswith("You are")
    messages = [
        {"role": "system", "content": render_system_prompt(desk)},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    row = {"messages": messages, "tools": tool_specs(desk)}
    assert chat_row(row, system_prompt="compact")["messages"][0]["content"] == prompt


def test_prompt_bank_is_ours_and_not_ifeval() -> None:
    from core.train.data import bank_path, load_prompts
    from core.train.prompt_bank import generate

    rows = [json.loads(line) for line in bank_path().read_text().splitlines()]
    assert rows == generate(600, 0)  # the bundled file is reproducible
    assert {r["family"] for r in rows} == {"writing", "explanation", "lists"}
    kinds = {k for r in rows for k in r["constraints"]}
    assert kinds == {"formatting", "length"}
    assert len({r["prompt"] for r in rows}) == 600
    first = load_prompts("bank", max_prompts=3)[0]
    assert first == [{"role": "user", "content": rows[0]["prompt"]}]
    ifeval = require_ifeval()

    def shingles(text: str, n: int = 8) -> set[tuple[str, ...]]:
        words = text.lower().split()
        return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}

    theirs = [json.loads(line)["prompt"] for line in ifeval.read_text().splitlines()]
    seen = set().union(*(shingles(t) for t in theirs))
    assert not any(shingles(r["prompt"]) & seen for r in rows)
    assert not {r["prompt"] for r in rows} & set(theirs)


# ----------------------------------------------------------------------------- RL environment


@pytest.fixture(scope="module")
def rl_env() -> object:
    from core.harness.demo import load_demo_harness
    from core.sim.catalog import load_catalog
    from core.sim.models import Split
    from core.sim.tasks import generate_tasks
    from core.train.rl_env import RlEnvironment

    tasks = generate_tasks(Split.TRAIN, per_category=1)
    return RlEnvironment(load_demo_harness(), load_catalog(), tasks, sampler="hsa",
                         fault_rate=0.3, turn="any", length_budget=32)  # fmt: skip


def test_rl_prompts_use_a_fresh_variant_per_group(rl_env: object) -> None:
    from core.train.rl_env import RlEnvironment

    assert isinstance(rl_env, RlEnvironment)
    prompts, dropped = rl_env.build_prompts(24)
    assert len(prompts) == 24 and not dropped
    first_task = prompts[0].task.id
    again = [p for p in rl_env.build_prompts(24 + len(rl_env.tasks))[0] if p.task.id == first_task]
    assert len(again) >= 2 and len({p.variant_seed for p in again}) == len(again)
    assert again[0].messages[0] != again[1].messages[0]  # another surface, another prompt
    assert {p.turn for p in prompts} != {1}  # turns beyond the first are sampled too
    row = prompts[0].row()
    assert set(row) == {"prompt", "key", "task", "variant_seed", "turn"}


def test_rl_rewards_grade_the_sampled_turn(rl_env: object) -> None:
    from core.runtime.trace import ModelCallStep
    from core.train.rl_env import COMPONENTS, RewardCache, RlEnvironment, reward_functions

    assert isinstance(rl_env, RlEnvironment)
    prompts, _ = rl_env.build_prompts(12)
    funcs = reward_functions(RewardCache(rl_env))
    assert [f.__name__ for f in funcs] == list(COMPONENTS)
    for prompt in prompts:
        gold = rl_env.score(prompt.task, prompt.variant_seed, prompt.turn, "", 0)
        # The oracle's own output at that turn: regenerate it from the gold trace.
        trace = rl_env.gold_trace(prompt.task, prompt.variant_seed)
        step = [s for s in trace.steps_of(ModelCallStep) if s.error is None][prompt.turn - 1]
        good = rl_env.score(prompt.task, prompt.variant_seed, prompt.turn, step.raw_output, 8)
        assert good.scores["accuracy"] == 1.0 and not good.turn_failed, (prompt.key, good.reasons)
        assert good.scores["length"] == 0.0
        bad = rl_env.score(prompt.task, prompt.variant_seed, prompt.turn,
                           "<tool_call>{not json</tool_call>", 64)  # fmt: skip
        assert bad.turn_failed and bad.scores["accuracy"] == 0.0
        assert bad.scores["effectiveness"] == 0.0
        assert bad.scores["length"] == -1.0  # 64 tokens, budget 32
        assert gold.scores["accuracy"] <= good.scores["accuracy"]
    # Through the GRPO reward-function interface (one score per completion, columns by name).
    columns = {k: [prompts[0].row()[k]] * 2 for k in ("task", "variant_seed", "turn")}
    values = [f(prompts=[None, None], completions=[[{"role": "assistant", "content": "hi"}]] * 2,
                completion_ids=[[1, 2], [1] * 40], **columns) for f in funcs]  # fmt: skip
    assert all(len(v) == 2 for v in values)
    assert values[-1] == [0.0, -0.25]


def test_rl_faults_are_injected(rl_env: object) -> None:
    from core.train.rl_env import RlEnvironment

    assert isinstance(rl_env, RlEnvironment)
    prompts, _ = rl_env.build_prompts(40)
    texts = [m["content"] for p in prompts for m in p.messages if m["role"] == "user"]
    assert any('"error"' in t and "kind" in t for t in texts)


# ----------------------------------------------------------------------------- CLI


def test_cli_rejects_bad_configs_before_launch(tmp_path: Path) -> None:
    path = tmp_path / "rl.yaml"
    path.write_text(yaml.safe_dump({"model": "m", "num_generations": 3, "use_vllm": True,
                                    "per_device_batch_size": 4, "lerning_rate": 1}))  # fmt: skip
    code, out = hat("train", "rl", "--config", str(path))
    assert code == 1 and "rl.lerning_rate: unknown key" in out
    path.write_text(yaml.safe_dump({"model": "m", "num_generations": 3, "use_vllm": True,
                                    "per_device_batch_size": 4}))  # fmt: skip
    code, out = hat("train", "rl", "--config", str(path))
    assert code == 1
    assert "rl.num_generations" in out and "rl.use_vllm" in out
    code, out = hat("train", "list")
    assert code == 0 and "no training runs" in out  # nothing was created


def test_cli_show_command_and_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("")
    path = tmp_path / "sft.yaml"
    path.write_text(yaml.safe_dump({"model": "m", "data": [str(data)]}))
    code, out = hat("train", "sft", "--config", str(path), "--show-command")
    assert code == 0, out
    assert "-m training sft --config " in out and "--run-dir " in out
    monkeypatch.setenv("HAT_GPU_COUNT", "8")
    code, out = hat("train", "sft", "--config", str(path), "--show-command", "--num-gpus", "8",
                    "--distributed", "fsdp2", "--num-machines", "2", "--machine-rank", "0",
                    "--main-process-ip", "10.1.2.3")  # fmt: skip
    assert code == 0, out
    assert "accelerate.commands.launch --config_file" in out and "--num_processes 16" in out
    assert "fsdp_version: 2" in out
    code, out = hat("train", "schema", "rl")
    assert code == 0 and "num_generations" in json.loads(out)["properties"]


def test_zero_usable_rows_fails_the_run_with_the_reason(tmp_path: Path) -> None:
    """A real child (`python -m training sft`) fails before it even imports torch."""
    from core.train.runs import prepare, start, watch

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    data = tmp_path / "rejects.jsonl"
    data.write_text(json.dumps({"key": "t#v0", "rejected": "accuracy"}) + "\n")
    config = parse_stage({"model": str(folder), "data": [str(data)]}, "sft")
    with Store.open() as store:
        run = prepare(store, config, CPU)
        assert run.status == "created" and run.dataset_hash and run.code_revision
        proc = start(store, run.id)
        run = watch(store, run.id, proc, poll_s=0.1)
        assert run.status == "failed" and run.exit_code == 3
        assert run.reason is not None and run.reason.startswith("data: zero usable rows in")
        assert "1 a rejected job" in run.reason
        # the Log tab shows the child's last lines: the reason is among them (#35 item 1)
        log = (Path(run.run_dir) / "child.log").read_text()
        assert "failed: data: zero usable rows in" in log
        phases = [e["phase"] for e in run_events(store, run.id, kind="phase")]
        assert phases == ["loading", "failed"]
        assert run.packages.get("hat-studio")


def test_killed_child_is_failed_with_the_reason(tmp_path: Path) -> None:
    """A child that dies without a final event (SIGKILL) is failed with the signal named."""
    from core.train.runs import finalize, prepare

    folder = tmp_path / "model"
    folder.mkdir()
    data = tmp_path / "d.jsonl"
    data.write_text("")
    with Store.open() as store:
        run = prepare(store, parse_stage({"model": str(folder), "data": [str(data)]}, "sft"), CPU)
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        update_run(store, run.id, status="running", pid=proc.pid)
        proc.kill()
        code = proc.wait()
        run = finalize(store, run.id, code)
        assert run.status == "failed"
        assert run.reason is not None and "killed by SIGKILL" in run.reason
        assert os.path.isdir(run.run_dir)


def test_cli_list_status_stop_and_resume_refusals(tmp_path: Path) -> None:
    from core.paths import runs_dir

    run_dir = runs_dir() / "sft-20261130-000000-aaaaaa"
    writer = EventWriter(run_dir)
    writer.phase("loading")
    writer.emit("log", step=1, total=4, loss=1.25, learning_rate=1e-4, elapsed_s=3, eta_s=9)
    writer.phase("failed", reason="data: zero usable rows in x.jsonl")
    writer.close()
    with Store.open() as store:
        add_run(store, RunRecord(id=run_dir.name, stage="sft", status="running", pid=None,
                                 config="model: m\n", run_dir=str(run_dir)))  # fmt: skip
    code, out = hat("train", "list")
    assert code == 0 and run_dir.name in out and "failed" in out  # the dead child is noticed
    code, out = hat("train", "status", "sft-2026")
    assert code == 0
    assert "status failed" in out and "reason: data: zero usable rows" in out
    assert "step 1/4" in out and "loss 1.25" in out
    code, out = hat("train", "stop", run_dir.name)
    assert code == 1 and "is not running (failed)" in out
    code, out = hat("train", "resume", run_dir.name)
    assert code == 1 and "has no checkpoint to resume from" in out
    code, out = hat("train", "status", "nope")
    assert code == 1 and "unknown run" in out


def test_pipeline_stops_at_a_failed_stage(tmp_path: Path) -> None:
    from core.train.pipeline import run_pipeline

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    data = tmp_path / "empty.jsonl"
    data.write_text("\n")
    config = parse_pipeline({"model": str(folder), "sft": {"data": [str(data)]}, "opd": {},
                             "rl": {"sampler": "identity"}})  # fmt: skip
    with Store.open() as store:
        run = run_pipeline(store, config, CPU)
        assert run.status == "failed"
        assert run.reason is not None and "stage sft" in run.reason
        assert "data: zero usable rows" in run.reason
        stages = list_runs(store, parent=run.id)
        assert [(s.stage, s.status) for s in stages] == [("sft", "failed")]  # OPD, RL not started
        assert run.outputs["stages"] == [stages[0].id]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"stage: sft\nlr: [1\n", r"bad\.yaml, line 3, column 1: not valid YAML: expected ','"),
        (b"name: caf\xe9\n", r"bad\.yaml: not UTF-8 text \(byte 9\)"),
        (b"lr: " + b"9" * 5000 + b"\n", r"bad\.yaml: not valid YAML: ValueError"),
        (b"[" * 5000, r"bad\.yaml(, line \d+, column \d+)?: not valid YAML"),
    ],
)
def test_a_config_file_that_does_not_parse_names_the_file_and_place(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        load_config(path, "sft")
    assert len(info.value.lines()) == 1
    assert re.search(expected, info.value.lines()[0]), info.value.lines()


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8")))
def test_any_config_file_gives_a_config_or_a_config_error(
    tmp_path_factory: pytest.TempPathFactory, content: bytes
) -> None:
    """Whatever bytes a user's config holds, loading it never raises anything but a
    ConfigError (which the CLI and the studio show as problems)."""
    path = tmp_path_factory.mktemp("cfg") / "config.yaml"
    path.write_bytes(content)
    try:
        config = load_config(path, "sft")
    except ConfigError as exc:
        assert exc.lines() and all(line.startswith("config") or ":" in line for line in exc.lines())
    else:
        assert isinstance(config, SftConfig)


def write_child_log(run_dir: Path, script: str) -> None:
    """A child's real output in the run's log file, stdout and stderr together, as runs log it."""
    from core.train.runs import LOG_FILE

    with (run_dir / LOG_FILE).open("wb") as log:
        subprocess.run([sys.executable, "-u", "-c", script], cwd=run_dir, stdout=log,
                       stderr=subprocess.STDOUT, check=True)  # fmt: skip


def test_a_failed_runs_reason_leaves_python_warnings_out(tmp_path: Path) -> None:
    """A failed run's reason quotes the log's last lines; a library's FutureWarning there
    (TRL reading a deprecated transformers property) read as the cause of the failure. The
    log file keeps it."""
    from core.train.runs import LOG_FILE, log_tail

    (tmp_path / "lib.py").write_text(
        "import warnings\n\n\ndef old():\n    warnings.warn(\n        'old() is deprecated',"
        " FutureWarning\n    )\n"
    )
    script = "import lib; print('step 2 done'); lib.old(); print('step 3 done')"
    write_child_log(tmp_path, script)
    assert "FutureWarning" in (tmp_path / LOG_FILE).read_text()
    assert log_tail(tmp_path).splitlines() == ["step 2 done", "step 3 done"]


def test_a_killed_runs_reason_leaves_progress_bars_and_metric_lines_out(tmp_path: Path) -> None:
    """A run killed while nobody watched has no traceback; its reason quoted the last lines
    of the log, which were tqdm bars and the trainer's printed loss dicts (the charts show
    those). The reason keeps what the child said besides them; the log file keeps it all."""
    from core.train.runs import LOG_FILE, log_tail

    script = (
        "import sys, time; from tqdm import tqdm\n"
        "print('Loading the model from /models/demo')\n"
        "for _ in tqdm(range(3), desc='Loading weights', mininterval=0): time.sleep(0.01)\n"
        "print({'loss': '0.1236', 'grad_norm': '0.5375', 'epoch': '0.75'})\n"
        "print({'train/reward': '0.5', 'eval_loss': '0.2'})\n"
        "for _ in tqdm(range(2), desc='Truncating train dataset', mininterval=0): pass\n"
    )
    write_child_log(tmp_path, script)
    text = (tmp_path / LOG_FILE).read_text()
    assert "100%|" in text and "'loss'" in text
    assert log_tail(tmp_path).splitlines() == ["Loading the model from /models/demo"]


# ------------------------------------------------------------------------- balanced HSA-SFT rows


def _row(category: str, index: int, skill: str = "product-qa") -> dict[str, Any]:
    return {
        "key": f"{category}-{index}",
        "category": category,
        "provenance": {"variant": {"index": index % 4}},
        "tools": [{"type": "function", "function": {"name": "load_skill"}}],
        "trajectory": {"turns": [{"tool_calls": [
            {"name": "load_skill", "arguments": {"name": skill}},
            {"name": "get_price", "arguments": {"name": "x"}},
        ]}]},
    }  # fmt: skip


@given(
    sizes=st.dictionaries(st.sampled_from(["price", "after_sales", "chit_chat", "spec"]),
                          st.integers(1, 30), min_size=1),
    weight=st.integers(1, 4),
    seed=st.integers(0, 1000),
)  # fmt: skip
@settings(max_examples=60, deadline=None)
def test_balanced_rows_give_every_category_the_largest_ones_count(
    sizes: dict[str, int], weight: int, seed: int
) -> None:
    from core.train.data import balance_rows

    rows = [_row(c, i) for c, n in sizes.items() for i in range(n)]
    out = balance_rows(rows, seed=seed, original_weight=weight)
    counts = Counter(r["category"] for r in out)
    weighted = {c: sum(weight if i % 4 == 0 else 1 for i in range(n)) for c, n in sizes.items()}
    assert set(counts.values()) == {max(weighted.values())}
    # every row is still there, and originals at least `weight` times
    assert {r["key"] for r in out} == {r["key"] for r in rows}
    for category in sizes:
        if weighted[category] == max(weighted.values()):
            originals = [r for r in out if r["category"] == category and r["key"].endswith("-0")]
            assert len(originals) == weight
    # the first len(sizes) rows cover every category (interleaved), and the draw is seeded
    assert {r["category"] for r in out[: len(sizes)]} == set(sizes)
    assert out == balance_rows(rows, seed=seed, original_weight=weight)


@given(
    tasks=st.dictionaries(st.sampled_from(["price", "spec", "stock", "after_sales", "chit_chat"]),
                          st.integers(1, 6), min_size=2),
    seed=st.integers(0, 1000),
)  # fmt: skip
@settings(max_examples=60, deadline=None)
def test_balanced_by_skill_gives_every_original_reply_skill_the_same_count(
    tasks: dict[str, int], seed: int
) -> None:
    """Rows are grouped by the skill their task loads under the original harness: a variant
    row that loads a renamed skill counts as that skill."""
    from core.train.data import balance_rows

    skill_of = {"price": "product-qa", "spec": "product-qa", "stock": "product-qa",
                "after_sales": "after-sales", "chit_chat": "chit-chat"}  # fmt: skip
    rows = []
    for category, n in tasks.items():
        for t in range(n):
            for v in range(4):  # the original and three variants, the skill renamed in each
                row = _row(category, v, skill=skill_of[category] if v == 0 else f"x{t}{v}")
                row["key"] = f"{category}-{t}-{v}"
                row["task_id"] = f"{category}-{t}"
                rows.append(row)
    out = balance_rows(rows, seed=seed, by_category=False, by_skill=True)
    per_skill = Counter(skill_of[r["category"]] for r in out)
    assert len(set(per_skill.values())) == 1, per_skill
    wanted = Counter(skill_of[c] for c, n in tasks.items() for _ in range(4 * n))
    assert set(per_skill.values()) == {max(wanted.values())}
    assert {r["key"] for r in out} == {r["key"] for r in rows}
    assert out == balance_rows(rows, seed=seed, by_category=False, by_skill=True)


def test_row_shares_count_the_skill_loads_not_other_name_arguments() -> None:
    from core.train.data import row_shares

    rows = [_row("price", 0), _row("price", 1), _row("after_sales", 0, skill="after-sales")]
    shares = row_shares(rows)
    assert shares["skill"] == {"after-sales": 0.3333, "product-qa": 0.6667}
    assert shares["category"]["price"] == 0.6667 and shares["original"]["rows"] == 0.6667


def test_rl_records_the_harness_its_child_trains_on(hat_home: Path, tmp_path: Path) -> None:
    """#36 item 2: an RL run without a harness trains on live-host@production (the one rule
    of core/store/harness_ref.py, which training/rl.py's load_harness calls); its record names
    that stored version, not the bundled demo's hash. A folder and an unstored home keep a
    content hash of what was read."""
    from core.harness import export_folder
    from core.harness.demo import load_demo_harness
    from core.train.runs import _provenance

    rl = parse_stage({"model": "m"}, "rl")
    with Store.open() as store:
        demo_version, _ = _provenance(store, rl)
        assert demo_version is not None and demo_version.startswith("demo:")
        edited = load_demo_harness()
        edited.skills[0].body += "\nAsk before you answer."
        head = store.commit(load_demo_harness(), "as shipped")
        production = store.commit(edited, "edited")
        store.tag("production", production.id)
        assert _provenance(store, rl)[0] == production.id != head.id
        export_folder(edited, tmp_path / "h")
        folder = parse_stage({"model": "m", "harness": str(tmp_path / "h")}, "rl")
        version = _provenance(store, folder)[0]
        assert version is not None and version.startswith("folder:") and version != demo_version
        stored = parse_stage({"model": "m", "harness": head.id}, "rl")
        assert _provenance(store, stored)[0] == head.id
