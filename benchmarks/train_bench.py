"""Our SFT stage vs a plain TRL script: same data, model, steps; the wall-time ratio.

    python benchmarks/train_bench.py [--rows 16] [--steps 10] [--rounds 2] [--out result.json]

1. Data: oracle rows from `hat data generate` (train split, one task per category, one HSA
   variant), the first `--rows`; the demo model (imported with the registry's `add_demo` into
   a scratch home, or HAT_BENCH_MODEL=<folder>).
2. **Ours**: `core.train.runs.run_stage` with an SFT config: a new run in the store, the child
   `python -m training sft` (rows loaded and checked, assistant masks built, SFTTrainer, the
   event callback, checkpoint and adapter saved, the adapter registered), watched to the end.
   Timed from launch to the run's final status.
3. **Plain TRL**: this file with `--plain`, a child that does what a hand-written TRL script
   does on the same tokens: load the pre-tokenized rows (input_ids + assistant_masks, built
   with our tokenizer code before the clock starts, so both train on identical tensors),
   `SFTTrainer` with the same SFTConfig values and LoRA, `train()`, `save_pretrained`. Timed
   from launch to exit.

Both are child processes (interpreter start and imports included), run alternately `--rounds`
times in alternating order; reported: the median of the per-round ratios ours / plain, the
ratio of the medians and of the minima. Goal: <= 1.03.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

LORA = {"r": 16, "alpha": 32, "dropout": 0.05}
TRAIN_RUNTIME: dict[str, list[float]] = {"ours": [], "plain": []}
"""`Trainer.train()`'s own train_runtime per run: the part both spend in the training loop."""


def settings(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "system_prompt": "compact",
        "max_length": args.max_length,
        "per_device_batch_size": args.batch,
        "max_steps": args.steps,
        "learning_rate": 2e-4,
        "lr_scheduler": "constant",
        "save_steps": 10_000,
        "seed": 0,
    }


# ----------------------------------------------------------------------------- plain TRL


