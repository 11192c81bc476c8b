"""What a task needs: skills by role and tool calls by binding, in canonical names.

`plan_task(task, catalog)` is the one definition of correct behaviour, shared by the oracle
(which performs it) and the graders (which check a trace against it):

- per intent, the acceptable reply-skill roles (the first is the oracle's pick) and the
  strategy-skill role it needs, if any;
- the **required** tool calls, as `CallSpec`s with BFCL-style acceptable values per canonical
  parameter (`OMIT` in the list: the parameter may be left out; `ANY`: any value or none);
- **optional** calls that are reasonable but not needed (a product lookup for context, the room
  status before a coupon offer): they cost nothing in tool rationality;
- what to ask the viewer when the message lacks something (region, height and weight).

Calls that depend on another call's result carry `after` (the binding they wait for): a
pinned-product call waits for the room status, the size-advice stock check for the size chart.
When that prerequisite fails in a trace (a fault), the dependent calls are no longer required.

The intent table (reply role / strategy / calls):

| intent | reply role | strategy | required calls |
|---|---|---|---|
| price, spec | product-qa | - | get_product_by_link |
| stock | product-qa | - | check_stock (size/color as asked, may be omitted) |
| coupon | product-qa or purchase-guide | coupon-push | list_coupons(link_no) |
| shipping | product-qa | - | get_shipping_info(link_no, region); no region: ask |
| size_advice | product-qa | size-advice | get_size_chart, then check_stock(recommended size) |
| comparison | product-qa | product-compare | compare_products(link_nos) |
| chit_chat | chit-chat | - | none |
| purchase_intent | purchase-guide | - | get_product_by_link (+ check_stock for a size/colour) |
| after_sales | after-sales | - | get_after_sales_policy(topic[, link_no]) (+ check_stock) |
| adversarial | safety-refusal | - | price: get_product_by_link; warranty: get_after_sales_policy |

"this one" (an intent with no link number) needs `get_live_room_status` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from core.runtime.bindings import ToolError
from core.sim import facts, handlers
from core.sim.models import Catalog, Intent, IntentKind, Product, Task
from core.sim.surface import (
    B_AFTER_SALES,
    B_COMPARE,
    B_COUPONS,
    B_PRODUCT,
    B_ROOM,
    B_SHIPPING,
    B_SIZE_CHART,
    B_STOCK,
    R_AFTER_SALES,
    R_CHIT_CHAT,
    R_COMPARE,
    R_COUPON_PUSH,
    R_PRODUCT_QA,
    R_PURCHASE,
    R_SAFETY,
    R_SIZE_ADVICE,
)


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


OMIT: Any = _Marker("OMIT")
"""In a CallSpec's acceptable values: the parameter may be left out."""
ANY: Any = _Marker("ANY")
"""In a CallSpec's acceptable values: any value, or none, is fine."""


def normalise_arg(name: str, value: Any) -> Any:
    """Canonical comparison form of one argument value (BFCL-style lenient matching)."""
    if value is OMIT or value is ANY:
        return value
    if name == "link_no":
        return facts.norm_int(value)
    if name == "link_nos":
        if isinstance(value, list | tuple | set | frozenset):
            return frozenset(facts.norm_int(v) for v in value)
        return value
    if name == "size":
        return facts.norm_size(value)
    if name == "color":
        return facts.norm_color(value)
    if name in ("region", "topic", "query", "category"):
        return facts.norm_text(value) if isinstance(value, str) else value
    return value


