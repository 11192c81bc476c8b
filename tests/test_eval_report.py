"""Evaluation reports (core/eval/report.py, core/eval/plots.py): the numbers a report holds,
its Markdown, its JSON round trip, its PNG plots and the multi-model comparison table."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.eval.ifeval import IfevalScore, InstructionCheck, aggregate_results, to_result
from core.eval.report import (
    EvalReport,
    build_report,
    compare_reports,
    report_markdown,
    write_comparison,
    write_report,
)
from core.eval.results import EvalResult, ResultStatus, Suite

ROOT = Path(__file__).resolve().parents[1]
DIMS = ("tool_schemas", "prompt", "hooks")


def agent_row(
    suite: Suite,
    task: str,
    score: float,
    *,
    sample: int = 0,
    seed: int | None = None,
    dim: str | None = None,
    reason: str | None = None,
) -> EvalResult:
    return EvalResult(
        suite=suite,
        task_id=task,
        sample=sample,
        variant_seed=seed,
        dimension=dim,
        category="schedule" if task < "t3" else "qa",
        score=0.0 if reason else score,
        passed=score == 1.0 and not reason,
        status=ResultStatus.FAILED if reason else ResultStatus.OK,
        reason=reason,
    )


def model_rows(strength: float, *, samples: int = 1) -> list[EvalResult]:
    """A small run: 6 tasks on LS-QA, 3 variants each on HV-QA (tool_schemas costs more for
    a weaker model), 4 IFEval prompts; two failures with reasons."""
    rows: list[EvalResult] = []
    for i in range(6):
        task = f"t{i}"
        for s in range(samples):
            ls = 1.0 if (i + s) / 6 < strength else 0.5
            reason = "empty_output: the model produced no text" if (i, s) == (5, 0) else None
            rows.append(agent_row(Suite.LS_QA, task, ls, sample=s, reason=reason))
            for k, dim in enumerate(DIMS):
                hv = ls - (0.5 if dim == "tool_schemas" and strength < 0.9 else 0.0)
                reason = "max_turns: 12 turns" if (i, k, s) == (0, 2, 0) else None
                rows.append(
                    agent_row(
                        Suite.HV_QA,
                        task,
                        max(hv, 0.0),
                        sample=s,
                        seed=100 * i + k,
                        dim=dim,
                        reason=reason,
                    )
                )
    for j in range(4):
        for s in range(samples):
            strict = [j % 2 == 0, j < 3]
            loose = [True, j < 3]
            score = IfevalScore(
                key=j,
                prompt_strict=all(strict),
                prompt_loose=all(loose),
                instructions=[
                    InstructionCheck(id="punctuation:no_comma", strict=strict[0], loose=loose[0]),
                    InstructionCheck(
                        id="change_case:english_lowercase", strict=strict[1], loose=loose[1]
                    ),
                ],
            )
            rows.append(to_result(score, sample=s, response="text"))
    return rows


@pytest.fixture(scope="module")
def rows() -> list[EvalResult]:
    return model_rows(0.5, samples=2)


@pytest.fixture(scope="module")
def report(rows: list[EvalResult]) -> EvalReport:
    return build_report(rows, meta={"model": "demo", "harness": "live-host@v1"}, resamples=400)


def test_suite_numbers(report: EvalReport, rows: list[EvalResult]):
    assert [s.suite for s in report.suites] == [Suite.LS_QA, Suite.HV_QA, Suite.IFEVAL]
    ls = report.suite(Suite.LS_QA)
    assert ls is not None
    ls_rows = [r for r in rows if r.suite is Suite.LS_QA]
    assert ls.items == 12 and ls.tasks == 6 and ls.samples == 2 and ls.failed == 1
    assert ls.score.mean == pytest.approx(sum(r.score for r in ls_rows) / 12)
    assert ls.score.low <= ls.score.mean <= ls.score.high and ls.score.clusters == 6
    assert ls.pass_rate.mean == pytest.approx(sum(r.passed for r in ls_rows) / 12)
    assert [(f.kind, f.count) for f in ls.failures] == [("empty_output", 1)]
    assert ls.failures[0].example == "empty_output: the model produced no text"
    assert ls.pass_k is not None and set(ls.pass_k) == {1, 2}
    assert ls.pass_k[2] <= ls.pass_k[1] == pytest.approx(ls.pass_rate.mean)
    assert set(ls.by_category) == {"schedule", "qa"}
    assert ls.variants is None and ls.ifeval is None


def test_variants_and_dimensions(report: EvalReport, rows: list[EvalResult]):
    hv = report.suite("hv-qa")
    assert hv is not None and hv.variants is not None
    assert hv.variants.variants == 18 and hv.variants.tasks == 6
    assert hv.variants.worst == 0.0
    assert report.dimensions[0].dimension == "tool_schemas"
    tools = report.dimensions[0]
    assert tools.cost is not None and tools.cost.mean > 0.3
    # prompt variants score like the original, but the original lost t5/sample 0 to a
    # failure (0) that its prompt variant did not: cost = mean over tasks of LS - HV
    prompt = next(d for d in report.dimensions if d.dimension == "prompt")

    def task_mean(suite: Suite, task: str) -> float:
        mine = [
            r.score
            for r in rows
            if r.suite is suite and r.task_id == task and r.dimension in (None, "prompt")
        ]
        return sum(mine) / len(mine)

    tasks = [f"t{i}" for i in range(6)]
    expected = sum(task_mean(Suite.LS_QA, t) - task_mean(Suite.HV_QA, t) for t in tasks) / 6
    assert prompt.cost is not None and prompt.cost.mean == pytest.approx(expected)
    assert expected < 0


def test_ifeval_numbers_match_the_official_aggregation(report: EvalReport, rows: list[EvalResult]):
    ifeval = report.suite(Suite.IFEVAL)
    assert ifeval is not None and ifeval.ifeval is not None
    official = aggregate_results(rows)
    assert official is not None
    assert {k: v.mean for k, v in ifeval.ifeval.items()} == pytest.approx(official)
    assert ifeval.score.mean == pytest.approx(official["prompt_level_strict_acc"])


def test_no_pass_k_with_one_sample():
    report = build_report(model_rows(0.5), resamples=200)
    assert all(s.pass_k is None for s in report.suites)


def test_markdown_has_a_table_per_suite_and_the_breakdowns(report: EvalReport):
    md = report_markdown(report)
    assert md.startswith("# Evaluation report: demo")
    assert "- **harness**: live-host@v1" in md
    for heading in ("### LS-QA", "### HV-QA", "### IFEval", "## Per HSA dimension"):
        assert heading in md
    assert "## Distribution over harness variants" in md
    assert "| empty_output | 1 | empty_output: the model produced no text |" in md
    assert "| max_turns | 1 | max_turns: 12 turns |" in md
    assert "pass^k | k=1: " in md
    assert "instruction-level loose" in md
    assert "Costliest dimension: **tool_schemas**" in md
    ls = report.suite(Suite.LS_QA)
    assert ls is not None
    assert f"{ls.score.mean:.3f} [{ls.score.low:.3f}, {ls.score.high:.3f}]" in md


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_write_report_files(tmp_path: Path, report: EvalReport):
    paths = write_report(report, tmp_path / "out")
    names = [p.name for p in paths]
    assert names == ["report.json", "report.md", "scores.png", "variants.png", "dimensions.png"]
    assert EvalReport.model_validate_json(paths[0].read_text()) == report
    for png in paths[2:]:
        width, height = _png_size(png)
        assert width > 400 and height > 300


def test_write_report_from_rows_without_variants(tmp_path: Path):
    rows = [r for r in model_rows(1.0) if r.suite is Suite.LS_QA]
    paths = write_report(rows, tmp_path, meta={"model": "solo"}, plots=True)
    assert [p.name for p in paths] == ["report.json", "report.md", "scores.png"]
    assert json.loads(paths[0].read_text())["meta"] == {"model": "solo"}


def test_bad_rows():
    with pytest.raises(ValueError, match="no evaluation results"):
        build_report([])
    row = agent_row(Suite.LS_QA, "t1", 1.0)
    with pytest.raises(ValueError, match="duplicate evaluation item"):
        build_report([row, row])


def test_comparison_table(tmp_path: Path, report: EvalReport):
    strong = build_report(model_rows(1.0), meta={"model": "hat"}, resamples=200)
    ls_only = build_report(
        [r for r in model_rows(0.2) if r.suite is Suite.LS_QA], meta={"model": "base"}
    )
    reports = {"base": ls_only, "fixed SFT": report, "HAT": strong}
    table = compare_reports(reports)
    assert list(table.rows) == ["base", "fixed SFT", "HAT"]
    assert table.columns == ["ls-qa", "hv-qa", "ifeval", "hv-qa:p5", "hv-qa:worst"]
    md = table.markdown()
    assert md.splitlines()[0] == "| model | LS-QA | HV-QA | IFEval | HV-QA P5 | HV-QA worst |"
    base_line = next(line for line in md.splitlines() if line.startswith("| base |"))
    assert base_line.count("–") == 4  # base has only LS-QA
    hat = table.rows["HAT"]["hv-qa"]
    hat_suite = strong.suite(Suite.HV_QA)
    assert hat_suite is not None and hat.mean == hat_suite.score.mean
    custom = compare_reports(reports, columns=["ifeval:inst_level_loose_acc", "ls-qa:pass", "x"])
    assert custom.markdown().splitlines()[0] == (
        "| model | IFEval instruction-level loose | LS-QA pass rate | x |"
    )
    paths = write_comparison(reports, tmp_path)
    assert [p.name for p in paths] == [
        "comparison.json",
        "comparison.md",
        "comparison.png",
        "comparison_variants.png",
        "comparison_dimensions.png",
    ]
    for png in paths[2:]:
        _png_size(png)
    with pytest.raises(ValueError):
        compare_reports({})


OUTCOMES = {
    "ok": (ResultStatus.OK, None),
    "failed": (ResultStatus.FAILED, "max_turns: 8 turns without a reply"),
    "timeout": (ResultStatus.ERROR, "timeout: the item took longer than 600 s"),
    "model_error": (ResultStatus.ERROR, "model_error: HTTP 503 from the server"),
    "crash": (ResultStatus.ERROR, "crash: ValueError: boom"),
}


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(Suite)),
            st.integers(0, 5),
            st.floats(0, 1),
            st.sampled_from(sorted(OUTCOMES)),
        ),
        min_size=1,
        max_size=25,
        unique_by=lambda t: (t[0], t[1]),
    )
)
def test_counts_add_up(items: list[tuple[Suite, int, float, str]]):
    """Every row is counted once: scored (ok or failed as 0) or an infrastructure error,
    which is left out of the score and counted apart, whatever the mix."""
    rows = [
        EvalResult(
            suite=suite,
            task_id=str(task),
            score=score,
            passed=score > 0.5,
            status=OUTCOMES[outcome][0],
            reason=OUTCOMES[outcome][1],
        )
        for suite, task, score, outcome in items
    ]
    report = build_report(rows, resamples=50)
    assert sum(s.items for s in report.suites) == len(rows)
    assert sum(s.failed for s in report.suites) == sum(o == "failed" for *_, o in items)
    assert sum(s.errors for s in report.suites) == sum(
        o in ("timeout", "model_error", "crash") for *_, o in items
    )
    for s in report.suites:
        mine = [r for r in rows if r.suite is s.suite]
        kept = [r for r in mine if r.status is not ResultStatus.ERROR]
        assert s.failed + s.errors + sum(r.status is ResultStatus.OK for r in mine) == s.items
        if not kept:
            assert s.score is None and s.pass_rate is None
            continue
        plain = sum(r.score if r.status is ResultStatus.OK else 0.0 for r in kept)
        assert s.score is not None and s.score.mean == pytest.approx(plain / len(kept))
        assert s.score.n == len(kept)
        assert sum(f.count for f in s.failures) == s.failed + s.errors
        assert all(f.infra == (f.kind in ("timeout", "model_error", "crash")) for f in s.failures)


def test_rows_stored_before_the_error_status_are_migrated_to_errors(tmp_path: Path) -> None:
    """A store at revision 0004 holds rows that recorded a server error, a timeout or a crash
    as `failed`; opening it migrates them to `error` (counted apart, left out of the score),
    and a model failure stays `failed`."""
    import sqlalchemy as sa
    from alembic import command

    from core.eval.store import get_run, load_results
    from core.store import Store
    from core.store.db import alembic_config, make_engine

    path = tmp_path / "old.db"
    at = "2026-12-01T00:00:00.000000Z"
    engine = make_engine(path)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0004")
        conn.execute(sa.text(
            "INSERT INTO eval_runs (pk, id, status, request, fingerprint, model, harness, "
            "total, created_at) VALUES (1, 'ev-old', 'done', :request, 'f', 'm', 'h', 4, :at)"
        ), {"request": json.dumps({"model": "m", "suites": ["ls-qa"]}), "at": at})  # fmt: skip
        for i, (status, reason) in enumerate([
            ("failed", "model_error: connection refused"), ("failed", "timeout"),
            ("failed", "max_turns: 8"), ("ok", None),
        ]):  # fmt: skip
            conn.execute(sa.text(
                "INSERT INTO eval_results (run_pk, item_key, suite, task_id, sample, score, "
                "passed, status, reason, grades, created_at) VALUES (1, :key, 'ls-qa', :task, "
                "0, :score, :passed, :status, :reason, '{}', :at)"
            ), {"at": at, "key": f"k{i}", "task": f"t{i}", "score": float(status == "ok"),
                "passed": status == "ok", "status": status, "reason": reason})  # fmt: skip
    engine.dispose()
    with Store.open(path) as store:
        rows = load_results(store, "ev-old")
        run = get_run(store, "ev-old")
    assert [r.status for r in rows] == [
        ResultStatus.ERROR,
        ResultStatus.ERROR,
        ResultStatus.FAILED,
        ResultStatus.OK,
    ]
    assert (run.failed, run.errors) == (1, 2)
    report = build_report(rows, resamples=50)
    ls = report.suite(Suite.LS_QA)
    assert ls is not None and ls.errors == 2 and ls.score is not None and ls.score.mean == 0.5
    assert "model_error (infrastructure, not scored)" in report_markdown(report)


def test_report_modules_import_no_plotting_or_torch():
    code = (
        "import sys, core.eval.report, core.eval.plots, core.eval.stats\n"
        "bad = [m for m in ('matplotlib', 'torch', 'lm_eval', 'nltk') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
