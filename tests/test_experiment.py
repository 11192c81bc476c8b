"""The mini-replication (`hat experiment replicate`).

Fast tests: profiles (matched step budgets, errors naming the field), the lite harness (the
edit survives it, the oracle still solves tasks under it, the prompt is much shorter), the
edited harness (validates, renames tools by binding, adds a hook, moves prompt sections), the
report's arithmetic (the answered-correctly headline, error reduction and its paired
interval) and several seeds as one experiment (pooling, refusals, resuming a seed's folder).

The slow test runs the `ci` profile end to end for real: oracle data, fixed SFT and the HAT
pipeline (SFT -> OPD -> RL) on the demo model, three `transformers serve` servers, the
evaluation runner on LS-QA / HV-QA / IFEval / the edited harness, the report. It then kills
nothing and resumes: a second `--resume` finds every step done and re-runs none.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.eval.results import EvalResult, Suite
from core.experiment.lite import first_sentence, lite_harness
from core.experiment.profiles import PROFILES, edited_harness_path, load_profile, parse_profile
from core.experiment.report import _ratio_ci, edit_summary
from core.harness import import_folder
from core.harness.demo import load_demo_harness
from core.harness.render import render_system_prompt
from core.train.config import ConfigError
from tests.ifeval_data import IFEVAL_FILE

ROOT = Path(__file__).resolve().parents[1]

# Our own prompts in IFEval's record format, for a checkout without the official file: the
# pipeline (serving, scoring, report) is what this test guards, not IFEval's numbers.
OWN_IFEVAL = [
    {"key": 1, "prompt": "Describe a rainy day in two sentences without using any commas.",
     "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    {"key": 2, "prompt": "Write a short greeting for a shopping live stream, all in lowercase.",
     "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]},
    {"key": 3, "prompt": "Explain what a coupon is in fewer than 40 words.",
     "instruction_id_list": ["length_constraints:number_words"],
     "kwargs": [{"relation": "less than", "num_words": 40}]},
]  # fmt: skip


def ifeval_prompts(tmp_path: Path) -> Path:
    if IFEVAL_FILE.is_file():
        return IFEVAL_FILE
    own = tmp_path / "ifeval.jsonl"
    own.write_text("".join(json.dumps(r) + "\n" for r in OWN_IFEVAL))
    return own


runner = CliRunner()


# ----------------------------------------------------------------------------- profiles


@pytest.mark.parametrize("name", PROFILES)
def test_bundled_profiles_load_with_matched_budgets(name: str) -> None:
    profile = load_profile(name)
    hat = profile.hat
    fixed = profile.fixed_sft()
    assert fixed.max_steps == hat.sft.max_steps + hat.opd.max_steps + hat.rl.max_steps  # type: ignore[operator]
    assert fixed.merge and hat.rl.merge  # both served as merged models
    assert fixed.per_device_batch_size == hat.sft.per_device_batch_size
    assert fixed.learning_rate == hat.sft.learning_rate
    assert profile.eval.edit <= profile.eval.ls_qa  # "before the edit" reuses LS-QA rows
    # the plain baseline: HSA's reweighting options are HAT's only
    assert not fixed.balance_skills and not fixed.balance_categories
    assert fixed.original_weight == 1


def test_profile_errors_name_the_field() -> None:
    data = load_profile("ci").model_dump(mode="json")
    data["hat"]["sft"]["max_steps"] = None
    data["eval"]["ls_qa"] = 0
    data["dataa"] = {}
    with pytest.raises(ConfigError) as info:
        parse_profile(data)
    text = str(info.value)
    assert "max_steps is required" in text
    assert "profile.eval.ls_qa" in text
    assert "profile.dataa: unknown key" in text
    with pytest.raises(ConfigError, match="neither a profile"):
        load_profile("no-such-profile")


def test_the_recorded_command_is_the_users_not_the_host_process(
    hat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process (pytest, the studio) `sys.argv` is the host's; the report must still show
    the `hat experiment replicate ...` line that reproduces the run."""
    import yaml

    data = load_profile("ci").model_dump(mode="json")
    data["model"] = "not-registered"
    profile = tmp_path / "mine.yaml"
    profile.write_text(yaml.safe_dump(data))
    monkeypatch.setattr("sys.argv", ["pytest", "--ignore-glob=tests/x.py"])
    folder = tmp_path / "rep"
    result = runner.invoke(
        app, ["experiment", "replicate", "--profile", str(profile), "--out", str(folder)]
    )
    assert result.exit_code == 1 and "'not-registered' is not registered" in result.output
    state = json.loads((folder / "state.json").read_text())
    assert state["command"] == f"hat experiment replicate --profile {profile} --out {folder}"
    # a resume keeps the command that started the run and records its own beside it
    result = runner.invoke(app, ["experiment", "replicate", "--resume", str(folder)])
    assert result.exit_code == 1
    state = json.loads((folder / "state.json").read_text())
    assert state["command"] == f"hat experiment replicate --profile {profile} --out {folder}"
    assert state["resumed_with"] == [f"hat experiment replicate --resume {folder}"]
    # --out on a folder that holds a replication: one line saying so, no traceback
    result = runner.invoke(
        app, ["experiment", "replicate", "--profile", str(profile), "--out", str(folder)]
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "holds a replication; resume it instead" in " ".join(result.output.split())
    assert "Traceback" not in result.output and "continue with" not in result.output


def test_a_seed_reseeds_training_data_and_stages_but_not_the_evaluation_items(
    hat_home: Path, tmp_path: Path
) -> None:
    """`--seed N` is a second sample of the whole method (tasks, variants, RL tasks, data
    order, LoRA init) on the same evaluation items; it is fixed when the run starts."""
    import yaml

    base = load_profile("cpu")
    seeded = base.with_seed(3)
    assert seeded.seed == seeded.data.seed == 3
    assert {seeded.hat.sft.seed, seeded.hat.opd.seed, seeded.hat.rl.seed} == {3}
    assert seeded.hat.rl.task_seed == 3 and seeded.fixed_sft().seed == 3
    assert seeded.eval == base.eval and seeded.hat.sft.max_steps == base.hat.sft.max_steps
    assert base.seed == 0  # the bundled profile is left as it is

    data = load_profile("ci").model_dump(mode="json")
    data["model"] = "not-registered"
    profile = tmp_path / "mine.yaml"
    profile.write_text(yaml.safe_dump(data))
    folder = tmp_path / "rep"
    args = ["experiment", "replicate", "--profile", str(profile), "--out", str(folder)]
    result = runner.invoke(app, [*args, "--seed", "2"])
    assert result.exit_code == 1  # the model is not registered: setup fails, state is kept
    kept = yaml.safe_load((folder / "profile.yaml").read_text())
    assert kept["data"]["seed"] == 2 and kept["hat"]["rl"]["task_seed"] == 2
    assert json.loads((folder / "state.json").read_text())["command"].endswith("--seed 2")
    result = runner.invoke(app, ["experiment", "replicate", "--resume", str(folder), "--seed", "5"])
    assert result.exit_code == 1 and "keeps its own" in result.output
    assert yaml.safe_load((folder / "profile.yaml").read_text())["data"]["seed"] == 2


# ----------------------------------------------------------------------------- harnesses


def test_edited_harness_is_a_realistic_valid_edit() -> None:
    original = load_demo_harness()
    edited = import_folder(edited_harness_path(load_profile("cpu")))
    by_binding = {t.binding: t.name for t in original.tools}
    renamed = {
        by_binding[t.binding]: t.name for t in edited.tools if by_binding[t.binding] != t.name
    }
    assert len(renamed) == 4  # renamed tools, same bindings
    assert {h.name for h in edited.hooks} - {h.name for h in original.hooks} == {"no-competitors"}
    assert [s.id for s in edited.prompt.sections] != [s.id for s in original.prompt.sections]
    prompt = render_system_prompt(edited)
    for old in renamed:  # no stale name anywhere the model reads
        assert old not in prompt
        assert all(old not in s.body for s in edited.skills)
    result = runner.invoke(
        app, ["harness", "validate", str(edited_harness_path(load_profile("ci")))]
    )
    assert result.exit_code == 0, result.output


def test_first_sentence() -> None:
    assert (
        first_sentence("1. Every fact comes from a tool. Never guess.")
        == "Every fact comes from a tool."
    )
    long = "Look up the product behind a link number: name, category, price and list price"
    assert (
        first_sentence(long, 60) == "Look up the product behind a link number: name, category."
    )  # last clause
    assert len(first_sentence("word " * 100, 50)) <= 51


@pytest.mark.parametrize("which", ["original", "edited"])
def test_lite_harness_keeps_structure_and_the_oracle_solves_tasks(which: str) -> None:
    from core.datagen import GenerateConfig, Teacher, generate, get_sampler
    from core.sim.catalog import load_catalog
    from core.sim.models import Split
    from core.sim.tasks import generate_tasks

    full = (
        load_demo_harness()
        if which == "original"
        else import_folder(edited_harness_path(load_profile("ci")))
    )
    lite = lite_harness(full, max_turns=5)
    assert [t.name for t in lite.tools] == [t.name for t in full.tools]
    assert [t.binding for t in lite.tools] == [t.binding for t in full.tools]
    assert [h.name for h in lite.hooks] == [h.name for h in full.hooks]
    assert [s.id for s in lite.prompt.sections] == [s.id for s in full.prompt.sections]
    assert len(render_system_prompt(lite)) < 0.5 * len(render_system_prompt(full))
    catalog = load_catalog()
    tasks = list(generate_tasks(Split.TRAIN, seed=0, per_category=1))
    out = Path(__import__("tempfile").mkdtemp()) / "rows.jsonl"
    config = GenerateConfig(out=out, variants=1, concurrency=1, sampler=get_sampler("hsa"),
                            sampler_name="hsa")  # fmt: skip
    summary = asyncio.run(generate(tasks, lite, catalog, Teacher.oracle(catalog), config))
    assert summary.rejected == 0 and summary.written == 2 * len(tasks)


@pytest.mark.parametrize("which", ["original", "edited"])
def test_focus_harness_keeps_what_its_categories_use_and_the_oracle_solves_them(
    which: str,
) -> None:
    """The focus cut keeps tools by binding (so the edit's renamed tools survive) and skills
    by role; every task of the chosen categories is still solved at full marks by the oracle,
    under the original and under HSA variants."""
    from core.datagen import GenerateConfig, Teacher, generate, get_sampler
    from core.experiment.lite import focus_harness
    from core.sim.catalog import load_catalog
    from core.sim.models import Split, TaskCategory
    from core.sim.tasks import generate_tasks

    full = (
        load_demo_harness()
        if which == "original"
        else import_folder(edited_harness_path(load_profile("cpu")))
    )
    cats = load_profile("cpu").categories
    assert cats is not None
    focus = focus_harness(lite_harness(full, max_turns=4), cats)
    bindings = {t.binding for t in focus.tools}
    assert bindings == {"sim.get_product_by_link", "sim.check_stock",
                        "sim.get_after_sales_policy", "sim.get_live_room_status"}  # fmt: skip
    assert {s.name for s in focus.skills} == {"product-qa", "chit-chat", "after-sales"}
    if which == "edited":  # the edit renamed these two; the cut keeps the new names
        assert {"product_details", "stock_lookup"} <= {t.name for t in focus.tools}
    assert [h.name for h in focus.hooks] == [h.name for h in full.hooks]
    lite_len = len(render_system_prompt(lite_harness(full, max_turns=4)))
    assert len(render_system_prompt(focus)) < 0.7 * lite_len
    catalog = load_catalog()
    tasks = list(generate_tasks(Split.TRAIN, seed=0, per_category=2, categories=cats))
    assert {t.category for t in tasks} == set(cats)
    assert TaskCategory.COUPON not in {t.category for t in tasks}
    out = Path(__import__("tempfile").mkdtemp()) / "rows.jsonl"
    config = GenerateConfig(out=out, variants=1, concurrency=1, sampler=get_sampler("hsa"),
                            sampler_name="hsa")  # fmt: skip
    summary = asyncio.run(generate(tasks, focus, catalog, Teacher.oracle(catalog), config))
    assert summary.rejected == 0 and summary.written == 2 * len(tasks)


def test_focus_profile_needs_categories() -> None:
    data = load_profile("cpu").model_dump(mode="json")
    data["categories"] = None
    with pytest.raises(ConfigError, match="categories"):
        parse_profile(data)


# ----------------------------------------------------------------------------- report maths


def test_answered_correctly_needs_the_facts_right_and_the_ask_answered() -> None:
    """The headline: accuracy 1 AND effectiveness 1. An accurate reply that does not answer
    (accuracy 1, effectiveness 0) is wrong, so is a partial answer (0.5) and a failed item."""
    from core.experiment.report import agent_summary, answered, effective

    rows = [
        _graded("right"),
        _graded("accurate-not-answering", eff=0),
        _graded("partial", eff=0.5),
        _graded("answered-wrong", acc=0),
        _graded("failed", status="failed"),  # grades at 1, but the item failed
    ]
    assert [answered(r) for r in rows] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert [effective(r) for r in rows] == [1.0, 0.0, 0.0, 1.0, 0.0]
    summary = agent_summary(rows)
    assert summary["answered"]["mean"] == pytest.approx(0.2)
    assert summary["accuracy"]["mean"] == pytest.approx(0.6)  # what LS-QA used to count
    assert summary["effective"]["mean"] == pytest.approx(0.4)
    assert summary["pass"]["mean"] == pytest.approx(0.2)


def test_edit_error_is_one_minus_answered_and_the_reduction_is_relative_to_base() -> None:
    """Error = 1 - answered correctly: accurate replies that do not answer count as errors
    (on accuracy alone the base model would look perfect here). Reduction vs base =
    (err(base) - err(model)) / err(base) under the edited harness, paired interval."""
    before = [_graded(f"t{i}") for i in range(10)]
    base_after = [_graded(f"t{i}", eff=0 if i < 8 else 1) for i in range(10)]  # 8 errors
    hat_after = [_graded(f"t{i}", eff=0.5 if i < 4 else 1) for i in range(10)]  # 4 errors
    base = edit_summary(before, base_after)
    hat = edit_summary([*before, _graded("extra", acc=0)], hat_after)
    assert base["error_before"]["mean"] == 0.0 and base["error_after"]["mean"] == 0.8
    assert base["full_marks_error_after"]["mean"] == 0.8
    assert hat["n"] == 10 and hat["error_before"]["n"] == 10  # rows outside the edit set ignored
    assert hat["error_after"]["mean"] == pytest.approx(0.4)
    point, low, high = _ratio_ci(hat["errors_after"], base["errors_after"])
    assert point == pytest.approx((0.8 - 0.4) / 0.8)
    assert low is not None and high is not None and low <= 0.5 <= high and low < high
    assert _ratio_ci(hat["errors_after"], {k: 0.0 for k in hat["errors_after"]})[0] is None


def _fake_run(tmp_path: Path, profile: Any) -> Any:
    """A replication folder with every step done and nothing stored (for the report's text)."""
    from core.experiment.replicate import Replication
    from core.source import code_source

    run = Replication.create(None, profile, tmp_path / "run")  # type: ignore[arg-type]
    assert run.state["code"] == code_source()  # the commit the run came from, at its start
    for name in ("setup", "data", "train", "eval-base", "eval-fixed", "eval-hat", "report"):
        run.step(name).update(status="done", wall_s=1.0)
    run.step("setup")["base_model"] = "base"
    return run


def test_the_report_leads_with_answered_correctly_on_every_table(tmp_path: Path) -> None:
    from core.experiment.report import report_markdown, summarise

    ls = {m: [_graded(f"t{i}", eff=0 if i < k else 1).model_copy(update={"category": "price"})
              for i in range(10)] for m, k in (("base", 10), ("fixed", 5), ("hat", 2))}  # fmt: skip
    hv = {m: [_graded(f"t{i}", eff=0 if i < k else 1, suite=Suite.HV_QA, variant=1)
              for i in range(10)] for m, k in (("base", 10), ("fixed", 6), ("hat", 3))}  # fmt: skip
    edit = {m: [_graded(f"t{i}", eff=0 if i < k else 1) for i in range(10)]
            for m, k in (("base", 10), ("fixed", 8), ("hat", 4))}  # fmt: skip
    rows = {m: {"ls-qa": ls[m], "hv-qa": hv[m], "edit": edit[m]} for m in ls}
    models = summarise(rows, {})
    fixed, hat = models["fixed"], models["hat"]
    assert fixed["ls-qa"]["answered"]["mean"] == 0.5 and fixed["ls-qa"]["accuracy"]["mean"] == 1
    assert fixed["ls-qa"]["per_task_answered"]["t0"] == 0.0  # accurate, did not answer
    assert fixed["ls-qa"]["per_task_accuracy"]["t0"] == 1.0  # the per-task accuracy, named
    assert "per_task" not in fixed["ls-qa"]  # no key without its measure
    assert fixed["hv-qa"]["dimensions"]["tool_schemas"]["answered"] == pytest.approx(0.4)
    assert fixed["variants"]["gap"]["mean"] == pytest.approx(0.1)  # 0.5 - 0.4, on answered
    assert hat["hv_minus_fixed"]["mean"] == pytest.approx(0.3)  # 0.7 - 0.4
    assert hat["edit"]["error_after"]["mean"] == pytest.approx(0.4)
    assert hat["edit"]["reduction_vs_base"][0] == pytest.approx(0.6)  # (1.0 - 0.4) / 1.0

    run = _fake_run(tmp_path, load_profile("ci"))
    text = report_markdown(run, models, {})
    assert "> **Under-trained:** fixed-harness SFT answers 50.0 % of LS-QA correctly" in text
    if run.state["code"]:  # a checkout or an archive: the report names the commit
        assert f"Code: commit {run.state['code']['commit']} (" in text
    # the main table: LS-QA and HV-QA answered correctly, the edit error before → after
    assert re.search(r"^\| HAT \| 80\.0 \[.*\] \| 70\.0 \[.* \| 20\.0 → 40\.0 \[", text, re.M)
    assert "| model | suite | n | answered correctly | accuracy | effectiveness |" in text
    assert re.search(r"^\| fixed-SFT \| LS-QA \| 10 \| 50\.0 \[.*\] \| 100\.0 \[", text, re.M)
    # the edit table: error before, after, the reduction vs base (60 %: (1.0 - 0.4) / 1.0)
    assert re.search(r"^\| HAT \| 20\.0 \[.*\] \| 40\.0 \[.*\] \| 60\.0 % \[", text, re.M)
    assert "**HAT − fixed-SFT on HV-QA, answered correctly** (paired over tasks): 30.0 [" in text
    assert "LS-QA answered correctly by task category:" in text
    assert "- fixed-SFT: price 50.0 (n=10)" in text
    models["fixed"]["ls-qa"]["answered"]["mean"] = 0.6
    text = report_markdown(_fake_run(tmp_path / "b", load_profile("ci")), models, {})
    assert "Under-trained" not in text  # 60 % answered correctly is the bar


def test_the_stage_table_scores_each_hat_stage_and_the_rl_reward_spread(tmp_path: Path) -> None:
    from core.experiment.report import report_markdown, reward_spread, stage_lines, stage_rows

    def rows(k: int) -> dict[str, list[EvalResult]]:
        return {
            "ls-qa": [_graded(f"t{i}", eff=0 if i < k else 1) for i in range(10)],
            "hv-qa": [
                _graded(f"t{i}", acc=0 if i < k else 1, suite=Suite.HV_QA, variant=v)
                for i in range(10)
                for v in (1, 2)
            ],
            "ifeval": [
                _graded(f"p{i}", suite=Suite.IFEVAL, skill=0 if i < k else 1) for i in range(10)
            ],
        }

    table = stage_rows({"sft": rows(6), "opd": rows(4), "rl": rows(3), "fixed": rows(5)})
    assert list(table) == ["sft", "opd", "rl", "fixed"]
    assert table["sft"]["ls-qa"]["mean"] == pytest.approx(0.4)
    assert table["opd"]["hv-qa"]["mean"] == pytest.approx(0.6)
    assert table["rl"]["ifeval"]["mean"] == pytest.approx(0.7)  # prompt-level strict
    assert table["fixed"]["n"] == {"ls-qa": 10, "hv-qa": 20, "ifeval": 10}
    assert stage_rows({"sft": {"ls-qa": rows(1)["ls-qa"]}})["sft"]["hv-qa"] is None

    def log(step: int, std: float) -> dict[str, Any]:
        metrics = {"reward_std": std, "rewards/accuracy/std": std, "reward": 3.0}
        return {"event": "log", "step": step, "metrics": metrics}

    flat = reward_spread([{"event": "phase"}, log(1, 0.0), log(2, 0.0)])
    assert flat is not None and flat["mean_std"] == 0 and flat["zero_steps"] == 2
    spread = reward_spread([log(1, 0.0), log(2, 0.5)])
    assert spread is not None and spread["mean_std"] == pytest.approx(0.25)
    assert spread["per_reward_mean_std"] == {"accuracy": pytest.approx(0.25)}
    assert reward_spread([{"event": "log", "step": 1, "loss": 0.1}]) is None

    stages = {"rows": table, "rl_reward": flat}
    text = "\n".join(stage_lines(stages))
    assert re.search(r"^\| after HSA-SFT \| 40\.0 \[.*\] \| 40\.0 \[.*\] \| 40\.0 \[", text, re.M)
    assert re.search(r"^\| \+ OPD \| 60\.0 \[", text, re.M)
    assert re.search(r"^\| \+ HSA-RL \(the HAT model\) \| 70\.0 \[", text, re.M)
    assert re.search(r"^\| fixed SFT \(reference\) \| 50\.0 \[", text, re.M)
    assert "RL's reward spread was 0.0 in every step at this budget (2 steps): no gradient." in text
    text = "\n".join(stage_lines({"rows": table, "rl_reward": spread}))
    assert "mean 0.250 over 2 steps (max 0.500; 0 in 1 of them); per reward: accuracy 0.250" in text
    run = _fake_run(tmp_path, load_profile("ci"))
    full = report_markdown(run, {}, {}, stages)
    assert "### HAT stage by stage" in full and "| after HSA-SFT |" in full


def test_a_run_folder_from_before_the_stage_step_resumes_and_reports(tmp_path: Path) -> None:
    import yaml

    from core.experiment.replicate import Replication
    from core.experiment.report import report_markdown

    run = _fake_run(tmp_path, load_profile("ci"))
    run.save()
    data = yaml.safe_load((run.folder / "profile.yaml").read_text())
    for key in ("stages", "stage_suites"):
        data["eval"].pop(key)  # the profile as an older run folder wrote it
    (run.folder / "profile.yaml").write_text(yaml.safe_dump(data))
    old = Replication.open(None, run.folder)  # type: ignore[arg-type]
    assert old.eval_runs("hat-sft") == {} and not old.profile.eval.stages
    text = report_markdown(old, {}, {})
    assert "### HAT stage by stage" in text and "Not run" in text
    assert "| eval-stages" not in text  # the wall-time table: a step the run never had
    old.run_all(until="eval-stages")  # --resume: nothing asked, nothing to serve
    assert old.step("eval-stages")["status"] == "done"
    assert "off in the profile" in old.step("eval-stages")["note"]


# ----------------------------------------------------------------------------- end to end


@pytest.mark.slow
@pytest.mark.timeout(3000)  # ~25 min measured on 2 cores shared with other work (load ~10)
def test_ci_replication_end_to_end(demo_model_folder: Path, hat_home: Path, tmp_path: Path) -> None:
    from core.models import add_folder
    from core.store import Store

    ifeval = ifeval_prompts(tmp_path)
    with Store.open() as store:
        add_folder(store, "smollm2-135m-instruct", demo_model_folder)
    folder = tmp_path / "rep"
    results = tmp_path / "results"
    args = ["experiment", "replicate", "--profile", "ci", "--out", str(folder),
            "--ifeval", str(ifeval), "--results", str(results)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    state = json.loads((folder / "state.json").read_text())
    steps = state["steps"]
    assert all(steps[s]["status"] == "done" for s in steps), steps
    assert steps["train"]["hat"]["stages"].keys() == {"sft", "opd", "rl"}
    assert steps["train"]["fixed"]["merged"] and steps["train"]["hat"]["merged"]
    report = (results / "report.md").read_text()
    for needle in ("| base |", "| fixed-SFT |", "| HAT |", "harness-edit error", "scores.png",
                   "trl", "peft", "torch", "transformers", "hat experiment replicate"):  # fmt: skip
        assert needle in report, needle
    assert (results / "scores.png").stat().st_size > 1000
    assert "### HAT stage by stage" in report
    for needle in ("| after HSA-SFT |", "| + OPD |", "| + HSA-RL (the HAT model) |",
                   "| fixed SFT (reference) |", "RL"):  # fmt: skip
        assert needle in report, needle
    data = json.loads((results / "report.json").read_text())
    first = data["answered_correctly"]  # the file opens on the headline measure
    assert next(iter(data)) == "answered_correctly" and first["measure"] == data["headline"]
    for model in ("base", "fixed", "hat"):
        assert first[model]["hv-qa"] == data["models"][model]["hv-qa"]["answered"]
    assert first["hat minus fixed on hv-qa"] == data["models"]["hat"]["hv_minus_fixed"]
    stages = data["stages"]
    assert {"sft", "opd", "rl"} <= set(stages["rows"])
    for stage in ("sft", "opd"):
        assert set(stages["runs"][stage]) == {"ls-qa", "hv-qa", "ifeval"}
        assert stages["rows"][stage]["n"] == {"ls-qa": 1, "hv-qa": 1, "ifeval": 1}
    assert stages["runs"]["rl"] == data["models"]["hat"]["runs"]  # the HAT model's own rows
    assert stages["rl_reward"] is not None and stages["rl_reward"]["steps"] >= 1
    for model in ("base", "fixed", "hat"):
        m = data["models"][model]
        assert set(m["runs"]) == {"ls-qa", "hv-qa", "ifeval", "edit"}
        assert m["ls-qa"]["n"] == 1 and m["hv-qa"]["n"] == 1 and m["ifeval"]["n"] == 1
        assert m["edit"]["n"] == 1
    # The profile's engine served every model (the order desk's CI run proves vLLM's path)
    from core.eval.api import get_eval_run

    with Store.open() as store:
        for model in ("base", "fixed", "hat"):
            for rid in data["models"][model]["runs"].values():
                assert get_eval_run(store, rid).request.engine == "transformers"
    # Resume: nothing left to do, nothing re-run.
    walls = {k: v["wall_s"] for k, v in steps.items()}
    again = runner.invoke(app, ["experiment", "replicate", "--resume", str(folder)])
    assert again.exit_code == 0, again.output
    state = json.loads((folder / "state.json").read_text())
    assert {k: v["wall_s"] for k, v in state["steps"].items()} == walls


def _graded(task: str, *, skill: float = 1, tool: float = 1, acc: float = 1, eff: float = 1,
            tool_reasons: tuple[str, ...] = (), status: str = "ok",
            suite: Suite = Suite.LS_QA, variant: int | None = None) -> EvalResult:  # fmt: skip
    from core.eval.results import ResultStatus

    grades = {
        "skill_selection": {"score": skill, "reasons": []},
        "tool_rationality": {"score": tool, "reasons": list(tool_reasons)},
        "accuracy": {"score": acc, "reasons": [] if acc else ["no final reply (max_turns: x)"]},
        "effectiveness": {"score": eff, "reasons": []},
    }
    full = skill == tool == acc == eff == 1 and status == "ok"
    return EvalResult(
        suite=suite, task_id=task, score=(skill + tool + acc + eff) / 4, passed=full,
        grades=grades, variant_seed=variant, dimension="tool_schemas" if variant else None,
        status=ResultStatus.OK if status == "ok" else ResultStatus.FAILED,
        reason=None if status == "ok" else "max_turns: 4 calls",
    )  # fmt: skip


def test_failing_turn_follows_the_protocol_order() -> None:
    from core.experiment.report import failing_turn, turn_counts

    rows = [
        _graded("a"),
        _graded("b", skill=0, tool=0, acc=0),
        _graded("c", tool=0, tool_reasons=("unknown tool 'lookup'",)),
        _graded("d", tool=0.5, tool_reasons=("missing call: the product (sim.x {})",
                                              "useless call get_product_by_link {}")),
        _graded("e", acc=0, status="failed"),
        _graded("f", eff=0.5),
    ]  # fmt: skip
    assert [failing_turn(r) for r in rows] == [None, "skill", "tool", "argument", "no reply",
                                               "reply"]  # fmt: skip
    assert turn_counts(rows) == {"skill": 1, "tool": 1, "argument": 1, "reply": 1, "no reply": 1}


def test_variant_summary_gap_worst_of_k_and_paired_hv_difference() -> None:
    from core.experiment.report import hv_difference, variant_summary

    ls = [_graded(f"t{i}") for i in range(4)]
    hv_fixed = [_graded(f"t{i}", acc=0 if k == 1 else 1, suite=Suite.HV_QA, variant=k)
                for i in range(4) for k in (1, 2)]  # fmt: skip
    hv_hat = [_graded(f"t{i}", suite=Suite.HV_QA, variant=k) for i in range(4) for k in (1, 2)]
    fixed = variant_summary(ls, hv_fixed)
    assert fixed["gap"]["mean"] == pytest.approx(0.5)  # LS 1.0, HV 0.5 on every task
    assert fixed["worst_of_k"]["mean"] == 0.0  # every task has a wrong variant
    hat = variant_summary(ls, hv_hat)
    assert hat["gap"]["mean"] == pytest.approx(0.0) and hat["worst_of_k"]["mean"] == 1.0
    assert hat["p5_score"]["mean"] == pytest.approx(1.0)
    assert fixed["p5_score"]["mean"] < 1.0
    assert "tool_schemas" in fixed["dimension_cost"]
    diff = hv_difference(hv_hat, hv_fixed)
    assert diff is not None and diff["mean"] == pytest.approx(0.5)


def _seed_report(
    folder: Path,
    seed: int,
    hat: dict[str, float],
    fixed: dict[str, float],
    profile: dict[str, Any] | None = None,
    accuracy_key: str = "per_task_accuracy",
) -> Path:
    """A report.json as write_replication_report writes it, cut to what `seeds` reads (the
    per-task values serve as accuracy and as answered correctly; `accuracy_key="per_task"`
    writes a report from before 2026-12-08)."""
    from core.experiment.report import HEADLINE

    def model(per_task: dict[str, float]) -> dict[str, Any]:
        mean = sum(per_task.values()) / len(per_task)
        ci = {"mean": mean, "low": mean, "high": mean, "n": len(per_task)}
        suite = {"answered": ci, "accuracy": ci, accuracy_key: per_task,
                 "per_task_answered": per_task}  # fmt: skip
        return {"ls-qa": suite, "hv-qa": suite}

    folder.mkdir(parents=True)
    data = {
        "headline": HEADLINE,
        "profile": profile if profile is not None else {"data": {"seed": seed}},
        "models": {"fixed": model(fixed), "hat": model(hat)},
    }
    (folder / "report.json").write_text(json.dumps(data))
    return folder


def test_seeds_pool_hat_minus_fixed_paired_by_task(tmp_path: Path) -> None:
    """Two seeds on the same tasks: the pooled difference is the mean of every (seed, task)
    pair; tasks are resampled as clusters, so a task where the seeds disagree widens it."""
    from core.experiment.seeds import (
        SeedsError,
        pooled_difference,
        pooled_line,
        read_report,
        seeds_markdown,
    )

    tasks = [f"test.price.{i:04d}" for i in range(10)]
    one = _seed_report(
        tmp_path / "s0",
        0,
        {t: 1.0 for t in tasks},
        {t: 0.5 if i < 5 else 1.0 for i, t in enumerate(tasks)},
    )
    two = _seed_report(tmp_path / "s1", 1, {t: 0.5 for t in tasks}, {t: 0.5 for t in tasks})
    reports = [read_report(one), read_report(two / "report.json")]
    pooled = pooled_difference(reports)
    assert pooled["pairs"] == 20 and pooled["tasks"] == 10
    assert pooled["mean"] == pytest.approx((5 * 0.5) / 20)
    assert pooled["low"] <= pooled["mean"] <= pooled["high"] and pooled["high"] > pooled["low"]
    text = seeds_markdown(reports)
    first = text.splitlines()[0]  # the pooled difference is the first line
    assert first.startswith("**HAT − fixed-SFT on HV-QA, answered correctly, pooled over seeds")
    assert "over seeds 0, 1: 12.5 [" in first
    assert "| 0 | HAT |" in text and "| 1 | fixed-SFT |" in text

    old = tmp_path / "old"  # a seed-2 report from before answered correctly was kept
    old.mkdir()
    data = json.loads((one / "report.json").read_text())
    data["profile"]["data"]["seed"] = 2
    del data["headline"]
    for m in ("fixed", "hat"):
        for suite in ("ls-qa", "hv-qa"):
            del data["models"][m][suite]["per_task_answered"], data["models"][m][suite]["answered"]
    (old / "report.json").write_text(json.dumps(data))
    mixed = pooled_difference([*reports, read_report(old)])
    assert mixed["predates"] == [str(old / "report.json")]  # named, left out
    assert mixed["seeds"] == [0, 1] and mixed["mean"] == pooled["mean"]  # the others pooled
    text = seeds_markdown([*reports, read_report(old)])
    assert f"Left out of the pool: {old / 'report.json'}" in text
    assert "| 2 | HAT | — | — |" in text  # its answered-correctly cells are empty
    only_old = pooled_line(pooled_difference([read_report(old)]))
    assert "not computed" in only_old and "predates" in only_old
    with pytest.raises(SeedsError, match="given twice"):
        seeds_markdown([reports[0], read_report(one)])
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SeedsError, match=r"bad\.json: no .models. table"):
        read_report(tmp_path / "bad.json")
    result = runner.invoke(
        app, ["experiment", "seeds", str(one), str(two), "--out", str(tmp_path / "t.md")]
    )
    assert result.exit_code == 0 and (tmp_path / "t.md").read_text() in result.output


def test_pooling_refuses_runs_of_another_experiment_naming_the_field(tmp_path: Path) -> None:
    """Only the seed may differ: another profile field, the same seed twice or other HV-QA
    tasks (both runs evaluated in full) are refused, with the field and both values named."""
    from core.experiment.seeds import SeedsError, profile_difference, read_report, seeds_markdown

    prof = load_profile("ci")
    tasks = {f"t{i}": 1.0 for i in range(4)}
    one = read_report(_seed_report(tmp_path / "a", 0, tasks, tasks,
                                   prof.with_seed(0).model_dump(mode="json")))  # fmt: skip
    other = prof.model_copy(update={"eval": prof.eval.model_copy(update={"hv_qa": 99})})
    two = read_report(_seed_report(tmp_path / "b", 1, tasks, tasks,
                                   other.with_seed(1).model_dump(mode="json")))  # fmt: skip
    with pytest.raises(SeedsError, match=r"profile field `eval\.hv_qa` is 1 in .* and 99 in"):
        seeds_markdown([one, two])
    assert (
        profile_difference(
            prof.with_seed(0).model_dump(mode="json"), prof.with_seed(5).model_dump(mode="json")
        )
        is None
    )  # the seed's own fields are not a difference
    before = prof.model_dump(mode="json")  # a profile from before eval.stages, or without it
    before["eval"] = {k: v for k, v in before["eval"].items() if not k.startswith("stage")}
    assert profile_difference(before, prof.model_dump(mode="json"), ignore_seed=False) is None
    same_seed = read_report(_seed_report(tmp_path / "c", 0, tasks, tasks,
                                         prof.with_seed(0).model_dump(mode="json")))  # fmt: skip
    with pytest.raises(SeedsError, match="seed 0 given twice"):
        seeds_markdown([one, same_seed])
    fewer = {f"t{i}": 1.0 for i in range(3)} | {"t9": 0.0}
    old = prof.with_seed(2).model_dump(mode="json")  # an older report.json: `per_task`
    three = read_report(_seed_report(tmp_path / "d", 2, fewer, fewer, old, "per_task"))
    assert three.hv_tasks() == set(fewer)  # its per-task accuracy read under the old name
    with pytest.raises(SeedsError, match=r"HV-QA tasks differ: 1 only in .*a.* \(t3\), 1 only"):
        seeds_markdown([one, three])
    result = runner.invoke(app, ["experiment", "seeds", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 1 and "eval.hv_qa" in result.output


def _said(result: Any) -> str:
    """The CLI's output with the console's line wrapping undone."""
    return " ".join(result.output.split())


def _done_seed(out: Path, profile: Any, seed: int, hv: dict[str, float]) -> Path:
    """A seed's replication folder with every step done and its report written (no store)."""
    import yaml

    from core.experiment.replicate import STEPS

    folder = out / f"seed-{seed}"
    prof = profile.with_seed(seed).model_dump(mode="json")
    _seed_report(folder / "report", seed, hv, {t: 0.5 for t in hv}, prof)
    (folder / "profile.yaml").write_text(yaml.safe_dump(prof, sort_keys=False))
    steps = {name: {"status": "done", "wall_s": 1.0} for name in STEPS}
    steps["report"]["files"] = {"json": str(folder / "report" / "report.json")}
    state = {"profile": prof["name"], "created_at": "earlier", "tag": folder.name,
             "ifeval_path": None, "steps": steps, "command": "the first command"}  # fmt: skip
    (folder / "state.json").write_text(json.dumps(state))
    return folder


def test_a_seed_list_resumes_each_seed_folder_and_pools_them(
    hat_home: Path, tmp_path: Path
) -> None:
    """`replicate --seeds 0 1`: a seed whose folder exists is resumed (its state kept, no
    step run again), a new one is started in <out>/seed-N; once every seed has a report, the
    pooled report's first line is HAT - fixed on HV-QA answered correctly."""
    import yaml

    data = load_profile("ci").model_dump(mode="json")
    data["model"] = "not-registered"  # a new seed's setup fails at once
    profile_file = tmp_path / "mine.yaml"
    profile_file.write_text(yaml.safe_dump(data))
    profile = load_profile(str(profile_file))
    out = tmp_path / "seeds"
    tasks = [f"t{i}" for i in range(6)]
    zero = _done_seed(out, profile, 0, {t: 1.0 for t in tasks})
    args = ["experiment", "replicate", "--profile", str(profile_file), "--out", str(out)]

    result = runner.invoke(app, [*args, "--seeds", "0", "1"])
    assert result.exit_code == 1, result.output
    assert "seed 1: model 'not-registered' is not registered" in _said(result)
    assert "run the same command again to resume" in _said(result)
    state = json.loads((zero / "state.json").read_text())
    assert state["created_at"] == "earlier" and state["command"] == "the first command"
    assert state["resumed_with"] == [f"hat experiment replicate --profile {profile_file} "
                                     f"--seeds 0 1 --out {out}"]  # fmt: skip
    assert all(step["wall_s"] == 1.0 for step in state["steps"].values())  # nothing re-run
    new = json.loads((out / "seed-1" / "state.json").read_text())
    assert new["steps"]["setup"]["status"] == "failed"
    assert yaml.safe_load((out / "seed-1" / "profile.yaml").read_text())["data"]["seed"] == 1
    assert not (out / "pooled.md").exists()

    import shutil

    shutil.rmtree(out / "seed-1")  # as if seed 1 had finished: pooled once both have reports
    _done_seed(out, profile, 1, {t: 0.5 if i < 3 else 1.0 for i, t in enumerate(tasks)})
    result = runner.invoke(app, [*args, "--seeds", "0,1", "--results", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    pooled = (out / "pooled.md").read_text()
    assert pooled.splitlines()[0].startswith(
        "**HAT − fixed-SFT on HV-QA, answered correctly, pooled over seeds 0, 1: 37.5 ["
    )  # (6 × 0.5 + 3 × 0 + 3 × 0.5) / 12
    assert (tmp_path / "r" / "pooled.md").read_text() == pooled
    assert (tmp_path / "r" / "seed-1" / "report.json").is_file()
    assert len(json.loads((zero / "state.json").read_text())["resumed_with"]) == 2

    # another profile under the same folder is refused, naming the field
    data["eval"]["ls_qa"] = 7
    profile_file.write_text(yaml.safe_dump(data))
    result = runner.invoke(app, [*args, "--seeds", "0"])
    assert result.exit_code == 1
    assert "field `eval.ls_qa` is 1 there and 7 in the one asked" in _said(result)
    for bad, says in ((["--seeds", "0", "--seed", "1"], "without --resume or --seed"),
                      (["--seeds", "0", "x"], "'x' is not a seed"),
                      (["--seeds", "1", "1"], "seed 1 given twice"),
                      (["stray"], "unexpected argument(s): stray")):  # fmt: skip
        result = runner.invoke(app, [*args, *bad])
        assert result.exit_code == 1 and says in _said(result), (bad, result.output)
