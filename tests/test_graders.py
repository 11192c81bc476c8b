"""The graders, pinned by hand-written good and bad behaviours (tests/grader_cases/cases.jsonl).

Each case is a viewer task (message + intents, room pinned to link 5 at a fixed clock, optional
faults and distractor tools) and a scripted trajectory: skill loads and tool calls turn by turn,
then the reply. The trajectory runs through the real agent loop against a LiveRoom, with the
demo harness's before_reply hooks switched off so the reply under test is accepted as written
(the graders judge replies the hooks would have caught too). The expected grade of each named
grader is exact.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from core.harness.demo import load_demo_harness
from core.harness.models import Harness, HookEvent
from core.runtime import AgentLoop, AssistantTurn, ScriptedClient, ToolCall, Trace
from core.sim.catalog import load_catalog
from core.sim.distractors import DISTRACTOR_TOOLS
from core.sim.graders import Grades, grade, sizes_mentioned
from core.sim.models import Catalog, FaultSpec, Intent, RoomState, Split, Task, TaskCategory
from core.sim.oracle import room_bindings
from core.sim.room import LiveRoom

CASES = Path(__file__).parent / "grader_cases" / "cases.jsonl"
CLOCK = "2025-06-14T10:00:00+00:00"


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def demo() -> Harness:
    return load_demo_harness()


def case_task(case: dict[str, Any]) -> Task:
    intents = [Intent.model_validate(i) for i in case["intents"]]
    category = TaskCategory.MULTI_INTENT if len(intents) > 1 else TaskCategory(intents[0].kind)
    return Task(
        id=f"case.{case['name'][:20]}",
        split=Split.TEST,
        category=category,
        viewer_message=case["message"],
        template_id="hand-written",
        intents=intents,
        room=RoomState(pinned_link=case.get("pinned", 5), clock=case.get("clock", CLOCK)),
        faults=[FaultSpec.model_validate(f) for f in case.get("faults", [])],
    )


def case_harness(case: dict[str, Any], demo: Harness) -> Harness:
    harness = demo.model_copy(deep=True)
    for hook in harness.hooks:
        if hook.event is HookEvent.BEFORE_REPLY:
            hook.enabled = False
    if "max_turns" in case:
        harness.settings.max_turns = case["max_turns"]
    if case.get("distractors"):
        extra = [t.model_copy(deep=True) for t in DISTRACTOR_TOOLS]
        harness.tools = [*harness.tools, *extra]
    return harness


def case_turns(case: dict[str, Any]) -> list[AssistantTurn]:
    turns = []
    for turn in case["turns"]:
        if isinstance(turn, str):
            turns.append(AssistantTurn(content=turn))
        else:
            calls = [ToolCall(name=name, arguments=args) for name, args in turn]
            turns.append(AssistantTurn(tool_calls=calls))
    return turns


def run_case(case: dict[str, Any], demo: Harness, catalog: Catalog) -> tuple[Trace, Grades]:
    task = case_task(case)
    harness = case_harness(case, demo)
    room = LiveRoom.for_task(task, catalog)
    loop = AgentLoop(harness, ScriptedClient(case_turns(case)), room_bindings(room))
    trace = asyncio.run(loop.run(task.viewer_message))
    return trace, grade(task, trace, harness, catalog)


def test_there_are_at_least_30_cases() -> None:
    cases = load_cases()
    assert len(cases) >= 30
    graders = {g for c in cases for g in c["expect"] if g != "status"}
    assert graders == {"accuracy", "effectiveness", "tool_rationality", "skill_selection"}
    assert len({c["name"] for c in cases}) == len(cases)


@pytest.mark.parametrize("case", load_cases(), ids=lambda c: c["name"])
def test_grader_case(case: dict[str, Any], demo: Harness, catalog: Catalog) -> None:
    trace, grades = run_case(case, demo, catalog)
    got = grades.scores()
    for name, want in case["expect"].items():
        if name == "status":
            assert trace.status.value == want
            continue
        reasons = getattr(grades, name).reasons
        assert got[name] == pytest.approx(want), f"{name}: {got[name]} != {want}; {reasons}"


def test_grades_are_json_and_carry_reasons(demo: Harness, catalog: Catalog) -> None:
    case = next(c for c in load_cases() if c["name"].startswith("wrong price"))
    _, grades = run_case(case, demo, catalog)
    again = Grades.model_validate_json(grades.model_dump_json())
    assert again == grades
    assert any("59.90" in r for r in grades.accuracy.reasons)
    assert not grades.full_marks


def test_size_mentions() -> None:
    sizes = ["XS", "S", "M", "L"]
    assert sizes_mentioned("I'd go for size M, it runs small", sizes) == ["M"]
    assert sizes_mentioned("a medium should fit", sizes) == ["M"]
    assert sizes_mentioned("I'm sure you'll love it", sizes) == []
    assert sizes_mentioned("take the 42, it is roomy", ["41", "42"]) == ["42"]
    assert sizes_mentioned("One Size fits all", ["One Size"]) == ["One Size"]
