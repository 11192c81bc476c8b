"""Estimates before a launch (#37 item 3): the memory a stage needs, derived from the model's
config (core/train/estimate.py), refused with both numbers when it exceeds what the machine
has free (core/train/launch_checks.py, `hat train`), and the time from a short warm-up of the
stage itself (`hat train estimate`).

The arithmetic is checked as properties (hypothesis): more tokens, rows or rank never need less,
gradient checkpointing keeps fewer activations, the sliced head fewer logits. The refusal and
the warm-up run the real demo model (tests/test_training.py's fixtures)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store
from core.store.training import list_runs
from core.train.config import SftConfig
from core.train.estimate import (
    GIB,
    EstimateError,
    MachineMemory,
    ModelShape,
    _meminfo,
    _wait,
    estimate_memory,
    fit_problem,
    shape_from_config,
)
from tests.test_training import BASE, demo_folder, rows  # noqa: F401 - rows is a fixture

runner = CliRunner()
BIG = MachineMemory("cpu", 1 << 50, 1 << 50)
SMOL = {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
        "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64,
        "vocab_size": 49152, "tie_word_embeddings": True}  # fmt: skip
LLAMA2_7B = {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
             "num_attention_heads": 32, "vocab_size": 32000,
             "tie_word_embeddings": False}  # fmt: skip


def sft(**values: Any) -> SftConfig:
    return SftConfig(**{"model": "m", "lm_head_loss": "sliced", **values})


def test_the_shape_comes_from_the_config_not_the_name() -> None:
    assert shape_from_config(SMOL).computed_parameters() == 134_515_008  # the demo's safetensors
    llama = shape_from_config(LLAMA2_7B)
    assert llama.kv_heads == 32 and llama.head_dim == 128
    assert abs(llama.computed_parameters() - 6_738_415_616) < 1e6  # Llama-2-7B's count
    # all-linear LoRA r=16 on Llama-2-7B: PEFT reports 39,976,960 trainable parameters
    assert llama.lora_parameters(16, "all-linear") == 39_976_960
    assert llama.lora_parameters(16, ["q_proj", "v_proj"]) == 32 * 16 * (4096 * 2 + 4096 * 2)
    with pytest.raises(EstimateError, match="hidden_size"):
        shape_from_config({"num_hidden_layers": 2})


@given(
    length=st.integers(16, 8192),
    more=st.integers(1, 4096),
    batch=st.integers(1, 16),
    rank=st.sampled_from([1, 4, 8, 16, 64, 256]),
    big=st.booleans(),
)
def test_memory_is_monotone_in_length_batch_and_rank(
    length: int, more: int, batch: int, rank: int, big: bool
) -> None:
    shape = shape_from_config(LLAMA2_7B if big else SMOL)

    def total(**values: Any) -> int:
        config = sft(**{"max_length": length, "per_device_batch_size": batch,
                        "lora": {"r": rank}, **values})  # fmt: skip
        return estimate_memory(shape, config, BIG).total_bytes

    base = total()
    assert total(max_length=length + more) > base
    assert total(per_device_batch_size=batch + 1) > base
    assert total(lora={"r": rank * 2}) > base
    assert total(method="full") > base


@given(length=st.integers(64, 8192), batch=st.integers(1, 8))
def test_checkpointing_and_the_sliced_head_lower_what_they_say(length: int, batch: int) -> None:
    shape = shape_from_config(SMOL)

    def parts(trained: int | None = None, **values: Any) -> dict[str, int]:
        config = sft(max_length=length, per_device_batch_size=batch, **values)
        return estimate_memory(shape, config, BIG, trained_tokens=trained).parts

    plain = parts()
    checkpointed = parts(gradient_checkpointing=True)
    assert checkpointed["activations"] < plain["activations"]
    assert checkpointed["weights"] == plain["weights"]
    sliced = parts(trained=max(1, length // 8))
    assert sliced["logits"] < plain["logits"]  # unknown trained positions: every one
    trl = parts(trained=max(1, length // 8), lm_head_loss="trl")
    assert trl["logits"] == plain["logits"]


def test_bf16_halves_the_weights_and_processes_share_the_ram() -> None:
    from core.train.launch_checks import Environment

    shape = shape_from_config(SMOL)
    bf16 = estimate_memory(shape, sft(), BIG, env=Environment(cpu_bf16=True))
    fp32 = estimate_memory(shape, sft(), BIG, env=Environment(cpu_bf16=False))
    assert fp32.dtype == "fp32" and bf16.dtype == "bf16"
    assert fp32.parts["weights"] == 2 * bf16.parts["weights"] == 4 * shape.parameter_count
    two = estimate_memory(shape, sft(), BIG, env=Environment(cpu_bf16=True), processes=2)
    assert two.total_bytes == 2 * bf16.total_bytes


def test_a_run_over_the_free_memory_is_refused_with_both_numbers() -> None:
    shape = ModelShape(hidden=64, intermediate=128, layers=2, heads=4, kv_heads=4, head_dim=16,
                       vocab=1000)  # fmt: skip
    small = MachineMemory("cpu", 4 * GIB, 1 * GIB)
    config = sft(max_length=64, per_device_batch_size=1)
    fits = estimate_memory(shape, config, small, overhead_bytes=0)
    assert fits.fits and fit_problem(fits) is None
    over = estimate_memory(shape, config, small, overhead_bytes=2 * GIB)
    problem = fit_problem(over)
    assert problem is not None and not over.fits and over.total_bytes < 2.005 * GIB
    assert problem.startswith("needs ~2.00 GiB of RAM; this machine has 1.00 GiB free (of 4.00)")
    assert "overhead 2.00" in problem and "gradient_checkpointing" in problem
    gpu = MachineMemory("gpu", 80 * GIB, 1 * GIB)
    assert "GiB of GPU memory" in (fit_problem(estimate_memory(shape, sft(), gpu)) or "")


def test_meminfo_reads_the_available_memory() -> None:
    text = "MemTotal:       24683772 kB\nMemFree:  100 kB\nMemAvailable:   23658180 kB\n"
    assert _meminfo(text) == (24683772 * 1024, 23658180 * 1024)
    assert _meminfo("MemTotal: 2048 kB\nMemFree: 1024 kB\n") == (2048 * 1024, 1024 * 1024)


# ----------------------------------------------------------------------------- live


def _register(rows_file: Path) -> None:
    from core.models import add_folder

    del rows_file
    with Store.open() as store:
        add_folder(store, BASE, demo_folder())


def test_hat_train_refuses_a_run_that_does_not_fit(hat_home: Path, tmp_path: Path) -> None:
    """One row of ~100k tokens at full length: the activations alone are ~150 GiB."""
    _register(tmp_path)
    data = tmp_path / "long.jsonl"
    long = " ".join(["order"] * 100_000)
    data.write_text(json.dumps({"messages": [
        {"role": "system", "content": long}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"}]}) + "\n")  # fmt: skip
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({"model": BASE, "data": [str(data)], "max_length": 120_000,
                                      "max_steps": 1}))  # fmt: skip
    result = runner.invoke(app, ["train", "sft", "--config", str(config)])
    assert result.exit_code == 1, result.output
    assert "memory: needs ~" in result.output.replace("\n", " ")
    assert "GiB free" in result.output and "Traceback" not in result.output
    pipeline = tmp_path / "hat.yaml"
    pipeline.write_text(yaml.safe_dump({"model": BASE, "sft": {"data": [str(data)],
                                        "max_length": 120_000, "max_steps": 1}}))  # fmt: skip
    refused = runner.invoke(app, ["train", "pipeline", "--config", str(pipeline)])
    assert refused.exit_code == 1, refused.output
    assert "pipeline.sft.memory: needs ~" in refused.output.replace("\n", " ")
    with Store.open() as store:
        assert list_runs(store) == []  # refused before a run folder or row exists
    estimate = runner.invoke(app, ["train", "estimate", "sft", "--config", str(config),
                                   "--warmup-steps", "0", "--json"])  # fmt: skip
    assert estimate.exit_code == 1
    memory = json.loads(estimate.output)["memory"]
    assert not memory["fits"] and memory["total_bytes"] > memory["available_bytes"]
    assert memory["sequence"] > 100_000


@pytest.mark.timeout(900)
def test_the_warmup_measures_a_time_and_a_peak(
    hat_home: Path,
    rows: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    _register(rows)
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({
        "model": BASE, "data": [str(rows)], "system_prompt": "compact", "max_length": 288,
        "per_device_batch_size": 1, "max_steps": 40, "lm_head_loss": "sliced",
        "lora": {"dropout": 0.0},
    }))  # fmt: skip
    result = runner.invoke(app, ["train", "estimate", "sft", "--config", str(config),
                                 "--warmup-steps", "2", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    timing, memory = out["time"], out["memory"]
    assert timing["steps"] == 2 and timing["step_s"] > 0 and timing["total_steps"] == 40
    assert timing["run_s"] == pytest.approx(timing["first_step_s"] + 39 * timing["step_s"], 0.01)
    assert memory["fits"] and memory["sequence"] <= 288
    peak = timing["peak_rss_bytes"]
    assert 0.5 < memory["total_bytes"] / peak < 2.0, (memory, peak)
    with Store.open() as store:
        assert list_runs(store) == []  # a warm-up is no run


def test_the_peak_is_the_childs_own_not_its_callers() -> None:
    """A studio or test process of several GiB starts the warm-up child: the peak it reports
    is the child's program alone (wait4's ru_maxrss kept the caller's RSS from before the
    exec, and a warm-up in a long test session read 3.2 GiB against a 1.3 GiB estimate)."""
    ballast = bytearray(1024**3)  # 1 GiB the caller holds and has touched
    for offset in range(0, len(ballast), 4096):
        ballast[offset] = 1
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; b = bytearray(64 * 1024**2); time.sleep(0.5)"],
        start_new_session=True,
    )  # fmt: skip
    peak = _wait(proc, timeout_s=60)
    assert proc.returncode == 0
    assert 64 * 1024**2 < peak < 512 * 1024**2, peak
    del ballast
