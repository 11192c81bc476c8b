"""The four grades of a played task-file task, in the same shape as the live room's.

Every harness gets the four grades the reports, data filters and RL rewards already read
(`core.sim.graders.Grades`), computed from what a task file can say:

- **effectiveness**: the share of `facts` the final reply states (a fact with alternatives
  counts when any one is there); a task with only a `reference` is scored by the LLM judge
  (core/taskfile/judge.py) and passed in as `judged`.
- **accuracy**: the reply states no number that nothing in the conversation supports. Numbers
  come from the user, the prompt, the skills and the tool results; a reply quoting a price,
  date or count from none of them made it up. Integers below 10 are not checked: they are
  mostly prose ("2 options", "step 1").
- **tool_rationality**: the share of `gold_calls` the run made, matched by the tool's
  *binding* and the arguments the task names, after translating renamed parameters (so HSA
  variants grade like the original); with no gold calls, 1 unless a call failed as invalid
  (unknown tool, bad arguments).
- **skill_selection**: the share of the task's `skills` the run loaded, by role (a renamed
  skill keeps its original name as `metadata.role`); 1 when the task names none.

Matching text is case-, space- and punctuation-tolerant, and numbers compare as numbers
("12.5" states "12.50", "1,299" states "1299").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from core.harness.models import Harness
from core.runtime.trace import SkillLoadStep, ToolCallStep, Trace
from core.sim.graders import GraderResult, Grades
from core.sim.surface import HarnessSurface
from core.taskfile.models import OwnTask

NUMBER = re.compile(
    r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,])\d+(?:\.\d+)?(?![\w])"
)
INVALID_CALL_KINDS = frozenset({"unknown_tool", "invalid_arguments"})
UNCHECKED_BELOW = 10


def normalise(text: str) -> str:
    """Lower case, accents folded, punctuation as spaces (except inside numbers), one space."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    folded = re.sub(r"(?<=\d),(?=\d{3}\b)", "", folded)
    folded = re.sub(r"(?<!\d)[^\w\s]|[^\w\s](?!\d)", " ", folded)
    return " ".join(folded.split())


def _number(text: str) -> str:
    value = float(text.replace(",", ""))
    return f"{value:.6g}"


def numbers_in(text: str) -> set[str]:
    return {_number(m.group(0)) for m in NUMBER.finditer(text)}


def states(reply: str, phrase: str) -> bool:
    """Whether `reply` states `phrase`: every number of the phrase appears as a number and
    the phrase's words appear in order as whole words (normalised)."""
    wanted = numbers_in(phrase)
    if wanted and not wanted <= numbers_in(reply):
        return False
    words = re.sub(NUMBER, " ", normalise(phrase)).split() if wanted else normalise(phrase).split()
    if not words:
        return True
    haystack = f" {re.sub(NUMBER, ' ', normalise(reply)) if wanted else normalise(reply)} "
    haystack = " ".join(haystack.split())
    return f" {' '.join(words)} " in f" {haystack} "


def effectiveness_by_facts(task: OwnTask, reply: str) -> GraderResult:
    options = task.fact_options
    missing = [o for o in options if not any(states(reply, p) for p in o)]
    score = (len(options) - len(missing)) / len(options)
    reasons = [f"missing fact: {' | '.join(o)}" for o in missing]
    if not reply:
        reasons = ["no final reply", *reasons]
    return GraderResult(score=round(score, 4), reasons=reasons)


def _sources(trace: Trace) -> str:
    parts: list[str] = []
    for message in trace.messages:
        if message.get("role") == "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
    return "\n".join(parts)


MAX_DERIVED_FROM = 80
"""Tool values a derived number may be built from (the first ones of the run): pairwise sums
and differences grow with the square of this."""


def _walk_numbers(
    value: Any, key: str, out: list[tuple[str, float]], lists: list[list[Any]]
) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        out.append((key, float(value)))
    elif isinstance(value, str):
        out.extend((key, float(n)) for n in numbers_in(value))
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk_numbers(v, str(k), out, lists)
    elif isinstance(value, list):
        lists.append(value)
        for v in value:
            _walk_numbers(v, key, out, lists)


def derived_numbers(trace: Trace) -> dict[str, str]:
    """{number: how it follows from the run's tool results} for numbers a reply may state
    without any tool returning them: the count of a list, the sum of one field over the
    results ("3 orders", "$47.50 in total"), and the sum or difference of two tool values."""
    values: list[tuple[str, float]] = []
    lists: list[list[Any]] = []
    for step in trace.steps_of(ToolCallStep):
        if step.error_kind is None:
            _walk_numbers(step.result, "", values, lists)
    derived: dict[str, str] = {}

    def add(value: float, how: str) -> None:
        if value >= 0:
            derived.setdefault(_number(f"{value:.6f}"), how)

    for items in lists:
        add(float(len(items)), f"the count of a list of {len(items)} in a tool result")
    by_key: dict[str, list[float]] = {}
    for key, value in values:
        by_key.setdefault(key, []).append(value)
    for key, numbers in by_key.items():
        if key and len(numbers) > 1:
            add(sum(numbers), f"the sum of every {key!r} in the tool results")
    head = [v for _, v in values[:MAX_DERIVED_FROM]]
    for i, a in enumerate(head):
        for b in head[i + 1 :]:
            add(a + b, f"{_number(str(a))} + {_number(str(b))} (tool results)")
            add(
                abs(a - b),
                f"the difference of {_number(str(a))} and {_number(str(b))} (tool results)",
            )
    return derived


