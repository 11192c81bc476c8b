"""Memory and time estimates before a launch against what the training child really uses.

    python benchmarks/train_estimate.py [--profile cpu] [--steps 3] [--points 512x1,1024x1,...]
        [--calibrate 512x1] [--time-check 512x1:10] [--out result.json]

For each point (max_length x per_device_batch_size) the profile's HSA-SFT config
(core/experiment/profiles.py: sliced LM head, LoRA r16, no gradient checkpointing) runs
`--steps` optimizer steps in the product's own warm-up (core/train/estimate.py `warmup`: a
`python -m training sft` child on a scratch folder), with gradient accumulation 1 so a step is
one forward and backward. Measured: the child's peak RSS (os.wait4's ru_maxrss) and the mean
step time after the first step. Estimated: `estimate_memory` for the same config, with the
rows' longest length and most trained positions measured by the model's tokenizer
(core/train/measure.py), as the launch does.

The rows are synthetic, so the lengths are controlled: a system prompt of filler words, a
question and a ~120-token reply per row, rows from 60 % to 100 % of the point's length (a batch
of two is padded, as real rows are). The framework overhead constant of the estimate is
calibrated on one point (`--calibrate`, printed as `overhead`) and the estimate is then
compared on the others with that constant.

Time: the warm-up's extrapolation (first step + mean step after it x the remaining steps) is
checked on one point (`--time-check LENGTHxBATCH:N`): a run of N steps, its time to the end of
step N predicted from its own first `--steps` steps, against the time it took. The load
average is recorded before and after (the machine is shared: step times depend on it).

Results and the command go to docs/benchmarks.md ("Memory and time estimates").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORDS = [
    "order",
    "price",
    "stock",
    "shipping",
    "return",
    "warranty",
    "colour",
    "size",
    "delivery",
    "invoice",
    "refund",
]


def make_rows(path: Path, target: int, count: int = 8) -> Path:
    """`count` chat rows whose token length spreads from 60 % to 100 % of `target`."""
    rows = []
    for index in range(count):
        share = 0.6 + 0.4 * index / max(1, count - 1)
        filler = max(8, int(target * share) - 170)
        system = "You help customers. " + " ".join(WORDS[(index + k) % len(WORDS)]
                                                   for k in range(filler))  # fmt: skip
        reply = " ".join(WORDS[(3 * index + k) % len(WORDS)] for k in range(110))
        rows.append({"messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Where is order {1000 + index}?"},
            {"role": "assistant", "content": f"Order {1000 + index}: {reply}."},
        ]})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def parse_point(text: str) -> tuple[int, int]:
    length, _, batch = text.partition("x")
    return int(length), int(batch or 1)


def run_point(
    folder: Path, profile: str, length: int, batch: int, steps: int, scratch: Path
) -> dict[str, Any]:
    from core.experiment.profiles import load_profile
    from core.train.estimate import estimate_memory, machine_memory, model_shape, warmup
    from core.train.launch_checks import detect_environment
    from core.train.measure import measure_rows

    env = detect_environment()
    data = make_rows(scratch / f"rows-{length}x{batch}.jsonl", length, count=max(4, 2 * batch))
    base = load_profile(profile).hat.sft
    config = base.model_copy(update={
        "model": str(folder), "data": [str(data)], "max_length": length,
        "per_device_batch_size": batch, "gradient_accumulation_steps": 1,
        "balance_skills": False, "original_weight": 1, "system_prompt": "full",
    })  # fmt: skip
    measured = measure_rows(folder, [str(data)], system_prompt="full")
    longest = min(measured.longest, length)
    trained = max(min(n, length) - s for n, s in zip(measured.lengths, measured.first_reply,
                                                     strict=True))  # fmt: skip
    estimate = estimate_memory(model_shape(folder), config, machine_memory(False), env=env,
                               longest_row=longest, trained_tokens=trained)  # fmt: skip
    began = time.monotonic()
    result = warmup(config, env, steps=steps)
    return {
        "elapsed_s": list(result.elapsed_s),
        "point": f"{length}x{batch}",
        "max_length": length,
        "batch": batch,
        "longest_row": longest,
        "trained_tokens": trained,
        "estimate": estimate.as_dict(),
        "warmup": result.as_dict(),
        "wall_s": round(time.monotonic() - began, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--points", default="512x1,1024x1,1536x1,512x2,1024x2")
    parser.add_argument("--calibrate", default="512x1")
    parser.add_argument("--time-check", default="512x1:10", help="LENGTHxBATCH:STEPS ('' skips)")
    parser.add_argument("--model", type=Path, default=None, help="a model folder (default: demo)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    scratch = Path(tempfile.mkdtemp(prefix="hat-estimate-bench-"))
    folder = args.model
    if folder is None:
        from tests.test_training import demo_folder

        folder = demo_folder()
    load_before = os.getloadavg()
    points = [parse_point(p) for p in args.points.split(",") if p.strip()]
    results = [run_point(folder, args.profile, n, b, args.steps, scratch) for n, b in points]
    calibration = next((r for r in results if r["point"] == args.calibrate), results[0])
    parts = calibration["estimate"]["parts"]
    modelled = sum(v for k, v in parts.items() if k != "overhead")
    overhead = calibration["warmup"]["peak_rss_bytes"] - modelled
    print(f"overhead calibrated on {calibration['point']}: {overhead / 2**20:.0f} MiB "
          f"(constant in the estimate: {parts['overhead'] / 2**20:.0f} MiB)")  # fmt: skip
    print(f"{'point':>8} {'rows':>9} {'estimate':>9} {'measured':>9} {'error':>7} "
          f"{'step s':>7} {'run est':>8}")  # fmt: skip
    for row in results:
        est = row["estimate"]["total_bytes"]
        peak = row["warmup"]["peak_rss_bytes"]
        row["error"] = round((est - peak) / peak, 4)
        role = "calib." if row is calibration else "test"
        print(f"{row['point']:>8} {row['longest_row']:>5}/{row['trained_tokens']:<3} "
              f"{est / 2**30:>8.2f}G {peak / 2**30:>8.2f}G {100 * row['error']:>+6.1f}% "
              f"{row['warmup']['step_s']:>7.2f} {role}")  # fmt: skip
    time_check: dict[str, Any] | None = None
    if args.time_check:
        where, _, count = args.time_check.partition(":")
        length, batch = parse_point(where)
        run = run_point(folder, args.profile, length, batch, int(count or 10), scratch)
        elapsed = run["elapsed_s"]
        k = min(args.steps, len(elapsed))
        step = (elapsed[k - 1] - elapsed[0]) / max(1, k - 1)
        predicted = elapsed[0] + (len(elapsed) - 1) * step
        time_check = {"point": run["point"], "steps": len(elapsed), "from_steps": k,
                      "predicted_s": round(predicted, 1), "measured_s": round(elapsed[-1], 1),
                      "error": round((predicted - elapsed[-1]) / elapsed[-1], 4),
                      "elapsed_s": elapsed}  # fmt: skip
        error = 100 * time_check["error"]
        print(f"time: {len(elapsed)} steps at {run['point']} predicted {predicted:.1f} s from "
              f"the first {k}, took {elapsed[-1]:.1f} s ({error:+.1f}%)")  # fmt: skip
    report = {
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "time_check": time_check,
        "machine": {"platform": platform.platform(), "cores": os.cpu_count()},
        "profile": args.profile,
        "steps": args.steps,
        "calibrated_on": calibration["point"],
        "overhead_measured_bytes": overhead,
        "points": results,
    }
    if args.out:
        args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
