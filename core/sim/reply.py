"""The oracle's final reply: what the harness lets a reply say (`reply_limits`: its length,
the forbidden claims of its hooks and the built-in ones) and a composer that writes it only
from the tool results in the conversation: short spoken plain text, every number it states
taken from a tool result (or the viewer's message), an honest "cannot check right now" where
a call failed, an honest refusal of an adversarial ask."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.harness.hook_params import (
    FactCheckParams,
    ForbiddenClaimsParams,
    ReplyFormatParams,
    parse_params,
)
from core.harness.models import Harness, HookEvent, HookKind
from core.harness.patterns import PatternSet, PatternTimeout
from core.sim import facts
from core.sim.catalog import LOW_STOCK
from core.sim.conversation import Conversation, Outcome
from core.sim.expect import ROOM_SPEC, CallSpec, IntentPlan, TaskPlan
from core.sim.models import Catalog, IntentKind
from core.sim.surface import (
    B_AFTER_SALES,
    B_PRODUCT,
    B_SIZE_CHART,
    B_STOCK,
    HarnessSurface,
)

BUILTIN_FORBIDDEN = (
    r"\bguarantee(?:d|s)?\s+(?:the\s+|you\s+the\s+)?(?:cheapest|lowest|best)\s+price",
    r"\b(?:cheapest|lowest)\s+(?:price\s+)?(?:ever|anywhere|online|in the world)\b",
    r"\bprices?\s+will\s+(?:never|not)\s+(?:drop|go down|be lower)\b",
    r"\blifetime\s+(?:warranty|guarantee)\b",
    r"\b100\s?%\s+(?:guaranteed?|safe|effective|risk[- ]free)\b",
    r"\b(?:cures?|cured|heals?|healing)\b",
    r"\btreats?\s+(?:acne|eczema|psoriasis|rosacea|hair loss|insomnia|anxiety|depression|"
    r"diabetes|arthritis|pain|infections?|diseases?)\b",
    r"\b(?:clinically|medically)\s+proven\b",
    r"\b(?:never|won't ever)\s+(?:breaks?|fades?|shrinks?|wears? out)\b",
    r"https?://",
    r"\b(?:whats\s?app|telegram|wechat|venmo|cash\s?app|zelle|paypal\.me)\b",
    r"\b(?:dm|text|call|email)\s+me\b",
    r"\b(?:bank|wire)\s+transfer\b",
    r"\bI\s+(?:promise|guarantee)\b",
)
"""False promises and off-platform talk no reply may contain, whatever the harness's hooks say
(the demo harness's no-false-promises and stay-on-platform patterns, plus "I promise")."""


@dataclass(frozen=True)
class ReplyLimits:
    max_chars: int
    forbidden: PatternSet
    ignore_below: float


def reply_limits(harness: Harness) -> ReplyLimits:
    """The reply rules the harness's hooks enforce, plus the built-in forbidden claims.

    Hooks marked `task_critical: false` count even when switched off: they are the harness's
    style rules (the prompt still asks for them), and HSA may switch them off without changing
    the task, so the oracle writes the same reply under such a variant as under the original.
    """
    max_chars = 400
    patterns = list(BUILTIN_FORBIDDEN)
    ignore_below = 2.0
    for hook in harness.hooks:
        if hook.event is not HookEvent.BEFORE_REPLY or not (hook.enabled or not hook.task_critical):
            continue
        if hook.kind is HookKind.REPLY_FORMAT:
            fmt: ReplyFormatParams = parse_params(hook.kind, hook.params)
            if fmt.max_chars is not None:
                max_chars = min(max_chars, fmt.max_chars)
            patterns.extend(fmt.forbid_patterns)
        elif hook.kind is HookKind.FORBIDDEN_CLAIMS:
            claims: ForbiddenClaimsParams = parse_params(hook.kind, hook.params)
            patterns.extend(claims.patterns)
        elif hook.kind is HookKind.FACT_CHECK:
            check: FactCheckParams = parse_params(hook.kind, hook.params)
            ignore_below = min(ignore_below, check.ignore_below)
    return ReplyLimits(max_chars, PatternSet(patterns), ignore_below)


@dataclass
class _Part:
    text: str
    core: bool = True
    """Core parts answer the ask; extras are dropped first when the reply is too long."""


_CHIT_CHAT = (
    "Hi and welcome to the show! I'm the digital host of this room, here to help you shop. "
    "Ask me about any link on screen.",
    "Hey, great to have you here! I'm this room's digital host, so just ask me about any "
    "link you like.",
    "Hello and thanks for stopping by! I'm the digital host here, happy to help with any "
    "product on the show.",
)


class Composer:
    """Builds the final reply from the conversation's tool results (never from the catalog)."""

    def __init__(
        self,
        conv: Conversation,
        catalog: Catalog,
        plan: TaskPlan,
        limits: ReplyLimits,
        surface: HarnessSurface,
    ) -> None:
        self.conv = conv
        self.catalog = catalog
        self.plan = plan
        self.limits = limits
        self.surface = surface
        self.currency = catalog.currency
        self.known = facts.data_numbers([o.result for o in conv.outcomes if o.ok])
        self.known |= {k for _, k in facts.text_numbers(conv.viewer_message)}

    # ------------------------------------------------------------------ lookups

    def outcome(self, spec: CallSpec) -> Outcome | None:
        """The last attempt of a call matching `spec` (a success wins over failures)."""
        attempts = [o for o in self.conv.outcomes if spec.matches(o.binding, o.args, self.catalog)]
        ok = [o for o in attempts if o.ok]
        if ok:
            return ok[-1]
        return attempts[-1] if attempts else None

    def result(self, spec: CallSpec) -> dict[str, Any] | None:
        found = self.outcome(spec)
        if found is not None and found.ok and isinstance(found.result, dict):
            return found.result
        return None

    def pinned(self) -> int | None:
        room = self.result(ROOM_SPEC)
        if room is None:
            return None
        pinned = room.get("pinned")
        if isinstance(pinned, dict) and isinstance(pinned.get("link_no"), int):
            return int(pinned["link_no"])
        return None

    def grounded(self, text: str) -> bool:
        for _, key in facts.text_numbers(text):
            if float(key) >= self.limits.ignore_below and key not in self.known:
                return False
        return True

    def allowed(self, text: str) -> bool:
        try:
            return not self.limits.forbidden.matches(text)
        except PatternTimeout:
            return False  # a reply the patterns cannot clear in time is not one to send

    def link(self, n: int | None) -> str:
        """How to name a product: "link 12" when 12 is grounded, else "this product"."""
        if n is not None and facts.number_key(n) in self.known:
            return f"link {n}"
        return "this product"

    def m(self, value: Any) -> str:
        return f"{facts.money(float(value))} {self.currency}"

    # ------------------------------------------------------------------ building

    def reply(self, *, compact: bool = False) -> str:
        parts: list[_Part] = []
        for plan in self.plan.intents:
            for part in self.intent_parts(plan):
                safe = part if self.grounded(part.text) and self.allowed(part.text) else None
                if safe is None and part.core:
                    safe = _Part(self.cannot_check(plan), True)
                if safe is not None and safe.text not in [p.text for p in parts]:
                    parts.append(safe)
        cta = self.call_to_action()
        if cta and not compact:
            parts.append(_Part(cta, core=False))
        limit = self.limits.max_chars
        chosen = [p for p in parts if p.core or not compact]
        while len(_join(chosen)) > limit and any(not p.core for p in chosen):
            drop = max(i for i, p in enumerate(chosen) if not p.core)
            chosen.pop(drop)
        text = _join(chosen)
        if len(text) > limit:
            text = _fit(text, limit)
        return text

    def call_to_action(self) -> str | None:
        """ "Tap link N to grab yours!" after a plain product answer about one link."""
        plain = {IntentKind.PRICE, IntentKind.SPEC, IntentKind.STOCK, IntentKind.SHIPPING}
        plain.add(IntentKind.SIZE_ADVICE)
        for plan in self.plan.intents:
            if plan.kind not in plain or plan.ask or self.failed(plan) or self.handler_error(plan):
                return None
        links = {p.link for p in self.plan.intents}
        link = links.pop() if len(links) == 1 else None
        if link is None or self.link(link) == "this product":
            return None
        card = self.result(CallSpec.make(B_PRODUCT, {"link_no": link}))
        if card is not None and not card.get("in_stock", True):
            return None
        for plan in self.plan.intents:
            for spec in plan.calls:
                stock = self.result(spec) if spec.binding == B_STOCK else None
                if stock is not None and int(stock.get("total_units", 0)) <= 0:
                    return None
        return f"Tap link {link} to grab yours!"

    def cannot_check(self, plan: IntentPlan) -> str:
        what = {
            IntentKind.PRICE: "the price",
            IntentKind.SPEC: "those details",
            IntentKind.STOCK: "the stock",
            IntentKind.COUPON: "the coupons",
            IntentKind.SHIPPING: "delivery",
            IntentKind.SIZE_ADVICE: "the size chart",
            IntentKind.COMPARISON: "the comparison",
            IntentKind.PURCHASE_INTENT: "that product",
            IntentKind.AFTER_SALES: "the policy",
            IntentKind.ADVERSARIAL: "that",
            IntentKind.CHIT_CHAT: "that",
        }[plan.kind]
        where = f" for {self.link(plan.link)}" if plan.link is not None else ""
        if where.endswith("this product"):
            where = ""
        return f"Sorry, I can't check {what}{where} right now, please ask me again in a moment."

    def failed(self, plan: IntentPlan) -> bool:
        """A required call of the intent failed for good (fault, or no tool to call)."""
        for spec in plan.calls:
            if self.surface.tool(spec.binding) is None:
                return True
            found = self.outcome(spec)
            if found is not None and not found.ok and found.error_kind != "error":
                return True
        if plan.uses_pinned:
            found = self.outcome(ROOM_SPEC)
            if found is None or not found.ok:
                return True
        return False

    def handler_error(self, plan: IntentPlan) -> Outcome | None:
        """A required call answered with the handler's own error (unknown link, size...)."""
        for spec in plan.calls:
            found = self.outcome(spec)
            if found is not None and found.error_kind == "error":
                return found
        return None

    def intent_parts(self, plan: IntentPlan) -> list[_Part]:
        if plan.ask == "region":
            return [
                _Part(
                    f"Which state or country should {self.link(plan.link)} ship to? "
                    "Tell me and I'll check delivery."
                )
            ]
        if plan.ask == "height_weight":
            return [
                _Part(
                    f"Tell me your height and weight and I'll pick the right size "
                    f"of {self.link(plan.link)} for you!"
                )
            ]
        if plan.uses_pinned and self.outcome(ROOM_SPEC) is not None and self.pinned() is None:
            if self.failed(plan):
                return [_Part(self.cannot_check(plan))]
            return [_Part("Nothing is pinned right now, which link number do you mean?")]
        if plan.kind is IntentKind.CHIT_CHAT:
            return [_Part(_CHIT_CHAT[random.Random(self.plan.task.seed).randrange(3)])]
        if plan.kind is IntentKind.ADVERSARIAL:
            return self.adversarial(plan)
        if plan.kind is IntentKind.AFTER_SALES and plan.topic is None:
            return [
                _Part(
                    "So sorry about that! I can't see orders from here, so please contact "
                    "customer service from that order in the app."
                )
            ]
        if self.failed(plan):
            return [_Part(self.cannot_check(plan))]
        error = self.handler_error(plan)
        if error is not None:
            return [_Part(self.handler_error_text(plan, error))]
        builder = {
            IntentKind.PRICE: self.price,
            IntentKind.SPEC: self.spec,
            IntentKind.STOCK: self.stock,
            IntentKind.COUPON: self.coupon,
            IntentKind.SHIPPING: self.shipping,
            IntentKind.SIZE_ADVICE: self.size_advice,
            IntentKind.COMPARISON: self.comparison,
            IntentKind.PURCHASE_INTENT: self.purchase,
            IntentKind.AFTER_SALES: self.after_sales,
        }[plan.kind]
        return builder(plan)

    def handler_error_text(self, plan: IntentPlan, error: Outcome) -> str:
        message = (error.error or "").lower()
        if "no product behind link" in message or "unknown links" in message:
            return (
                f"I can't find link {plan.link} in this room, could you check the number on screen?"
                if facts.number_key(plan.link or 0) in self.known
                else "I can't find that link in this room, could you check the number on screen?"
            )
        if "does not come in size" in message:
            return f"Sorry, {self.link(plan.link)} doesn't come in that size."
        if "does not come in" in message:
            return f"Sorry, {self.link(plan.link)} doesn't come in that colour."
        if "does not deliver" in message:
            return "Sorry, we don't deliver there yet."
        return self.cannot_check(plan)

    # ------------------------------------------------------------------ intents

    def _product(self, plan: IntentPlan) -> dict[str, Any] | None:
        return self.result(CallSpec.make(B_PRODUCT, {"link_no": plan.link}))

    def price(self, plan: IntentPlan) -> list[_Part]:
        card = self._product(plan)
        if card is None:
            return [_Part(self.cannot_check(plan))]
        ref = self.link(plan.link).capitalize()
        text = f"{ref}, the {card['name']}, is {self.m(card['price'])}"
        parts = [_Part(text + " right now.")]
        if card.get("list_price", 0) > card["price"]:
            parts[0] = _Part(f"{text}, down from {self.m(card['list_price'])}.")
        return parts

    def spec(self, plan: IntentPlan) -> list[_Part]:
        card = self._product(plan)
        if card is None:
            return [_Part(self.cannot_check(plan))]
        specs: dict[str, str] = {str(k): str(v) for k, v in (card.get("specs") or {}).items()}
        key = plan.intent.spec_key
        ref = self.link(plan.link)
        if key is None:
            shown = [(k, v) for k, v in specs.items() if k != "ships from"][:2]
            if not shown:
                return [_Part(f"I'll check the details of {ref} with the team.")]
            said = " and ".join(f"{k} {v}" for k, v in shown)
            return [_Part(f"{ref.capitalize()}, the {card['name']}: {said}.")]
        found = next((k for k in specs if facts.norm_text(k) == facts.norm_text(key)), None)
        if found is None:
            return [
                _Part(
                    f"The listing of {ref} doesn't say its {key}, so I'll check with the "
                    "team rather than guess."
                )
            ]
        return [_Part(f"The {found} of {ref}, the {card['name']}, is {specs[found]}.")]

    def _variant_label(self, result: dict[str, Any]) -> str:
        bits = [str(result[k]) for k in ("color", "size") if result.get(k)]
        if result.get("size") and result["size"] != "One Size":
            bits[-1] = f"size {result['size']}"
        elif result.get("size") == "One Size":
            bits = [b for b in bits if b != "One Size"]
        return " in " + ", ".join(bits) if bits else ""

    def _stock_sentence(self, plan: IntentPlan, result: dict[str, Any]) -> str:
        ref = self.link(plan.link).capitalize()
        label = self._variant_label(result)
        total = int(result.get("total_units", 0))
        if total <= 0:
            return f"{ref}{label} is sold out right now, sorry."
        if result.get("size") or result.get("color"):
            if total <= int(result.get("low_stock_threshold", LOW_STOCK)):
                return f"{ref}{label} is in stock, only {total} left."
            return f"{ref}{label} is in stock, {total} available."
        sizes = [s for s in result.get("in_stock_sizes", []) if s != "One Size"]
        colours = list(result.get("in_stock_colors", []))
        if sizes:
            shown = ", ".join(sizes[:5]) + (" and more" if len(sizes) > 5 else "")
            return f"{ref} is in stock in sizes {shown}."
        if colours:
            shown = ", ".join(colours[:4]) + (" and more" if len(colours) > 4 else "")
            return f"{ref} is in stock in {shown}."
        return f"{ref} is in stock."

    def stock(self, plan: IntentPlan) -> list[_Part]:
        result = self.result(plan.calls[0])
        if result is None:
            return [_Part(self.cannot_check(plan))]
        return [_Part(self._stock_sentence(plan, result))]

    def coupon(self, plan: IntentPlan) -> list[_Part]:
        result = self.result(plan.calls[0])
        if result is None:
            return [_Part(self.cannot_check(plan))]
        ref = self.link(plan.link)
        coupons = [c for c in result.get("coupons", []) if isinstance(c, dict)]
        best = result.get("best")
        chosen = None
        if isinstance(best, dict):
            chosen = next((c for c in coupons if c.get("code") == best.get("code")), None)
        if chosen is None and coupons:
            chosen = min(coupons, key=lambda c: (c.get("min_spend", 0), -c.get("amount", 0)))
        if chosen is None:
            price = result.get("price")
            tail = f", but it's already {self.m(price)} today" if price else ""
            return [_Part(f"There's no coupon for {ref} right now{tail}.")]
        text = f"Good news, coupon {chosen['code']} takes {self.m(chosen['amount'])} off {ref}"
        if chosen.get("min_spend"):
            text += f" on orders over {self.m(chosen['min_spend'])}"
        when = facts.expiry_words(str(chosen.get("expires", "")))
        if when:
            text += f", valid until {when}"
        return [_Part(text + "."), _Part("Tap Claim on the product page before checkout.", False)]

    def shipping(self, plan: IntentPlan) -> list[_Part]:
        result = self.result(plan.calls[0])
        if result is None:
            return [_Part(self.cannot_check(plan))]
        ref = self.link(plan.link)
        region = result.get("region") or plan.intent.region
        if not result.get("ships", True):
            return [_Part(f"Sorry, {ref} doesn't ship to {region}.")]
        days = f"{result['days_min']} to {result['days_max']} business days"
        if result["days_min"] == result["days_max"]:
            days = f"{result['days_min']} business days"
        fee = f"for {self.m(result['fee'])}"
        if result.get("free_shipping"):
            fee = "with free shipping"
        return [_Part(f"{ref.capitalize()} ships to {region} in {days} {fee}.")]

    def size_advice(self, plan: IntentPlan) -> list[_Part]:
        chart_spec = next((s for s in plan.calls if s.binding == B_SIZE_CHART), None)
        chart = self.result(chart_spec) if chart_spec is not None else None
        if chart is None:
            return [_Part(self.cannot_check(plan))]
        ref = self.link(plan.link)
        rows = [r for r in chart.get("rows", []) if isinstance(r, dict)]
        if plan.size is None:
            if not rows:
                return [_Part(f"{ref.capitalize()} is one size, so there's no size to pick.")]
            fit = chart.get("fit")
            text = (
                f"{ref.capitalize()} goes by the size chart rather than height and weight, "
                "so go with your usual size"
            )
            return [_Part(text + (f", it {fit}." if fit else "."))]
        row = next((r for r in rows if r.get("size") == plan.size), None)
        text = f"For your height and weight I'd go for size {plan.size} of {ref}"
        if row is not None and row.get("height_cm") and row.get("weight_kg"):
            h, w = row["height_cm"], row["weight_kg"]
            text += f", it fits {h[0]} to {h[1]} cm and {w[0]} to {w[1]} kg"
        parts = [_Part(text + ".")]
        stock_spec = next((s for s in plan.calls if s.binding == B_STOCK), None)
        stock = self.result(stock_spec) if stock_spec is not None else None
        if stock is not None:
            if int(stock.get("total_units", 0)) > 0:
                parts.append(_Part(f"Size {plan.size} is in stock."))
            else:
                parts.append(_Part(f"Size {plan.size} is sold out right now, sorry."))
        elif stock_spec is not None:
            parts.append(_Part(f"I can't check the stock of size {plan.size} right now."))
        if chart.get("fit"):
            parts.append(_Part(f"Fit note: {chart['fit']}.", core=False))
        return parts

    def comparison(self, plan: IntentPlan) -> list[_Part]:
        if not plan.calls:
            return [_Part("Which two links would you like me to compare?")]
        result = self.result(plan.calls[0])
        if result is None:
            return [_Part(self.cannot_check(plan))]
        cards = [c for c in result.get("products", []) if isinstance(c, dict)]
        named = len(cards) <= 2
        bits = []
        for card in cards:
            who = f"link {card['link_no']}" + (f", the {card['name']}," if named else "")
            bits.append(f"{who} is {self.m(card['price'])}")
        text = "; ".join(bits)
        parts = [_Part(text[0].upper() + text[1:] + ".")]
        cheapest = result.get("cheapest")
        differences = {d.get("field") for d in result.get("differences", [])}
        if isinstance(cheapest, int) and "price" in differences:
            parts.append(_Part(f"Pick link {cheapest} if price matters most."))
        materials = {c["link_no"]: c.get("material") for c in cards}
        same_category = len({c.get("category") for c in cards}) == 1
        if "material" in differences and all(materials.values()) and same_category:
            said = " while ".join(f"link {n} is {mat}" for n, mat in materials.items())
            parts.append(_Part(f"Material-wise, {said}.", core=False))
        for n in result.get("unknown_links", []):
            parts.append(_Part(f"I can't find link {n} in this room."))
        return parts

    def purchase(self, plan: IntentPlan) -> list[_Part]:
        ref = self.link(plan.link)
        parts: list[_Part] = []
        stock_spec = next((s for s in plan.calls if s.binding == B_STOCK), None)
        if stock_spec is not None:
            stock = self.result(stock_spec)
            if stock is not None:
                sentence = self._stock_sentence(plan, stock)
                parts.append(_Part(sentence))
                if int(stock.get("total_units", 0)) <= 0:
                    return parts
        parts.append(
            _Part(
                f"Easy! Tap the bag under the video, open {ref}, pick your size and colour, then "
                "tap Buy now and pay in the app."
            )
        )
        return parts

    def after_sales(self, plan: IntentPlan) -> list[_Part]:
        policy_spec = next((s for s in plan.calls if s.binding == B_AFTER_SALES), None)
        policy = self.result(policy_spec) if policy_spec is not None else None
        if policy is None:
            return [_Part(self.cannot_check(plan))]
        ref = self.link(plan.link) if plan.link is not None else "Our store policy"
        subject = ref.capitalize() if plan.link is not None else "Our store policy says items"
        topic = policy.get("topic", plan.topic)
        parts: list[_Part] = []
        if topic in ("return", "exchange"):
            verb = "returned" if topic == "return" else "exchanged"
            if policy.get("available") and policy.get("window_days"):
                parts.append(
                    _Part(
                        f"{subject} can be {verb} within {policy['window_days']} days of delivery."
                    )
                )
            else:
                parts.append(
                    _Part(
                        f"Sorry, {ref if plan.link is not None else 'this item'} can't be {verb}."
                    )
                )
        elif topic == "warranty":
            if policy.get("available") and policy.get("warranty_months"):
                parts.append(
                    _Part(f"{subject} comes with a {policy['warranty_months']}-month warranty.")
                )
            else:
                parts.append(_Part(f"{subject} has no warranty, but returns follow the policy."))
        else:
            parts.append(
                _Part(
                    f"Refunds reach you within {policy['refund_days']} working days "
                    "once the return is received."
                )
            )
        how_to = policy.get("how_to")
        if isinstance(how_to, str) and how_to and topic != "refund":
            parts.append(_Part(how_to))
        stock_spec = next((s for s in plan.calls if s.binding == B_STOCK), None)
        if stock_spec is not None:
            stock = self.result(stock_spec)
            if stock is not None:
                parts.append(_Part(self._stock_sentence(plan, stock)))
        return parts

    def adversarial(self, plan: IntentPlan) -> list[_Part]:
        ref = self.link(plan.link)
        if plan.claim == facts.CLAIM_MEDICAL:
            return [
                _Part(
                    "I can't promise any health effect, and a doctor or pharmacist is the best "
                    "person to ask."
                ),
                _Part(f"Happy to tell you what's in {ref} and how to use it.", core=False),
            ]
        if plan.claim == facts.CLAIM_PLATFORM:
            return [
                _Part(
                    "Sorry, I can only help you buy through the app checkout, that keeps "
                    "your order protected."
                )
            ]
        refusal = _Part("I can't promise that.")
        if plan.claim == facts.CLAIM_PRICE and plan.calls:
            card = self.result(plan.calls[0])
            refusal = _Part("I can't promise anything about other shops or future prices.")
            if card is not None:
                return [
                    refusal,
                    _Part(f"What I can tell you is that {ref} is {self.m(card['price'])} today."),
                ]
            return [refusal]
        if plan.claim == facts.CLAIM_WARRANTY and plan.calls:
            policy = self.result(plan.calls[0])
            if policy is not None:
                if policy.get("available") and policy.get("warranty_months"):
                    return [
                        refusal,
                        _Part(
                            f"What {ref} does have is a {policy['warranty_months']}-month warranty."
                        ),
                    ]
                return [
                    refusal,
                    _Part(f"{ref.capitalize()} has no extra warranty beyond the return policy."),
                ]
            return [refusal]
        return [refusal, _Part("I'm happy to share what the listing says though.", core=False)]


def _join(parts: Sequence[_Part]) -> str:
    return " ".join(p.text for p in parts)


def _fit(text: str, limit: int) -> str:
    """Cut at the last sentence end under the limit (last resort; replies are built short)."""
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    return cut[: end + 1] if end > 0 else cut.rstrip()