def accuracy_by_grounding(trace: Trace, reply: str) -> GraderResult:
    """Every number of the reply (10 and above) is in the conversation, or follows from the
    tool results as a count, sum or difference (`derived_numbers`, named in the reasons)."""
    supported = numbers_in(_sources(trace))
    checked = sorted(
        n for n in numbers_in(reply) if n not in supported and float(n) >= UNCHECKED_BELOW
    )
    derived = derived_numbers(trace) if checked else {}
    unsupported = [n for n in checked if n not in derived]
    if unsupported:
        return GraderResult(
            score=0.0,
            reasons=[
                f"the reply states {', '.join(unsupported)}, which nothing in the "
                "conversation supports (nor a count, sum or difference of tool values)"
            ],
        )
    return GraderResult(score=1.0, reasons=[f"{n}: {derived[n]}" for n in checked])


def _filled(
    harness: Harness, name: str, arguments: Mapping[str, Any]
) -> tuple[str, dict[str, Any]] | None:
    tool = next((t for t in harness.tools if t.name == name), None)
    if tool is None:
        return None
    surface = HarnessSurface(harness, {}, {}, {})
    filled = dict(arguments)
    for param, schema in tool.parameters.get("properties", {}).items():
        if param not in filled and isinstance(schema, dict) and "default" in schema:
            filled[param] = schema["default"]
    return tool.binding, surface.to_canonical(tool.binding, filled)


def _same_value(want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, int | float) and isinstance(got, int | float):
        return float(want) == float(got)
    if isinstance(want, int | float) and isinstance(got, str):
        return numbers_in(got) == {_number(str(want))}
    if isinstance(want, str) and isinstance(got, str):
        return normalise(want) == normalise(got)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(
            _same_value(a, b) for a, b in zip(want, got, strict=True)
        )
    if isinstance(want, dict) and isinstance(got, dict):
        return all(k in got and _same_value(v, got[k]) for k, v in want.items())
    return bool(want == got)


def gold_matched(
    task: OwnTask, written_for: Harness, played: Harness, calls: Iterable[ToolCallStep]
) -> tuple[int, list[str]]:
    """How many of the task's gold calls the run made, and a reason for each one it did not."""
    made = [c for c in calls if c.error_kind not in INVALID_CALL_KINDS]
    made_canonical = [m for m in (_filled(played, c.name, c.arguments) for c in made) if m]
    used = [False] * len(made_canonical)
    hits, reasons = 0, []
    for gold in task.gold_calls:
        wanted = _filled(written_for, gold.tool, {})
        if wanted is None:
            reasons.append(f"gold call {gold.tool}: the harness has no such tool")
            continue
        binding = wanted[0]
        canonical = HarnessSurface(written_for, {}, {}, {}).to_canonical(binding, gold.arguments)
        found = next(
            (
                i
                for i, (b, args) in enumerate(made_canonical)
                if not used[i] and b == binding and _same_value(canonical, args)
            ),
            None,
        )
        if found is None:
            reasons.append(f"no call of {gold.tool} with {canonical}")
        else:
            used[found] = True
            hits += 1
    return hits, reasons


def tool_rationality(
    task: OwnTask, trace: Trace, written_for: Harness, played: Harness
) -> GraderResult:
    calls = trace.steps_of(ToolCallStep)
    invalid = [c for c in calls if c.error_kind in INVALID_CALL_KINDS]
    if not task.gold_calls:
        if invalid:
            return GraderResult(score=0.5, reasons=[f"{c.name}: {c.error}" for c in invalid])
        return GraderResult(score=1.0)
    hits, reasons = gold_matched(task, written_for, played, calls)
    reasons += [f"{c.name}: {c.error}" for c in invalid]
    return GraderResult(score=round(hits / len(task.gold_calls), 4), reasons=reasons)


def _role(harness: Harness, skill_name: str) -> str:
    skill = next((s for s in harness.skills if s.name == skill_name), None)
    if skill is None:
        return skill_name
    return str(skill.metadata.get("role") or skill.name)


def skill_selection(task: OwnTask, trace: Trace, played: Harness) -> GraderResult:
    if not task.skills:
        return GraderResult(score=1.0)
    loaded = {_role(played, s.name) for s in trace.steps_of(SkillLoadStep) if s.ok}
    missing = [s for s in task.skills if s not in loaded]
    score = (len(task.skills) - len(missing)) / len(task.skills)
    return GraderResult(score=round(score, 4), reasons=[f"skill not loaded: {s}" for s in missing])


def grade_own(
    task: OwnTask,
    trace: Trace,
    played: Harness,
    *,
    written_for: Harness | None = None,
    judged: GraderResult | None = None,
) -> Grades:
    """The four grades of `trace` answering `task` under `played` (a variant of
    `written_for`, the harness the task file names things in; default: `played` itself).
    `judged`: the judge's effectiveness for a task without facts."""
    reply = (trace.final_reply or "").strip() if trace.ok else ""
    if task.facts:
        effectiveness = effectiveness_by_facts(task, reply)
    elif judged is not None:
        effectiveness = judged
    else:
        effectiveness = GraderResult(score=0.0, reasons=["no facts and no judge verdict"])
    if not reply:
        effectiveness = GraderResult(
            score=0.0,
            reasons=[
                "no final reply",
                *[r for r in effectiveness.reasons if r != "no final reply"],
            ],
        )
    accuracy = (
        accuracy_by_grounding(trace, reply)
        if reply
        else GraderResult(score=0.0, reasons=["no final reply"])
    )
    base = written_for or played
    return Grades(
        task_id=task.id,
        status=trace.status.value,
        accuracy=accuracy,
        effectiveness=effectiveness,
        tool_rationality=tool_rationality(task, trace, base, played),
        skill_selection=skill_selection(task, trace, played),
    )
