"""Tool handlers of the live-room simulator: one per demo-harness tool, bound as `sim.<tool>`.

A handler is a pure function `(catalog, room_state, args) -> dict` with a fixed, documented JSON
result shape (each docstring below is the contract the oracle and graders rely on). Handlers
never mutate the catalog or the room. They raise `ToolError` for what the model should see as a
failed call:

- kind `error`: a link number with no product behind it, a size or colour the product does not
  come in, a region the shop does not ship to at all, bad argument types;
- kind `empty`: never raised by a handler for a well-formed call (an unmatched search returns
  `count: 0`); `empty` is reserved for fault injection (core/sim/faults.py).

Money is a float in the catalog currency rounded to cents; times are ISO 8601 strings; the room
clock (`RoomState.clock`) decides which coupons and promotions are valid. Results list things in
a deterministic order (catalog order, link number, then name).

`HANDLERS` maps binding name -> handler; `LiveRoom` (room.py) wraps them with fault injection
and a call log.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from core.runtime.bindings import ToolError, ToolErrorKind
from core.sim.catalog import (
    LOW_STOCK,
    coupon_valid,
    has_sizes,
    parse_time,
    stock_status,
    total_units,
)
from core.sim.models import Catalog, CouponRule, Product, RoomState

Handler = Callable[[Catalog, RoomState, dict[str, Any]], dict[str, Any]]

COUPON_POLICY = "One coupon per order; tap Claim on the product page before checkout."
HOW_TO = {
    "return": "Open Orders in the app, pick the order and tap Return/Refund.",
    "exchange": "Open Orders in the app, pick the order and tap Exchange.",
    "warranty": "Open Orders in the app, pick the order and tap Warranty claim; add a photo or "
    "video of the defect.",
    "refund": "Refunds start once the return is received and go back to the original payment "
    "method.",
}
CARRIERS = {
    "Alaska": "USPS Priority Mail",
    "Hawaii": "USPS Priority Mail",
    "Canada": "UPS Standard (duties prepaid)",
}
DEFAULT_CARRIER = "UPS Ground"
REGION_ALIASES = {
    "ca": "California", "cali": "California", "la": "California", "los angeles": "California",
    "san francisco": "California", "sf": "California", "socal": "California",
    "tx": "Texas", "houston": "Texas", "dallas": "Texas", "austin": "Texas",
    "ny": "New York", "nyc": "New York", "new york city": "New York", "brooklyn": "New York",
    "fl": "Florida", "miami": "Florida", "orlando": "Florida",
    "il": "Illinois", "chicago": "Illinois",
    "wa": "Washington", "seattle": "Washington", "washington state": "Washington",
    "ak": "Alaska", "anchorage": "Alaska",
    "hi": "Hawaii", "honolulu": "Hawaii",
    "can": "Canada", "toronto": "Canada", "vancouver": "Canada", "montreal": "Canada",
    "ontario": "Canada", "bc": "Canada", "british columbia": "Canada", "quebec": "Canada",
}  # fmt: skip
MATERIAL_KEYS = ("material", "upper", "coating", "case", "lens", "key ingredients", "ingredients")
SKIP_SPEC_KEYS = frozenset({"ships from"})


# ----------------------------------------------------------------------------- arguments


def _int_arg(args: dict[str, Any], name: str, *, required: bool = True) -> int | None:
    value = args.get(name)
    if value is None:
        if required:
            raise ToolError(ToolErrorKind.ERROR, f"missing required argument {name!r}")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("#").isdigit():
            return int(value.strip().lstrip("#"))
        raise ToolError(ToolErrorKind.ERROR, f"{name} must be an integer, got {value!r}")
    return value


def _str_arg(args: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ToolError(ToolErrorKind.ERROR, f"missing required argument {name!r}")
        return None
    if not isinstance(value, str):
        raise ToolError(ToolErrorKind.ERROR, f"{name} must be a string, got {value!r}")
    return value.strip()


def product_or_error(catalog: Catalog, link_no: int) -> Product:
    """The product behind `link_no`, or ToolError(error) saying the link does not exist."""
    product = catalog.product(link_no)
    if product is None:
        raise ToolError(
            ToolErrorKind.ERROR,
            f"no product behind link {link_no} in this room; check the link number on screen",
        )
    return product


def match_size(product: Product, size: str) -> str:
    """The product's size label for what the caller wrote ('m' -> 'M', 'EU 42' -> '42')."""
    wanted = _norm(size)
    wanted = re.sub(r"^(size|sz|eu|us)\s*", "", wanted)
    for label in product.sizes:
        if _norm(label) == wanted or _norm(label).replace(" ", "") == wanted.replace(" ", ""):
            return label
    offered = ", ".join(product.sizes)
    raise ToolError(
        ToolErrorKind.ERROR,
        f"link {product.link_no} does not come in size {size!r}; sizes: {offered}",
    )