@dataclass(frozen=True)
class CallSpec:
    """One expected tool call: binding plus acceptable values of each canonical parameter."""

    binding: str
    args: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    purpose: str = ""
    after: str | None = None
    strict: bool = True
    """Strict: parameters the spec does not name must not be passed."""

    @classmethod
    def make(
        cls,
        binding: str,
        args: Mapping[str, Any | tuple[Any, ...]] | None = None,
        *,
        purpose: str = "",
        after: str | None = None,
        strict: bool = True,
    ) -> CallSpec:
        items = []
        for name, value in (args or {}).items():
            values = value if isinstance(value, tuple) else (value,)
            items.append((name, values))
        return cls(binding, tuple(items), purpose, after, strict)

    def gold_args(self) -> dict[str, Any]:
        """The oracle's arguments: each parameter's first acceptable value (OMIT/ANY: none)."""
        out: dict[str, Any] = {}
        for name, values in self.args:
            first = values[0]
            if first is OMIT or first is ANY:
                continue
            out[name] = sorted(first) if isinstance(first, frozenset) else first
        return out

    def matches(
        self, binding: str | None, arguments: Mapping[str, Any], catalog: Catalog | None = None
    ) -> bool:
        """Whether a call (binding, canonical arguments) is acceptable for this spec.

        With `catalog`, sizes, colours and regions are compared the way the handlers read them
        ("m" is M, "grey" is "heather grey" when unique, "TX" is Texas)."""
        if binding != self.binding:
            return False
        named = dict(self.args)
        if self.strict and any(k not in named for k in arguments):
            return False
        product = None
        if catalog is not None:
            link = arguments.get("link_no", named.get("link_no", (None,))[0])
            link = facts.norm_int(link)
            product = catalog.product(link) if isinstance(link, int) else None
        for name, values in named.items():
            if ANY in values:
                continue
            got = _resolve(name, arguments[name], catalog, product) if name in arguments else OMIT
            accepted = {_hashable(_resolve(name, v, catalog, product)) for v in values}
            if _hashable(got) not in accepted:
                return False
        return True

    def key(self) -> tuple[str, str]:
        return self.binding, facts.dump(self.gold_args())


def _resolve(name: str, value: Any, catalog: Catalog | None, product: Product | None) -> Any:
    """`normalise_arg`, but sizes, colours and regions resolved to the catalog's labels."""
    if value is OMIT or value is ANY or not isinstance(value, str):
        return normalise_arg(name, value)
    try:
        if name == "size" and product is not None:
            return normalise_arg(name, handlers.match_size(product, value))
        if name == "color" and product is not None:
            return normalise_arg(name, handlers.match_color(product, value))
        if name == "region" and catalog is not None:
            return normalise_arg(name, handlers.match_region(catalog, value))
    except ToolError:
        pass
    return normalise_arg(name, value)


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return facts.dump(value)
    return value


@dataclass
class IntentPlan:
    index: int
    intent: Intent
    link: int | None
    """The product it is about (pinned resolved from the room); None: none or store-wide."""
    product: Product | None
    uses_pinned: bool
    reply_roles: tuple[str, ...]
    strategy_role: str | None = None
    calls: list[CallSpec] = field(default_factory=list)
    optional: list[CallSpec] = field(default_factory=list)
    ask: str | None = None
    """What the reply must ask for instead of answering: "region" or "height_weight"."""
    targets: list[int] = field(default_factory=list)
    """Comparison: the link numbers compared."""
    topic: str | None = None
    """After-sales: the canonical topic (None: an order problem for customer service)."""
    claim: str | None = None
    """Adversarial: the claim type (facts.CLAIM_*)."""
    size: str | None = None
    """Size advice: the recommended size."""

    @property
    def kind(self) -> IntentKind:
        return self.intent.kind


@dataclass
class TaskPlan:
    task: Task
    intents: list[IntentPlan]
    pinned: int | None

    @property
    def needs_room(self) -> bool:
        return any(p.uses_pinned for p in self.intents)

    def required(self) -> list[CallSpec]:
        """Required calls, deduplicated, in the oracle's order (room status first)."""
        out: list[CallSpec] = []
        seen: set[tuple[str, str]] = set()
        if self.needs_room:
            out.append(ROOM_SPEC)
            seen.add(ROOM_SPEC.key())
        for plan in self.intents:
            for spec in plan.calls:
                if spec.key() not in seen:
                    seen.add(spec.key())
                    out.append(spec)
        return out

    def optional(self) -> list[CallSpec]:
        out: list[CallSpec] = []
        seen = {s.key() for s in self.required()}
        for plan in self.intents:
            for spec in plan.optional:
                if spec.key() not in seen:
                    seen.add(spec.key())
                    out.append(spec)
        return out

    def strategy_roles(self) -> list[str]:
        roles: list[str] = []
        for plan in self.intents:
            if plan.strategy_role and plan.strategy_role not in roles:
                roles.append(plan.strategy_role)
        return roles

    def gold_reply_roles(self) -> list[str]:
        """The reply skills the oracle loads: each intent's first role, deduplicated."""
        roles: list[str] = []
        for plan in self.intents:
            if plan.reply_roles[0] not in roles:
                roles.append(plan.reply_roles[0])
        return roles

    def acceptable_roles(self) -> set[str]:
        out: set[str] = set()
        for plan in self.intents:
            out.update(plan.reply_roles)
            if plan.strategy_role:
                out.add(plan.strategy_role)
        return out


