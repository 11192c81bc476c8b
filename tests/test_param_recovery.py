"""Renamed tool parameters (issue #33 item 5): the loop's rejection says what the tool takes,
the train bank renames the parameters the golds pass in a large share of variants, and the
oracle teacher writes recovery rows (the old name, the loop's rejection, the right call) whose
mistaken turn SFT does not train on.

Everything runs the real agent loop against real tools: the live room's simulator and, for a
task file, the order desk's Python and MCP tools.
"""

from __future__ import annotations

import asyncio
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.datagen import GenerateConfig, Teacher, generate, get_sampler
from core.datagen.recovery import RecoveryClient, recovery_coin, renamed_params
from core.episode.live_room import LiveRoomWorld
from core.episode.play import play
from core.harness.demo import load_demo_harness
from core.harness.models import Harness
from core.harness.schema import argument_errors, invalid_arguments_message, parameter_summary
from core.hsa import policy as hsa_policy
from core.hsa.policy import Policy, Strength, apply_transform, plan, sample_variant
from core.runtime.client import ScriptedClient
from core.runtime.trace import ModelCallStep, ToolCallStep, TraceStatus
from core.runtime.trajectory import AssistantTurn, ToolCall
from core.sim.catalog import load_catalog
from core.sim.graders import PENALTY
from core.sim.models import Catalog, Split, Task
from core.sim.oracle import task_harness
from core.sim.tasks import generate_tasks
from core.train.data import chat_row, load_sft_rows

ORDER_DESK = Path(__file__).parents[1] / "resources/examples/order_desk"


@cache
def demo() -> Harness:
    return load_demo_harness()


@cache
def catalog() -> Catalog:
    return load_catalog()


@cache
def train_tasks(per_category: int = 2) -> tuple[Task, ...]:
    return tuple(generate_tasks(Split.TRAIN, seed=0, per_category=per_category))


def price_task() -> Task:
    return next(t for t in train_tasks() if t.category == "price")


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def oracle_rows(tmp_path: Path, name: str, tasks: Any, **config: Any) -> list[dict[str, Any]]:
    out = tmp_path / f"{name}.jsonl"
    settings_ = GenerateConfig(out=out, concurrency=1, **config)
    summary = asyncio.run(
        generate(list(tasks), demo(), catalog(), Teacher.oracle(catalog()), settings_)
    )
    assert summary.rejected == 0, summary.examples
    found = rows(out)
    assert summary.recovery == sum(r["recovery"] for r in found)
    return found


def renamed_link_no() -> Harness:
    """The demo with `link_no` renamed in every tool (a parameter-rename transform)."""
    for seed in range(50):
        variant = apply_transform(demo(), "tool_param_rename_random", seed)
        tool = variant.harness.tool("get_product_by_link")
        assert tool is not None
        if "link_no" not in tool.parameters["properties"]:
            return variant.harness
    raise AssertionError("no seed renamed link_no")


# ----------------------------------------------------------------------------- the rejection


def test_the_rejection_names_the_tools_parameters() -> None:
    """The old name under a renamed harness, through the real loop and the live room's tools:
    the schema's own problem lines stay, and the tool's parameters follow."""
    harness = renamed_link_no()
    tool = harness.tool("get_product_by_link")
    assert tool is not None
    (new,) = tool.parameters["properties"]
    task = price_task()
    client = ScriptedClient(
        [
            AssistantTurn(tool_calls=[ToolCall(name=tool.name, arguments={"link_no": 3})]),
            AssistantTurn(tool_calls=[ToolCall(name=tool.name, arguments={new: 3})]),
            AssistantTurn(content="Link 3 it is."),
        ]
    )
    run = task_harness(task, harness)
    episode = asyncio.run(play(task, run, client, LiveRoomWorld(catalog()), graded=False))
    first, second = episode.trace.steps_of(ToolCallStep)
    assert first.error_kind == "invalid_arguments" and second.error_kind is None
    message = first.error or ""
    assert message == (
        "invalid arguments for get_product_by_link: Additional properties are not allowed "
        f"('link_no' was unexpected); '{new}' is a required property; "
        f"get_product_by_link takes: {new} (integer, required)"
    )
    assert message in json.dumps(episode.trace.messages, ensure_ascii=False)  # what the model saw


