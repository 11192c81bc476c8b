"""SFT training throughput of the product's own stage child, before and after, in one run.

    python benchmarks/train_throughput.py [--profile cpu] [--steps 12] [--only NAME ...]
        [--out result.json]

Why: a CPU replication is bought in tokens, so what counts is the tokens per second of the
SFT child the replication really launches (`core.train.runs.prepare/start/watch`: the child's
environment, TRL's SFTTrainer, the event callback), on the rows it really trains on — not a
toy loop. So this script:

1. writes the profile's HAT rows (`hat experiment replicate --until data` in a scratch home:
   the oracle teacher, the profile's harness, K train-bank variants per task);
2. runs the profile's HSA-SFT config for `--steps` optimizer steps once per variant below, each
   a fresh child (`HAT_HOME` a scratch folder; the demo model registered there);
3. reads each run's events: tokens/s per optimizer step as the callback logs it (TRL's token
   count over the wall time between two logs), the median over steps 2.. (step 1 holds the
   warm-up, and the compile when there is one), and the time from launch to the end of step 1;
4. sets them against a bf16 GEMM (2048^3, this process, all cores) measured in the same run:
   achieved FLOP/s = 4 x parameters x tokens/s (LoRA: no weight gradients for the base), a
   nominal figure (the sliced loss does less LM-head work per token than that counts).

Variants (`--only` picks some; the first is the reference of the ratios):

- `trl-head`: TRL's fused LM head, one process (the stage before the sliced loss);
- `sliced`: the sliced LM-head loss (training/fast_sft.py), one process;
- `sliced-compiled`: the same with the decoder compiled (`compile: true`);
- `sliced-2proc`: the sliced loss, two DDP processes over gloo with one thread each
  (`launch.num_processes: 2`; per-device batch 1, so an optimizer step is 2 x accumulation
  rows: the tokens/s compare, the steps do not).

Results and the command go to docs/benchmarks.md ("Training throughput").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS: dict[str, dict[str, Any]] = {
    "trl-head": {"lm_head_loss": "trl"},
    "sliced": {"lm_head_loss": "sliced"},
    "sliced-compiled": {"lm_head_loss": "sliced", "compile": True},
    "sliced-2proc": {
        "lm_head_loss": "sliced",
        "launch": {"num_processes": 2, "device": "cpu"},
    },
}


def gemm_flops(n: int = 2048, repeats: int = 5) -> float:
    import torch

    a = torch.randn(n, n, dtype=torch.bfloat16)
    b = torch.randn(n, n, dtype=torch.bfloat16)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def make_rows(home: Path, profile: str) -> Path:
    """The profile's HAT rows, written as the replication writes them."""
    from typer.testing import CliRunner

    from core.cli.main import app

    out = home / "replication"
    result = CliRunner().invoke(
        app, ["experiment", "replicate", "--profile", profile, "--out", str(out), "--until", "data"]
    )
    if result.exit_code != 0:
        raise SystemExit(result.output)
    state = json.loads((out / "state.json").read_text())
    return Path(state["steps"]["data"]["files"]["hat"])


def run_variant(name: str, spec: dict[str, Any], rows: Path, profile: str, steps: int) -> dict:
    from core.experiment.profiles import load_profile
    from core.models import add_demo
    from core.store import Store
    from core.train.events import events_path, read_events
    from core.train.launch_checks import detect_environment
    from core.train.runs import prepare, start, watch

    base = load_profile(profile).hat.sft
    launch = base.launch.model_copy(update=spec.get("launch", {}))
    update = {k: v for k, v in spec.items() if k != "launch"}
    with Store.open() as store:
        record, _ = add_demo(store)
        config = base.model_copy(
            update={
                **update,
                "launch": launch,
                "model": record.name,
                "data": [str(rows)],
                "max_steps": steps,
                "save_steps": 10_000,
                "logging_steps": 1,
                "merge": False,
                "output_name": f"bench-{name}",
            }
        )
        run = prepare(store, config, detect_environment())
        started = time.time()
        proc = start(store, run.id)
        run = watch(store, run.id, proc)
    if run.status != "done":
        raise SystemExit(f"{name}: the stage ended {run.status}: {run.reason}")
    events = read_events(events_path(Path(run.run_dir)))[0]
    logs = [e for e in events if e["event"] == "log" and e.get("tokens_per_s")]
    rates = [float(e["tokens_per_s"]) for e in logs]
    first = next((e["time"] for e in logs), started) - started
    return {
        "variant": name,
        "settings": spec,
        "tokens_per_s": round(statistics.median(rates[1:] or rates), 1),
        "per_step": rates,
        "first_step_s": round(first, 1),
        "losses": [e.get("loss") for e in logs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--only", nargs="*", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="hat-tt-"))
    os.environ["HAT_HOME"] = str(home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load = os.getloadavg()
    rows = make_rows(home, args.profile)
    import torch

    from core.experiment.profiles import load_profile
    from core.models import add_demo
    from core.store import Store

    with Store.open() as store:
        folder = add_demo(store)[0].location
    from transformers import AutoModelForCausalLM

    params = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(folder).parameters())
    ceiling = gemm_flops()
    print(f"{torch.get_num_threads()} threads; bf16 GEMM 2048^3: {ceiling / 1e9:.0f} GFLOP/s; "
          f"load at start {load[0]:.2f}; rows {rows}")  # fmt: skip
    results = []
    for name in args.only:
        row = run_variant(name, VARIANTS[name], rows, args.profile, args.steps)
        row["gflops"] = round(4 * params * row["tokens_per_s"] / 1e9, 1)
        row["of_gemm"] = round(4 * params * row["tokens_per_s"] / ceiling, 3)
        row["vs_first"] = round(row["tokens_per_s"] / max(results[0]["tokens_per_s"], 1e-9), 2) \
            if results else 1.0  # fmt: skip
        results.append(row)
        print(f"{name:16} {row['tokens_per_s']:7.1f} tokens/s  x{row['vs_first']:.2f}  "
              f"{row['gflops']} GFLOP/s = {row['of_gemm']} of GEMM  "
              f"first step at {row['first_step_s']:.0f} s")  # fmt: skip
    result = {
        "profile": load_profile(args.profile).name,
        "steps": args.steps,
        "gemm_flops": ceiling,
        "load_at_start": load,
        "load_at_end": os.getloadavg(),
        "machine": {"cpu": platform.processor(), "cpus": os.cpu_count()},
        "rows": results,
    }
    if args.out:
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