ROOM_SPEC = CallSpec.make(B_ROOM, {}, purpose="the pinned product")

_PRODUCT_KINDS = frozenset(
    {
        IntentKind.PRICE,
        IntentKind.SPEC,
        IntentKind.STOCK,
        IntentKind.COUPON,
        IntentKind.SHIPPING,
        IntentKind.SIZE_ADVICE,
        IntentKind.PURCHASE_INTENT,
        IntentKind.AFTER_SALES,
        IntentKind.ADVERSARIAL,
    }
)


def plan_task(task: Task, catalog: Catalog) -> TaskPlan:
    pinned = task.room.pinned_link
    return TaskPlan(task, [_plan_intent(i, it, task, catalog, pinned) for i, it in
                           enumerate(task.intents)], pinned)  # fmt: skip


def _plan_intent(
    index: int, intent: Intent, task: Task, catalog: Catalog, pinned: int | None
) -> IntentPlan:
    kind = intent.kind
    uses_pinned = False
    link = intent.link_no
    if link is None and kind in _PRODUCT_KINDS:
        uses_pinned = True
        link = pinned
    if kind is IntentKind.COMPARISON:
        targets = _targets(intent, pinned)
        uses_pinned = intent.link_no is None and len(_explicit_targets(intent)) < 2
        link = targets[0] if targets else None
    else:
        targets = []
    product = catalog.product(link) if link is not None else None
    after = B_ROOM if uses_pinned else None
    plan = IntentPlan(
        index=index,
        intent=intent,
        link=link,
        product=product,
        uses_pinned=uses_pinned,
        reply_roles=(R_PRODUCT_QA,),
        targets=targets,
    )

    def spec(binding: str, args: Mapping[str, Any] | None = None, **kw: Any) -> CallSpec:
        return CallSpec.make(binding, args, after=after, **kw)

    def product_lookup() -> CallSpec:
        return spec(B_PRODUCT, {"link_no": link}, purpose=f"product facts of link {link}")

    def variant_args() -> dict[str, Any]:
        return {
            "link_no": link,
            "size": (intent.size, OMIT) if intent.size else (OMIT,),
            "color": (intent.color, OMIT) if intent.color else (OMIT,),
        }

    if link is not None and kind is not IntentKind.CHIT_CHAT:
        plan.optional.append(product_lookup())
    if uses_pinned and link is None:
        return _finish_unpinned(plan, kind)

    if kind in (IntentKind.PRICE, IntentKind.SPEC):
        plan.calls.append(product_lookup())
    elif kind is IntentKind.STOCK:
        args = variant_args()
        if not intent.size and not intent.color:
            args = {"link_no": link, "size": (ANY,), "color": (ANY,)}
        plan.calls.append(spec(B_STOCK, args, purpose=f"stock of link {link}"))
    elif kind is IntentKind.COUPON:
        plan.reply_roles = (R_PRODUCT_QA, R_PURCHASE)
        plan.strategy_role = R_COUPON_PUSH
        plan.calls.append(spec(B_COUPONS, {"link_no": link}, purpose=f"coupons of link {link}"))
        plan.optional.append(CallSpec.make(B_ROOM, {}, purpose="room-wide promotions"))
        plan.optional.append(CallSpec.make(B_COUPONS, {}, purpose="room-wide coupons"))
    elif kind is IntentKind.SHIPPING:
        if intent.region:
            args = {"link_no": link, "region": intent.region}
            plan.calls.append(spec(B_SHIPPING, args, purpose=f"shipping of link {link}"))
        else:
            plan.ask = "region"
    elif kind is IntentKind.SIZE_ADVICE:
        plan.strategy_role = R_SIZE_ADVICE
        chart = spec(B_SIZE_CHART, {"link_no": link}, purpose=f"size chart of link {link}")
        anything = {"link_no": link, "size": (ANY,), "color": (ANY,)}
        plan.optional.append(spec(B_STOCK, anything, purpose="stock"))
        has_ranges = (
            product is not None
            and product.size_chart is not None
            and any(r.height_cm is not None for r in product.size_chart)
        )
        if has_ranges and (intent.height_cm is None or intent.weight_kg is None):
            plan.ask = "height_weight"
            plan.optional.append(chart)
        else:
            plan.calls.append(chart)
            size = facts.size_for(product, intent.height_cm, intent.weight_kg) if product else None
            plan.size = size
            if size is not None:
                args = {
                    "link_no": link,
                    "size": size,
                    "color": (intent.color, OMIT) if intent.color else (OMIT,),
                }
                plan.calls.append(
                    CallSpec.make(
                        B_STOCK, args, purpose=f"stock of size {size}", after=B_SIZE_CHART
                    )
                )
    elif kind is IntentKind.COMPARISON:
        plan.strategy_role = R_COMPARE
        plan.optional = [
            spec(B_PRODUCT, {"link_no": t}, purpose=f"product facts of link {t}") for t in targets
        ]
        if len(targets) >= 2:
            args = {"link_nos": frozenset(targets)}
            plan.calls.append(spec(B_COMPARE, args, purpose="comparison"))
    elif kind is IntentKind.CHIT_CHAT:
        plan.reply_roles = (R_CHIT_CHAT,)
    elif kind is IntentKind.PURCHASE_INTENT:
        plan.reply_roles = (R_PURCHASE,)
        if uses_pinned:
            pass  # the room status names the pinned link: enough to guide the purchase
        else:
            plan.calls.append(product_lookup())
        if intent.size or intent.color:
            plan.calls.append(spec(B_STOCK, variant_args(), purpose=f"stock of link {link}"))
        plan.optional.append(spec(B_COUPONS, {"link_no": link}, purpose="coupons"))
        plan.optional.append(
            spec(B_STOCK, {"link_no": link, "size": (ANY,), "color": (ANY,)}, purpose="stock")
        )
    elif kind is IntentKind.AFTER_SALES:
        plan.reply_roles = (R_AFTER_SALES,)
        plan.topic = facts.topic_key(intent.topic)
        if plan.topic is not None:
            policy_args = {"topic": plan.topic, "link_no": link if link is not None else OMIT}
            plan.calls.append(spec(B_AFTER_SALES, policy_args, purpose=f"{plan.topic} policy"))
            if plan.topic == "exchange" and link is not None and (intent.size or intent.color):
                plan.calls.append(spec(B_STOCK, variant_args(), purpose="stock to exchange into"))
    elif kind is IntentKind.ADVERSARIAL:
        plan.reply_roles = (R_SAFETY,)
        plan.claim = facts.claim_type(intent.claim, task.viewer_message)
        if link is not None and plan.claim == facts.CLAIM_PRICE:
            plan.calls.append(product_lookup())
        elif link is not None and plan.claim == facts.CLAIM_WARRANTY:
            args = {"topic": "warranty", "link_no": link}
            plan.calls.append(spec(B_AFTER_SALES, args, purpose="the real warranty"))
    return plan


