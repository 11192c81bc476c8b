"""The simulator's world: catalog, tool handlers, the live room, faults and distractor tools.

Faults are exercised through the real agent loop (AgentLoop + demo harness + LiveRoom bindings,
driven by a ScriptedClient): each kind must reach the model as a tool error and the request must
still end in an accepted reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import random
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.harness.demo import load_demo_harness
from core.harness.models import Harness
from core.runtime import (
    AgentLoop,
    AssistantTurn,
    Bindings,
    ScriptedClient,
    ToolCall,
    ToolCallStep,
    ToolError,
    Trace,
    TraceStatus,
)
from core.sim.catalog import (
    LOW_STOCK,
    SHOW_END,
    SHOW_START,
    CatalogError,
    coupon_valid,
    default_catalog_path,
    load_catalog,
    parse_time,
    recommend_size,
    total_units,
)
from core.sim.distractors import DISTRACTOR_TOOLS, is_distractor, with_distractors
from core.sim.faults import FAULT_KINDS, FaultInjector, FaultRates, random_fault
from core.sim.handlers import HANDLERS
from core.sim.models import (
    Catalog,
    Category,
    CouponRule,
    FaultKind,
    FaultSpec,
    Product,
    Promotion,
    RoomState,
)
from core.sim.room import LiveRoom

ROOT = Path(__file__).resolve().parent.parent
CLOCK = "2025-06-14T20:00:00+00:00"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def harness() -> Harness:
    return load_demo_harness()


def room_for(catalog: Catalog, **kwargs: Any) -> LiveRoom:
    state = kwargs.pop("state", None) or RoomState(
        pinned_link=catalog.products[0].link_no, clock=CLOCK
    )
    return LiveRoom(catalog, state, **kwargs)


def first(catalog: Catalog, pred: Any) -> Product:
    return next(p for p in catalog.products if pred(p))


# ----------------------------------------------------------------------------- catalog


def test_catalog_meets_the_minimums(catalog: Catalog) -> None:
    products = catalog.products
    assert len(products) >= 60
    assert len({p.category for p in products}) >= 6
    assert len(catalog.regions) >= 6
    assert len({p.link_no for p in products}) == len(products)
    assert all(1 <= p.link_no <= 999 for p in products)
    assert all(p.price <= p.list_price for p in products)
    cents = {round(p.price * 100) % 100 for p in products}
    assert cents <= {0, 90, 99}
    units = [u for p in products for row in p.stock.values() for u in row.values()]
    assert any(u == 0 for u in units) and any(0 < u <= LOW_STOCK for u in units)
    assert any(total_units(p) == 0 for p in products)  # sold out everywhere
    coupons = [c for p in products for c in p.coupons]
    assert any(not coupon_valid(c, SHOW_START) for c in coupons)  # expired before the show
    assert any(coupon_valid(c, SHOW_END) for c in coupons)  # valid all weekend
    assert any(coupon_valid(c, SHOW_START) and not coupon_valid(c, SHOW_END) for c in coupons)
    for p in products:
        assert p.keywords and p.specs and p.shipping
        if p.category is Category.APPAREL:
            assert p.size_chart and all(r.height_cm and r.weight_kg for r in p.size_chart)
        if p.category is Category.SHOES:
            assert p.size_chart and all("foot_length_cm" in r.measurements for r in p.size_chart)
    assert any(set(catalog.regions) - set(p.shipping) for p in products)  # not shipped somewhere


def test_catalog_file_is_reproducible_from_the_build_script(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = importlib.util.spec_from_file_location(
        "build_catalog", ROOT / "scripts/build_catalog.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "build_catalog", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    text = module.render(module.build(module.SEED))
    assert text == default_catalog_path().read_text(encoding="utf-8")
    assert module.SHOW_START == SHOW_START and module.SHOW_END == SHOW_END


def test_load_catalog_names_file_and_field(tmp_path: Path) -> None:
    data = json.loads(default_catalog_path().read_text(encoding="utf-8"))
    bad = tmp_path / "bad.json"
    data["products"][3]["price"] = -1
    bad.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match=r"bad\.json: products\.3\.price"):
        load_catalog(bad)
    data["products"][3]["price"] = 10
    data["products"][4]["link_no"] = data["products"][5]["link_no"]
    bad.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match=r"products\.5\.link_no: duplicate"):
        load_catalog(bad)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(CatalogError, match=r"broken\.json: not valid JSON"):
        load_catalog(broken)
    with pytest.raises(CatalogError, match=r"missing\.json: cannot read"):
        load_catalog(tmp_path / "missing.json")


def test_recommend_size_follows_the_chart(catalog: Catalog) -> None:
    chart = first(catalog, lambda p: p.sizes[:3] == ["XS", "S", "M"] and p.size_chart).size_chart
    assert chart is not None
    assert recommend_size(chart, 168, 60) == "M"
    assert recommend_size(chart, 160, 70) in {"L"}  # height S, weight L: the larger
    assert recommend_size(chart, 120, 30) == "XS"
    assert recommend_size(chart, 230, 200) == chart[-1].size
    shoe = first(catalog, lambda p: p.category is Category.SHOES)
    assert shoe.size_chart is not None and recommend_size(shoe.size_chart, 170, 60) is None


# ----------------------------------------------------------------------------- handlers


def test_product_card_and_unknown_link(catalog: Catalog) -> None:
    p = catalog.products[0]
    room = room_for(catalog)
    card = room.call("sim.get_product_by_link", {"link_no": p.link_no})
    assert card["price"] == p.price and card["name"] == p.name and card["pinned"] is True
    assert card["sizes"] == p.sizes and card["specs"] == p.specs
    with pytest.raises(ToolError) as err:
        room.call("sim.get_product_by_link", {"link_no": 998})
    assert err.value.kind.value == "error" and "998" in err.value.message
    assert room.calls[-1].error_kind == "error" and room.calls[-1].fault is None


def test_search_filters_and_ranks(catalog: Catalog) -> None:
    room = room_for(catalog)
    hoodie = first(catalog, lambda p: "Hoodie" in p.name)
    found = room.call("sim.search_products", {"query": "black hoodie"})
    assert found["results"][0]["link_no"] == hoodie.link_no
    boots = room.call("sim.search_products", {"query": "boots", "limit": 10})
    prices = [r["price"] for r in boots["results"]]
    assert boots["count"] >= 3 and prices == sorted(prices)  # equal scores: cheapest first
    cheap = room.call("sim.search_products", {"query": "serum", "max_price": 20})
    assert all(r["price"] <= 20 for r in cheap["results"])
    beauty = room.call("sim.search_products", {"query": "spf", "category": "beauty"})
    assert beauty["count"] > 0 and {r["category"] for r in beauty["results"]} == {"beauty"}
    assert room.call("sim.search_products", {"query": "zzzz"}) | {"results": []} == {
        "query": "zzzz",
        "category": None,
        "max_price": None,
        "count": 0,
        "currency": "USD",
        "results": [],
    }


def test_check_stock_sold_out_low_and_bad_variants(catalog: Catalog) -> None:
    room = room_for(catalog)
    gone = first(catalog, lambda p: total_units(p) == 0)
    result = room.call("sim.check_stock", {"link_no": gone.link_no})
    assert result["in_stock"] is False and result["total_units"] == 0
    assert {v["status"] for v in result["variants"]} == {"sold_out"}
    sized = first(catalog, lambda p: len(p.sizes) >= 3 and len(p.colors) >= 2)
    size, color = sized.sizes[1], sized.colors[1]
    one = room.call(
        "sim.check_stock", {"link_no": sized.link_no, "size": size.lower(), "color": color.upper()}
    )
    assert one["size"] == size and one["color"] == color
    assert one["variants"] == [
        {
            "size": size,
            "color": color,
            "units": sized.stock[size][color],
            "status": one["variants"][0]["status"],
        }
    ]
    low = next(
        (p, s, c)
        for p in catalog.products
        for s in p.sizes
        for c in p.colors
        if 0 < p.stock[s][c] <= LOW_STOCK
    )
    got = room.call("sim.check_stock", {"link_no": low[0].link_no, "size": low[1], "color": low[2]})
    assert got["variants"][0]["status"] == "low_stock"
    for bad in ({"size": "XXXL"}, {"color": "plaid"}):
        with pytest.raises(ToolError, match="does not come in"):
            room.call("sim.check_stock", {"link_no": sized.link_no, **bad})


def test_coupons_expire_against_the_room_clock(catalog: Catalog) -> None:
    product = first(
        catalog,
        lambda p: any(
            coupon_valid(c, SHOW_START) and not coupon_valid(c, SHOW_END) for c in p.coupons
        ),
    )
    coupon = next(
        c for c in product.coupons if coupon_valid(c, SHOW_START) and not coupon_valid(c, SHOW_END)
    )
    room_coupon = CouponRule(code="ROOM5", threshold=0, amount=5, expires=SHOW_END)
    before = LiveRoom(catalog, RoomState(clock=SHOW_START, room_coupons=[room_coupon]))
    after = LiveRoom(catalog, RoomState(clock=coupon.expires, room_coupons=[room_coupon]))
    early = before.call("sim.list_coupons", {"link_no": product.link_no})
    late = after.call("sim.list_coupons", {"link_no": product.link_no})
    assert coupon.code in [c["code"] for c in early["coupons"]]
    assert coupon.code not in [c["code"] for c in late["coupons"]]
    assert coupon.code in [c["code"] for c in late["expired"]]  # expiry is exclusive
    assert early["coupons"][-1] == {
        "code": "ROOM5",
        "amount": 5.0,
        "min_spend": 0.0,
        "expires": SHOW_END,
        "scope": "room",
        "meets_min_spend": True,
    }
    best = early["best"]
    usable = [
        c
        for c in [*product.coupons, room_coupon]
        if coupon_valid(c, SHOW_START) and product.price >= c.threshold
    ]
    top = max(c.amount for c in usable)
    assert best["amount"] == top
    assert best["price_after_coupon"] == round(product.price - top, 2)
    room_only = before.call("sim.list_coupons", {})
    assert room_only["link_no"] is None and [c["code"] for c in room_only["coupons"]] == ["ROOM5"]
    assert room_only["best"] is None


def test_shipping_regions_aliases_and_gaps(catalog: Catalog) -> None:
    room = room_for(catalog)
    p = first(catalog, lambda p: "New York" in p.shipping)
    ny = room.call("sim.get_shipping_info", {"link_no": p.link_no, "region": "NYC"})
    option = p.shipping["New York"]
    assert ny["region"] == "New York" and ny["ships"] is True
    assert (ny["days_min"], ny["days_max"], ny["fee"]) == (
        option.days_min,
        option.days_max,
        option.fee,
    )
    food = first(catalog, lambda p: "Canada" not in p.shipping)
    no = room.call("sim.get_shipping_info", {"link_no": food.link_no, "region": "Toronto"})
    assert no["ships"] is False and no["region"] == "Canada" and "Canada" not in no["ships_to"]
    with pytest.raises(ToolError, match="does not deliver to 'Mars'"):
        room.call("sim.get_shipping_info", {"link_no": p.link_no, "region": "Mars"})


def test_size_chart_after_sales_room_and_compare(catalog: Catalog) -> None:
    shirt = first(catalog, lambda p: p.category is Category.APPAREL)
    serum = first(catalog, lambda p: p.category is Category.BEAUTY)
    food = first(catalog, lambda p: p.category is Category.FOOD)
    promo_live = Promotion(name="Flash", description="gift", link_nos=[shirt.link_no],
                           ends_at="2025-06-14T21:00:00+00:00")  # fmt: skip
    promo_over = Promotion(name="Old", description="gone", ends_at="2025-06-14T19:00:00+00:00")
    state = RoomState(pinned_link=shirt.link_no, promotions=[promo_live, promo_over], clock=CLOCK)
    room = LiveRoom(catalog, state)
    chart = room.call("sim.get_size_chart", {"link_no": shirt.link_no})
    assert [r["size"] for r in chart["rows"]] == shirt.sizes and chart["fit"] == shirt.specs["fit"]
    assert chart["rows"][0]["height_cm"] is not None
    none = room.call("sim.get_size_chart", {"link_no": serum.link_no})
    assert none["rows"] == [] and none["note"] == "one size, no size chart"

    ret = room.call("sim.get_after_sales_policy", {"topic": "return", "link_no": food.link_no})
    assert ret["available"] is False and ret["window_days"] == 0 and ret["scope"] == "product"
    store = room.call("sim.get_after_sales_policy", {"topic": "refund"})
    assert store["scope"] == "store" and store["refund_days"] == catalog.store_policy.refund_days
    gadget = first(catalog, lambda p: p.category is Category.ELECTRONICS)
    warranty = room.call(
        "sim.get_after_sales_policy", {"topic": "warranty", "link_no": gadget.link_no}
    )
    assert warranty["warranty_months"] == gadget.after_sales.warranty_months > 0
    with pytest.raises(ToolError, match="unknown topic"):
        room.call("sim.get_after_sales_policy", {"topic": "teleport"})

    status = room.call("sim.get_live_room_status", {})
    assert status["pinned"]["link_no"] == shirt.link_no
    assert [p["name"] for p in status["promotions"]] == ["Flash"]

    other = first(catalog, lambda p: p.category is Category.APPAREL and p is not shirt)
    compared = room.call("sim.compare_products", {"link_nos": [shirt.link_no, other.link_no, 998]})
    assert [c["link_no"] for c in compared["products"]] == [shirt.link_no, other.link_no]
    assert compared["unknown_links"] == [998]
    assert "category" in compared["same"]
    assert compared["cheapest"] == min((shirt, other), key=lambda p: p.price).link_no
    with pytest.raises(ToolError, match="at least 2"):
        room.call("sim.compare_products", {"link_nos": [shirt.link_no, 998]})


def test_every_demo_tool_has_a_handler(harness: Harness, catalog: Catalog) -> None:
    bindings = {t.binding for t in harness.tools}
    assert bindings == set(HANDLERS)
    room_bindings = room_for(catalog).bindings()
    assert bindings <= set(room_bindings)
    assert all(is_distractor(b) for b in set(room_bindings) - bindings)


# ----------------------------------------------------------------------------- agent loop


def load(skill: str) -> AssistantTurn:
    return AssistantTurn(tool_calls=[ToolCall(name="load_skill", arguments={"name": skill})])


def call(name: str, **arguments: Any) -> AssistantTurn:
    return AssistantTurn(tool_calls=[ToolCall(name=name, arguments=arguments)])


def run_loop(harness: Harness, room: LiveRoom, turns: list[AssistantTurn], message: str) -> Trace:
    bindings = room.register(Bindings())
    loop = AgentLoop(harness, ScriptedClient(turns), bindings)
    assert loop.missing_bindings() == []
    return asyncio.run(loop.run(message))


def tool_steps(trace: Trace) -> list[ToolCallStep]:
    return [s for s in trace.steps if isinstance(s, ToolCallStep)]


@pytest.mark.parametrize("kind", list(FaultKind))
def test_each_fault_reaches_the_model_and_the_loop_goes_on(
    kind: FaultKind, harness: Harness, catalog: Catalog
) -> None:
    p = catalog.products[5]
    fault = FaultSpec(binding="sim.get_product_by_link", kind=kind, on_call=1)
    room = room_for(catalog, faults=[fault])
    message = f"how much is link {p.link_no}?"
    reply = "Sorry, I could not look that up just now. Could you ask me again in a moment?"
    trace = run_loop(
        harness,
        room,
        [
            load("product-qa"),
            call("get_product_by_link", link_no=p.link_no),
            AssistantTurn(content=reply),
        ],
        message,
    )
    assert trace.status is TraceStatus.OK, trace.reason
    assert trace.final_reply == reply
    (step,) = tool_steps(trace)
    assert step.error_kind == kind.value and step.result is None and step.error
    assert trace.counts.tool_errors == 1
    # the model saw the error as a tool result
    results = [m["content"] for m in trace.messages if "<tool_result" in str(m.get("content"))]
    assert f'"kind": "{kind.value}"' in results[-1]
    assert room.faulted()[0].fault is kind


def test_fault_then_retry_succeeds_through_the_loop(harness: Harness, catalog: Catalog) -> None:
    p = catalog.products[5]
    room = room_for(catalog, faults=[FaultSpec(binding="sim.get_product_by_link", kind="timeout")])
    message = f"how much is link {p.link_no}?"
    reply = f"Link {p.link_no}, the {p.name}, is {p.price:.2f} USD today. Tap the link to grab it!"
    turns = [
        load("product-qa"),
        call("get_product_by_link", link_no=p.link_no),
        call("get_product_by_link", link_no=p.link_no),
        AssistantTurn(content=reply),
    ]
    trace = run_loop(harness, room, turns, message)
    assert trace.status is TraceStatus.OK, trace.reason
    first_step, second = tool_steps(trace)
    assert first_step.error_kind == "timeout" and second.error_kind is None
    assert second.result["price"] == p.price
    assert [c.call_no for c in room.calls] == [1, 2]


def test_malformed_fault_quotes_a_truncated_payload(catalog: Catalog) -> None:
    room = room_for(catalog, faults=[FaultSpec(binding="sim.check_stock", kind="malformed")])
    link = catalog.products[0].link_no
    with pytest.raises(ToolError) as err:
        room.call("sim.check_stock", {"link_no": link}, tool="stock_lookup")
    assert err.value.kind.value == "malformed"
    assert "stock_lookup" in err.value.message and f'{{"link_no": {link}' in err.value.message
    assert room.call("sim.check_stock", {"link_no": link})["link_no"] == link  # 2nd call fine


def test_distractor_tools_run_through_the_loop(harness: Harness, catalog: Catalog) -> None:
    augmented = with_distractors(harness, 3, random.Random(7))
    Harness.model_validate(augmented.model_dump())  # still a valid harness
    added = [t for t in augmented.tools if is_distractor(t.binding)]
    assert len(added) == 3 and len(augmented.tools) == len(harness.tools) + 3
    assert [t.name for t in harness.tools] == [t.name for t in load_demo_harness().tools]
    assert with_distractors(harness, 3, random.Random(7)) == augmented
    with pytest.raises(ValueError, match="distractor tools available"):
        with_distractors(harness, len(DISTRACTOR_TOOLS) + 1, random.Random(0))
    room = room_for(catalog)
    tool = added[0]
    args: dict[str, Any] = {}
    for name in tool.parameters.get("required", []):
        schema = tool.parameters["properties"][name]
        args[name] = 1.5 if schema.get("type") == "number" else (
            schema["enum"][0] if "enum" in schema else "x"
        )  # fmt: skip
    reply = "Hi there, welcome to the show!"
    trace = run_loop(augmented, room, [load("chit-chat"), call(tool.name, **args),
                                       AssistantTurn(content=reply)], "hi mia")  # fmt: skip
    assert trace.status is TraceStatus.OK
    (step,) = tool_steps(trace)
    assert step.error_kind is None and isinstance(step.result, dict)
    assert room.calls[0].binding == tool.binding


# ----------------------------------------------------------------------------- random faults


def fault_sequence(seed: int, rates: FaultRates, calls: int = 60) -> list[FaultKind | None]:
    injector = FaultInjector(rates=rates, seed=seed)
    return [injector.next_fault(f"sim.b{i % 3}") for i in range(calls)]


def test_random_fault_rates_are_deterministic_per_seed() -> None:
    rates = FaultRates.uniform(0.5)
    assert fault_sequence(3, rates) == fault_sequence(3, rates)
    assert fault_sequence(3, rates) != fault_sequence(4, rates)
    seq = fault_sequence(3, rates, 500)
    assert set(seq) == {None, *FAULT_KINDS}
    assert 0.35 < sum(k is not None for k in seq) / len(seq) < 0.65
    assert set(fault_sequence(1, FaultRates())) == {None}
    assert set(fault_sequence(1, FaultRates(rate_limit=1.0))) == {FaultKind.RATE_LIMIT}
    with pytest.raises(ValueError, match="sum to"):
        FaultRates(timeout=0.6, empty=0.6)


@settings(max_examples=60)
@given(seed=st.integers(0, 2**31), binding=st.sampled_from(sorted(HANDLERS)), n=st.integers(1, 50))
def test_random_fault_depends_only_on_seed_binding_and_call(
    seed: int, binding: str, n: int
) -> None:
    rates = FaultRates(timeout=0.2, malformed=0.2, empty=0.2)
    assert random_fault(rates, seed, binding, n) == random_fault(rates, seed, binding, n)
    other = FaultInjector(rates=rates, seed=seed)
    for _ in range(n - 1):
        other.next_fault("sim.unrelated")  # calls of other bindings change nothing
        other.next_fault(binding)
    assert other.next_fault(binding) == random_fault(rates, seed, binding, n)


def test_fault_spec_wins_and_counts_per_binding(catalog: Catalog) -> None:
    spec = FaultSpec(binding="sim.check_stock", kind="empty", on_call=2)
    room = room_for(catalog, faults=[spec], fault_rates=FaultRates())
    link = catalog.products[0].link_no
    room.call("sim.get_product_by_link", {"link_no": link})
    room.call("sim.check_stock", {"link_no": link})
    with pytest.raises(ToolError, match="empty result"):
        room.call("sim.check_stock", {"link_no": link})
    room.call("sim.check_stock", {"link_no": link})
    assert [c.fault for c in room.calls] == [None, None, FaultKind.EMPTY, None]
    room.reset()
    assert room.calls == [] and room.injector.calls("sim.check_stock") == 0


def test_same_seed_same_faults_through_the_room(catalog: Catalog) -> None:
    def log(seed: int) -> list[FaultKind | None]:
        room = room_for(catalog, fault_rates=FaultRates.uniform(0.6), seed=seed)
        for p in catalog.products[:20]:
            for binding, args in (
                ("sim.get_product_by_link", {"link_no": p.link_no}),
                ("sim.check_stock", {"link_no": p.link_no}),
            ):
                with contextlib.suppress(ToolError):
                    room.call(binding, args)
        return [c.fault for c in room.calls]

    assert log(11) == log(11)
    assert log(11) != log(12)
    assert all(c is None or c in FAULT_KINDS for c in log(11))


@settings(max_examples=60)
@given(data=st.data())
def test_stock_and_coupons_agree_with_the_catalog(data: st.DataObject) -> None:
    catalog = load_catalog()
    p = data.draw(st.sampled_from(catalog.products))
    size = data.draw(st.sampled_from(p.sizes))
    color = data.draw(st.sampled_from(p.colors))
    minute = data.draw(st.integers(0, 3 * 24 * 60))
    clock = (parse_time(SHOW_START) + timedelta(minutes=minute - 24 * 60)).isoformat()
    room = LiveRoom(catalog, RoomState(clock=clock))
    stock = room.call("sim.check_stock", {"link_no": p.link_no, "size": size, "color": color})
    assert stock["total_units"] == p.stock[size][color]
    assert stock["in_stock"] is (p.stock[size][color] > 0)
    whole = room.call("sim.check_stock", {"link_no": p.link_no})
    assert whole["total_units"] == total_units(p) and len(whole["variants"]) == len(p.sizes) * len(
        p.colors
    )
    coupons = room.call("sim.list_coupons", {"link_no": p.link_no})
    valid = {c["code"] for c in coupons["coupons"]}
    expired = {c["code"] for c in coupons["expired"]}
    assert valid | expired == {c.code for c in p.coupons} and not valid & expired
    assert valid == {c.code for c in p.coupons if coupon_valid(c, clock)}
    best = coupons["best"]
    if best is not None:
        assert best["code"] in valid and best["price_after_coupon"] == round(
            p.price - best["amount"], 2
        )
    else:
        assert not any(coupon_valid(c, clock) and p.price >= c.threshold for c in p.coupons)


def test_clock_parsing_accepts_naive_and_z() -> None:
    assert parse_time("2025-06-14T20:00:00") == parse_time("2025-06-14T20:00:00Z")
