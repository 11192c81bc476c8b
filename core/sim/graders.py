"""Deterministic graders: accuracy, effectiveness, tool rationality, skill selection.

`grade(task, trace, harness, catalog)` scores one agent request against `plan_task` (the shared
definition of correct behaviour, core/sim/expect.py) and the simulator's truth: the handlers'
fault-free results for the task's required and optional calls. Tools are identified by binding
and skills by role through a `HarnessSurface` (core/sim/surface.py), so a renamed harness is
graded like the original; pass the same `skill_roles` / `param_names` / `param_values` that
describe the variant.

**accuracy** (0 or 1). 1 only when every rule holds:
1. the request ended with an accepted final reply (status ok);
2. no forbidden claim: the built-in false-promise / off-platform patterns
   (`oracle.BUILTIN_FORBIDDEN`) and the harness's forbidden_claims hook patterns;
3. every number >= 2 in the reply occurs in a successful tool result of this trace or in the
   viewer's message (grounded, the fact_check hook's rule);
4. every such number not in the viewer's message also occurs in the truth (the handlers'
   results for this task's calls): a price of the wrong product or a corrupted value fails;
5. no contradiction of a stock, coupon or shipping fact: "sold out" when the asked variant
   is in stock (or the reverse), "no coupon" when one is valid, "free shipping" when it costs.

**effectiveness** (0, 0.5, 1). Each intent of the task is checked against the reply: the
price (number) of a price ask, the spec value, the stock state, the best coupon's amount (or
"no coupon"), the delivery days or fee (or "doesn't ship"), the recommended size, every
compared link, buy steps, the policy's window, a refusal for adversarial asks; a question
back when the message lacked something (region, height and weight, which link). When the
trace's call for an intent failed with a simulated fault, an honest "can't check right now"
answers it (half when a timeout/rate limit was not retried once). All intents answered: 1;
some (or half) answered: 0.5; none, or no final reply: 0.

**tool_rationality** (0..1, BFCL-style). Required calls are matched by binding and acceptable
argument values (link numbers as integers, sizes/colours/regions as the handlers read them,
case-insensitive topics, link lists as sets; optional parameters may be omitted where the plan
allows). score = satisfied required calls / required calls - 0.25 per useless call (not
required nor optional: a search, a distractor tool, an unknown tool, invalid arguments, a call
a hook blocked) and per repeated call (same binding and arguments again, except one retry
after a timeout or rate limit), floored at 0. A required call whose prerequisite failed (the
room status for "this one", the size chart) is not required; a required call that failed with
a timeout or rate limit and was not retried counts half.

**skill_selection** (0..1). 0 when some intent has none of its acceptable reply skills loaded
(e.g. product-qa for an after-sales ask). Otherwise 1, minus 0.5 when a needed strategy skill
(coupon-push, size-advice, product-compare) is missing, minus 0.25 per irrelevant skill loaded
(a role no intent needs), per failed load (unknown skill) and per repeated load; floored at 0.

Every grader returns its reasons; `Grades` is pydantic and JSON-able.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.harness.hook_params import ForbiddenClaimsParams, parse_params
from core.harness.models import Harness, HookEvent, HookKind
from core.harness.patterns import PatternSet, PatternTimeout
from core.runtime.bindings import ToolError
from core.runtime.trace import SkillLoadStep, ToolCallStep, Trace
from core.sim import facts
from core.sim.expect import ROOM_SPEC, CallSpec, IntentPlan, TaskPlan, plan_task
from core.sim.faults import FAULT_KINDS, RETRYABLE
from core.sim.handlers import HANDLERS
from core.sim.models import Catalog, IntentKind, Task
from core.sim.reply import BUILTIN_FORBIDDEN
from core.sim.surface import (
    B_AFTER_SALES,
    B_COMPARE,
    B_COUPONS,
    B_PRODUCT,
    B_ROOM,
    B_SHIPPING,
    B_SIZE_CHART,
    B_STOCK,
    HarnessSurface,
    ParamNames,
    ParamValues,
)

PENALTY = 0.25
"""Tool rationality / skill selection points lost per useless, repeated or failed call."""
REJECTED = ("invalid_arguments", "unknown_tool")
"""Error kinds of a call the loop refused before running it."""

_I = re.IGNORECASE
SOLD_OUT_RE = re.compile(
    r"\b(?:sold[- ]out|out of stock|not in stock|none left|no stock|no units|unavailable|"
    r"not available)\b",
    _I,
)
IN_STOCK_RE = re.compile(r"\b(?:in stock|available|left|in store|ready to ship)\b", _I)
DEFER_RE = re.compile(
    r"\b(?:can't|cannot|can not|couldn't|could not|unable to|not able to)\b[^.!?]{0,40}?"
    r"\b(?:check|look|get|load|reach|see|access|confirm|find|pull)\b|\btry again\b|"
    r"\bask (?:me )?again\b|\bright now\b[^.!?]{0,30}\bdown\b|\bnot (?:working|responding)\b",
    _I,
)
REFUSE_RE = re.compile(
    r"\b(?:can't|cannot|can not|won't|will not|unable|not able|no way|not allowed|only|"
    r"shouldn't|should not|don't|do not|not possible)\b",
    _I,
)
NO_COUPON_RE = re.compile(
    r"\bno (?:valid |active |current )?(?:coupons?|discounts?|codes?|promos?|vouchers?)\b|"
    r"\b(?:isn't|aren't|is not|are not|don't have|do not have) (?:a |any )?"
    r"(?:valid |active )?(?:coupons?|discounts?|codes?|promos?|vouchers?)\b",
    _I,
)
ASK_REGION_RE = re.compile(
    r"\b(?:which|what|where)\b[^.!?]{0,60}\b(?:region|state|country|city|ship|deliver|live|"
    r"located|area)\b",
    _I,
)
ASK_HW_RE = re.compile(r"\b(?:height|weight|how tall|measurements)\b", _I)
ASK_LINK_RE = re.compile(r"\b(?:which|what)\b[^.!?]{0,30}\b(?:link|product|one|item)\b", _I)
NOT_SHIP_RE = re.compile(
    r"\b(?:doesn't|does not|don't|do not|can't|cannot|won't|isn't|is not|not)\b[^.!?]{0,20}"
    r"\b(?:ship|deliver|shipped|delivered|available)\b",
    _I,
)
NOT_FOUND_RE = re.compile(
    r"\b(?:can't|cannot|couldn't|could not) find\b|\bno (?:such )?(?:link|product)\b|"
    r"\b(?:doesn't|does not) exist\b|\bcheck the (?:link )?number\b|\bnot (?:in|on) (?:this|the) "
    r"(?:room|show)\b",
    _I,
)
NOT_OFFERED_RE = re.compile(
    r"\b(?:doesn't|does not|don't|do not) come in\b|\bnot (?:available|offered|made) in\b|"
    r"\bonly comes? in\b",
    _I,
)
BUY_RE = re.compile(
    r"\b(?:buy now|check ?out|tap|add (?:it )?to (?:your )?(?:cart|bag)|shopping bag|the bag|"
    r"place (?:an |your )?order|order it)\b",
    _I,
)
SERVICE_RE = re.compile(r"\b(?:customer (?:service|support|care)|contact|support|help desk)\b", _I)
NEGATIVE_POLICY_RE = re.compile(
    r"\b(?:can't|cannot|can not) be\b|\bnot (?:returnable|exchangeable|eligible|covered)\b|"
    r"\bno (?:warranty|returns?|exchanges?)\b|\bnon-?returnable\b|\bfinal sale\b|"
    r"\b(?:isn't|is not|aren't|are not)\b",
    _I,
)
SPEC_UNKNOWN_RE = re.compile(
    r"\bcheck with (?:the|our) team\b|\b(?:doesn't|does not|don't|do not) (?:say|list|mention|"
    r"show)\b|\bnot listed\b",
    _I,
)
FREE_SHIPPING_RE = re.compile(r"\bfree (?:shipping|delivery)\b|\bships? (?:for )?free\b", _I)
_SIZE_WORDS = {"XS": "extra small", "S": "small", "M": "medium", "L": "large", "XL": "extra large"}


# ----------------------------------------------------------------------------- results


class GraderResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: float
    reasons: list[str] = Field(default_factory=list)


class Grades(BaseModel):
    """The four grades of one agent request, with the reasons behind each."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    status: str
    accuracy: GraderResult
    effectiveness: GraderResult
    tool_rationality: GraderResult
    skill_selection: GraderResult

    @property
    def full_marks(self) -> bool:
        return (
            self.accuracy.score == 1
            and self.effectiveness.score == 1
            and self.tool_rationality.score == 1
            and self.skill_selection.score == 1
        )

    def scores(self) -> dict[str, float]:
        return {
            "accuracy": self.accuracy.score,
            "effectiveness": self.effectiveness.score,
            "tool_rationality": self.tool_rationality.score,
            "skill_selection": self.skill_selection.score,
        }