def plain(data: Path, model: str, out: Path, spec: dict[str, Any]) -> None:
    """The hand-written TRL script (runs in its own process)."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    rows = [json.loads(line) for line in data.read_text().splitlines()]
    dataset = Dataset.from_list(rows)
    tokenizer = AutoTokenizer.from_pretrained(model)
    base = AutoModelForCausalLM.from_pretrained(model, dtype="float32")
    args = SFTConfig(
        output_dir=str(out / "checkpoints"),
        max_steps=spec["max_steps"],
        per_device_train_batch_size=spec["per_device_batch_size"],
        learning_rate=spec["learning_rate"],
        lr_scheduler_type=spec["lr_scheduler"],
        max_length=spec["max_length"],
        save_steps=spec["save_steps"],
        logging_steps=1,
        seed=spec["seed"],
        bf16=False,
        use_cpu=True,
        activation_checkpointing=False,
        report_to="none",
        disable_tqdm=True,
        warmup_steps=0.0,
        max_grad_norm=1.0,
        weight_decay=0.0,
    )
    peft = LoraConfig(
        r=LORA["r"], lora_alpha=LORA["alpha"], lora_dropout=LORA["dropout"],
        target_modules="all-linear", task_type="CAUSAL_LM",
    )  # fmt: skip
    trainer = SFTTrainer(
        model=base, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=peft
    )
    result = trainer.train()
    trainer.model.save_pretrained(str(out / "adapter"))
    tokenizer.save_pretrained(str(out / "adapter"))
    (out / "metrics.json").write_text(json.dumps(result.metrics))


# ----------------------------------------------------------------------------- the bench


def make_rows(home: Path, count: int) -> Path:
    from typer.testing import CliRunner

    from core.cli.main import app

    out = home / "sft.jsonl"
    result = CliRunner().invoke(
        app,
        ["data", "generate", "--teacher", "oracle", "--tasks", "train", "--per-category", "2",
         "--variants", "1", "--sampler", "hsa", "--out", str(out), "-j", "1"],
    )  # fmt: skip
    if result.exit_code != 0:
        raise SystemExit(result.output)
    lines = out.read_text().splitlines(keepends=True)[:count]
    picked = home / f"sft{count}.jsonl"
    picked.write_text("".join(lines))
    return picked


def demo_model(home: Path) -> Path:
    folder = os.environ.get("HAT_BENCH_MODEL")
    if folder:
        return Path(folder)
    from core.models import add_demo
    from core.store import Store

    with Store.open(home / "hat.db") as store:
        record, _ = add_demo(store)
    return Path(record.location)


def pretokenize(rows: Path, model: Path, spec: dict[str, Any], out: Path) -> int:
    """input_ids + assistant_masks exactly as our stage builds them (before any clock)."""
    from transformers import AutoTokenizer

    from core.train.config import parse_stage
    from core.train.data import load_sft_rows
    from training.sft import build_dataset

    config = parse_stage({"model": str(model), "data": [str(rows)], **spec}, "sft")
    tokenizer = AutoTokenizer.from_pretrained(model)
    dataset, info = build_dataset(tokenizer, load_sft_rows([rows]).rows, config)
    with out.open("w") as handle:
        for item in dataset:
            handle.write(json.dumps(item) + "\n")
    return int(info.get("tokens", 0))


def run_ours(home: Path, rows: Path, model: Path, spec: dict[str, Any], tag: str) -> float:
    from core.models import add_folder
    from core.store import Store
    from core.store.serving import find_model
    from core.train.config import parse_stage
    from core.train.events import events_path, read_events
    from core.train.launch_checks import detect_environment
    from core.train.runs import prepare, start, watch

    config = parse_stage(
        {"model": "bench-base", "data": [str(rows)], "output_name": f"bench-{tag}", **spec}, "sft"
    )
    with Store.open() as store:
        if find_model(store, "bench-base") is None:
            add_folder(store, "bench-base", model)
        run = prepare(store, config, detect_environment())
        started = time.perf_counter()
        proc = start(store, run.id)
        run = watch(store, run.id, proc)
        elapsed = time.perf_counter() - started
    if run.status != "done":
        raise SystemExit(f"our stage ended {run.status}: {run.reason}")
    summary = [e for e in read_events(events_path(Path(run.run_dir)))[0] if e["event"] == "summary"]
    TRAIN_RUNTIME["ours"].append(float(summary[-1]["metrics"]["train_runtime"]))
    return elapsed


def run_plain(data: Path, model: Path, spec: dict[str, Any], out: Path) -> float:
    command = [sys.executable, __file__, "--plain", str(data), str(model), str(out),
               json.dumps(spec)]  # fmt: skip
    from core.train.runs import child_env

    env = child_env()  # the same environment our stage's child gets
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)  # fmt: skip
    elapsed = time.perf_counter() - started
    metrics = json.loads((out / "metrics.json").read_text())
    TRAIN_RUNTIME["plain"].append(float(metrics["train_runtime"]))
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=288)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--plain", nargs=4, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain is not None:
        data, model, out, spec = args.plain
        plain(Path(data), model, Path(out), json.loads(spec))
        return

    home = Path(tempfile.mkdtemp(prefix="hat-train-bench-"))
    os.environ["HAT_HOME"] = str(home)
    spec = settings(args)
    rows = make_rows(home, args.rows)
    model = demo_model(home)
    tokenized = home / "tokenized.jsonl"
    tokens = pretokenize(rows, model, spec, tokenized)
    ours: list[float] = []
    theirs: list[float] = []
    for index in range(args.rounds):
        # Alternate which goes first (ABBA...), so a drift in machine load hits both alike.
        if index % 2 == 0:
            ours.append(run_ours(home, rows, model, spec, str(index)))
            theirs.append(run_plain(tokenized, model, spec, home / f"plain-{index}"))
        else:
            theirs.append(run_plain(tokenized, model, spec, home / f"plain-{index}"))
            ours.append(run_ours(home, rows, model, spec, str(index)))
        print(
            f"round {index + 1}: ours {ours[-1]:.1f} s, plain TRL {theirs[-1]:.1f} s, "
            f"ratio {ours[-1] / theirs[-1]:.3f} (load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    result = {
        "rows": args.rows,
        "steps": args.steps,
        "batch": args.batch,
        "max_length": args.max_length,
        "tokens_per_epoch": tokens,
        "ours_s": [round(t, 2) for t in ours],
        "plain_s": [round(t, 2) for t in theirs],
        "ratio_of_medians": round(statistics.median(ours) / statistics.median(theirs), 3),
        "median_pair_ratio": round(
            statistics.median(o / t for o, t in zip(ours, theirs, strict=True)), 3
        ),
        "ratio_min": round(min(ours) / min(theirs), 3),
        "train_runtime_ours_s": [round(t, 2) for t in TRAIN_RUNTIME["ours"]],
        "train_runtime_plain_s": [round(t, 2) for t in TRAIN_RUNTIME["plain"]],
        "outside_training_ours_s": [
            round(a - b, 2) for a, b in zip(ours, TRAIN_RUNTIME["ours"], strict=True)
        ],
        "outside_training_plain_s": [
            round(a - b, 2) for a, b in zip(theirs, TRAIN_RUNTIME["plain"], strict=True)
        ],
        "python": platform.python_version(),
        "load_avg": os.getloadavg(),
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
