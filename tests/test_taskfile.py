"""Task files: reading (errors name the file and line), the four grades (facts, grounded
numbers, gold calls by binding under renames, skills by role) and the judge's prompt/endpoint.

Pure Python: no model. The played traces come from the real agent loop with a ScriptedClient
standing in for the model (the loop, bindings and graders are the real ones)."""

from __future__ import annotations

import asyncio
import json
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.harness.models import Harness, Tool
from core.runtime.bindings import Bindings
from core.runtime.client import ScriptedClient
from core.runtime.loop import AgentLoop
from core.runtime.trajectory import AssistantTurn, ToolCall
from core.serving.judge import http_judge
from core.taskfile.grading import grade_own, states
from core.taskfile.judge import JudgeUnavailable, check_judge, load_prompt, prompt_text
from core.taskfile.models import (
    OwnTask,
    TaskFileError,
    is_task_file,
    load_task_file,
    parse_task_line,
)

EXAMPLE_TASKS = Path(__file__).parents[1] / "resources/examples/order_desk/tasks.jsonl"


def _harness() -> Harness:
    tool = {
        "name": "lookup_order",
        "description": "An order by number.",
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "verbose": {"type": "boolean", "default": False},
            },
            "required": ["order_id"],
        },
        "binding": "test.lookup_order",
    }
    skill = {
        "name": "order-help",
        "description": "Orders.",
        "body": "Look the order up.",
        "kind": "reply",
    }
    return Harness.model_validate({"name": "desk", "tools": [tool], "skills": [skill]})


def _lookup(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"order_id": args["order_id"], "status": "shipped", "total": 27.48, "seen": ctx.context}


def _play(harness: Harness, turns: list[AssistantTurn], task: OwnTask) -> Any:
    bindings = Bindings()
    bindings.register("test.lookup_order", _lookup)
    loop = AgentLoop(harness, ScriptedClient(turns), bindings)
    return asyncio.run(loop.run(task.message, context={"task": dict(task.context)}))


TASK = OwnTask(
    id="t1",
    message="Where is PT-1042?",
    facts=["shipped", ["27.48", "27.5"]],
    gold_calls=[{"tool": "lookup_order", "arguments": {"order_id": "PT-1042"}}],  # type: ignore[list-item]
    skills=["order-help"],
)


def _gold_turns(
    tool: str = "lookup_order",
    param: str = "order_id",
    skill: str = "order-help",
    reply: str = "PT-1042 has shipped; the total was 27.48.",
) -> list[AssistantTurn]:
    return [
        AssistantTurn(
            tool_calls=[
                ToolCall(name="load_skill", arguments={"name": skill}),
                ToolCall(name=tool, arguments={param: "pt-1042"}),
            ]
        ),
        AssistantTurn(content=reply),
    ]


# ----------------------------------------------------------------------------- reading


def test_the_example_task_file_loads_and_is_recognised() -> None:
    tasks = load_task_file(EXAMPLE_TASKS)
    assert len(tasks) >= 20 and {t.split.value for t in tasks} == {"train", "test"}
    assert is_task_file(EXAMPLE_TASKS)
    assert not is_task_file(Path(__file__).parents[1] / "resources/tasks/ls-qa.jsonl")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "a task is a JSON object"),
        ('{"id": "a", "facts": ["x"]}', "message"),
        ('{"id": "a", "message": "hi"}', "needs facts, a reference answer"),
        ('{"id": "a", "message": "hi", "facts": [""]}', "facts[0] is empty"),
        (
            '{"id": "a", "message": "hi", "facts": ["x"], '
            '"gold_calls": [{"tool": "t", "args": {}}]}',
            "gold_calls[0].args",
        ),
        ('{"id": "a", "message": "hi", "facts": ["x"], "split": "dev"}', "split"),
        ('{"id": "a", "message": "hi", "facts": ["x"], "colour": 1}', "colour"),
    ],
)
def test_a_bad_line_is_named_by_file_line_and_field(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        '{"id": "ok", "message": "fine", "facts": ["x"]}\n\n' + line + "\n", encoding="utf-8"
    )
    with pytest.raises(TaskFileError) as caught:
        load_task_file(path)
    assert f"{path}:3: " in str(caught.value)
    assert expected in str(caught.value)


def test_duplicate_ids_empty_files_and_unreadable_files_are_named(tmp_path: Path) -> None:
    dup = tmp_path / "dup.jsonl"
    line = '{"id": "same", "message": "m", "facts": ["x"]}\n'
    dup.write_text("// comment\n" + line + line, encoding="utf-8")
    with pytest.raises(
        TaskFileError, match=r"dup.jsonl:3: task id 'same' is already used on line 2"
    ):
        load_task_file(dup)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n// nothing\n", encoding="utf-8")
    with pytest.raises(TaskFileError, match="has no tasks"):
        load_task_file(empty)
    with pytest.raises(TaskFileError, match="cannot read"):
        load_task_file(tmp_path / "missing.jsonl")
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + line.encode())
    assert load_task_file(bom)[0].id == "same"


