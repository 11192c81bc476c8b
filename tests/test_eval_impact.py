"""The harness-change gate: two stored harness versions, the flips between them, grouped by
the changed components, with the score change and its interval.

For determinism the "model" here is the simulator's oracle (`core.sim.oracle.OracleClient`, a
real ChatClient driven through the real agent loop, room and graders) rather than the served
135M model, whose answers are mostly wrong under any harness. Two oracles:
- `oracle_clients(catalog)`: harness-aware (reads each item's harness): an edit that keeps
  the task answerable changes nothing for it;
- `oracle_clients(catalog, memorised=V1)`: fixed on V1's names, a stand-in for a model
  fine-tuned on one harness that keeps calling a renamed tool by its old name.
A third double, `_PromptSensitive`, answers nothing when the system prompt carries a marker,
to make flips that only a prompt edit can explain.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.eval.api import EvalError, EvalItem, Suite, impact, list_eval_runs
from core.eval.impact import changes_between, report_markdown
from core.eval.oracle_model import oracle_clients
from core.eval.store import load_trace
from core.harness.demo import load_demo_harness
from core.harness.models import Harness
from core.runtime.client import ChatClient, Message, ModelReply
from core.sim.catalog import load_catalog
from core.sim.expect import plan_task
from core.sim.surface import HarnessSurface
from core.sim.tasks import load_suite
from core.store import Store

RENAMED = "tool check_stock -> stock_lookup (renamed)"


@pytest.fixture
def store(hat_home: Path) -> Iterator[Store]:
    s = Store.open(hat_home / "hat.db")
    yield s
    s.close()


def versions(store: Store) -> tuple[str, str, Harness]:
    """V1: the demo harness; V2: the same with check_stock renamed to stock_lookup."""
    original = load_demo_harness()
    v1 = store.commit(original, "demo")
    edited = original.model_copy(deep=True)
    tool = edited.tool("check_stock")
    assert tool is not None
    tool.name = "stock_lookup"
    v2 = store.commit(edited, "rename check_stock")
    return v1.id, v2.id, original


def test_rename_breaks_a_memorised_model_and_flips_group_under_the_tool(store: Store) -> None:
    v1, v2, original = versions(store)
    catalog = load_catalog()
    fixed = oracle_clients(catalog, memorised=original)
    report = impact(
        store, "oracle-v1", v1, v2, suites=[Suite.LS_QA], limit=18, client_factory=fixed
    )
    assert report.paired == 18 and report.reused == []
    assert report.flips and report.fixed == 0 and report.broke == len(report.flips)
    assert report.score_from == 1.0 and report.delta < 0
    low, high = report.delta_ci
    assert low <= report.delta <= high < 0
    assert report.pass_delta == pytest.approx(-report.broke / 18)
    # every flip is a task that needs the renamed tool, grouped under the rename
    tasks = {t.id: t for t in load_suite("ls-qa")}
    top = report.groups[0]
    assert top.change is not None and top.change.label == RENAMED
    assert {f.key for f in top.flips} == {f.key for f in report.flips}
    for flip in report.flips:
        assert flip.components == (RENAMED,)
        bindings = {s.binding for s in plan_task(tasks[flip.key[1]], catalog).required()}
        assert "sim.check_stock" in bindings
        assert flip.before.passed and not flip.after.passed
    # items whose task does not need the tool did not flip
    assert report.broke < report.paired
    text = report_markdown(report)
    assert RENAMED in text and "95% CI" in text
    data = report.to_dict()
    assert data["broke"] == report.broke and data["groups"][0]["component"] == RENAMED

    # a harness-aware model is not hurt by the rename: no flips, zero change
    aware = impact(
        store,
        "oracle",
        v1,
        v2,
        suites=[Suite.LS_QA],
        limit=18,
        client_factory=oracle_clients(catalog),
    )
    assert aware.flips == [] and aware.delta == 0 and aware.score_to == 1.0


def test_stored_runs_are_reused_and_reverse_flips_are_fixes(store: Store) -> None:
    v1, v2, original = versions(store)
    fixed = oracle_clients(load_catalog(), memorised=original)
    first = impact(store, "oracle-v1", v1, v2, suites=[Suite.LS_QA], limit=9, client_factory=fixed)
    runs = len(list_eval_runs(store))
    assert runs == 2

    calls: list[str] = []

    def counting(item: EvalItem, harness: Harness, surface: HarnessSurface) -> ChatClient:
        calls.append(item.task_id)
        client: ChatClient = fixed(item, harness, surface)
        return client

    again = impact(
        store, "oracle-v1", v1, v2, suites=[Suite.LS_QA], limit=9, client_factory=counting
    )
    assert calls == [] and len(list_eval_runs(store)) == runs
    assert again.reused == [first.from_run, first.to_run]
    assert [f.key for f in again.flips] == [f.key for f in first.flips]

    back = impact(
        store, "oracle-v1", v2, v1, suites=[Suite.LS_QA], limit=9, client_factory=counting
    )
    assert calls == [] and back.from_run == first.to_run
    assert back.fixed == first.broke > 0 and back.broke == 0
    assert back.delta == pytest.approx(-first.delta)

    # another limit is another request: new runs
    impact(store, "oracle-v1", v1, v2, suites=[Suite.LS_QA], limit=3, client_factory=counting)
    assert len(calls) == 6 and len(list_eval_runs(store)) == runs + 2


class _PromptSensitive:
    """The oracle, except that it answers nothing when the system prompt has a marker."""

    def __init__(self, oracle: ChatClient) -> None:
        self.oracle = oracle

    async def complete(
        self, messages: Sequence[Message], *, tools: Any = None, on_delta: Any = None
    ) -> ModelReply:
        if "NEVER ANSWER" in str(messages[0].get("content", "")):
            return ModelReply(content="")
        return await self.oracle.complete(messages, tools=tools, on_delta=on_delta)


def test_prompt_only_change_owns_the_flips_it_alone_explains(store: Store) -> None:
    original = load_demo_harness()
    v1 = store.commit(original, "demo").id
    edited = original.model_copy(deep=True)
    section = next(s for s in edited.prompt.sections if s.id == "rules")
    section.template = (section.template or "") + "\nNEVER ANSWER.\n"
    v2 = store.commit(edited, "a new rule").id
    changes = changes_between(store, v1, v2)
    assert [c.label for c in changes] == ["prompt rules (modified)"]
    inner = oracle_clients(load_catalog())
    report = impact(
        store,
        "sensitive",
        v1,
        v2,
        suites=[Suite.LS_QA],
        limit=3,
        client_factory=lambda item, h, s: _PromptSensitive(inner(item, h, s)),
    )
    assert report.broke == 3
    assert all(f.components == ("prompt rules (modified)",) for f in report.flips)
    assert all((f.after.reason or "").startswith("empty_output") for f in report.flips)


def test_renamed_skill_is_one_change(store: Store) -> None:
    original = load_demo_harness()
    v1 = store.commit(original, "demo").id
    edited = original.model_copy(deep=True)
    skill = edited.skill("coupon-push")
    assert skill is not None
    skill.name = "coupon-nudge"
    v2 = store.commit(edited, "rename a skill").id
    labels = [c.label for c in changes_between(store, v1, v2)]
    assert "skill coupon-push -> coupon-nudge (renamed)" in labels
    assert not any(label.endswith("(added)") or label.endswith("(removed)") for label in labels)


def test_unrelated_edits_in_the_failing_trace_are_not_blamed(store: Store) -> None:
    """A flip is blamed on what its failing run met an error in (the call to the renamed
    tool), not on every edited tool the run also called or the task needs."""
    original = load_demo_harness()
    v1 = store.commit(original, "demo").id
    edited = original.model_copy(deep=True)
    for tool in edited.tools:
        if tool.name != "check_stock":
            tool.description = (tool.description or "") + " (checked daily)"
    renamed = edited.tool("check_stock")
    assert renamed is not None
    renamed.name = "stock_lookup"
    v2 = store.commit(edited, "rename and reword").id
    memorised = oracle_clients(load_catalog(), memorised=original)
    report = impact(
        store, "oracle-v1", v1, v2, suites=[Suite.LS_QA], limit=18, client_factory=memorised
    )
    modified = [c.label for c in report.changes if c.change == "modified" and c.component == "tool"]
    assert len(modified) == len(original.tools) - 1
    assert report.broke >= 3
    # several of these runs also called a reworded tool that answered fine
    called_reworded = 0
    for flip in report.flips:
        assert flip.components == (RENAMED,)
        trace = load_trace(store, report.to_run, flip.key) or {}
        names = {s.get("name") for s in trace.get("steps") or [] if s.get("type") == "tool_call"}
        called_reworded += bool(names - {"check_stock", "stock_lookup"})
    assert called_reworded >= 1


def _rename_tools(harness: Harness, names: Sequence[str], *, rebind: bool) -> Harness:
    edited = harness.model_copy(deep=True)
    for name in names:
        tool = edited.tool(name)
        assert tool is not None
        tool.name = f"{name}_v2"
        if rebind:  # no shared identity left: only the content can pair them
            tool.binding = f"{tool.binding}_v2"
    return edited


@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.sets(st.integers(0, 20), min_size=1, max_size=3), rebind=st.booleans())
def test_renames_are_found_by_identity_or_by_content(
    hat_home: Path, picks: set[int], rebind: bool
) -> None:
    """Each example opens its own store file (hat_home is shared across examples)."""
    original = load_demo_harness()
    plain = [t.name for t in original.tools if t.name != "load_skill"]
    names = sorted({plain[i % len(plain)] for i in picks})
    with Store.open(hat_home / f"hat-{uuid.uuid4().hex}.db") as store:
        v1 = store.commit(original, "demo").id
        v2 = store.commit(_rename_tools(original, names, rebind=rebind), "renames").id
        changes = changes_between(store, v1, v2)
    tools = [c for c in changes if c.component == "tool"]
    assert sorted((c.old_name, c.name) for c in tools) == [(n, f"{n}_v2") for n in names]
    assert all(c.change == "renamed" for c in tools)


def test_a_renamed_prompt_section_is_a_rename_and_unrelated_swaps_are_not(store: Store) -> None:
    original = load_demo_harness()
    v1 = store.commit(original, "demo").id
    edited = original.model_copy(deep=True)
    section = next(s for s in edited.prompt.sections if s.id == "rules")
    section.id = "house-rules"
    # one tool removed and an unrelated one added: not a rename
    gone = edited.tool("get_size_chart")
    assert gone is not None
    edited.tools.remove(gone)
    extra = gone.model_copy(
        update={
            "name": "weather_now",
            "binding": "sim.weather_now",
            "description": "Tomorrow's weather in a city, for small talk about delivery days.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        }
    )
    edited.tools.append(extra)
    v2 = store.commit(edited, "rename a section, swap a tool").id
    labels = [c.label for c in changes_between(store, v1, v2)]
    assert "prompt rules -> house-rules (renamed)" in labels
    assert "tool get_size_chart (removed)" in labels
    assert "tool weather_now (added)" in labels


def test_bad_refs_and_suites(store: Store) -> None:
    v1, v2, _ = versions(store)
    with pytest.raises(EvalError, match="harness version"):
        impact(store, "m", v1, "no-such-label", client_factory=oracle_clients(load_catalog()))
    with pytest.raises(EvalError, match="IFEval"):
        impact(store, "m", v1, v2, suites=[Suite.IFEVAL])
    assert list_eval_runs(store) == []


def test_cli_impact(hat_home: Path) -> None:
    from core.cli.main import app

    with Store.open(hat_home / "hat.db") as store:
        v1, v2, _ = versions(store)
        store.tag("production", v1)
        store.tag("staging", v2)
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "eval",
            "impact",
            "--from",
            "production",
            "--to",
            "staging",
            "--oracle",
            "--limit",
            "9",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = __import__("json").loads(result.output[result.output.index("{") :])
    assert data["broke"] > 0 and data["groups"][0]["component"] == RENAMED
    text = runner.invoke(
        app,
        ["eval", "impact", "--from", "production", "--to", "staging", "--oracle", "--limit", "9"],
    )
    assert text.exit_code == 0 and RENAMED in text.output
    bad = runner.invoke(app, ["eval", "impact", "--from", "nope", "--to", "staging"])
    assert bad.exit_code == 1 and "harness version" in bad.output


def test_no_two_demo_tools_are_alike_enough_to_pass_for_a_rename() -> None:
    """The threshold's margin (core/store/renames.py): every pair of different demo tools,
    one named as the other, scores under RENAME_SIMILARITY; a renamed tool with a reworded
    description scores over it."""
    from core.harness.folder import folder_files
    from core.store.harness_versions import ComponentDiff
    from core.store.renames import RENAME_SIMILARITY, _boilerplate, _similarity

    harness = load_demo_harness()
    files = folder_files(harness)
    tools = sorted(p for p in files if p.startswith("tools/"))
    boiler = _boilerplate([harness])["tool"]

    def side(path: str, text: str, *, old: bool) -> list[ComponentDiff]:
        name = path.removeprefix("tools/").removesuffix(".json")
        change = "removed" if old else "added"
        old_text, new_text = (text, None) if old else (None, text)
        return [ComponentDiff(path, "tool", name, change, old_text, new_text, "")]

    def name(path: str) -> str:
        return path.removeprefix("tools/").removesuffix(".json")

    worst = max(
        _similarity(name(a), side(a, files[a], old=True), name(b),
                    side(b, files[b], old=False), boiler)
        for a in tools for b in tools if a != b
    )  # fmt: skip
    assert worst < RENAME_SIMILARITY, worst
    reworded = files["tools/get_size_chart.json"].replace(
        "The product's size chart", "Size chart of a product, with"
    )
    renamed = reworded.replace("get_size_chart", "size_chart_v2")
    before = side("tools/get_size_chart.json", files["tools/get_size_chart.json"], old=True)
    after = side("tools/size_chart_v2.json", renamed, old=False)
    score = _similarity("get_size_chart", before, "size_chart_v2", after, boiler)
    assert score >= RENAME_SIMILARITY, score