def match_color(product: Product, color: str) -> str:
    """The product's colour label for what the caller wrote (case-insensitive; a unique
    substring also matches: 'grey' -> 'heather grey')."""
    wanted = _norm(color)
    for label in product.colors:
        if _norm(label) == wanted:
            return label
    partial = [label for label in product.colors if wanted in _norm(label)]
    if len(partial) == 1:
        return partial[0]
    offered = ", ".join(product.colors)
    raise ToolError(
        ToolErrorKind.ERROR,
        f"link {product.link_no} does not come in {color!r}; colours: {offered}",
    )


def match_region(catalog: Catalog, region: str) -> str:
    """Canonical region for a state, province, city or abbreviation; ToolError if unserved."""
    wanted = _norm(region)
    for name in catalog.regions:
        if _norm(name) == wanted:
            return name
    alias = REGION_ALIASES.get(wanted)
    if alias is not None and alias in catalog.regions:
        return alias
    regions = ", ".join(catalog.regions)
    raise ToolError(
        ToolErrorKind.ERROR,
        f"the shop does not deliver to {region!r}; it ships to: {regions}",
    )


def canonical_region(catalog: Catalog, text: str) -> str | None:
    """The catalog region a viewer's words mean ('NYC' -> 'New York'), None if unserved.

    The same resolution `get_shipping_info` applies; graders can use it to accept any spelling
    of the right region as a tool argument.
    """
    try:
        return match_region(catalog, text)
    except ToolError:
        return None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().casefold())


# ----------------------------------------------------------------------------- summaries


def money(value: float) -> float:
    return round(value + 0.0, 2)


def discount_pct(product: Product) -> int:
    if product.list_price <= product.price:
        return 0
    return round((1 - product.price / product.list_price) * 100)


def coupon_entry(coupon: CouponRule, price: float | None, scope: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "code": coupon.code,
        "amount": money(coupon.amount),
        "min_spend": money(coupon.threshold),
        "expires": coupon.expires,
        "scope": scope,
    }
    if price is not None:
        entry["meets_min_spend"] = price >= coupon.threshold
    return entry


def best_coupon(coupons: list[CouponRule], price: float, clock: str) -> CouponRule | None:
    """The biggest valid saving whose minimum spend one unit at `price` meets; ties: the
    earlier expiry, then the code."""
    usable = [c for c in coupons if coupon_valid(c, clock) and price >= c.threshold]
    if not usable:
        return None
    return sorted(usable, key=lambda c: (-c.amount, parse_time(c.expires), c.code))[0]


def material(product: Product) -> str | None:
    return next((product.specs[k] for k in MATERIAL_KEYS if k in product.specs), None)


def variant_list(product: Product, size: str | None, color: str | None) -> list[dict[str, Any]]:
    out = []
    for s in product.sizes:
        if size is not None and s != size:
            continue
        for c in product.colors:
            if color is not None and c != color:
                continue
            units = product.stock[s][c]
            out.append({"size": s, "color": c, "units": units, "status": stock_status(units)})
    return out


# ----------------------------------------------------------------------------- handlers