words = st.text(
    alphabet=string.ascii_letters + string.digits + " .,-'", min_size=1, max_size=40
).filter(lambda s: s.strip())


@given(
    st.fixed_dictionaries(
        {
            "id": st.text(alphabet=string.ascii_letters + "-_.", min_size=1, max_size=20),
            "message": words,
        },
        optional={
            "facts": st.lists(
                st.one_of(words, st.lists(words, min_size=1, max_size=3)), min_size=1, max_size=4
            ),
            "category": st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=10),
            "split": st.sampled_from(["train", "test"]),
            "gold_calls": st.lists(
                st.fixed_dictionaries(
                    {
                        "tool": st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=8),
                        "arguments": st.dictionaries(
                            st.text(alphabet="abc", min_size=1, max_size=3), st.integers()
                        ),
                    }
                ),
                max_size=3,
            ),
        },
    ).map(lambda d: d if "facts" in d else {**d, "reference": "the answer"})
)
@settings(max_examples=60, deadline=None)
def test_any_valid_task_line_reads_back_as_written(data: dict[str, Any]) -> None:
    task = parse_task_line(json.dumps(data), where="f:1")
    again = json.loads(task.model_dump_json())
    for key, value in data.items():
        assert again[key] == value


# ----------------------------------------------------------------------------- fact matching


@given(
    words, st.sampled_from(["", "Sure! ", "OK, so "]), st.sampled_from(["", ".", " - thanks!", "!"])
)
@settings(max_examples=80, deadline=None)
def test_a_reply_that_contains_a_phrase_states_it(phrase: str, before: str, after: str) -> None:
    assert states(f"{before}{phrase.upper()}{after}", phrase)


def test_numbers_compare_as_numbers_and_words_as_whole_words() -> None:
    assert states("That's GBP 1299.50 in total", "1,299.5")
    assert states("It costs 12.50", "12.5")
    assert not states("It costs 12.51", "12.5")
    assert not states("it was reshipped", "shipped")
    assert states("Your order has SHIPPED!", "shipped")
    assert not states("30 days", "14 days")


# ----------------------------------------------------------------------------- grades


def test_the_gold_run_gets_full_marks_and_a_wrong_run_loses_each_grade_for_its_own_reason() -> None:
    harness = _harness()
    gold = grade_own(TASK, _play(harness, _gold_turns(), TASK), harness)
    assert gold.full_marks, gold
    wrong = _gold_turns(skill="nope", reply="It shipped and cost 31.00.")
    wrong[0].tool_calls[1].arguments["order_id"] = "PT-9999"
    grades = grade_own(TASK, _play(harness, wrong, TASK), harness)
    assert grades.effectiveness.score == 0.5 and "27.48" in grades.effectiveness.reasons[0]
    assert grades.accuracy.score == 0 and "31" in grades.accuracy.reasons[0]
    assert (
        grades.tool_rationality.score == 0
        and "no call of lookup_order" in grades.tool_rationality.reasons[0]
    )
    assert grades.skill_selection.score == 0


def test_gold_calls_and_skills_match_by_binding_and_role_under_renames() -> None:
    """An HSA-style variant renames the tool, its parameter and the skill; the task file still
    names the originals and the gold played in the variant's names grades full marks."""
    harness = _harness()
    tool = harness.tools[0]
    props = dict(tool.parameters["properties"])
    props["ref_code"] = props.pop("order_id")
    renamed_tool = Tool.model_validate(
        {
            **tool.model_dump(),
            "name": "fetchOrder",
            "parameters": {**tool.parameters, "properties": props, "required": ["ref_code"]},
            "binding_args": {"ref_code": "order_id"},
        }
    )
    skill = harness.skills[0]
    renamed_skill = skill.model_copy(
        update={"name": "zq-orders", "metadata": {**skill.metadata, "role": "order-help"}}
    )
    variant = harness.model_copy(update={"tools": [renamed_tool], "skills": [renamed_skill]})
    trace = _play(variant, _gold_turns("fetchOrder", "ref_code", "zq-orders"), TASK)
    grades = grade_own(TASK, trace, variant, written_for=harness)
    assert grades.full_marks, grades


def test_the_task_context_reaches_the_tools_but_not_the_model() -> None:
    task = TASK.model_copy(update={"context": {"customer": "C-7"}})
    trace = _play(_harness(), _gold_turns(), task)
    result = next(
        s for s in trace.steps if getattr(s, "type", "") == "tool_call" and s.name == "lookup_order"
    )
    assert result.result["seen"] == {"task": {"customer": "C-7"}}
    assert "C-7" not in trace.messages[0]["content"]


# ----------------------------------------------------------------------------- judge