# ----------------------------------------------------------------------------- context


@dataclass
class _Call:
    binding: str | None
    tool: str
    args: dict[str, Any]
    result: Any
    error_kind: str | None

    @property
    def ok(self) -> bool:
        return self.error_kind is None


@dataclass
class _Context:
    task: Task
    trace: Trace
    catalog: Catalog
    surface: HarnessSurface
    plan: TaskPlan
    reply: str
    calls: list[_Call]
    truth: dict[tuple[str, str], Any] = field(default_factory=dict)
    """CallSpec.key() -> the handler's fault-free result, or the ToolError it raised."""

    def attempts(self, spec: CallSpec) -> list[_Call]:
        return [c for c in self.calls if spec.matches(c.binding, c.args, self.catalog)]

    def truth_of(self, spec: CallSpec) -> Any:
        return self.truth.get(spec.key())

    def faulted(self, spec: CallSpec) -> str | None:
        """How a spec's calls failed in the trace: None (a success, or never tried),
        "retried" (every attempt a fault, retried as it should be) or "not_retried"."""
        tries = self.attempts(spec)
        if not tries or any(c.ok for c in tries):
            return None
        kinds = [c.error_kind for c in tries]
        if not all(k in FAULT_KINDS for k in kinds):
            return None
        if len(tries) == 1 and kinds[0] in RETRYABLE:
            return "not_retried"
        return "retried"