def test_the_rejection_of_a_schema_that_takes_any_names() -> None:
    """A schema without `additionalProperties: false` does not flag the old name itself: the
    message does. A right name with a wrong type gets no parameter list (the name was right)."""
    schema = {
        "type": "object",
        "properties": {"pqz_12f": {"type": "integer"}, "color": {"type": "string"}},
        "required": ["pqz_12f"],
    }
    args = {"link_no": 3}
    text = invalid_arguments_message("get_item", schema, args, argument_errors(schema, args))
    assert text == (
        "invalid arguments for get_item: 'pqz_12f' is a required property; 'link_no' is not "
        "a parameter of get_item; get_item takes: pqz_12f (integer, required), color (string)"
    )
    typed = {"pqz_12f": "three"}
    assert invalid_arguments_message("get_item", schema, typed, argument_errors(schema, typed)) == (
        "invalid arguments for get_item: pqz_12f: 'three' is not of type 'integer'"
    )


def test_a_long_schema_is_cut_keeping_the_required_parameters() -> None:
    props: dict[str, Any] = {f"p{i}": {"type": ["string", "null"]} for i in range(12)}
    props["ids"] = {"type": "array", "items": {"type": "integer"}}
    schema = {"type": "object", "properties": props, "required": ["p11", "ids"]}
    text = parameter_summary(schema)
    assert text.startswith("p0 (string|null), p1 (string|null)")
    assert "p11 (string|null, required)" in text and "ids (array of integer, required)" in text
    assert text.endswith("... and 5 more") and len(text) < 240
    assert parameter_summary({"type": "object", "properties": {}}) == "no parameters"


# ----------------------------------------------------------------------------- the train bank


def renamed_share(found: list[dict[str, Any]]) -> float:
    """Of the variant rows whose gold calls a tool with arguments: the share whose calls pass
    a parameter under a name the original harness does not have."""
    original = {p for t in demo().tools for p in t.parameters.get("properties", {})}
    loader = demo().settings.load_skill_tool
    calling = renamed = 0
    for row in found:
        if row["provenance"]["variant"]["index"] == 0 or row["recovery"]:
            continue
        calls = [
            c
            for turn in row["trajectory"]["turns"]
            for c in turn["tool_calls"]
            if c["name"] != loader and c["arguments"]
        ]
        if calls:
            calling += 1
            renamed += any(set(c["arguments"]) - original for c in calls)
    assert calling >= 40
    return renamed / calling


def test_train_bank_variants_rename_the_parameters_the_gold_passes(tmp_path: Path) -> None:
    """`hat data generate --teacher oracle --variants 3 --sampler hsa` on a small seeded task
    set: at least 35 % of the variant rows whose gold calls a tool with arguments call it
    with a renamed parameter (the plain draw gave ~12 % on the cpu profile's data)."""
    found = oracle_rows(tmp_path, "share", train_tasks(), variants=3, recovery_fraction=0.0)
    assert renamed_share(found) >= 0.35


