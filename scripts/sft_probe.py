"""HSA-SFT alone on a replication folder's HAT data, with SFT overrides, then LS-QA and HV-QA
of the merged model answered correctly by category: a 30-50 minute look at what a data option
does to the HAT model's skills before a whole seed (~100 minutes) is spent on it (#33 item 3).

    hat experiment replicate --profile cpu --seed 0 --out RUN --until data
    python scripts/sft_probe.py RUN NAME original_weight=2 balance_skills=true
    python scripts/sft_probe.py RUN NAME rows=fixed          # the fixed-SFT baseline instead

The model trains as the replication's HSA-SFT stage does (the profile's settings, the run's
HAT rows) and is served and evaluated as the replication's eval steps serve theirs, on the HAT
model's LS-QA and HV-QA requests; its training and evaluation runs are kept in the folder's
state under `train.NAME` / `eval-NAME`, so running it again only prints the result.
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    from core.cli.common import open_store
    from core.eval.api import load_results
    from core.experiment.replicate import Replication
    from core.experiment.report import answered
    from core.train.config import PipelineConfig
    from core.train.launch_checks import detect_environment
    from core.train.pipeline import run_pipeline

    if len(argv) < 2:
        print(__doc__)
        return 2
    folder, name, *pairs = argv
    overrides: dict[str, Any] = {k: yaml.safe_load(v) for k, v in (p.split("=", 1) for p in pairs)}

    def say(message: str) -> None:
        print(time.strftime("%H:%M:%S"), message, flush=True)

    with open_store() as store:
        rep = Replication.open(store, Path(folder))
        entry = rep.state["steps"].setdefault("train", {}).setdefault(name, {})
        if not entry.get("merged"):
            rows = str(overrides.pop("rows", "hat"))
            base = rep.profile.fixed_sft() if rows == "fixed" else rep.profile.hat.sft
            sft = base.model_copy(
                update={"data": [rep.step("data")["files"][rows]], "merge": True, **overrides}
            )
            say(f"SFT on the {rows} rows, {sft.max_steps} steps, overrides {overrides}")
            t0 = time.monotonic()
            run = run_pipeline(
                store,
                PipelineConfig(
                    model=rep.step("setup")["base_model"],
                    name=f"{rep.state['tag']}-{name}",
                    sft=sft,
                ),
                detect_environment(),
                on_event=lambda _e: None,
            )
            say(f"pipeline {run.id} {run.status} in {time.monotonic() - t0:.0f} s")
            rep._record_training(entry, dict(run.outputs.get("final") or {}))
            entry["wall_s"] = round(time.monotonic() - t0, 1)
            rep.save()
        evaluation = rep.state["steps"].setdefault(f"eval-{name}", {})
        requests = rep.requests
        rep.requests = lambda model: {  # type: ignore[method-assign]
            k: v for k, v in requests(model).items() if k in ("ls-qa", "hv-qa")
        }
        rep._evaluate(name, evaluation, say)
        rep.save()
        for part, run_id in sorted(evaluation["runs"].items()):
            rows = load_results(store, run_id)
            by: dict[str, list[float]] = defaultdict(list)
            for row in rows:
                by[str(row.category)].append(answered(row))
            total = [answered(r) for r in rows]
            cats = {k: round(100 * sum(v) / len(v), 1) for k, v in sorted(by.items())}
            print(f"{part} answered correctly {100 * sum(total) / len(total):.1f} % "
                  f"(n={len(total)}) by category {cats}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