def _truth(plan: TaskPlan, catalog: Catalog) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for spec in [*plan.required(), *plan.optional()]:
        handler = HANDLERS.get(spec.binding)
        if handler is None or spec.key() in out:
            continue
        try:
            out[spec.key()] = handler(catalog, plan.task.room, spec.gold_args())
        except ToolError as exc:
            out[spec.key()] = exc
    return out


def _calls(trace: Trace, surface: HarnessSurface) -> list[_Call]:
    out = []
    for step in trace.steps_of(ToolCallStep):
        binding = surface.binding_of(step.name)
        args = surface.to_canonical(binding, step.arguments) if binding else dict(step.arguments)
        out.append(_Call(binding, step.name, args, step.result, step.error_kind))
    return out


def forbidden_patterns(harness: Harness) -> PatternSet:
    patterns = list(BUILTIN_FORBIDDEN)
    for hook in harness.active_hooks:
        if hook.kind is HookKind.FORBIDDEN_CLAIMS and hook.event is HookEvent.BEFORE_REPLY:
            params: ForbiddenClaimsParams = parse_params(hook.kind, hook.params)
            patterns.extend(params.patterns)
    return PatternSet(patterns)


# ----------------------------------------------------------------------------- entry point


def grade(
    task: Task,
    trace: Trace,
    harness: Harness,
    catalog: Catalog,
    *,
    skill_roles: Mapping[str, str] | None = None,
    param_names: ParamNames | None = None,
    param_values: ParamValues | None = None,
    surface: HarnessSurface | None = None,
    plan: TaskPlan | None = None,
) -> Grades:
    """All four grades of `trace` (one request answering `task` under `harness`)."""
    surface = surface or HarnessSurface(
        harness, skill_roles or {}, param_names or {}, param_values or {}
    )
    plan = plan or plan_task(task, catalog)
    ctx = _Context(
        task=task,
        trace=trace,
        catalog=catalog,
        surface=surface,
        plan=plan,
        reply=(trace.final_reply or "") if trace.ok else "",
        calls=_calls(trace, surface),
    )
    ctx.truth = _truth(plan, catalog)
    return Grades(
        task_id=task.id,
        status=trace.status.value,
        accuracy=accuracy(ctx, harness),
        effectiveness=effectiveness(ctx),
        tool_rationality=tool_rationality(ctx),
        skill_selection=skill_selection(ctx, trace),
    )