def get_product_by_link(catalog: Catalog, room: RoomState, args: dict[str, Any]) -> dict[str, Any]:
    """`sim.get_product_by_link` {link_no} -> the product card.

    Result:
        {"link_no": int, "name": str, "brand": str, "category": str,
         "price": float, "list_price": float, "discount_pct": int (0 when price == list price),
         "currency": str, "colors": [str], "sizes": [str] (["One Size"] when unsized),
         "in_stock": bool (any variant has units), "total_units": int,
         "specs": {str: str} (material, fit, battery life, ingredients, ... as listed),
         "pinned": bool (it is the room's pinned product)}
    Errors: unknown link -> ToolError(error).
    """
    link_no = _int_arg(args, "link_no")
    assert link_no is not None
    p = product_or_error(catalog, link_no)
    units = total_units(p)
    return {
        "link_no": p.link_no,
        "name": p.name,
        "brand": p.brand,
        "category": p.category.value,
        "price": money(p.price),
        "list_price": money(p.list_price),
        "discount_pct": discount_pct(p),
        "currency": catalog.currency,
        "colors": list(p.colors),
        "sizes": list(p.sizes),
        "in_stock": units > 0,
        "total_units": units,
        "specs": dict(p.specs),
        "pinned": room.pinned_link == p.link_no,
    }


def search_products(catalog: Catalog, room: RoomState, args: dict[str, Any]) -> dict[str, Any]:
    """`sim.search_products` {query, category?, max_price?, limit=5} -> ranked matches.

    Matching: the query is split into words (lowercase, punctuation dropped, a trailing plural
    's' ignored); a product matches when at least one word occurs in its name, keywords, brand,
    category or colours. Score: name word 3, keyword word 2, brand/category/colour word 1,
    plus 2 when the whole query occurs in the name or equals a keyword. When any product matches
    on its name or keywords, products matching only on brand/category/colour are dropped.
    Ranking: score descending, then price ascending, then link number. `category` and
    `max_price` filter before ranking.

    Result:
        {"query": str, "category": str | null, "max_price": float | null,
         "count": int (all matches, before `limit`), "currency": str,
         "results": [{"link_no": int, "name": str, "brand": str, "category": str,
                      "price": float, "in_stock": bool}]  (at most `limit`)}
    No match is not an error: `count` 0 and `results` [].
    """
    query = _str_arg(args, "query")
    assert query is not None
    category = _str_arg(args, "category", required=False)
    max_price = args.get("max_price")
    if max_price is not None and (
        isinstance(max_price, bool) or not isinstance(max_price, int | float)
    ):
        raise ToolError(ToolErrorKind.ERROR, f"max_price must be a number, got {max_price!r}")
    limit = _int_arg(args, "limit", required=False) or 5
    limit = max(1, min(limit, 10))
    words = _words(query)
    phrase = " ".join(words)
    scored: list[tuple[int, float, int, Product, bool]] = []
    for p in catalog.products:
        if category is not None and p.category.value != category.casefold():
            continue
        if max_price is not None and p.price > float(max_price):
            continue
        name_words = set(_words(p.name))
        keyword_words = {w for k in p.keywords for w in _words(k)}
        other_words = set(_words(p.brand)) | set(_words(p.category.value.replace("_", " ")))
        other_words |= {w for c in p.colors for w in _words(c)}
        score = 0
        strong = False
        for w in words:
            if w in name_words:
                score += 3
                strong = True
            elif w in keyword_words:
                score += 2
                strong = True
            elif w in other_words:
                score += 1
        if score == 0:
            continue
        if phrase and (
            phrase in " ".join(_words(p.name))
            or any(phrase == " ".join(_words(k)) for k in p.keywords)
        ):
            score += 2
        scored.append((-score, p.price, p.link_no, p, strong))
    if any(t[4] for t in scored):  # a name/keyword hit beats colour/brand-only matches
        scored = [t for t in scored if t[4]]
    scored.sort(key=lambda t: (t[0], t[1], t[2]))
    return {
        "query": query,
        "category": category,
        "max_price": None if max_price is None else money(float(max_price)),
        "count": len(scored),
        "currency": catalog.currency,
        "results": [
            {
                "link_no": p.link_no,
                "name": p.name,
                "brand": p.brand,
                "category": p.category.value,
                "price": money(p.price),
                "in_stock": total_units(p) > 0,
            }
            for _, _, _, p, _ in scored[:limit]
        ],
    }