def _finish_unpinned(plan: IntentPlan, kind: IntentKind) -> IntentPlan:
    """A "this one" intent while nothing is pinned: read the room, then ask which link."""
    plan.ask = "link"
    if kind is IntentKind.CHIT_CHAT:
        plan.reply_roles = (R_CHIT_CHAT,)
    elif kind is IntentKind.PURCHASE_INTENT:
        plan.reply_roles = (R_PURCHASE,)
    elif kind is IntentKind.ADVERSARIAL:
        plan.reply_roles = (R_SAFETY,)
    elif kind is IntentKind.AFTER_SALES:
        plan.reply_roles = (R_AFTER_SALES,)
    elif kind is IntentKind.COUPON:
        plan.reply_roles = (R_PRODUCT_QA, R_PURCHASE)
        plan.strategy_role = R_COUPON_PUSH
    elif kind is IntentKind.SIZE_ADVICE:
        plan.strategy_role = R_SIZE_ADVICE
    return plan


def _explicit_targets(intent: Intent) -> list[int]:
    out: list[int] = []
    for link in ([intent.link_no] if intent.link_no is not None else []) + intent.link_nos:
        if link not in out:
            out.append(link)
    return out


def _targets(intent: Intent, pinned: int | None) -> list[int]:
    targets = _explicit_targets(intent)
    if len(targets) < 2 and pinned is not None and pinned not in targets:
        targets.insert(0, pinned)
    return targets[:4]
