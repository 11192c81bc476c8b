"""IFEval (Zhou et al. 2023): load the prompts, score a response with the official checkers,
aggregate the four official numbers.

    prompts = load_prompts("input_data.jsonl")             # the official JSONL
    score = score_response(prompts[0], response_text)      # IfevalScore
    aggregate([score, ...])                                # the four official accuracies

Scoring is lm-eval's maintained copy of the official checkers, run unmodified (how they are
loaded without lm-eval's heavy package imports and without an NLTK download, and the two
deliberate deviations: where the Punkt sentence data comes from and a seeded langdetect, is in
core/eval/ifeval_checkers.py). Needs the `eval` extra.

The four numbers (names as lm-eval reports them):
- prompt_level_strict_acc: share of prompts whose every instruction is followed;
- inst_level_strict_acc: share of all instructions (pooled over prompts) followed;
- *_loose_acc: the same where an instruction counts as followed when any of the official
  loose variants of the response follows it (the response as is, without its first line,
  without its last line, without both; each also with every `*` removed).
An empty (whitespace-only) response follows nothing, strict or loose.

Prompts come from the official `input_data.jsonl` (key, prompt, instruction_id_list, kwargs)
or a JSON/JSONL export of `google/IFEval` (e.g. `load_dataset("google/IFEval")["train"]
.to_json(path)`: its kwargs carry every argument name with null for the unused ones, which
are dropped here exactly as lm-eval drops them). Without a path, the default file is
`<HAT home>/datasets/ifeval/input_data.jsonl`. IFEval is test data: never train on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.eval.ifeval_checkers import IfevalUnavailableError, checkers
from core.eval.results import EvalResult, ResultStatus, Suite
from core.jsonl import jsonl_lines
from core.paths import datasets_dir

__all__ = [
    "METRICS",
    "IfevalError",
    "IfevalPrompt",
    "IfevalScore",
    "IfevalUnavailableError",
    "InstructionCheck",
    "aggregate",
    "aggregate_results",
    "checker_source",
    "default_prompts_path",
    "known_instruction_ids",
    "load_prompts",
    "score_response",
    "to_result",
]

METRICS = (
    "prompt_level_strict_acc",
    "inst_level_strict_acc",
    "prompt_level_loose_acc",
    "inst_level_loose_acc",
)
"""The four official IFEval numbers, in lm-eval's names and order."""


class IfevalError(ValueError):
    """Bad IFEval input: the message names the file, line and field."""