def _words(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9]+", text.casefold().replace("-", " "))
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def check_stock(catalog: Catalog, room: RoomState, args: dict[str, Any]) -> dict[str, Any]:
    """`sim.check_stock` {link_no, size?, color?} -> units per size x colour.

    Result:
        {"link_no": int, "name": str,
         "size": str | null, "color": str | null   (the product's labels for what was asked),
         "variants": [{"size": str, "color": str, "units": int,
                       "status": "in_stock" | "low_stock" | "sold_out"}]
                     (sizes then colours in catalog order, filtered by size/color),
         "total_units": int (over the listed variants),
         "in_stock": bool (any listed variant has units),
         "in_stock_sizes": [str], "in_stock_colors": [str] (among the listed variants),
         "low_stock_threshold": int (units at or below this are low_stock)}
    Errors: unknown link, or a size/colour the product does not come in -> ToolError(error).
    """
    link_no = _int_arg(args, "link_no")
    assert link_no is not None
    p = product_or_error(catalog, link_no)
    size_arg = _str_arg(args, "size", required=False)
    color_arg = _str_arg(args, "color", required=False)
    size = match_size(p, size_arg) if size_arg is not None else None
    color = match_color(p, color_arg) if color_arg is not None else None
    variants = variant_list(p, size, color)
    units = sum(v["units"] for v in variants)
    stocked = [v for v in variants if v["units"] > 0]
    return {
        "link_no": p.link_no,
        "name": p.name,
        "size": size,
        "color": color,
        "variants": variants,
        "total_units": units,
        "in_stock": units > 0,
        "in_stock_sizes": [s for s in p.sizes if any(v["size"] == s for v in stocked)],
        "in_stock_colors": [c for c in p.colors if any(v["color"] == c for v in stocked)],
        "low_stock_threshold": LOW_STOCK,
    }


def list_coupons(catalog: Catalog, room: RoomState, args: dict[str, Any]) -> dict[str, Any]:
    """`sim.list_coupons` {link_no?} -> coupons valid at the room clock.

    With `link_no`: the product's own coupons plus the room-wide coupons; without: room-wide
    coupons only. Only coupons valid now are in `coupons`; the ones that expired are listed
    separately so the host can say a code has ended.

    Result:
        {"link_no": int | null, "name": str | null, "clock": str,
         "price": float | null (the product's price, with link_no),
         "coupons": [{"code": str, "amount": float, "min_spend": float (0: none),
                      "expires": str, "scope": "product" | "room",
                      "meets_min_spend": bool (with link_no: one unit's price reaches it)}]
                    (product coupons first, each group by amount descending, then code),
         "expired": [{"code": str, "amount": float, "min_spend": float, "expired_at": str,
                      "scope": str}],
         "best": {"code": str, "amount": float, "price_after_coupon": float} | null
                 (with link_no: the biggest valid saving one unit qualifies for),
         "policy": str (coupons never stack; how to claim)}
    Errors: unknown link -> ToolError(error).
    """
    link_no = _int_arg(args, "link_no", required=False)
    product = product_or_error(catalog, link_no) if link_no is not None else None
    groups: list[tuple[str, list[CouponRule]]] = []
    if product is not None:
        groups.append(("product", product.coupons))
    groups.append(("room", room.room_coupons))
    price = product.price if product is not None else None
    valid: list[dict[str, Any]] = []
    expired: list[dict[str, Any]] = []
    for scope, coupons in groups:
        ordered = sorted(coupons, key=lambda c: (-c.amount, c.code))
        for c in ordered:
            if coupon_valid(c, room.clock):
                valid.append(coupon_entry(c, price, scope))
            else:
                expired.append(
                    {
                        "code": c.code,
                        "amount": money(c.amount),
                        "min_spend": money(c.threshold),
                        "expired_at": c.expires,
                        "scope": scope,
                    }
                )
    best: dict[str, Any] | None = None
    if product is not None:
        chosen = best_coupon([*product.coupons, *room.room_coupons], product.price, room.clock)
        if chosen is not None:
            best = {
                "code": chosen.code,
                "amount": money(chosen.amount),
                "price_after_coupon": money(max(product.price - chosen.amount, 0.0)),
            }
    return {
        "link_no": product.link_no if product is not None else None,
        "name": product.name if product is not None else None,
        "clock": room.clock,
        "price": money(price) if price is not None else None,
        "coupons": valid,
        "expired": expired,
        "best": best,
        "policy": COUPON_POLICY,
    }


