"""Does a trained model read a renamed parameter? The replication's models on its own LS-QA
items under a harness whose main tool parameter (and the tool) were renamed by the operator.

    HAT_HOME=<the run's workspace> python scripts/param_rename_check.py <run folder>
        [--models fixed hat] [--tool get_product_by_link] [--param link_no]
        [--new-tool product_details] [--new-param listing_ref] [--out F]

Why (#33 item 5): an operator renamed the product lookup's main parameter in the demo
harness (the tool renamed too, the binding kept through `binding_args`); both trained models
called the new tool name but sent the old parameter name, and HAT then spent its turns on
rejected calls until `max_turns`. The check the issue sets: the model's calls of the renamed
tool use the new name in >= 90 % of cases, and no item loops to `max_turns` on a rejected
argument name.

The edited harness is the replication's original version with `apply_renames` (the same
rename HSA's tool_schemas dimension does, so the binding is kept and the grader matches calls
by binding), stored as a child version; each model is served the way the replication serves
it (`Replication.model_folder`, its engine, dtype and concurrency), and its `ls-qa` request
runs with that version. Per model it prints: calls of the renamed tool, the share with the
new parameter name, the share still sending the old one, items that ended at `max_turns`
after two or more rejected calls of that tool (the loop), and answered correctly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def renamed_version(run: Any, tool: str, param: str, new_tool: str, new_param: str) -> str:
    from core.hsa.renames import Renames, apply_renames

    original = run.step("setup")["versions"]["original"]
    harness = run.store.load(original)
    having = [  # the parameter is renamed wherever it appears, as an operator would
        t.name for t in harness.tools if param in (t.parameters.get("properties") or {})
    ]
    params = {name: {param: new_param} for name in having}
    edited = apply_renames(harness, Renames(tools={tool: new_tool}, params=params))
    name = run.store.info(original).harness_name
    info = run.store.commit(
        edited.model_copy(update={"name": name}),
        f"parameter-rename check: {tool}.{param} -> {new_tool}.{new_param}",
        parent=original,
    )
    return str(info.id)


def check(run: Any, model: str, version: str, new_tool: str, param: str, new_param: str) -> dict:
    from core.eval.api import load_results, load_trace, run_eval
    from core.experiment.report import answered

    engine = run.engine()
    server = run.model_server(model)
    request = run.requests(model)["ls-qa"]
    server.start()
    try:
        update = {"harness": version, "engine": engine, "base_url": server.base_url,
                  "model_id": server.model_id}  # fmt: skip
        if run.in_task_file:  # the file's golds name the original harness's tools
            update["task_file_harness"] = run.step("setup")["versions"]["original"]
        request = request.model_copy(update=update)
        done = run_eval(run.store, request)
    finally:
        server.stop()
    rows = load_results(run.store, done.id)
    calls = new_name = old_name = loops = 0
    for row in rows:
        trace = load_trace(run.store, done.id, row.key) or {}
        steps = [s for s in trace.get("steps", []) if s.get("type") == "tool_call"]
        mine = [s for s in steps if s.get("name") == new_tool]
        calls += len(mine)
        new_name += sum(new_param in (s.get("arguments") or {}) for s in mine)
        old_name += sum(param in (s.get("arguments") or {}) for s in mine)
        rejected = sum(s.get("error_kind") == "invalid_arguments" for s in mine)
        if (row.reason or "").startswith("max_turns") and rejected >= 2:
            loops += 1
    return {
        "model": model,
        "eval_run": done.id,
        "items": len(rows),
        "calls": calls,
        "new_name_share": round(new_name / calls, 3) if calls else None,
        "old_name_share": round(old_name / calls, 3) if calls else None,
        "max_turns_loops": loops,
        "answered_correctly": round(100 * sum(answered(r) for r in rows) / max(len(rows), 1), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--models", nargs="+", default=["fixed", "hat"])
    parser.add_argument("--tool", default="get_product_by_link")
    parser.add_argument("--param", default="link_no")
    parser.add_argument("--new-tool", default="product_details")
    parser.add_argument("--new-param", default="listing_ref")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from core.experiment.replicate import Replication
    from core.store import Store

    with Store.open() as store:
        run = Replication.open(store, args.folder)
        version = renamed_version(run, args.tool, args.param, args.new_tool, args.new_param)
        out = []
        for model in args.models:
            figures = check(run, model, version, args.new_tool, args.param, args.new_param)
            out.append(figures)
            print(json.dumps(figures), flush=True)
    if args.out:
        args.out.write_text(json.dumps(out, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