def test_the_held_out_bank_draws_what_it_drew_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the train bank's plans change, and only on the seeds whose coin says so: with the
    boost off every plan is the same for the held-out bank, and the train bank differs only
    in which transform heads one slot."""
    policies = [Policy(bank, strength) for bank in ("train", "heldout") for strength in Strength]
    boosted = {(p, s): plan(p, s) for p in policies for s in range(60)}
    monkeypatch.setattr(hsa_policy, "PARAM_RENAME_SHARE", {})
    changed = 0
    for (policy, seed), slots in boosted.items():
        plain = plan(policy, seed)
        if policy.bank.value == "heldout":
            assert slots == plain
            continue
        assert len(slots) == len(plain)
        if slots != plain:
            changed += 1
            assert slots[0][0].name in hsa_policy.PARAM_RENAMES or any(
                s[0].name in hsa_policy.PARAM_RENAMES for s in slots
            )
            assert sum(a[0] is not b[0] for a, b in zip(slots, plain, strict=True)) == 1
    assert changed > 0


def test_the_same_seed_gives_the_same_boosted_variant() -> None:
    policy = Policy("train", "medium")
    for seed in range(20):
        a, b = sample_variant(demo(), policy, seed), sample_variant(demo(), policy, seed)
        assert a.harness == b.harness and a.applied == b.applied and a.chain == b.chain


# ----------------------------------------------------------------------------- recovery rows


def test_a_recovery_row_from_the_live_rooms_oracle(tmp_path: Path) -> None:
    """The mistaken call (the original names), the loop's own rejection, the corrected call,
    then the gold as it is without recovery; the mistaken turn is marked `train: false`, the
    row is graded as played (full marks but for the rejected call) and loads for SFT."""
    tasks = train_tasks()[:12]
    found = oracle_rows(tmp_path, "rec", tasks, variants=3, recovery_fraction=1.0)
    plain_rows = oracle_rows(tmp_path, "plain", tasks, variants=3, recovery_fraction=0.0)
    plain = {r["key"]: r for r in plain_rows}
    default = oracle_rows(tmp_path, "default", tasks, variants=3)  # recovery_fraction 0.25
    recovered = [r for r in found if r["recovery"]]
    assert len(recovered) >= 5 and not any(r["recovery"] for r in plain_rows)
    assert 0 < sum(r["recovery"] for r in default) < len(recovered)
    for row in recovered:
        messages = row["messages"]
        (index,) = [i for i, m in enumerate(messages) if m.get("train") is False]
        mistake, rejection, fixed = messages[index : index + 3]
        assert mistake["role"] == "assistant" and "train" not in fixed
        at = sum(m["role"] == "assistant" for m in messages[:index])
        turn = row["trajectory"]["turns"][at]  # assistant messages are the turns, in order
        assert len(turn["tool_calls"]) == 1
        call = turn["tool_calls"][0]
        original_names = {p for t in demo().tools for p in t.parameters["properties"]}
        assert set(call["arguments"]) <= original_names  # written with the original names
        spec = next(t for t in row["tools"] if t["function"]["name"] == call["name"])
        schema = spec["function"]["parameters"]
        assert not set(call["arguments"]) <= set(schema["properties"])
        # the loop's own text (rows store tools with sorted keys, so the list is compared
        # as a set): the schema's problem lines, then what the tool takes
        text = json.loads(rejection["content"].split(">", 1)[1].rsplit("<", 1)[0])
        message = text["error"]["message"]
        assert text["error"]["kind"] == "invalid_arguments"
        head, takes = message.split(f"; {call['name']} takes: ")
        assert head == f"invalid arguments for {call['name']}: " + "; ".join(
            argument_errors(schema, call["arguments"])
        )
        entries = re.compile(r", (?![^(]*\))")  # a comma outside the parentheses
        assert set(entries.split(takes)) == set(entries.split(parameter_summary(schema)))
        assert f"{call['name']} takes: " in rejection["content"]
        assert f'"name": "{call["name"]}"' in fixed["content"]
        for value in call["arguments"].values():
            assert json.dumps(value) in fixed["content"]
        grades = row["grades"]
        for name in ("accuracy", "effectiveness", "skill_selection"):
            assert grades[name]["score"] == 1, grades[name]
        rationality = grades["tool_rationality"]
        assert f"{call['name']} failed (invalid_arguments)" in rationality["reasons"]
        # the corrected call is the needed call, not a repeat of the rejected one (whose old
        # parameter name is the canonical one): one failed call costs one penalty, no more
        assert not any(
            r.startswith(("repeated call", "missing call")) for r in rationality["reasons"]
        )
        assert rationality["score"] == 1 - PENALTY, rationality
        assert not row["hook_retry"] and row["pruned_turns"] == 0
        # without the mistaken exchange, the row is the job's plain gold
        other = plain[row["key"]]
        assert [m for i, m in enumerate(messages) if i not in (index, index + 1)] == (
            other["messages"]
        )
    loaded = load_sft_rows([tmp_path / "rec.jsonl"]).rows
    assert len(loaded) == len(found)
    chats = [chat_row(r) for r in loaded if r["recovery"]]
    assert all(sum(m.get("train") is False for m in c["messages"]) == 1 for c in chats)


def test_recovery_rows_are_seeded() -> None:
    keys = [f"train.price.{i:04d}#v1" for i in range(400)]
    drawn = [recovery_coin(0, k, 0.25) for k in keys]
    assert drawn == [recovery_coin(0, k, 0.25) for k in keys]
    assert 0.18 < sum(drawn) / len(drawn) < 0.32
    assert drawn != [recovery_coin(1, k, 0.25) for k in keys]
    assert not any(recovery_coin(0, k, 0.0) for k in keys)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), pick=st.integers(0, 10_000))
def test_any_parameter_rename_recovers_to_the_gold(seed: int, pick: int) -> None:
    """Any train-bank variant that renames a parameter the gold passes: the recovery play
    makes exactly one rejected call with the original names, then is the gold's run turn for
    turn (same calls, same results, same reply, same accuracy and effectiveness)."""
    tasks = train_tasks()
    task = tasks[pick % len(tasks)]
    variant = get_sampler("hsa")(demo(), seed)
    harness = task_harness(task, variant.harness)
    renamed = renamed_params(harness, demo())
    world = LiveRoomWorld(catalog())

    async def run(recover: bool) -> Any:
        gold = await world.gold(task, variant)
        client: Any = gold.client
        if recover:
            client = RecoveryClient(gold.client, gold.harness, renamed, native=False)
        episode = await play(task, gold.harness, client, world, surface=gold.surface)
        return episode, client

    plain, _ = asyncio.run(run(False))
    played, client = asyncio.run(run(True))
    if client.mistake is None:  # the gold passes no renamed parameter: the run is the gold's
        assert played.trace.trajectory == plain.trace.trajectory
        return
    assert played.trace.status is TraceStatus.OK
    mistake = client.mistake
    rejected = [s for s in played.trace.steps_of(ToolCallStep) if s.error_kind]
    assert [(s.turn, s.error_kind) for s in rejected] == [(mistake.turn, "invalid_arguments")]
    names = renamed[mistake.call.name]
    assert set(mistake.call.arguments) & set(names.values())
    assert not set(mistake.call.arguments) & set(names)
    turns = list(played.trace.trajectory.turns)
    del turns[mistake.turn - 1]
    assert turns == plain.trace.trajectory.turns
    ok = [(s.name, s.result) for s in played.trace.steps_of(ToolCallStep) if not s.error_kind]
    assert ok == [
        (s.name, s.result) for s in plain.trace.steps_of(ToolCallStep) if not s.error_kind
    ]
    for grade in ("accuracy", "effectiveness", "skill_selection"):
        assert getattr(played.grades, grade).score == getattr(plain.grades, grade).score
    calls = played.trace.steps_of(ModelCallStep)
    assert len(calls) == len(plain.trace.steps_of(ModelCallStep)) + 1


def test_recovery_on_a_task_file_reaches_the_gold_end_state(tmp_path: Path) -> None:
    """The order desk (Python and MCP tools, a task file, golds remapped through HSA): the
    recovery rows' end state is the gold's (accuracy 1 is the end-state check there)."""
    from core.episode.open_world import open_world
    from core.harness.folder import import_folder
    from core.taskfile.models import TaskSplit, load_task_file

    harness = import_folder(ORDER_DESK / "harness", trust_python_hooks=True)
    tasks = [
        t
        for t in load_task_file(ORDER_DESK / "tasks.jsonl")
        if t.split is TaskSplit.TRAIN and not t.needs_judge
    ][:8]
    out = tmp_path / "desk.jsonl"
    config = GenerateConfig(out=out, variants=3, concurrency=1, recovery_fraction=1.0)

    async def main() -> Any:
        async with open_world(harness, task_file=True) as world:
            return await generate(tasks, harness, None, Teacher.oracle(), config, world=world)

    summary = asyncio.run(main())
    assert summary.rejected == 0, summary.examples
    recovered = [r for r in rows(out) if r["recovery"]]
    assert recovered and summary.recovery == len(recovered)
    for row in recovered:
        assert row["grades"]["accuracy"]["score"] == 1, row["grades"]["accuracy"]
        (mistake,) = [m for m in row["messages"] if m.get("train") is False]
        assert mistake["role"] == "assistant"
        after = row["messages"][row["messages"].index(mistake) + 1]
        assert "invalid_arguments" in after["content"] and " takes: " in after["content"]


# ----------------------------------------------------------------------------- SFT masking


def test_the_sft_mask_skips_the_mistaken_turn(tmp_path: Path, demo_model_folder: Path) -> None:
    """tokenize_with_mask on a recovery row with the demo model's tokenizer: 0 on every token
    of the mistaken turn, 1 on the corrected call's, and the rendered text is the row's."""
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from training.sft import tokenize_with_mask

    found = oracle_rows(tmp_path, "mask", train_tasks()[:6], variants=3, recovery_fraction=1.0)
    row = next(r for r in found if r["recovery"])
    chat = chat_row(row, system_prompt="compact")
    tokenizer = AutoTokenizer.from_pretrained(demo_model_folder)
    item = tokenize_with_mask(tokenizer, chat)
    ids, mask = item["input_ids"], item["assistant_masks"]
    runs, current = [], []
    for token, bit in zip(ids, mask, strict=True):
        if bit:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    decoded = [tokenizer.decode(r) for r in runs]
    trained = [m for m in chat["messages"] if m["role"] == "assistant" and "train" not in m]
    assert decoded == [m["content"] + "<|im_end|>\n" for m in trained]
    (mistake,) = [m for m in chat["messages"] if m.get("train") is False]
    fixed = chat["messages"][chat["messages"].index(mistake) + 2]
    assert mistake["content"] not in "".join(decoded)
    assert fixed["content"] + "<|im_end|>\n" in decoded
    plain = [{k: v for k, v in m.items() if k != "train"} for m in chat["messages"]]
    assert tokenizer.decode(ids) == tokenizer.apply_chat_template(plain, tokenize=False)