def get_shipping_info(catalog: Catalog, room: RoomState, args: dict[str, Any]) -> dict[str, Any]:
    """`sim.get_shipping_info` {link_no, region} -> delivery to one region.

    `region` may be a state, province, big city or abbreviation ('TX', 'NYC', 'Toronto'); the
    result names the canonical region.

    Result when the product ships there:
        {"link_no": int, "name": str, "region": str, "ships": true, "carrier": str,
         "fee": float, "free_shipping": bool (fee == 0), "currency": str,
         "days_min": int, "days_max": int (business days after dispatch),
         "ships_from": str | null}
    Result when the shop serves the region but not with this product (e.g. food to Canada):
        {"link_no": int, "name": str, "region": str, "ships": false,
         "reason": str, "ships_to": [str]}
    Errors: unknown link; a region the shop does not deliver to at all -> ToolError(error).
    """
    link_no = _int_arg(args, "link_no")
    assert link_no is not None
    p = product_or_error(catalog, link_no)
    region_arg = _str_arg(args, "region")
    assert region_arg is not None
    region = match_region(catalog, region_arg)
    option = p.shipping.get(region)
    if option is None:
        return {
            "link_no": p.link_no,
            "name": p.name,
            "region": region,
            "ships": False,
            "reason": f"link {p.link_no} is not shipped to {region}",
            "ships_to": [r for r in catalog.regions if r in p.shipping],
        }
    return {
        "link_no": p.link_no,
        "name": p.name,
        "region": region,
        "ships": True,
        "carrier": CARRIERS.get(region, DEFAULT_CARRIER),
        "fee": money(option.fee),
        "free_shipping": option.fee == 0,
        "currency": catalog.currency,
        "days_min": option.days_min,
        "days_max": option.days_max,
        "ships_from": p.specs.get("ships from"),
    }


def get_size_chart(catalog: Catalog, room: RoomState, args: dict[str, Any]) -> dict[str, Any]:
    """`sim.get_size_chart` {link_no} -> the size chart.

    Result:
        {"link_no": int, "name": str, "category": str,
         "fit": str | null (the product's fit note, e.g. "runs small, size up"),
         "rows": [{"size": str, "measurements": {str: str} (e.g. chest_cm "93-98"),
                   "height_cm": [int, int] | null, "weight_kg": [int, int] | null}]
                 (small to large; empty for products without a chart),
         "note": str | null ("one size, no size chart" when rows is empty)}
    Apparel rows carry height and weight ranges (see catalog.recommend_size); shoes carry foot
    length and US size; bedding carries dimensions.
    Errors: unknown link -> ToolError(error).
    """
    link_no = _int_arg(args, "link_no")
    assert link_no is not None
    p = product_or_error(catalog, link_no)
    rows = [
        {
            "size": r.size,
            "measurements": dict(r.measurements),
            "height_cm": list(r.height_cm) if r.height_cm is not None else None,
            "weight_kg": list(r.weight_kg) if r.weight_kg is not None else None,
        }
        for r in p.size_chart or []
    ]
    note = None
    if not rows:
        note = (
            "one size, no size chart"
            if not has_sizes(p)
            else f"no size chart; sizes: {', '.join(p.sizes)}"
        )
    return {
        "link_no": p.link_no,
        "name": p.name,
        "category": p.category.value,
        "fit": p.specs.get("fit"),
        "rows": rows,
        "note": note,
    }


