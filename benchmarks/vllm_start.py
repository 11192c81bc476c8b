"""How long a vLLM server of the demo model takes to answer healthy, and where the time goes.
Not a test.

    python benchmarks/vllm_start.py [--rounds 2] [--kv-gib 0 2 1] [--out start.json]

Each round starts one server per setting, alternating their order, through the product's own
`ManagedServer` (the command line `core.serving.engines.build_launch` makes on this machine),
and times start -> healthy. `--kv-gib 0` sizes the KV cache as a share of the machine's memory
(`--gpu-memory-utilization 0.3`, what CPU servers used before `CPU_KV_CACHE_GIB`); another
value passes `--kv-cache-memory-bytes`. The server's own log gives
the phases: weights loaded, engine init (profile, KV cache, warm-up). One server at a time;
the machine should be otherwise idle.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHARE = 0.3
"""`--kv-gib 0`: the share of memory CPU servers were given before the fixed KV cache."""

PHASES = {
    "weights_s": re.compile(r"Loading weights took ([\d.]+) seconds"),
    "engine_init_s": re.compile(
        r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s"
    ),
    "kv_gib": re.compile(r"\(([\d.]+)/[\d.]+\) GiB for KV cache"),
}


def start_once(model: str, kv_gib: float, logs: Path) -> dict[str, Any]:
    from core.serving import EngineConfig, ManagedServer

    config = (
        EngineConfig("vllm", kv_cache_gib=kv_gib)
        if kv_gib
        else EngineConfig("vllm", gpu_memory_utilization=SHARE)
    )
    server = ManagedServer(config, model, log_dir=logs)
    t0 = time.monotonic()
    server.start()
    healthy = time.monotonic() - t0
    server.stop()
    assert server.log_path is not None
    text = server.log_path.read_text(encoding="utf-8", errors="replace")
    out: dict[str, Any] = {"kv_setting_gib": kv_gib, "healthy_s": round(healthy, 1)}
    for key, pattern in PHASES.items():
        found = pattern.search(text)
        out[key] = float(found.group(1)) if found else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kv-gib", type=float, nargs="+", default=[0.0, 2.0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="hat-vllm-start-"))
    os.environ["HAT_HOME"] = str(home)
    try:
        from core.models import add_demo
        from core.store import Store

        with Store.open(home / "hat.db") as store:
            record, _ = add_demo(store)
        load = os.getloadavg()
        runs: list[dict[str, Any]] = []
        for n in range(args.rounds):
            order = args.kv_gib if n % 2 == 0 else list(reversed(args.kv_gib))
            for kv in order:
                result = start_once(record.location, kv, home / "logs")
                print(json.dumps(result))
                runs.append(result)
        summary = {
            str(kv): median(r["healthy_s"] for r in runs if r["kv_setting_gib"] == kv)
            for kv in args.kv_gib
        }
        print(f"median start -> healthy by KV setting (GiB, 0 = a 30 % share): {summary}; "
              f"load at start {load}, at the end {os.getloadavg()}")  # fmt: skip
        if args.out:
            data = {"runs": runs, "median_healthy_s": summary, "load": load}
            args.out.write_text(json.dumps(data, indent=2), encoding="utf-8")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
