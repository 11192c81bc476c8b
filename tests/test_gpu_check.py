"""`scripts/gpu-check.sh --dry-run`: every stage of the GPU check on the CPU with a tiny model
(SFT and GRPO through TRL with the project's trainer callback, decode, the readout and the
`gpu` profile checks), and its one table. The real run needs a GPU (docs/benchmarks.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROWS = [
    "device",
    "model",
    "GEMM peak (measured)",
    "memory bandwidth (measured)",
    "SFT LoRA r16",
    "SFT events (studio charts)",
    "GRPO LoRA r16",
    "GRPO events (studio charts)",
    "generate decode (batch 1)",
    "GPU detection (core)",
    "GPU memory readout (studio)",
    "demo model SFT (correctness)",
    "gpu profile: launch checks",
    "gpu profile: one SFT step",
]


@pytest.mark.timeout(300)
def test_gpu_check_dry_run_prints_every_row(tmp_path: Path) -> None:
    out = tmp_path / "check.json"
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu-check.sh"), "--dry-run", "--json", str(out)],
        capture_output=True, text=True, timeout=280, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["dry_run"] is True and report["ok"] is True
    rows = {r["check"]: r for r in report["rows"]}
    assert list(rows) == ROWS
    assert all(r["ok"] for r in report["rows"])
    # the table is printed once, a row per check
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert len(table) == len(ROWS) + 1 and table[0].startswith("| check")
    # the studio's charts get their series from the stages' real event streams
    assert "loss 2, learning_rate 2, grad_norm 2, tokens_per_s 2" in rows[
        "SFT events (studio charts)"
    ]["detail"]  # fmt: skip
    grpo = rows["GRPO events (studio charts)"]["detail"]
    assert "reward 2" in grpo and "completion_length 2" in grpo
    assert (
        "steps/s" in rows["SFT LoRA r16"]["figure"] and "tok/s" in rows["GRPO LoRA r16"]["figure"]
    )
    assert rows["demo model SFT (correctness)"]["figure"] == "skipped"  # no --demo-model
    assert "of the memory roofline" in rows["generate decode (batch 1)"]["detail"]
    data = report["data"]
    assert data["sft"]["steps_per_s"] > 0 and data["grpo"]["tokens_per_s"] > 0
    assert data["gemm"] > 0 and data["bandwidth"] > 0 and data["decode"]["roofline"] > 0
    assert report["seconds"] < 120
