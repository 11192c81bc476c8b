"""The model card (core/eval/card.py, `hat models card`): a trained model's harness version,
data, stage settings and scores, gathered from the real store. The store holds a pipeline's
three stage runs as training writes them; the evaluation is a real `run_eval` whose model is
played by the oracle (a stand-in: serving a trained model costs minutes on this CPU, and the
card reads the stored rows, not the model)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from core.cli.main import app
from core.eval.api import EvalRequest, run_eval
from core.eval.card import card_markdown, harness_warning, model_card
from core.eval.oracle_model import oracle_factory
from core.eval.results import Suite
from core.store import Store
from core.store.serving import ModelRecord, add_model
from core.store.training import RunRecord, add_run

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _stage(run_id: str, stage: str, version: str, tmp: Path, parent: str) -> RunRecord:
    config = {
        "model": "smol",
        "data": [f"datasets/hat-{stage}.jsonl"],
        "max_steps": 270 if stage == "sft" else 5,
        "learning_rate": 1e-3,
        "lora": {"r": 16, "alpha": 32, "dropout": 0.0},
    }
    return RunRecord(
        id=run_id, stage=stage, status="done", config=yaml.safe_dump(config), run_dir=str(tmp),
        parent=parent, harness_version=version, dataset_hash="d" * 64, step=config["max_steps"],
        total_steps=config["max_steps"], packages={"trl": "1.16.0", "peft": "0.18.0"},
    )  # fmt: skip


@pytest.fixture
def trained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    versions = []
    for folder, message in (
        (ROOT / "resources/demo/live-host", "demo"),
        (ROOT / "resources/experiment/live-host-edited", "an edit"),
    ):
        result = runner.invoke(app, ["harness", "import", str(folder), "-m", message])
        assert result.exit_code == 0, result.output
        with Store.open() as store:
            versions.append(store.resolve("live-host@head"))
    trained_on, edited = versions
    merged = tmp_path / "merged"
    merged.mkdir()
    with Store.open() as store:
        add_run(store, RunRecord(id="pipeline-1", stage="pipeline", status="done",
                                 config="model: smol\n", run_dir=str(tmp_path)))  # fmt: skip
        for run_id, stage in (("sft-1", "sft"), ("opd-1", "opd"), ("rl-1", "rl")):
            add_run(store, _stage(run_id, stage, trained_on, tmp_path, "pipeline-1"))
        add_model(store, ModelRecord(name="smol", kind="base", source="folder",
                                     location=str(tmp_path)))  # fmt: skip
        add_model(store, ModelRecord(name="hat", kind="adapter", source="training",
                                     location=str(tmp_path), base="smol",
                                     meta={"run": "rl-1", "stage": "rl"}))  # fmt: skip
        add_model(store, ModelRecord(name="hat-merged", kind="merged", source="training",
                                     location=str(merged), base="smol"))  # fmt: skip
        request = EvalRequest(
            model="hat", suites=[Suite.LS_QA, Suite.HV_QA], limit=2, variants=1, harness=trained_on
        )
        run_eval(store, request, client_factory=oracle_factory(store))
    return {"trained": trained_on, "edited": edited, "merged": str(merged)}


def test_the_card_of_a_merged_copy_is_its_adapters_lineage_and_scores(
    trained: dict[str, str],
) -> None:
    with Store.open() as store:
        card = model_card(store, "hat-merged")
    assert [s.stage for s in card.stages] == ["sft", "opd", "rl"]
    assert card.harness_versions == [trained["trained"]]
    assert card.stages[0].settings["max_steps"] == 270
    assert card.stages[0].settings["lora"] == {"r": 16, "alpha": 32, "dropout": 0.0}
    assert {s.suite for s in card.scores} == {"ls-qa", "hv-qa"}
    assert all(s.passed == 1.0 and s.items == 2 for s in card.scores)  # the oracle's marks
    assert card.variant_gap == 0.0 and card.packages["trl"] == "1.16.0"
    text = card_markdown(card)
    front = yaml.safe_load(text.split("---")[1])
    assert front["base_model"] == "smol" and front["library_name"] == "transformers"
    assert "| sft | `sft-1` | done | 270/270 |" in text and "sha256 dddddddddddd" in text
    assert "| ls-qa | 100.0 % | 2 |" in text and "Variant gap" in text


def test_serving_under_another_harness_says_so_and_names_the_gate(
    trained: dict[str, str],
) -> None:
    from core.cli.chat_cmd import trained_harness_warning

    with Store.open() as store:
        card = model_card(store, "hat")
    assert harness_warning(card, trained["trained"]) is None
    line = harness_warning(card, trained["edited"]) or ""
    assert f"hat eval impact --from {trained['trained'][:10]} --to {trained['edited'][:10]}" in line
    assert trained_harness_warning("hat", trained["edited"]) == (
        f"{line} (the gate has not measured it yet)"
    )
    assert trained_harness_warning("smol", trained["edited"]) is None  # nothing trained
    assert trained_harness_warning("not-registered", trained["edited"]) is None


def test_hat_models_card_writes_readme_beside_the_weights(trained: dict[str, str]) -> None:
    result = runner.invoke(app, ["models", "card", "hat-merged", "--write"])
    assert result.exit_code == 0, result.output
    readme = Path(trained["merged"]) / "README.md"
    text = readme.read_text()
    assert text.startswith("---\nbase_model: smol")
    # the trained version by its name, in the harness section and as the scores' version
    assert text.count(f"live-host@{trained['trained'][:10]}") == 3
    printed = runner.invoke(app, ["models", "card", "smol"])
    assert printed.exit_code == 0 and "not recorded" in printed.output
    missing = runner.invoke(app, ["models", "card", "nope"])
    assert missing.exit_code == 1 and "nope" in missing.output


def test_the_gate_verdict_joins_the_warning_once_both_sides_were_evaluated(
    trained: dict[str, str],
) -> None:
    """Chat's and Evaluate's notice: the warning alone until the model was evaluated under
    both versions with the same request; then the gate's paired pass-rate difference and its
    verdict. The model under the edited harness is played by the oracle fixed on the trained
    version (it keeps the names it learned: what a fine-tuned model does), so the edit's
    renames cost it items."""
    from core.eval.card import gate_verdict, harness_notice

    with Store.open() as store:
        first = harness_notice(store, "hat", trained["edited"]) or ""
        assert first.endswith("(the gate has not measured it yet)")
        for version, fixed in ((trained["trained"], None), (trained["edited"], trained["trained"])):
            request = EvalRequest(model="hat", suites=[Suite.LS_QA], harness=version, limit=8)
            run_eval(store, request, client_factory=oracle_factory(store, fixed))
        verdict = gate_verdict(store, model_card(store, "hat"), trained["edited"])
        assert verdict is not None and verdict.paired == 8 and verdict.suites == ["ls-qa"]
        assert verdict.pass_from == 1.0 and verdict.pass_to < 1.0
        low, high = verdict.pass_delta_ci
        assert low <= verdict.pass_delta <= high < 1
        assert verdict.verdict == (
            "worse beyond noise" if high < 0 else "no difference beyond noise"
        )
        notice = harness_notice(store, "hat", trained["edited"]) or ""
        assert notice.startswith(first.removesuffix(" (the gate has not measured it yet)"))
        assert verdict.line() in notice and "100.0 % under" in notice
        assert harness_notice(store, "hat", trained["trained"]) is None
        # the card keeps a row per harness version, the trained one first: the edit's newer
        # run does not hide the score under the harness the model learned
        rows = [(s.suite, s.harness_version, s.passed) for s in model_card(store, "hat").scores]
        ls = [r for r in rows if r[0] == "ls-qa"]
        assert ls[0] == ("ls-qa", trained["trained"], 1.0)
        assert ("ls-qa", trained["edited"], verdict.pass_to) in ls
        assert gate_verdict(store, model_card(store, "hat"), trained["trained"]) is None


def test_a_task_file_run_under_an_edit_pairs_with_the_one_under_the_original() -> None:
    """The replication's edit run names the version the task file was written in
    (`task_file_harness`); the run under that version leaves it empty. Same items, same names:
    the gate pairs them. Another limit is another request."""
    from types import SimpleNamespace

    from core.eval.card import _same_items

    base = {"model": "m", "suites": [Suite.TASKS], "task_file": "/t/tasks.jsonl", "limit": 5}

    def run(version: str, **fields: object) -> SimpleNamespace:
        request = EvalRequest(**{**base, **fields}, harness=version)  # type: ignore[arg-type]
        return SimpleNamespace(request=request, harness_version=version,
                               fingerprint=request.fingerprint())  # fmt: skip

    original, edit, other = run("A"), run("B", task_file_harness="A"), run("A", limit=6)
    assert _same_items(original) == _same_items(edit)  # type: ignore[arg-type]
    assert _same_items(original) != _same_items(other)  # type: ignore[arg-type]
    assert original.request.fingerprint() != edit.request.fingerprint()  # why it is needed
