"""The order desk's tools as plain Python functions (bound as `python:resources.examples.
order_desk.tools:<function>`): keyword arguments in, JSON data out, `ToolError` for what the
agent should see as a failed call. The shop's "today" is fixed (`TODAY`) so return windows
come out the same on every run."""

from __future__ import annotations

import hashlib
import re
from datetime import date
from typing import Any

from core.runtime.bindings import ToolError, ToolErrorKind
from resources.examples.order_desk.shop import BOOKS, CURRENCY, ORDERS, PARCELS, POLICIES, book

TODAY = date(2026, 10, 28)
ORDER_ID = re.compile(r"^PT-\d{4}$")


def _order(order_id: str) -> dict[str, Any]:
    wanted = str(order_id).strip().upper()
    if not ORDER_ID.match(wanted):
        raise ToolError(
            ToolErrorKind.ERROR, f"{order_id!r} is not an order number (they look like PT-1041)"
        )
    order = ORDERS.get(wanted)
    if order is None:
        raise ToolError(ToolErrorKind.ERROR, f"no order {wanted}")
    return {"order_id": wanted, **order}


def lookup_order(order_id: str) -> dict[str, Any]:
    """An order's status, dates, tracking number, lines and total."""
    order = _order(order_id)
    lines = []
    total = 0.0
    for isbn, qty in order["items"]:
        item = book(isbn)
        lines.append(
            {"title": item["title"], "isbn": isbn, "quantity": qty, "price": item["price"]}
        )
        total += item["price"] * qty
    return {
        "order_id": order["order_id"],
        "status": order["status"],
        "placed_on": order["placed_on"],
        "delivered_on": order["delivered_on"],
        "tracking_no": order["tracking_no"],
        "items": lines,
        "total": round(total, 2),
        "currency": CURRENCY,
    }


def track_parcel(tracking_no: str) -> dict[str, Any]:
    """Where a parcel is: its status, the last scan, where it is (or was left) and the
    expected delivery date."""
    wanted = str(tracking_no).strip().upper()
    parcel = PARCELS.get(wanted)
    if parcel is None:
        raise ToolError(ToolErrorKind.ERROR, f"no parcel with tracking number {wanted}")
    return {"tracking_no": wanted, **parcel}


def search_catalog(query: str, max_results: int = 5) -> dict[str, Any]:
    """Books whose title or author contains every word of the query, catalogue order."""
    words = [w for w in re.findall(r"\w+", str(query).lower()) if len(w) > 1]
    if not words:
        raise ToolError(ToolErrorKind.ERROR, "the query has no words to search for")
    hits = [
        {k: b[k] for k in ("isbn", "title", "author", "price", "format", "in_stock")}
        for b in BOOKS
        if all(w in f"{b['title']} {b['author']}".lower() for w in words)
    ]
    limit = max(1, min(int(max_results), 20))
    return {"query": query, "count": len(hits), "results": hits[:limit], "currency": CURRENCY}


def start_return(order_id: str, reason: str) -> dict[str, Any]:
    """Open a return for a delivered order inside the returns window: a return id and the
    refund it will give; a clear refusal otherwise."""
    order = _order(order_id)
    if order["status"] != "delivered":
        raise ToolError(
            ToolErrorKind.ERROR,
            f"order {order['order_id']} is {order['status']}, not delivered: nothing to return yet",
        )
    delivered = date.fromisoformat(order["delivered_on"])
    days = (TODAY - delivered).days
    window = int(POLICIES["returns"]["window_days"])
    if days > window:
        raise ToolError(
            ToolErrorKind.ERROR,
            f"order {order['order_id']} was delivered {days} days ago, outside the "
            f"{window}-day returns window",
        )
    refund = round(sum(book(isbn)["price"] * qty for isbn, qty in order["items"]), 2)
    # The return id depends on the order alone: the reason is the customer's free text, and
    # the same return must not get another id because it was worded differently.
    digest = hashlib.sha256(f"return:{order['order_id']}".encode()).hexdigest()[:6].upper()
    return {
        "return_id": f"RT-{digest}",
        "order_id": order["order_id"],
        "refund": refund,
        "currency": CURRENCY,
        "label": "emailed to the address on the order",
    }


def get_policy(topic: str) -> dict[str, Any]:
    """The shop's policy on one topic (a key of `shop.POLICIES`: returns, refunds, shipping,
    damaged, exchanges, cancellations, international, preorders, gift-wrap)."""
    wanted = str(topic).strip().lower()
    policy = POLICIES.get(wanted)
    if policy is None:
        raise ToolError(
            ToolErrorKind.ERROR, f"no policy on {topic!r}; topics: {', '.join(POLICIES)}"
        )
    return {"topic": wanted, **policy}