def test_the_judge_prompt_is_a_versioned_file_and_bad_prompts_are_refused() -> None:
    prompt = load_prompt()
    assert prompt.version == load_prompt(prompt_text()).version and len(prompt.version) == 12
    assert load_prompt(prompt_text() + " ").version != prompt.version
    task = OwnTask(id="j", message="Can I return a read book?", reference="No, only unread books.")
    messages = prompt.messages(task, "Sure, any time!")
    assert (
        "only unread books" in messages[1]["content"]
        and "Sure, any time!" in messages[1]["content"]
    )
    with pytest.raises(ValueError, match="---"):
        load_prompt("no separator here ${reply}")


def test_a_judge_that_is_down_is_named_before_anything_runs() -> None:
    judge = http_judge("http://127.0.0.1:9/v1", "judge-model")
    with pytest.raises(
        JudgeUnavailable, match=r"the judge at http://127.0.0.1:9/v1 does not answer"
    ):
        asyncio.run(check_judge(judge, timeout_s=2))


# ----------------------------------------------------------------------------- derived numbers


def _orders(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {
        "customer": args["order_id"],
        "orders": [
            {"id": "A-1", "total": 17.48, "items": 12},
            {"id": "A-2", "total": 30.02, "items": 14},
            {"id": "A-3", "total": 112.5, "items": 3},
        ],
    }


def _play_orders(reply: str) -> Any:
    bindings = Bindings()
    bindings.register("test.lookup_order", _orders)
    turns = [
        AssistantTurn(tool_calls=[ToolCall(name="lookup_order", arguments={"order_id": "C-7"})]),
        AssistantTurn(content=reply),
    ]
    loop = AgentLoop(_harness(), ScriptedClient(turns), bindings)
    return asyncio.run(loop.run("what did I spend?", context={}))


@pytest.mark.parametrize(
    ("reply", "how"),
    [
        ("You spent 160.00 over your orders.", "the sum of every 'total'"),
        ("Your first two orders came to 47.50.", "17.48 + 30.02"),
        ("A-3 cost 95.02 more than A-1.", "the difference of"),
        ("You bought 29 items in all.", "the sum of every 'items'"),
    ],
)
def test_a_count_sum_or_difference_of_tool_values_is_grounded_and_says_how(
    reply: str, how: str
) -> None:
    """#34 A1: a correct total is not made up; the grade's reason says how it follows."""
    from core.taskfile.grading import accuracy_by_grounding

    trace = _play_orders(reply)
    result = accuracy_by_grounding(trace, reply)
    assert result.score == 1, result.reasons
    assert any(how in r for r in result.reasons), result.reasons


@given(wrong=st.floats(min_value=10, max_value=10_000).map(lambda v: round(v, 2)))
@settings(max_examples=40, deadline=None)
def test_a_number_no_tool_value_adds_up_to_is_still_made_up(wrong: float) -> None:
    from core.taskfile.grading import accuracy_by_grounding, derived_numbers, numbers_in

    trace = _play_orders("x")
    derived = derived_numbers(trace)
    reply = f"You spent {wrong:.2f} in total."
    (stated,) = numbers_in(reply)
    result = accuracy_by_grounding(trace, reply)
    grounded = stated in derived or stated in numbers_in(str(trace.messages))
    assert (result.score == 1) == grounded, (reply, result.reasons)
    if not grounded:
        assert "nor a count, sum or difference" in result.reasons[0]


_IDS = st.text(alphabet=string.ascii_uppercase + string.digits, min_size=6, max_size=10)


@settings(max_examples=60, deadline=None)
@given(said=st.lists(_IDS, min_size=1, max_size=3, unique=True),
       found=st.lists(_IDS, min_size=1, max_size=3, unique=True))  # fmt: skip
def test_a_gold_call_waits_for_the_result_that_holds_its_argument(
    said: list[str], found: list[str]
) -> None:
    """call_layers: a call on a value the customer wrote goes first; a call on a value only
    an earlier call's result holds waits one turn past that call, at any depth; a value no
    one wrote and no result holds (a topic the agent picks) asks for no wait."""
    from core.taskfile.gold import call_layers

    found = [f"ZZ{v}" for v in found if f"ZZ{v}" not in " ".join(said)]  # never said
    if not found:
        return
    calls = [{"tool": "lookup", "arguments": {"id": said[0].lower()}}]  # the customer's case
    results: list[Any] = [{"next": found[0]}]
    for i, value in enumerate(found):  # a chain: each result names the next call's value
        calls.append({"tool": "follow", "arguments": {"ref": {"deep": [value]}}})
        results.append({"next": found[i + 1]} if i + 1 < len(found) else "done")
    calls.append({"tool": "policy", "arguments": {"topic": "unrelated-topic"}})
    results.append(None)
    message = "about " + " and ".join(said)
    task = OwnTask(id="t", message=message, facts=["done"], gold_calls=calls)  # type: ignore[arg-type]
    assert call_layers(task, results) == [0, *range(1, len(found) + 1), 0]
    assert call_layers(task, [None] * len(calls)) == [0] * len(calls)  # no results: one turn