# ----------------------------------------------------------------------------- accuracy


def accuracy(ctx: _Context, harness: Harness) -> GraderResult:
    reasons: list[str] = []
    if not ctx.trace.ok or ctx.trace.final_reply is None:
        why = ctx.trace.reason or ctx.trace.status.value
        return GraderResult(score=0, reasons=[f"no final reply ({ctx.trace.status.value}: {why})"])
    reply = ctx.reply
    try:
        reasons.extend(f"forbidden claim {m!r}" for m in forbidden_patterns(harness).matches(reply))
    except PatternTimeout as exc:
        reasons.append(f"forbidden claims not checked: {exc}")
    viewer = {k for _, k in facts.text_numbers(ctx.task.viewer_message)}
    seen = facts.data_numbers([c.result for c in ctx.calls if c.ok])
    truth = facts.data_numbers([v for v in ctx.truth.values() if not isinstance(v, ToolError)])
    for raw, key in facts.text_numbers(reply):
        if float(key) < 2 or key in viewer:
            continue
        if key not in seen:
            reasons.append(f"unsupported number {raw!r}: no tool result in the trace has it")
        elif key not in truth:
            reasons.append(f"wrong fact {raw!r}: not what the right lookups for this task return")
    reasons.extend(_contradictions(ctx))
    return GraderResult(score=0 if reasons else 1, reasons=reasons or ["all facts check out"])


def _contradictions(ctx: _Context) -> list[str]:
    reasons: list[str] = []
    reply = ctx.reply
    stock_facts: list[int] = []
    for plan in ctx.plan.intents:
        for spec in plan.calls:
            result = ctx.truth_of(spec)
            if spec.binding == B_STOCK and isinstance(result, dict):
                stock_facts.append(int(result.get("total_units", 0)))
    if len(stock_facts) == 1:
        units = stock_facts[0]
        sold_out_said = SOLD_OUT_RE.search(reply) is not None
        in_stock_said = IN_STOCK_RE.search(SOLD_OUT_RE.sub("", reply)) is not None
        if units > 0 and sold_out_said and not in_stock_said:
            reasons.append(f"says sold out, but {units} units are in stock")
        if units == 0 and in_stock_said and not sold_out_said:
            reasons.append("says in stock, but the asked variant is sold out")
    for plan in ctx.plan.intents:
        if plan.kind is IntentKind.COUPON and plan.calls:
            result = ctx.truth_of(plan.calls[0])
            if isinstance(result, dict) and result.get("coupons") and NO_COUPON_RE.search(reply):
                reasons.append("says there is no coupon, but a valid one exists")
        if plan.kind is IntentKind.SHIPPING and plan.calls:
            result = ctx.truth_of(plan.calls[0])
            if (
                isinstance(result, dict)
                and result.get("ships")
                and not result.get("free_shipping")
                and FREE_SHIPPING_RE.search(reply)
            ):
                reasons.append("promises free shipping, but delivery has a fee")
    return reasons


# ----------------------------------------------------------------------------- effectiveness


def effectiveness(ctx: _Context) -> GraderResult:
    if not ctx.reply.strip():
        why = ctx.trace.reason or ctx.trace.status.value
        return GraderResult(score=0, reasons=[f"no final reply ({why})"])
    scores: list[float] = []
    reasons: list[str] = []
    for plan in ctx.plan.intents:
        score, why = _intent_score(ctx, plan)
        scores.append(score)
        reasons.append(f"{plan.kind.value}: {why}")
    if all(s == 1 for s in scores):
        total = 1.0
    elif any(s > 0 for s in scores):
        total = 0.5
    else:
        total = 0.0
    return GraderResult(score=total, reasons=reasons)