class IfevalPrompt(BaseModel):
    """One official IFEval prompt."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    key: int
    prompt: str = Field(min_length=1)
    instruction_id_list: list[str] = Field(min_length=1)
    kwargs: list[dict[str, Any]]

    @model_validator(mode="after")
    def _one_kwargs_per_instruction(self) -> IfevalPrompt:
        if len(self.kwargs) != len(self.instruction_id_list):
            raise ValueError(
                f"kwargs has {len(self.kwargs)} entries for "
                f"{len(self.instruction_id_list)} instructions (one per instruction)"
            )
        return self


class InstructionCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    strict: bool
    loose: bool


class IfevalScore(BaseModel):
    """The checkers' verdict on one response.

    It also reads as a mapping (`dict(score)`, `score["prompt_strict"]`, `"key" in score`)
    whose values are plain JSON, the shape an EvalResult keeps in `grades`;
    `IfevalScore.model_validate(result.grades)` reads it back (extra grade keys, such as the
    response text, are ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    key: int
    prompt_strict: bool
    prompt_loose: bool
    instructions: list[InstructionCheck]

    @property
    def strict(self) -> list[bool]:
        return [i.strict for i in self.instructions]

    @property
    def loose(self) -> list[bool]:
        return [i.loose for i in self.instructions]

    def keys(self) -> list[str]:
        return list(type(self).model_fields)

    def __getitem__(self, name: str) -> Any:
        if name not in type(self).model_fields:
            raise KeyError(name)
        return self.model_dump(mode="json", include={name})[name]

    def __contains__(self, name: object) -> bool:
        return name in type(self).model_fields


def default_prompts_path() -> Path:

    return datasets_dir() / "ifeval" / "input_data.jsonl"


def load_prompts(path: str | Path | None = None) -> list[IfevalPrompt]:
    """Read IFEval prompts from a JSONL file (one object a line) or a JSON array.

    Raises IfevalError naming the file, line and field for bad records, duplicate keys and
    instruction ids the checkers do not know; FileNotFoundError when there is no file."""
    file = Path(path) if path is not None else default_prompts_path()
    if not file.is_file():
        hint = "" if path is not None else " (pass the path of an IFEval input_data.jsonl)"
        raise FileNotFoundError(f"no IFEval prompt file at {file}{hint}")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise IfevalError(f"{file}: not UTF-8 text ({exc.reason})") from None
    known = known_instruction_ids()
    prompts: list[IfevalPrompt] = []
    seen: dict[int, int] = {}
    for where, record in _records(file, text):
        if not isinstance(record, dict):
            raise IfevalError(
                f"{file}:{where}: expected a JSON object, got {type(record).__name__}"
            )
        try:
            prompt = IfevalPrompt.model_validate(record)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "record"
            raise IfevalError(f"{file}:{where}: field {field}: {err['msg']}") from None
        unknown = [i for i in prompt.instruction_id_list if i not in known]
        if unknown:
            raise IfevalError(
                f"{file}:{where}: field instruction_id_list: unknown instruction id "
                f"{', '.join(unknown)} (not in {checker_source()})"
            )
        if prompt.key in seen:
            raise IfevalError(
                f"{file}:{where}: field key: {prompt.key} already at {seen[prompt.key]}"
            )
        seen[prompt.key] = where
        prompts.append(prompt)
    if not prompts:
        raise IfevalError(f"{file}: no prompts")
    return prompts


def _records(file: Path, text: str) -> Iterator[tuple[int, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise IfevalError(f"{file}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        # a JSON array has no useful line numbers: name the record's position instead
        yield from ((i + 1, item) for i, item in enumerate(items))
        return
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise IfevalError(f"{file}:{number}: not valid JSON ({exc.msg})") from None


def known_instruction_ids() -> frozenset[str]:
    """Every instruction id the official checkers implement."""
    return frozenset(checkers().registry)


def checker_source() -> str:
    """Which implementation scores, e.g. "lm-eval 0.4.13 (lm_eval/tasks/ifeval)"."""
    return checkers().source


def _as_prompt(prompt: IfevalPrompt | Mapping[str, Any]) -> IfevalPrompt:
    if isinstance(prompt, IfevalPrompt):
        return prompt
    try:
        return IfevalPrompt.model_validate(dict(prompt))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "record"
        raise IfevalError(f"IFEval prompt: field {field}: {err['msg']}") from None


def score_response(prompt: IfevalPrompt | Mapping[str, Any], response: str) -> IfevalScore:
    """Strict and loose verdicts of the official checkers for one response."""
    item = _as_prompt(prompt)
    found = checkers()
    unknown = [i for i in item.instruction_id_list if i not in found.registry]
    if unknown:
        raise IfevalError(f"IFEval prompt {item.key}: unknown instruction id {', '.join(unknown)}")
    inp = found.input_example(
        key=item.key,
        instruction_id_list=list(item.instruction_id_list),
        prompt=item.prompt,
        # lm-eval drops falsy values itself; give it the record's own kwargs
        kwargs=[dict(k) for k in item.kwargs],
    )
    strict = found.follow_strict(inp, response)
    loose = found.follow_loose(inp, response)
    checks = [
        InstructionCheck(id=i, strict=bool(s), loose=bool(lo))
        for i, s, lo in zip(
            item.instruction_id_list,
            strict.follow_instruction_list,
            loose.follow_instruction_list,
            strict=True,
        )
    ]
    return IfevalScore(
        key=item.key,
        prompt_strict=bool(strict.follow_all_instructions),
        prompt_loose=bool(loose.follow_all_instructions),
        instructions=checks,
    )


def aggregate(scores: Iterable[IfevalScore]) -> dict[str, float]:
    """The four official numbers (METRICS) over some scored responses; instruction-level
    numbers pool every instruction of every prompt, as lm-eval's agg_inst_level_acc does."""
    items = list(scores)
    if not items:
        raise ValueError("no IFEval scores to aggregate")
    strict = [s for x in items for s in x.strict]
    loose = [s for x in items for s in x.loose]
    return {
        "prompt_level_strict_acc": sum(x.prompt_strict for x in items) / len(items),
        "inst_level_strict_acc": sum(strict) / len(strict),
        "prompt_level_loose_acc": sum(x.prompt_loose for x in items) / len(items),
        "inst_level_loose_acc": sum(loose) / len(loose),
    }


def to_result(
    score: IfevalScore,
    *,
    sample: int = 0,
    response: str | None = None,
    latency_s: float | None = None,
    trace_id: str | None = None,
) -> EvalResult:
    """The stored row for one scored response (core/eval/results.py: score and passed are
    prompt-level strict; grades hold the full verdict, and the response when given)."""
    grades: dict[str, Any] = dict(score)
    if response is not None:
        grades["response"] = response
    return EvalResult(
        suite=Suite.IFEVAL,
        task_id=str(score.key),
        sample=sample,
        score=1.0 if score.prompt_strict else 0.0,
        passed=score.prompt_strict,
        grades=grades,
        latency_s=latency_s,
        trace_id=trace_id,
    )


def aggregate_results(results: Iterable[EvalResult]) -> dict[str, float] | None:
    """The four official numbers from stored IFEval rows (other suites are skipped).

    A row that failed (no reply) follows nothing: it counts at prompt level as not followed,
    and at instruction level with its instructions all not followed when the row kept them
    (grades["instructions"]); None when no row is an IFEval row."""
    scores: list[IfevalScore] = []
    for r in results:
        if r.suite is not Suite.IFEVAL:
            continue
        try:
            score = IfevalScore.model_validate(r.grades)
        except ValidationError:
            score = IfevalScore(
                key=_int_key(r.task_id), prompt_strict=False, prompt_loose=False, instructions=[]
            )
        if r.status is not ResultStatus.OK:
            score = IfevalScore(
                key=score.key,
                prompt_strict=False,
                prompt_loose=False,
                instructions=[
                    InstructionCheck(id=i.id, strict=False, loose=False) for i in score.instructions
                ],
            )
        scores.append(score)
    if not scores:
        return None
    if not any(s.instructions for s in scores):
        prompt_strict = sum(s.prompt_strict for s in scores) / len(scores)
        prompt_loose = sum(s.prompt_loose for s in scores) / len(scores)
        return {
            "prompt_level_strict_acc": prompt_strict,
            "inst_level_strict_acc": float("nan"),
            "prompt_level_loose_acc": prompt_loose,
            "inst_level_loose_acc": float("nan"),
        }
    return aggregate(scores)


def _int_key(task_id: str) -> int:
    try:
        return int(task_id)
    except ValueError:
        return -1