def get_after_sales_policy(
    catalog: Catalog, room: RoomState, args: dict[str, Any]
) -> dict[str, Any]:
    """`sim.get_after_sales_policy` {topic, link_no?} -> the policy for one topic.

    Result (every key always present; the number that answers the topic is `window_days` for
    return and exchange, `warranty_months` for warranty, `refund_days` for refund):
        {"topic": "return" | "exchange" | "warranty" | "refund",
         "scope": "product" | "store", "link_no": int | null, "name": str | null,
         "available": bool (window_days > 0 / warranty_months > 0; refund: always true),
         "window_days": int | null (return or exchange window in days after delivery),
         "warranty_months": int | null, "refund_days": int (working days to the buyer),
         "conditions": str, "how_to": str}
    Errors: unknown link; a topic other than the four -> ToolError(error).
    """
    topic = _str_arg(args, "topic")
    assert topic is not None
    topic = topic.casefold()
    if topic not in HOW_TO:
        raise ToolError(
            ToolErrorKind.ERROR,
            f"unknown topic {topic!r}; use return, exchange, warranty or refund",
        )
    link_no = _int_arg(args, "link_no", required=False)
    product = product_or_error(catalog, link_no) if link_no is not None else None
    policy = product.after_sales if product is not None else catalog.store_policy
    window: int | None = None
    warranty: int | None = None
    if topic == "return":
        window = policy.return_days
        available = window > 0
    elif topic == "exchange":
        window = policy.exchange_days
        available = window > 0
    elif topic == "warranty":
        warranty = policy.warranty_months
        available = warranty > 0
    else:
        available = True
    return {
        "topic": topic,
        "scope": "product" if product is not None else "store",
        "link_no": product.link_no if product is not None else None,
        "name": product.name if product is not None else None,
        "available": available,
        "window_days": window,
        "warranty_months": warranty,
        "refund_days": policy.refund_days,
        "conditions": policy.notes,
        "how_to": HOW_TO[topic],
    }


def get_live_room_status(catalog: Catalog, room: RoomState, args: dict[str, Any]) -> dict[str, Any]:
    """`sim.get_live_room_status` {} -> the room now.

    Result:
        {"clock": str, "currency": str,
         "pinned": {"link_no": int, "name": str, "price": float, "list_price": float,
                    "in_stock": bool} | null,
         "presenting": str ("link 12, Oversized Fleece Hoodie" or "between products"),
         "promotions": [{"name": str, "description": str, "link_nos": [int],
                         "ends_at": str}]  (only those still running at the clock),
         "room_coupons": [{"code", "amount", "min_spend", "expires", "scope": "room"}]
                         (valid now),
         "links_on_air": int (products in the room)}
    Never fails for a well-formed call (a pinned link missing from the catalog shows as null).
    """
    pinned = catalog.product(room.pinned_link) if room.pinned_link is not None else None
    now = parse_time(room.clock)
    return {
        "clock": room.clock,
        "currency": catalog.currency,
        "pinned": None
        if pinned is None
        else {
            "link_no": pinned.link_no,
            "name": pinned.name,
            "price": money(pinned.price),
            "list_price": money(pinned.list_price),
            "in_stock": total_units(pinned) > 0,
        },
        "presenting": f"link {pinned.link_no}, {pinned.name}"
        if pinned is not None
        else "between products",
        "promotions": [
            {
                "name": promo.name,
                "description": promo.description,
                "link_nos": list(promo.link_nos),
                "ends_at": promo.ends_at,
            }
            for promo in room.promotions
            if now < parse_time(promo.ends_at)
        ],
        "room_coupons": [
            coupon_entry(c, None, "room")
            for c in sorted(room.room_coupons, key=lambda c: (-c.amount, c.code))
            if coupon_valid(c, room.clock)
        ],
        "links_on_air": len(catalog.products),
    }