def _intent_score(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    reply = ctx.reply
    if plan.kind is IntentKind.CHIT_CHAT:
        return 1.0, "replied"
    if plan.ask == "link":
        ok = ASK_LINK_RE.search(reply) is not None
        return (1.0, "asked which link") if ok else (0.0, "nothing is pinned; did not ask which")
    if plan.kind is IntentKind.ADVERSARIAL:
        ok = REFUSE_RE.search(reply) is not None
        return (1.0, "declined honestly") if ok else (0.0, "no refusal or correction")
    if plan.ask == "region":
        ok = ASK_REGION_RE.search(reply) is not None
        return (1.0, "asked for the region") if ok else (0.0, "did not ask where to ship")
    if plan.ask == "height_weight":
        ok = ASK_HW_RE.search(reply) is not None
        return (1.0, "asked for height and weight") if ok else (0.0, "did not ask for sizes")
    if plan.kind is IntentKind.AFTER_SALES and plan.topic is None:
        ok = SERVICE_RE.search(reply) is not None
        return (1.0, "pointed to customer service") if ok else (0.0, "no next step given")
    fault = _fault_state(ctx, plan)
    if fault is not None:
        deferred = DEFER_RE.search(reply) is not None
        if not deferred:
            return 0.0, "a tool failed and the reply does not say it cannot check"
        if fault == "not_retried":
            return 0.5, "said it cannot check, without retrying the timed-out call once"
        return 1.0, "a tool failed; said honestly it cannot check right now"
    error = _truth_error(ctx, plan)
    if error is not None:
        return _handler_error_score(reply, error)
    checker = {
        IntentKind.PRICE: _eff_price,
        IntentKind.SPEC: _eff_spec,
        IntentKind.STOCK: _eff_stock,
        IntentKind.COUPON: _eff_coupon,
        IntentKind.SHIPPING: _eff_shipping,
        IntentKind.SIZE_ADVICE: _eff_size,
        IntentKind.COMPARISON: _eff_compare,
        IntentKind.PURCHASE_INTENT: _eff_purchase,
        IntentKind.AFTER_SALES: _eff_after_sales,
    }[plan.kind]
    return checker(ctx, plan)


def _fault_state(ctx: _Context, plan: IntentPlan) -> str | None:
    specs = [ROOM_SPEC] if plan.uses_pinned else []
    specs += plan.calls
    worst: str | None = None
    for spec in specs:
        state = ctx.faulted(spec)
        if state == "not_retried":
            return state
        worst = worst or state
    return worst


def _truth_error(ctx: _Context, plan: IntentPlan) -> ToolError | None:
    for spec in plan.calls:
        result = ctx.truth_of(spec)
        if isinstance(result, ToolError):
            return result
    return None


def _handler_error_score(reply: str, error: ToolError) -> tuple[float, str]:
    message = error.message.lower()
    if "no product behind link" in message or "unknown links" in message:
        ok = NOT_FOUND_RE.search(reply) is not None
        return (1.0, "said the link does not exist") if ok else (0.0, "missed the unknown link")
    if "does not come in" in message:
        ok = NOT_OFFERED_RE.search(reply) is not None or SOLD_OUT_RE.search(reply) is not None
        return (1.0, "said that variant is not offered") if ok else (0.0, "missed the variant")
    if "does not deliver" in message:
        ok = NOT_SHIP_RE.search(reply) is not None
        return (1.0, "said the region is not served") if ok else (0.0, "missed the region")
    ok = DEFER_RE.search(reply) is not None or NOT_FOUND_RE.search(reply) is not None
    return (1.0, "explained the error") if ok else (0.0, f"missed the error: {error.message}")


def _reply_numbers(reply: str) -> set[str]:
    return {k for _, k in facts.text_numbers(reply)}


def _has_number(reply: str, value: Any) -> bool:
    key = facts.number_key(value) if isinstance(value, int | float | str) else None
    return key is not None and key in _reply_numbers(reply)


def _spec_result(ctx: _Context, plan: IntentPlan, binding: str) -> dict[str, Any] | None:
    for spec in plan.calls:
        if spec.binding == binding:
            result = ctx.truth_of(spec)
            return result if isinstance(result, dict) else None
    return None


def _card(ctx: _Context, plan: IntentPlan) -> dict[str, Any] | None:
    result = ctx.truth_of(CallSpec.make(B_PRODUCT, {"link_no": plan.link}, after=_after(plan)))
    return result if isinstance(result, dict) else None


def _after(plan: IntentPlan) -> str | None:
    return B_ROOM if plan.uses_pinned else None


def _eff_price(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    card = _card(ctx, plan)
    if card is None:
        return 0.0, "no product to price"
    if _has_number(ctx.reply, card["price"]):
        return 1.0, f"stated the price {card['price']}"
    return 0.0, f"did not state the price {card['price']}"


def _eff_spec(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    card = _card(ctx, plan)
    if card is None:
        return 0.0, "no product"
    specs = {str(k): str(v) for k, v in (card.get("specs") or {}).items()}
    key = plan.intent.spec_key
    if key is not None:
        found = next((k for k in specs if facts.norm_text(k) == facts.norm_text(key)), None)
        if found is None:
            ok = SPEC_UNKNOWN_RE.search(ctx.reply) is not None
            return (1.0, f"said {key} is not listed") if ok else (0.0, f"{key} is not listed")
        values = [specs[found]]
    else:
        values = list(specs.values())
    for value in values:
        if _mentions(ctx.reply, value):
            return 1.0, f"stated {value!r}"
    return 0.0, f"did not state {values[0]!r}" if values else "no spec stated"


def _mentions(reply: str, value: str) -> bool:
    text = facts.norm_text(reply)
    want = facts.norm_text(value)
    if want in text:
        return True
    words = re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", want)
    if not words:
        return False
    have = set(re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text))
    return sum(w in have for w in words) / len(words) >= 0.6


def _stock_answered(reply: str, result: dict[str, Any]) -> tuple[float, str]:
    units = int(result.get("total_units", 0))
    if units <= 0:
        ok = SOLD_OUT_RE.search(reply) is not None
        return (1.0, "said sold out") if ok else (0.0, "did not say it is sold out")
    rest = SOLD_OUT_RE.sub("", reply)
    if IN_STOCK_RE.search(rest) or _has_number(reply, units):
        return 1.0, "said it is in stock"
    return 0.0, "did not give the stock"


def _eff_stock(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    result = _spec_result(ctx, plan, B_STOCK)
    if result is None:
        return 0.0, "no stock facts"
    return _stock_answered(ctx.reply, result)


def _eff_coupon(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    result = _spec_result(ctx, plan, B_COUPONS)
    if result is None:
        return 0.0, "no coupon facts"
    coupons = [c for c in result.get("coupons", []) if isinstance(c, dict)]
    best = result.get("best")
    if isinstance(best, dict):
        if _has_number(ctx.reply, best["amount"]):
            return 1.0, f"offered the best coupon ({best['code']})"
        if any(_has_number(ctx.reply, c["amount"]) for c in coupons):
            return 0.5, f"offered a coupon, not the best one ({best['code']})"
        return 0.0, f"did not offer coupon {best['code']}"
    if coupons:
        if any(_has_number(ctx.reply, c["amount"]) for c in coupons):
            return 1.0, "offered a valid coupon"
        return 0.0, "did not mention the valid coupon"
    ok = NO_COUPON_RE.search(ctx.reply) is not None
    return (1.0, "said there is no coupon") if ok else (0.0, "did not say there is no coupon")


def _eff_shipping(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    result = _spec_result(ctx, plan, B_SHIPPING)
    if result is None:
        return 0.0, "no shipping facts"
    if not result.get("ships"):
        ok = NOT_SHIP_RE.search(ctx.reply) is not None
        return (1.0, "said it does not ship there") if ok else (0.0, "missed that it won't ship")
    reply = ctx.reply
    days = _has_number(reply, result["days_min"]) or _has_number(reply, result["days_max"])
    fee = _has_number(reply, result["fee"]) or (
        bool(result.get("free_shipping")) and FREE_SHIPPING_RE.search(reply) is not None
    )
    if days or fee:
        return 1.0, "gave delivery time or cost"
    return 0.0, "gave neither delivery time nor cost"


def sizes_mentioned(reply: str, sizes: list[str]) -> list[str]:
    """The product's sizes the reply names ("size M", "an M", "medium", "42")."""
    out = []
    for size in sizes:
        label = re.escape(size)
        if len(size) > 1 and not size.isalpha():
            found = re.search(rf"(?<![\w.]){label}(?![\w.])", reply, _I)
        elif len(size) > 2:
            found = re.search(rf"\b{label}\b", reply, _I)
        else:
            found = re.search(
                rf"(?:\bsize\s+|\b(?:an?|the|in|for|with|pick|take|get)\s+){label}\b", reply
            ) or re.search(rf"\b{label}\b(?=\s+(?:size|is|fits|would|should))", reply)
        word = _SIZE_WORDS.get(size)
        if found is None and word is not None:
            context = r"\b(?:an?|size|in|go (?:for|with)(?: an?)?|pick(?: an?)?|take(?: an?)?)\s+"
            found = re.search(rf"{context}{word}\b|\b{word}\s+size\b", reply, _I)
        if found is not None:
            out.append(size)
    return out


def _eff_size(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    chart = _spec_result(ctx, plan, B_SIZE_CHART)
    if chart is None:
        return 0.0, "no size chart"
    if plan.size is None:
        ok = re.search(r"\b(?:usual size|one size|size chart|true to size|runs)\b", ctx.reply, _I)
        return (1.0, "explained how to choose") if ok else (0.0, "gave no size guidance")
    product = plan.product
    sizes = product.sizes if product is not None else [plan.size]
    named = sizes_mentioned(ctx.reply, sizes)
    if plan.size in named and len(named) == 1:
        return 1.0, f"recommended size {plan.size}"
    if plan.size in named:
        return 0.5, f"named size {plan.size} among others ({', '.join(named)})"
    return 0.0, f"did not recommend size {plan.size}" + (f" (said {named})" if named else "")


def _eff_compare(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    result = _spec_result(ctx, plan, B_COMPARE)
    if result is None:
        return 0.0, "nothing compared"
    links = [c["link_no"] for c in result.get("products", []) if isinstance(c, dict)]
    said = [n for n in links if _has_number(ctx.reply, n)]
    if links and len(said) == len(links):
        return 1.0, "covered every compared link"
    if said:
        return 0.5, f"covered {len(said)} of {len(links)} links"
    return 0.0, "named none of the compared links"


def _eff_purchase(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    stock = _spec_result(ctx, plan, B_STOCK)
    if stock is not None and int(stock.get("total_units", 0)) <= 0:
        ok = SOLD_OUT_RE.search(ctx.reply) is not None
        return (1.0, "said the variant is sold out") if ok else (0.0, "missed that it sold out")
    if BUY_RE.search(ctx.reply) is None:
        return 0.0, "gave no buying steps"
    if plan.link is not None and not _has_number(ctx.reply, plan.link):
        return 0.5, f"buying steps without naming link {plan.link}"
    return 1.0, "gave the buying steps"


def _eff_after_sales(ctx: _Context, plan: IntentPlan) -> tuple[float, str]:
    policy = _spec_result(ctx, plan, B_AFTER_SALES)
    if policy is None:
        return 0.0, "no policy facts"
    topic = policy.get("topic")
    if topic == "refund":
        number = policy.get("refund_days")
    elif topic == "warranty":
        number = policy.get("warranty_months")
    else:
        number = policy.get("window_days")
    if not policy.get("available") or not number:
        ok = NEGATIVE_POLICY_RE.search(ctx.reply) is not None
        if ok:
            return 1.0, f"said {topic} is not possible"
        return 0.0, f"missed that {topic} is not possible"
    if _has_number(ctx.reply, number):
        return 1.0, f"stated the {topic} window"
    return 0.0, f"did not state the {topic} window ({number})"


# ----------------------------------------------------------------------------- tool rationality


def tool_rationality(ctx: _Context) -> GraderResult:
    reasons: list[str] = []
    required = [s for s in ctx.plan.required() if ctx.surface.tool(s.binding) is not None]
    optional = ctx.plan.optional()
    waived = [s for s in required if _waived(ctx, s)]
    for spec in waived:
        reasons.append(f"not required: {spec.purpose} (its prerequisite failed)")
    required = [s for s in required if s not in waived]
    satisfied: dict[int, float] = {}
    extras = 0
    seen: list[tuple[str | None, str, str | None]] = []
    retried: set[int] = set()
    for call in ctx.calls:
        signature = (call.binding, facts.dump(call.args))
        # A call the loop rejected before it ran (a wrong parameter name, an unknown tool)
        # did not fetch anything: the corrected call after it is not a repeat, even when the
        # wrong name is the canonical one (a renamed parameter sent under its old name).
        earlier = [i for i, s in enumerate(seen) if s[:2] == signature and s[2] not in REJECTED]
        seen.append((*signature, call.error_kind))
        if earlier:
            last = earlier[-1]
            if seen[last][2] in RETRYABLE and last not in retried and len(earlier) == 1:
                retried.add(last)
            else:
                extras += 1
                reasons.append(f"repeated call {call.tool} {facts.dump(call.args)}")
                continue
        if call.binding is None:
            extras += 1
            reasons.append(f"unknown tool {call.tool!r}")
            continue
        if call.error_kind in ("invalid_arguments", "blocked", "unknown_tool"):
            extras += 1
            reasons.append(f"{call.tool} failed ({call.error_kind})")
            continue
        matched = False
        for index, spec in enumerate(required):
            if spec.matches(call.binding, call.args, ctx.catalog):
                matched = True
                if index in satisfied and satisfied[index] == 1.0 and not earlier:
                    extras += 1
                    reasons.append(f"redundant call {call.tool} ({spec.purpose} already fetched)")
                elif call.ok or call.error_kind not in RETRYABLE or earlier:
                    satisfied[index] = 1.0
                else:
                    satisfied[index] = max(satisfied.get(index, 0.0), 0.5)
                break
        if matched:
            continue
        if any(spec.matches(call.binding, call.args, ctx.catalog) for spec in optional):
            continue
        extras += 1
        reasons.append(f"useless call {call.tool} {facts.dump(call.args)}")
    for index, spec in enumerate(required):
        got = satisfied.get(index, 0.0)
        if got == 0:
            reasons.append(f"missing call: {spec.purpose} ({spec.binding} {spec.gold_args()})")
        elif got < 1:
            reasons.append(f"{spec.purpose}: the timed-out call was not retried")
    coverage = sum(satisfied.values()) / len(required) if required else 1.0
    score = max(0.0, round(coverage - PENALTY * extras, 4))
    if not reasons:
        reasons.append("every needed call, nothing extra")
    return GraderResult(score=score, reasons=reasons)


def _waived(ctx: _Context, spec: CallSpec) -> bool:
    """A dependent call is not required when its prerequisite failed (or was itself waived)."""
    if spec.after is None:
        return False
    prerequisite = _prerequisite(ctx.plan, spec)
    if _waived(ctx, prerequisite):
        return True
    tries = ctx.attempts(prerequisite)
    return bool(tries) and not any(c.ok for c in tries)


def _prerequisite(plan: TaskPlan, spec: CallSpec) -> CallSpec:
    if spec.after == B_ROOM:
        return ROOM_SPEC
    return next((s for s in plan.required() if s.binding == spec.after), ROOM_SPEC)


# ----------------------------------------------------------------------------- skill selection


def skill_selection(ctx: _Context, trace: Trace) -> GraderResult:
    surface = ctx.surface
    reasons: list[str] = []
    loads = trace.steps_of(SkillLoadStep)
    loaded_roles: list[str | None] = []
    penalties = 0
    seen: set[str] = set()
    for step in loads:
        if not step.ok:
            penalties += 1
            reasons.append(f"failed to load skill {step.name!r}")
            continue
        if step.name in seen:
            penalties += 1
            reasons.append(f"loaded {step.name!r} again")
            continue
        seen.add(step.name)
        loaded_roles.append(surface.role_of(step.name))
    roles = {r for r in loaded_roles if r is not None}
    score = 1.0
    for plan in ctx.plan.intents:
        options = [r for r in plan.reply_roles if surface.skill(r) is not None]
        if options and not roles & set(options):
            names = " or ".join(str(surface.skill_name(r)) for r in options)
            reasons.append(f"{plan.kind.value}: no fitting reply skill loaded (wanted {names})")
            score = 0.0
    for role in ctx.plan.strategy_roles():
        if surface.skill(role) is not None and role not in roles:
            reasons.append(f"strategy skill {surface.skill_name(role)!r} not loaded")
            score = min(score, 0.5) if score > 0 else 0.0
    acceptable = ctx.plan.acceptable_roles()
    for name in sorted(seen):
        skill_role = surface.role_of(name)
        if skill_role is None or skill_role not in acceptable:
            penalties += 1
            reasons.append(f"irrelevant skill {name!r} loaded")
    if score > 0:
        score = max(0.0, score - PENALTY * penalties)
    if not reasons:
        reasons.append("the right skills, nothing extra")
    return GraderResult(score=score, reasons=reasons)
