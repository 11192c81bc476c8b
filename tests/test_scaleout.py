"""Scale-out: several training processes under `accelerate launch`, and the launch checks.

Fast: the commands and accelerate configs generated for CPU processes (DDP over gloo), the
global batch over processes, and the bad input the form and the CLI refuse before a launch
(more CPU processes than cores, a process count that is not the GPU count, FSDP2 / ZeRO-3
on CPU processes or on one GPU, a multi-node run without the rank-0 address).

Slow (the real thing, on the real demo model): `hat train sft` with `launch.num_processes: 2`
runs two CPU processes under `accelerate launch` (torchrun, gloo); its losses equal a
one-process run of the same global batch, step by step, through a stop and a resume; only
rank 0 writes the run's event stream and saves; rank 1 ran every step (its own stream);
a cancel ends both processes.

Why the two runs are comparable (and what the tolerance covers): both have global batch 4
from `per_device_batch_size` 2 (one process: 2 x 1 x 2 accumulation; two processes: 2 x 2 x
1). The Trainer's sampler draws the same seeded permutation in both; accelerate's batch
sampler shard hands rank r the micro-batches r, r + 2, ..., so optimizer step k sees
micro-batches 2k and 2k + 1 in both runs: the same rows, padded the same way. The loss is
normalised by the label tokens of the whole global batch (counted over accumulation steps,
and over ranks), so the gradient is the same sum. fp32, LoRA dropout 0, constant LR: what
remains is summation order (the all-reduce against accumulation, one thread per process
against two), ~1e-6 relative per step. The check allows 1e-3 relative; measured on this
2-core machine the losses were bit-identical. A wrong sharding would not pass: two rows a
step instead of four, or both ranks on the same rows, change the very first loss by tens of
percent (each row's assistant-token loss differs that much).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store
from core.train.config import ConfigError, parse_stage
from core.train.events import effective_logs, events_path, read_events
from core.train.launch_checks import Environment, batch_plan, check_launch, detect_environment
from core.train.scaleout import stage_command
from studio.logic.train_forms import field_errors, form_fields, split_problem

CPU2 = Environment(gpus=0, cpu_count=2)
GPUS2 = Environment(gpus=2, gpu_names=("GPU 0", "GPU 1"), cpu_count=16)
runner = CliRunner()


def sft(**extra: Any) -> Any:
    return parse_stage({"model": "m", "data": [__file__], **extra}, "sft")


def problems(config: Any, env: Environment) -> list[str]:
    return check_launch(config, env)


# ----------------------------------------------------------------------------- fast


def test_two_cpu_processes_run_under_accelerate_with_gloo(tmp_path: Path) -> None:
    config = sft(launch={"num_processes": 2}, precision="fp32")
    assert problems(config, CPU2) == []
    argv, acc = stage_command(config, CPU2, python="py", config_path=tmp_path / "c.yaml",
                              run_dir=tmp_path)  # fmt: skip
    assert argv[:12] == [
        "py", "-m", "accelerate.commands.launch",
        "--config_file", str(tmp_path / "accelerate.yaml"),
        "--num_processes", "2", "--num_machines", "1", "--machine_rank", "0", "--multi_gpu",
    ]  # fmt: skip
    assert argv[12:14] == ["--num_cpu_threads_per_process", "1"]  # 2 cores / 2 processes
    assert argv[14:] == ["-m", "training", "sft", "--config", str(tmp_path / "c.yaml"),
                         "--run-dir", str(tmp_path)]  # fmt: skip
    assert acc is not None
    assert acc["distributed_type"] == "MULTI_CPU" and acc["use_cpu"] is True
    assert acc["num_processes"] == 2 and acc["mixed_precision"] == "no"
    # precision auto follows the CPU: bf16 where it is native, none where it is emulated
    auto = sft(launch={"num_processes": 2})
    bf16 = Environment(gpus=0, cpu_count=4, cpu_bf16=True)
    assert stage_command(auto, bf16, python="py", config_path=tmp_path, run_dir=tmp_path)[1][
        "mixed_precision"
    ] == "bf16"  # fmt: skip
    argv4 = stage_command(auto, bf16, python="py", config_path=tmp_path, run_dir=tmp_path)[0]
    assert argv4[argv4.index("--num_cpu_threads_per_process") + 1] == "2"  # 4 cores / 2
    # one process stays plain python; so does the default
    for one in (sft(launch={"num_processes": 1}), sft()):
        argv, acc = stage_command(one, CPU2, python="py", config_path=tmp_path, run_dir=tmp_path)
        assert acc is None and argv[:3] == ["py", "-m", "training"]


def test_global_batch_is_per_device_times_processes_times_accumulation() -> None:
    for processes, accumulation in ((1, 2), (2, 1)):
        config = sft(per_device_batch_size=2, global_batch_size=4,
                     launch={"num_processes": processes})  # fmt: skip
        plan = batch_plan(config, CPU2)
        assert (plan.processes, plan.per_device, plan.accumulation) == (processes, 2, accumulation)
        assert plan.global_batch == 4
    # without global_batch_size the three numbers multiply
    plan = batch_plan(sft(per_device_batch_size=2, gradient_accumulation_steps=3,
                          launch={"num_processes": 2}), CPU2)  # fmt: skip
    assert plan.global_batch == 12
    odd = sft(per_device_batch_size=2, global_batch_size=6, launch={"num_processes": 2})
    assert "sft.global_batch_size: 6 is not a multiple of per_device_batch_size 2 x 2" in (
        "\n".join(problems(odd, CPU2))
    )


def test_more_cpu_processes_than_cores_is_refused() -> None:
    text = problems(sft(launch={"num_processes": 3}), CPU2)
    assert text == [
        "sft.launch.num_processes: 3 CPU processes on 2 core(s): each process needs a core of "
        "its own (at most 2 here)"
    ]
    # device cpu on a GPU machine counts its cores too
    assert problems(sft(launch={"device": "cpu", "num_processes": 16}), GPUS2) == []
    assert (
        "17 CPU processes on 16 core(s)"
        in problems(sft(launch={"device": "cpu", "num_processes": 17}), GPUS2)[0]
    )


def test_gpu_processes_are_one_per_gpu() -> None:
    assert problems(sft(launch={"num_processes": 2}), GPUS2) == []
    text = problems(sft(launch={"num_processes": 3}), GPUS2)
    assert text == [
        "sft.launch.num_processes: 3 processes with 2 GPU(s): accelerate runs one process per "
        "GPU; choose the GPUs (num_gpus) instead"
    ]


def test_fsdp2_and_zero3_on_cpu_processes_are_refused_with_the_reason() -> None:
    """Measured here (accelerate 1.16, torch 2.13 CPU): an FSDP2 accelerate config on two CPU
    processes does not fail; it trains plain DDP (`distributed_type` MULTI_CPU, the model not
    wrapped), because accelerate's state turns FSDP on only for GPU-type devices. A config that
    says FSDP2 and silently is not would be worse than an error, so the check refuses it."""
    config = sft(launch={"num_processes": 2, "distributed": "fsdp2"}, method="full")
    text = "\n".join(problems(config, CPU2))
    assert "sft.launch.distributed: fsdp2 needs a GPU and this machine has none" in text
    assert "builds FSDP only for GPU-type devices" in text and "MULTI_CPU" in text
    assert "distributed auto (DDP over gloo)" in text
    text = "\n".join(problems(sft(launch={"num_processes": 2, "distributed": "zero3"}), CPU2))
    assert "zero3 needs a GPU" in text and "DeepSpeed on only off the CPU" in text
    text = "\n".join(problems(sft(launch={"num_processes": 2, "distributed": "multi_gpu"}), CPU2))
    assert "DDP over gloo with distributed auto" in text
    # the CPU chosen on a GPU machine: the same refusal
    text = "\n".join(
        problems(sft(launch={"device": "cpu", "num_processes": 2, "distributed": "fsdp2"}), GPUS2)
    )
    assert "fsdp2 with the CPU chosen" in text


def test_sharding_needs_more_than_one_process() -> None:
    text = problems(sft(launch={"num_gpus": 1, "distributed": "fsdp2"}), GPUS2)
    assert text == [
        "sft.launch.distributed: fsdp2 shards the model across processes and this run has one "
        "(one GPU): use auto, or more GPUs"
    ]
    # LoRA under FSDP2 on several GPUs is accepted: PEFT documents LoRA + FSDP (the frozen
    # base is sharded too), so it is not refused
    assert problems(sft(launch={"distributed": "fsdp2"}), GPUS2) == []


def test_multi_node_needs_the_rank_0_address_under_its_field() -> None:
    with pytest.raises(ConfigError) as exc:
        sft(launch={"num_machines": 2, "machine_rank": 1})
    specs = form_fields(type(sft()), exclude={"stage"})
    found, other = field_errors(exc.value.problems, specs, prefix="sft")
    assert other == []
    assert found["launch.main_process_ip"].startswith(
        "main_process_ip is required for a multi-node run (num_machines > 1)"
    )
    with pytest.raises(ConfigError) as exc:
        sft(launch={"machine_rank": 1})
    found, _ = field_errors(exc.value.problems, specs, prefix="sft")
    assert found == {"launch.machine_rank": "machine_rank 1 must be below num_machines 1"}
    # a check_launch line lands under its field too
    line = problems(sft(launch={"num_processes": 3}), CPU2)[0]
    found, _ = field_errors([split_problem(line)], specs, prefix="sft")
    assert list(found) == ["launch.num_processes"]


def test_cli_refuses_bad_process_counts_before_launch(tmp_path: Path) -> None:
    path = tmp_path / "sft.yaml"
    path.write_text(f"model: m\ndata: [{__file__}]\n")
    cores = len(os.sched_getaffinity(0))
    result = runner.invoke(app, ["train", "sft", "--config", str(path), "--num-processes",
                                 str(cores + 1)])  # fmt: skip
    assert result.exit_code == 1
    assert f"sft.launch.num_processes: {cores + 1} CPU processes on {cores} core(s)" in (
        " ".join(result.output.split())
    )
    result = runner.invoke(app, ["train", "list"])
    assert "no training runs" in result.output  # nothing was created
    if cores >= 2:
        result = runner.invoke(app, ["train", "sft", "--config", str(path), "--num-processes",
                                     "2", "--show-command"])  # fmt: skip
        assert result.exit_code == 0, result.output
        out = " ".join(result.output.split())
        assert "accelerate.commands.launch --config_file" in out and "--multi_gpu" in out
        assert "distributed_type: MULTI_CPU" in out and "use_cpu: true" in out


# ----------------------------------------------------------------------------- slow


def _rows(folder: Path, count: int) -> Path:
    """`count` real SFT rows from the oracle teacher (no model involved)."""
    out = folder / f"sft{count}.jsonl"
    result = runner.invoke(
        app,
        ["data", "generate", "--teacher", "oracle", "--tasks", "train", "--per-category", "1",
         "--variants", "1", "--sampler", "hsa", "--limit", str(count), "--out", str(out),
         "-j", "1", "--recovery", "0"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == count
    return out


MAX_LENGTH = 384


def _config(data: Path, processes: int, **extra: Any) -> Any:
    return parse_stage(
        {
            "model": "smollm2-135m-instruct",
            "data": [str(data)],
            "system_prompt": "compact",
            # every row is cut at MAX_LENGTH (no padding), and each keeps assistant tokens
            # inside it: a row without any would be dropped, the sharding of the rest would
            # differ between one and two processes, and the curves with it
            "max_length": MAX_LENGTH,
            "per_device_batch_size": 2,
            "global_batch_size": 4,
            "max_steps": 3,
            "learning_rate": 2e-3,
            "lr_scheduler": "constant",
            "precision": "fp32",
            "lora": {"dropout": 0.0},
            "save_steps": 100,
            "launch": {"num_processes": processes},
            **extra,
        },
        "sft",
    )


def _wait(path: Path, proc: Any, ready: Any, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if ready(read_events(path)[0]):
            return
        time.sleep(0.1)
    raise AssertionError("the event did not come before the child ended or the deadline")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def no_orphans() -> Any:
    yield
    from core.store.training import list_runs

    with Store.open() as store:
        for run in list_runs(store):
            if run.pid is not None and not run.finished:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(run.pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two CPU processes need two cores")
def test_two_process_sft_matches_one_process_through_stop_and_resume(
    tmp_path: Path, no_orphans: None
) -> None:
    from core.models import add_folder
    from core.store.training import run_events
    from core.train.runs import cancel, prepare, resume, run_stage, start, stop, watch
    from tests.test_training import demo_folder

    env = detect_environment()
    data = _rows(tmp_path, 8)
    with Store.open() as store:
        add_folder(store, "smollm2-135m-instruct", demo_folder())
        single = run_stage(store, _config(data, 1), env)
        assert single.status == "done", single.reason
        one = {e["step"]: e["loss"] for e in run_events(store, single.id, kind="log")}
        assert sorted(one) == [1, 2, 3]

        run = prepare(store, _config(data, 2, output_name="ddp2"), env)
        assert run.command is not None and "--multi_gpu" in run.command
        run_dir = Path(run.run_dir)
        path = events_path(run_dir)
        proc = start(store, run.id)
        _wait(path, proc, lambda ev: any(e["event"] == "log" for e in ev))
        stop(store, run.id)  # both ranks must leave at the same step (rank 0's flag, broadcast)
        run = watch(store, run.id, proc)
        assert run.status == "stopped", run.reason
        stopped_at = run.step
        assert 1 <= stopped_at < 3 and Path(run.outputs["adapter"]).is_dir()
        assert run.outputs["registered"] == ["ddp2"]
        proc = resume(store, run.id)
        run = watch(store, run.id, proc)
        assert run.status == "done", run.reason
        assert run.outputs["registered"] == ["ddp2"]

        events, _ = read_events(path)
        two = {e["step"]: e["loss"] for e in effective_logs(events)}
        assert sorted(two) == [1, 2, 3]
        for step, loss in one.items():
            assert two[step] == pytest.approx(loss, rel=1e-3), (step, one, two)
        assert two[3] < 0.5 * two[1]  # it learned, in both
        # rank 0 wrote the run's stream: it says two gloo processes, DDP on the CPU
        infos = [e for e in events if e["event"] == "info" and "distributed_type" in e]
        assert infos and all(e["distributed_type"] == "MULTI_CPU" for e in infos)
        assert {(e["num_processes"], e["process_index"], e["backend"]) for e in infos} == {
            (2, 0, "gloo")
        }
        # global batch 4 = 2 rows per process x 2 processes: 4 rows of MAX_LENGTH a step
        # (TRL's token count starts again at a resume, so the steps before the stop)
        tokens = [e["metrics"]["num_tokens"] for e in effective_logs(events)][:stopped_at]
        assert tokens == [4.0 * MAX_LENGTH * step for step in range(1, stopped_at + 1)]
        # rank 1 ran every step (its own stream, not the run's): two launches, steps 1..3
        rank1 = _lines(run_dir / "rank-1.jsonl")
        assert [e["rank"] for e in rank1 if "packages" in e] == [1, 1]
        assert {e["step"] for e in rank1 if e["event"] == "log"} == {1, 2, 3}
        pids = {e["pid"] for e in events if "packages" in e} | {
            e["pid"] for e in rank1 if "packages" in e
        }
        assert len(pids) == 4  # two processes per launch, two launches
        # only rank 0 writes: one event stream, one adapter folder, checkpoints in one place
        assert sorted(p.name for p in run_dir.glob("*.jsonl")) == ["events.jsonl", "rank-1.jsonl"]
        assert not any(e["event"] == "output" for e in rank1)

        # cancel: both processes end at once, nothing saved
        run = prepare(store, _config(data, 2, max_steps=50), env)
        proc = start(store, run.id)
        _wait(events_path(Path(run.run_dir)), proc, lambda ev: any(e["event"] == "log" for e in ev))
        cancel(store, run.id)
        run = watch(store, run.id, proc)
        assert run.status == "cancelled", run.reason
        assert run.step < 50 and not (Path(run.run_dir) / "adapter").exists()
        phases = [e["phase"] for e in _lines(Path(run.run_dir) / "rank-1.jsonl")
                  if e["event"] == "phase"]  # fmt: skip
        assert phases[-1] == "cancelled"  # rank 1 left the loop at the same step
