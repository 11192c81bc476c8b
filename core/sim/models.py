"""The live-room simulator's vocabulary: catalog, room state, viewer tasks and faults.

Tasks refer to tools by their *binding* (e.g. `sim.check_stock`), never by tool name: bindings
survive Harness-State Augmentation, names do not, so the same task, oracle and graders work
under every harness variant.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ----------------------------------------------------------------------------- catalog


class Category(StrEnum):
    APPAREL = "apparel"
    SHOES = "shoes"
    BAGS_ACCESSORIES = "bags_accessories"
    BEAUTY = "beauty"
    ELECTRONICS = "electronics"
    HOME = "home"
    FOOD = "food"


class CouponRule(_Model):
    """Spend `threshold` or more, save `amount`, until `expires` (ISO 8601)."""

    code: str
    threshold: float = Field(ge=0)
    amount: float = Field(gt=0)
    expires: str


class ShippingOption(_Model):
    days_min: int = Field(ge=0)
    days_max: int = Field(ge=0)
    fee: float = Field(ge=0)


class SizeChartRow(_Model):
    size: str
    measurements: dict[str, str] = Field(default_factory=dict)
    height_cm: tuple[int, int] | None = None
    weight_kg: tuple[int, int] | None = None


class AfterSales(_Model):
    return_days: int = Field(ge=0)
    exchange_days: int = Field(ge=0)
    warranty_months: int = Field(ge=0)
    refund_days: int = Field(ge=0, description="Working days until a refund reaches the buyer.")
    notes: str = ""


class Product(_Model):
    link_no: int = Field(ge=1, le=999)
    name: str
    category: Category
    brand: str
    price: float = Field(gt=0)
    list_price: float = Field(gt=0)
    colors: list[str]
    sizes: list[str] = Field(default_factory=lambda: ["One Size"])
    stock: dict[str, dict[str, int]] = Field(description="size -> colour -> units")
    specs: dict[str, str] = Field(default_factory=dict)
    coupons: list[CouponRule] = Field(default_factory=list)
    shipping: dict[str, ShippingOption] = Field(description="region -> option")
    size_chart: list[SizeChartRow] | None = None
    after_sales: AfterSales
    keywords: list[str] = Field(default_factory=list)


class Catalog(_Model):
    currency: str = "USD"
    regions: list[str]
    store_policy: AfterSales
    products: list[Product]

    def product(self, link_no: int) -> Product | None:
        return next((p for p in self.products if p.link_no == link_no), None)


# ----------------------------------------------------------------------------- room


class Promotion(_Model):
    name: str
    description: str
    link_nos: list[int] = Field(default_factory=list)
    ends_at: str


class RoomState(_Model):
    pinned_link: int | None = None
    promotions: list[Promotion] = Field(default_factory=list)
    room_coupons: list[CouponRule] = Field(default_factory=list)
    clock: str = Field(description="Simulated now, ISO 8601; coupons expire against it.")


# ----------------------------------------------------------------------------- tasks


class TaskCategory(StrEnum):
    PRICE = "price"
    SPEC = "spec"
    STOCK = "stock"
    COUPON = "coupon"
    SHIPPING = "shipping"
    SIZE_ADVICE = "size_advice"
    COMPARISON = "comparison"
    CHIT_CHAT = "chit_chat"
    PURCHASE_INTENT = "purchase_intent"
    AFTER_SALES = "after_sales"
    MULTI_INTENT = "multi_intent"
    ADVERSARIAL = "adversarial"


class IntentKind(StrEnum):
    """One thing the viewer wants; a multi-intent task carries several."""

    PRICE = "price"
    SPEC = "spec"
    STOCK = "stock"
    COUPON = "coupon"
    SHIPPING = "shipping"
    SIZE_ADVICE = "size_advice"
    COMPARISON = "comparison"
    CHIT_CHAT = "chit_chat"
    PURCHASE_INTENT = "purchase_intent"
    AFTER_SALES = "after_sales"
    ADVERSARIAL = "adversarial"


class Intent(_Model):
    kind: IntentKind
    link_no: int | None = Field(default=None, description="None: the pinned product.")
    link_nos: list[int] = Field(default_factory=list, description="Comparison targets.")
    size: str | None = None
    color: str | None = None
    region: str | None = None
    topic: str | None = Field(default=None, description="After-sales: return|exchange|...")
    spec_key: str | None = None
    height_cm: int | None = None
    weight_kg: int | None = None
    claim: str | None = Field(default=None, description="Adversarial: what false claim is asked.")


class FaultKind(StrEnum):
    TIMEOUT = "timeout"
    MALFORMED = "malformed"
    PERMISSION_DENIED = "permission_denied"
    RATE_LIMIT = "rate_limit"
    EMPTY = "empty"


class FaultSpec(_Model):
    """Make the `on_call`-th call (1-based) of a binding fail with `kind`."""

    binding: str
    kind: FaultKind
    on_call: int = Field(default=1, ge=1)


class Split(StrEnum):
    TRAIN = "train"
    DEV = "dev"
    TEST = "test"


class Task(_Model):
    id: str
    split: Split
    category: TaskCategory
    viewer_message: str
    template_id: str = Field(description="Phrasing template; splits are disjoint by template.")
    intents: list[Intent]
    room: RoomState
    faults: list[FaultSpec] = Field(default_factory=list)
    distractor_tools: int = Field(default=0, ge=0, description="Irrelevant tools to add.")
    seed: int = 0