def compare_products(catalog: Catalog, room: RoomState, args: dict[str, Any]) -> dict[str, Any]:
    """`sim.compare_products` {link_nos: 2-4 ints} -> side-by-side comparison.

    Links with no product are reported in `unknown_links` and the rest are compared.

    Result:
        {"products": [{"link_no": int, "name": str, "brand": str, "category": str,
                       "price": float, "list_price": float, "material": str | null,
                       "key_specs": {str: str} (up to 4 specs besides the material),
                       "sizes": [str], "colors": [str], "warranty_months": int,
                       "return_days": int, "in_stock": bool}]  (in the order asked),
         "differences": [{"field": str, "values": [...] (aligned with products)}]
                        (fields among price, category, brand, material, sizes, colors,
                         warranty_months, return_days, in_stock whose values differ),
         "same": [str] (those fields with one value across products),
         "cheapest": int (link_no), "price_gap": float (max price - min price),
         "unknown_links": [int]}
    Errors: fewer than 2 known products, bad link_nos -> ToolError(error).
    """
    raw = args.get("link_nos")
    if not isinstance(raw, list) or not raw:
        raise ToolError(ToolErrorKind.ERROR, "link_nos must be a list of 2 to 4 link numbers")
    links: list[int] = []
    for value in raw:
        number = _int_arg({"link_no": value}, "link_no")
        assert number is not None
        if number not in links:
            links.append(number)
    products = [p for p in (catalog.product(n) for n in links) if p is not None]
    unknown = [n for n in links if catalog.product(n) is None]
    if len(products) < 2:
        missing = ", ".join(str(n) for n in unknown) or "none"
        raise ToolError(
            ToolErrorKind.ERROR,
            f"need at least 2 products in this room to compare; unknown links: {missing}",
        )
    cards = []
    for p in products:
        specs = {
            k: v
            for k, v in p.specs.items()
            if k not in SKIP_SPEC_KEYS and v != material(p) and k != "fit"
        }
        cards.append(
            {
                "link_no": p.link_no,
                "name": p.name,
                "brand": p.brand,
                "category": p.category.value,
                "price": money(p.price),
                "list_price": money(p.list_price),
                "material": material(p),
                "key_specs": dict(list(specs.items())[:4]),
                "sizes": list(p.sizes),
                "colors": list(p.colors),
                "warranty_months": p.after_sales.warranty_months,
                "return_days": p.after_sales.return_days,
                "in_stock": total_units(p) > 0,
            }
        )
    fields = [
        "price",
        "category",
        "brand",
        "material",
        "sizes",
        "colors",
        "warranty_months",
        "return_days",
        "in_stock",
    ]
    differences = []
    same = []
    for field in fields:
        values = [card[field] for card in cards]
        if all(v == values[0] for v in values):
            same.append(field)
        else:
            differences.append({"field": field, "values": values})
    prices = [p.price for p in products]
    cheapest = min(products, key=lambda p: (p.price, p.link_no))
    return {
        "products": cards,
        "differences": differences,
        "same": same,
        "cheapest": cheapest.link_no,
        "price_gap": money(max(prices) - min(prices)),
        "unknown_links": unknown,
    }


HANDLERS: dict[str, Handler] = {
    "sim.get_product_by_link": get_product_by_link,
    "sim.search_products": search_products,
    "sim.check_stock": check_stock,
    "sim.list_coupons": list_coupons,
    "sim.get_shipping_info": get_shipping_info,
    "sim.get_size_chart": get_size_chart,
    "sim.get_after_sales_policy": get_after_sales_policy,
    "sim.get_live_room_status": get_live_room_status,
    "sim.compare_products": compare_products,
}
"""Binding name -> handler, one per demo-harness tool."""
