"""The oracle inside the real agent loop, graded by the deterministic graders.

Done-when of issue 3: the oracle's gold trajectory scores accuracy 1, effectiveness 1 and full
tool and skill marks on every generated test task (the ls-qa suite) under the original demo
harness, and on the robustness suite (faults and distractor tools). Also: it reads renamed
harnesses (tools by binding, skills by role, parameters through a mapping), the native protocol,
tight reply limits, and behaves as documented under faults.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from typing import Any

import pytest

from core.episode.gold import gold_trajectory
from core.harness.demo import load_demo_harness
from core.harness.models import Harness, HookEvent, HookKind, ToolProtocol
from core.runtime import HookStep, ReplyStep, ToolCallStep, Trace
from core.runtime.hooks import markdown_features
from core.sim.catalog import load_catalog
from core.sim.expect import plan_task
from core.sim.graders import grade
from core.sim.models import Catalog, FaultKind, FaultSpec, Task
from core.sim.oracle import task_harness
from core.sim.surface import ROLE_METADATA_KEY, HarnessSurface
from core.sim.tasks import load_suite


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def demo() -> Harness:
    return load_demo_harness()


def run(task: Task, harness: Harness, catalog: Catalog, **mapping: Any) -> Trace:
    return asyncio.run(gold_trajectory(task, harness, catalog, **mapping))


async def _gold_all(
    tasks: list[Task], harness: Harness, catalog: Catalog, **mapping: Any
) -> list[tuple[Task, Trace, Any]]:
    out = []
    for task in tasks:
        trace = await gold_trajectory(task, harness, catalog, **mapping)
        graded = grade(task, trace, task_harness(task, harness), catalog, **mapping)
        out.append((task, trace, graded))
    return out


def assert_full_marks(results: list[tuple[Task, Trace, Any]], max_chars: int = 400) -> None:
    failures = []
    for task, trace, grades in results:
        blocked = [s for s in trace.steps_of(HookStep) if s.decision.value != "allow"]
        problems = []
        if not grades.full_marks:
            problems.append(grades.model_dump())
        if blocked or not trace.ok:
            problems.append(f"status {trace.status.value}, blocked by {[s.hook for s in blocked]}")
        reply = trace.final_reply or ""
        if len(reply) > max_chars or markdown_features(reply):
            problems.append(f"reply shape: {len(reply)} chars, {markdown_features(reply)}")
        if problems:
            failures.append((task.id, trace.final_reply, problems))
    assert not failures, failures[:5]


def test_gold_full_marks_on_every_test_task(demo: Harness, catalog: Catalog) -> None:
    tasks = load_suite("ls-qa")
    assert len(tasks) >= 500
    results = asyncio.run(_gold_all(tasks, demo, catalog))
    assert_full_marks(results)
    kinds = Counter(t.category.value for t in tasks)
    assert len(kinds) == 12


def test_gold_full_marks_under_faults_and_distractors(demo: Harness, catalog: Catalog) -> None:
    tasks = load_suite("robustness")
    results = asyncio.run(_gold_all(tasks, demo, catalog))
    assert_full_marks(results)
    seen = Counter()
    for task, trace, _ in results:
        assert len(task_harness(task, demo).tools) == len(demo.tools) + task.distractor_tools
        for step in trace.steps_of(ToolCallStep):
            assert not step.name.startswith(("get_weather", "convert_currency"))
            if step.error_kind:
                seen[step.error_kind] += 1
    assert set(seen) >= {k.value for k in FaultKind}


# ----------------------------------------------------------------------------- renamed harness

TOOL_NAMES = {
    "get_product_by_link": "item_lookup",
    "check_stock": "inventory",
    "list_coupons": "offers",
    "get_shipping_info": "delivery_quote",
    "get_size_chart": "fit_table",
    "get_after_sales_policy": "service_policy",
    "get_live_room_status": "stage_state",
    "compare_products": "side_by_side",
    "search_products": "find_items",
}
PARAMS = {"link_no": "item_number", "link_nos": "item_numbers", "region": "destination"}


def renamed(demo: Harness) -> tuple[Harness, dict[str, Any]]:
    """An HSA-like variant: every tool, the loader, two skills and three parameters renamed.

    One skill carries its role in metadata (what HSA transforms should stamp); another is found
    through the `skill_roles` mapping; parameters through `param_names`; topic values through
    `param_values`.
    """
    h = demo.model_copy(deep=True)
    h.settings.load_skill_tool = "open_playbook"
    param_names: dict[str, dict[str, str]] = {}
    for tool in h.tools:
        tool.name = TOOL_NAMES[tool.name]
        props = tool.parameters.get("properties", {})
        mapping = {old: new for old, new in PARAMS.items() if old in props}
        if mapping:
            param_names[tool.binding] = mapping
            tool.parameters = {
                **tool.parameters,
                "properties": {mapping.get(k, k): v for k, v in props.items()},
                "required": [mapping.get(k, k) for k in tool.parameters.get("required", [])],
            }
        if tool.binding == "sim.get_after_sales_policy":
            topic = tool.parameters["properties"]["topic"]
            topic["enum"] = ["returns", "exchanges", "warranty", "refunds"]
    for hook in h.hooks:
        if hook.kind is HookKind.VALIDATE_TOOL_ARGS:
            hook.matcher = "|".join(TOOL_NAMES.values())
    skills = {s.name: s for s in h.skills}
    skills["product-qa"].name = "answer-product"
    skills["product-qa"].metadata = {ROLE_METADATA_KEY: "product-qa"}
    skills["coupon-push"].name = "deal-finder"
    mapping = {
        "skill_roles": {"coupon-push": "deal-finder"},
        "param_names": param_names,
        "param_values": {
            "sim.get_after_sales_policy": {
                "topic": {"return": "returns", "exchange": "exchanges", "refund": "refunds"}
            }
        },
    }
    return h, mapping


def test_surface_resolves_a_renamed_harness(demo: Harness) -> None:
    h, mapping = renamed(demo)
    surface = HarnessSurface(h, **mapping)
    assert surface.tool_name("sim.check_stock") == "inventory"
    assert surface.skill_name("product-qa") == "answer-product"
    assert surface.skill_name("coupon-push") == "deal-finder"
    assert surface.skill_name("after-sales") == "after-sales"
    assert surface.role_of("deal-finder") == "coupon-push"
    args = {"link_no": 5, "region": "Texas"}
    current = surface.to_current("sim.get_shipping_info", args)
    assert current == {"item_number": 5, "destination": "Texas"}
    assert surface.to_canonical("sim.get_shipping_info", current) == args
    topic = surface.to_current("sim.get_after_sales_policy", {"topic": "return", "link_no": 3})
    assert topic == {"topic": "returns", "item_number": 3}
    canonical = surface.to_canonical("sim.get_after_sales_policy", topic)
    assert canonical == {"topic": "return", "link_no": 3}


def test_surface_from_rename_functions(demo: Harness) -> None:
    """What an HSA MappingChain gives (.skill(old), .param(old tool, old param)) is enough."""
    h, mapping = renamed(demo)
    skills = {"product-qa": "answer-product", "coupon-push": "deal-finder"}
    surface = HarnessSurface.from_original(
        h, demo, skill_name=lambda n: skills.get(n, n), param_name=lambda t, p: PARAMS.get(p, p)
    )
    assert surface.param_names == mapping["param_names"]
    assert surface.skill_name("coupon-push") == "deal-finder"
    assert surface.skill_name("product-qa") == "answer-product"
    assert surface.skill_name("size-advice") == "size-advice"
    again = HarnessSurface.from_original(
        h, surface, skill_name=lambda n: n, param_name=lambda t, p: p
    )
    assert again.param_names == surface.param_names
    assert again.skill_name("coupon-push") == "deal-finder"


def test_oracle_follows_a_renamed_harness(demo: Harness, catalog: Catalog) -> None:
    """A sample of every category: the trajectory uses the new names and grades in full."""
    h, mapping = renamed(demo)
    tasks = [t for t in load_suite("ls-qa") if t.id.endswith(("0", "3", "7"))]
    results = asyncio.run(_gold_all(tasks, h, catalog, **mapping))
    assert_full_marks(results)
    used = {s.name for _, trace, _ in results for s in trace.steps_of(ToolCallStep)}
    assert used <= set(TOOL_NAMES.values())
    for _, trace, _ in results:
        assert not {"product-qa", "coupon-push"} & set(trace.loaded_skills)
        for step in trace.steps_of(ToolCallStep):
            assert "link_no" not in step.arguments and "region" not in step.arguments
            assert step.error_kind is None, step


def test_oracle_native_protocol(demo: Harness, catalog: Catalog) -> None:
    h = demo.model_copy(deep=True)
    h.settings.tool_protocol = ToolProtocol.NATIVE
    tasks = [t for t in load_suite("robustness") if t.id.endswith(("1", "5"))]
    results = asyncio.run(_gold_all(tasks, h, catalog))
    assert_full_marks(results)
    trace = results[0][1]
    assert any(m.get("role") == "tool" for m in trace.messages)


def test_oracle_keeps_under_a_tighter_reply_limit(demo: Harness, catalog: Catalog) -> None:
    h = demo.model_copy(deep=True)
    limit = 220
    for hook in h.hooks:
        if hook.kind is HookKind.REPLY_FORMAT:
            hook.params = {**hook.params, "max_chars": limit}
    tasks = [t for t in load_suite("ls-qa") if t.category.value in ("multi_intent", "comparison")]
    results = asyncio.run(_gold_all(tasks, h, catalog))
    assert_full_marks(results, max_chars=limit)


# ----------------------------------------------------------------------------- behaviour


def _price_task(faults: list[FaultSpec]) -> Task:
    task = next(
        t for t in load_suite("ls-qa") if t.category.value == "price" and t.intents[0].link_no
    )
    return task.model_copy(update={"faults": faults})


def test_timeout_is_retried_once_then_answered(demo: Harness, catalog: Catalog) -> None:
    task = _price_task([FaultSpec(binding="sim.get_product_by_link", kind=FaultKind.TIMEOUT)])
    trace = run(task, demo, catalog)
    calls = trace.steps_of(ToolCallStep)
    assert [c.error_kind for c in calls] == ["timeout", None]
    product = catalog.product(task.intents[0].link_no or 0)
    assert product is not None
    assert f"{product.price:.2f}" in (trace.final_reply or "")


@pytest.mark.parametrize(
    "faults",
    [
        [
            FaultSpec(binding="sim.get_product_by_link", kind=FaultKind.TIMEOUT, on_call=n)
            for n in (1, 2)
        ],
        [FaultSpec(binding="sim.get_product_by_link", kind=FaultKind.PERMISSION_DENIED)],
        [FaultSpec(binding="sim.get_product_by_link", kind=FaultKind.MALFORMED)],
        [FaultSpec(binding="sim.get_product_by_link", kind=FaultKind.EMPTY)],
    ],
    ids=["timeout-twice", "permission", "malformed", "empty"],
)
def test_unrecoverable_fault_is_told_honestly(
    faults: list[FaultSpec], demo: Harness, catalog: Catalog
) -> None:
    task = _price_task(faults)
    trace = run(task, demo, catalog)
    reply = trace.final_reply or ""
    assert "can't check" in reply
    product = catalog.product(task.intents[0].link_no or 0)
    assert product is not None and f"{product.price:.2f}" not in reply
    assert len(trace.steps_of(ToolCallStep)) == (2 if len(faults) == 2 else 1)
    assert grade(task, trace, demo, catalog).full_marks


def test_gold_is_deterministic(demo: Harness, catalog: Catalog) -> None:
    tasks = load_suite("robustness")[:40]
    first = [run(t, demo, catalog).trajectory for t in tasks]
    second = [run(t, demo, catalog).trajectory for t in tasks]
    assert first == second


def test_oracle_loads_skills_first_and_uses_only_planned_calls(
    demo: Harness, catalog: Catalog
) -> None:
    task = next(t for t in load_suite("ls-qa") if t.category.value == "coupon")
    trace = run(task, demo, catalog)
    first = trace.trajectory.turns[0]
    assert {c.name for c in first.tool_calls} == {"load_skill"}
    assert {c.arguments["name"] for c in first.tool_calls} == {"product-qa", "coupon-push"}
    plan = plan_task(task, catalog)
    assert len(trace.steps_of(ToolCallStep)) == len(plan.required())
    assert trace.steps_of(ReplyStep)[-1].accepted


def test_reply_numbers_all_come_from_tool_results(demo: Harness, catalog: Catalog) -> None:
    """The fact_check hook of the demo harness would block otherwise; check it directly too."""
    for task in load_suite("ls-qa")[::9]:
        trace = run(task, demo, catalog)
        hooks = [s for s in trace.steps_of(HookStep) if s.event == HookEvent.BEFORE_REPLY.value]
        assert hooks and all(s.decision.value == "allow" for s in hooks)
        assert not re.search(r"\b(?:cure|guarantee)", trace.final_reply or "", re.I)
