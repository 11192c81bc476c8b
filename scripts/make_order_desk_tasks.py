"""Write the order desk's task file, resources/examples/order_desk/tasks.jsonl, from its shop.

Deterministic (seeded, no clock, no network): the same shop gives the same bytes.

    python scripts/make_order_desk_tasks.py            # write tasks.jsonl, print the counts
    python scripts/make_order_desk_tasks.py --check    # exit 1 on any problem (below)

**Where the facts come from.** Every task's `facts` and `gold_calls` are computed here by
calling the desk's real tool functions (resources/examples/order_desk/tools.py) on the shop's
tables: an order's status and dates from `lookup_order`, a parcel's status, place and date
from `track_parcel`, prices and stock from `search_catalog`, the return id and refund (or the
refusal) from `start_return`, and policy facts from `get_policy`, each policy phrase checked to
be stated by the policy text the MCP server serves. Dates get the spellings a reply may use
(["2026-10-06", "6 October", "October 6", "6th October", "October 6th"], plus "today" or
"tomorrow" where true), amounts two decimals ("17.48"); the first spelling of every fact is
what the gold reply writes, so the gold states only what the tools returned.

**Categories.** books, orders, tracking, returns and policy (the desk's five jobs), and two
more the shop supports: `multi` (one message asking two things: an order and a policy, two
books, two orders, a book and gift wrap, a damaged book, a cancellation request) and
`unknown` (an order number or tracking number that does not exist, a book the shop does not
sell, or no order number at all: the gold reply says so, or asks for the number).

**Train and test share no phrasing: templates are held out, and so are entities.** Every
task comes from a template (a phrasing with slots); each template belongs to one split, so
no test message is worded like any train message, and no (entity, template) pair can appear
in both splits. On top of that, the generated tasks draw their orders (per status bucket),
parcels, books (whole authors at a time: a test author's books are never train entities),
missing order and tracking numbers, missing titles and return reasons from disjoint train and
test pools, so a test task asks about an order or a book no train task asks about. Policy
topics cannot be held out (the shop has nine), so policy tasks rely on the held-out
phrasings. The 23 hand-written tasks of the first file (`LEGACY`, ids kept: tests name
`returns-1`) are regenerated here with the same messages, calls and splits and their facts
recomputed; their entities seed the pools (PT-1042, PT-1043, PT-1046, Sapiens and The Road
are test entities), and one of them, PT-1041, appears in both splits (orders-3 in train,
returns-1 in test) under different phrasings; no generated task uses it. `--check` verifies
all of this.

**--check** regenerates the file in memory (stale file: error), plays every task's gold
through the real tools (`core.episode.gold.gold_trace`, the Python functions and the MCP
policy server started over stdio) and grades it (`core.taskfile.grading.grade_own`; the
reference-only task gets the judge's full mark, as the gold run does); plays every gold again
under the operator-edited harness (resources/examples/order_desk/harness-edited, names
translated by binding, `binding_args` and skill role) graded in the original's names; checks
the split hygiene above; and loads the desk's HSA banks (hsa/train, hsa/heldout), which must
validate and share no string. It exits 1 listing every problem.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.runtime.bindings import ToolError  # noqa: E402
from resources.examples.order_desk import shop  # noqa: E402
from resources.examples.order_desk.tools import (  # noqa: E402
    TODAY,
    get_policy,
    lookup_order,
    search_catalog,
    start_return,
    track_parcel,
)

EXAMPLE = ROOT / "resources" / "examples" / "order_desk"
OUT = EXAMPLE / "tasks.jsonl"
SEED = 32
TEST_SHARE = 1 / 3
"""The share of each entity pool (per order status, of authors, ...) held out for test."""

COUNTS: dict[str, tuple[int, int]] = {
    "books": (60, 12),
    "orders": (60, 10),
    "tracking": (72, 10),
    "returns": (56, 10),
    "policy": (28, 12),
    "multi": (72, 10),
    "unknown": (30, 6),
}
"""Generated tasks per category: (train, test); the legacy tasks come on top."""

MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")

# ----------------------------------------------------------------------------- fact spellings

ORDER_STATUS = {
    "processing": ["processing", "not shipped yet", "not yet shipped", "being prepared"],
    "shipped": ["shipped", "dispatched", "on its way", "on the way"],
    "delivered": ["delivered"],
    "cancelled": ["cancelled", "canceled"],
}
PARCEL_STATUS = {
    "in transit": ["in transit", "on its way", "on the way"],
    "delayed": ["delayed", "held up", "running late"],
    "out for delivery": ["out for delivery"],
    "delivered": ["delivered"],
}
STOCK = {
    True: ["in stock"],
    False: ["out of stock", "not in stock", "sold out", "unavailable", "not available"],
}
FORMAT = {
    "hardback": ["hardback", "hardcover", "hard cover"],
    "paperback": ["paperback", "softcover", "soft cover", "paper back"],
}
ORDER_NOT_FOUND = [
    "could not find",
    "couldn't find",
    "can't find",
    "cannot find",
    "no order",
    "no such order",
    "does not exist",
    "doesn't exist",
    "not recognise",
    "not recognize",
]
PARCEL_NOT_FOUND = [
    "could not find",
    "couldn't find",
    "can't find",
    "cannot find",
    "no parcel",
    "no such parcel",
    "does not exist",
    "doesn't exist",
    "not recognise",
    "not recognize",
]
BOOK_NOT_FOUND = [
    "don't have",
    "do not have",
    "could not find",
    "couldn't find",
    "can't find",
    "cannot find",
    "no match",
    "not in our catalogue",
    "don't stock",
    "do not stock",
    "don't sell",
    "do not sell",
    "don't carry",
    "do not carry",
    "no results",
]
RETURN_LATE = ["outside", "too late", "past", "expired", "passed"]
NOT_DELIVERED = [
    "not delivered",
    "not been delivered",
    "hasn't been delivered",
    "has not been delivered",
    "not arrived",
    "hasn't arrived",
    "has not arrived",
    "not yet delivered",
    "once it arrives",
    "after delivery",
    "once it's delivered",
    "once delivered",
]
ASK_ORDER_NUMBER = ["order number", "order no", "order reference", "order id"]

POLICY_FACTS: dict[tuple[str, str], list[list[str]]] = {
    ("returns", "window"): [["30 days"]],
    ("returns", "condition"): [["unread"], ["undamaged", "not damaged"]],
    ("returns", "label"): [["free returns label", "free label", "free return label"]],
    ("refunds", "time"): [["5 working days", "five working days"]],
    ("refunds", "method"): [["original payment method", "original payment", "same card"]],
    ("shipping", "cost"): [["2.99"], ["25.00"]],
    ("shipping", "time"): [["3 working days", "three working days"]],
    ("damaged", "report"): [["14 days"], ["photo", "picture", "photograph"]],
    ("damaged", "keep"): [
        [
            "no need to send it back",
            "don't need to send it back",
            "do not need to send it back",
            "don't have to send it back",
            "do not have to send it back",
            "no need to return it",
        ],
        ["replaced or refunded", "replacement or a refund", "replace it or refund"],
    ],
    ("exchanges", "window"): [["30 days"], ["another title or format", "another title"]],
    ("exchanges", "difference"): [["price difference", "difference in price"]],
    ("cancellations", "how"): [["order confirmation email", "confirmation email"]],
    ("cancellations", "shipped"): [
        ["cannot be cancelled", "can't be cancelled", "can not be cancelled", "too late to cancel"],
        ["start a return", "return it", "send it back"],
    ],
    ("international", "cost"): [["9.99"], ["7 to 10 working days", "7-10 working days"]],
    ("international", "time"): [["7 to 10 working days", "7-10 working days"]],
    ("international", "where"): [["EU", "European Union", "Europe"]],
    ("international", "duties"): [["import duties", "duties", "customs"], ["paid by the customer"]],
    ("preorders", "charge"): [
        ["charged when they ship", "charged when it ships", "when it ships", "on dispatch"],
        ["release day", "release date", "day it comes out"],
    ],
    ("gift-wrap", "cost"): [["2.50"], ["message card", "gift message", "card"]],
    ("gift-wrap", "receipt"): [["show no prices", "no prices", "without prices", "no price"]],
}
"""(topic, aspect) -> facts; each fact's first spelling must be stated by the topic's policy
text (checked against get_policy's result when the facts are made)."""


def fact(alternatives: Iterable[str]) -> str | list[str]:
    unique = list(dict.fromkeys(alternatives))
    return unique[0] if len(unique) == 1 else unique


def date_spellings(iso: str) -> list[str]:
    day = date.fromisoformat(iso)
    month = MONTHS[day.month - 1]
    n = day.day
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    out = [iso, f"{n} {month}", f"{month} {n}", f"{n}{suffix} {month}", f"{month} {n}{suffix}"]
    if day == TODAY:
        out.append("today")
    elif day == TODAY + timedelta(days=1):
        out.append("tomorrow")
    return out


def money(value: float) -> str:
    return f"{value:.2f}"


def count_fact(n: int) -> str | list[str]:
    return fact([str(n), NUMBER_WORDS[n]] if n < len(NUMBER_WORDS) else [str(n)])


def location_spellings(location: str) -> list[str]:
    out = [location]
    if location.startswith("neighbour"):
        out += ["neighbour", "neighbor"]
    if location.startswith("signed for"):
        out += ["signed for"]
    words = location.split()
    if words[0][:1].isupper():  # a place name: "Leeds mail centre" -> "Leeds"
        out.append(words[0])
    return out


def surname(author: str) -> str:
    return author.split()[-1]


# ----------------------------------------------------------------------------- the tools' word


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def refused(tool: str, **arguments: Any) -> dict[str, Any]:
    """A gold call whose tool's refusal is the answer (`expect_error`: without it a gold call
    that meets a tool error makes the task's gold broken)."""
    return {"tool": tool, "arguments": arguments, "expect_error": True}


def tool_error(fn: Callable[..., Any], **kwargs: Any) -> str:
    """The refusal message of a call that must fail."""
    try:
        fn(**kwargs)
    except ToolError as exc:
        return exc.message
    raise AssertionError(f"{fn.__name__}({kwargs}) was expected to refuse")


def states(text: str, phrase: str) -> bool:
    from core.taskfile.grading import states as grading_states

    return grading_states(text, phrase)


def policy_facts(topic: str, aspect: str) -> list[str | list[str]]:
    text = get_policy(topic)["text"]
    out = []
    for alternatives in POLICY_FACTS[(topic, aspect)]:
        if not states(text, alternatives[0]):
            raise AssertionError(f"policy {topic}: {alternatives[0]!r} is not in {text!r}")
        out.append(fact(alternatives))
    return out


def book_hit(query: str, isbn: str) -> dict[str, Any]:
    result = search_catalog(query)
    hit = next((b for b in result["results"] if b["isbn"] == isbn), None)
    if hit is None:
        raise AssertionError(f"search_catalog({query!r}) does not find {isbn}")
    return dict(hit)


# ----------------------------------------------------------------------------- aspects


@dataclass(frozen=True)
class Made:
    facts: list[str | list[str]]
    calls: list[dict[str, Any]]
    skills: list[str]


ORDER = ["order-help"]
BOOK = ["book-finder"]
POLICY = ["policy-answers"]


def order_status_facts(order: dict[str, Any]) -> list[str | list[str]]:
    facts: list[str | list[str]] = [fact(ORDER_STATUS[order["status"]])]
    if order["status"] == "delivered":
        facts.append(fact(date_spellings(order["delivered_on"])))
    return facts


def a_status(e: dict[str, Any]) -> Made:
    order = lookup_order(e["oid"])
    return Made(order_status_facts(order), [call("lookup_order", order_id=e["oid"])], ORDER)


def a_items(e: dict[str, Any]) -> Made:
    order = lookup_order(e["oid"])
    facts: list[str | list[str]] = [line["title"] for line in order["items"]]
    facts.append(money(order["total"]))
    return Made(facts, [call("lookup_order", order_id=e["oid"])], ORDER)


def a_total(e: dict[str, Any]) -> Made:
    order = lookup_order(e["oid"])
    return Made([money(order["total"])], [call("lookup_order", order_id=e["oid"])], ORDER)


def a_placed(e: dict[str, Any]) -> Made:
    order = lookup_order(e["oid"])
    facts = [fact(date_spellings(order["placed_on"]))]
    return Made(facts, [call("lookup_order", order_id=e["oid"])], ORDER)


def a_quantity(e: dict[str, Any]) -> Made:
    order = lookup_order(e["oid"])
    line = max(order["items"], key=lambda x: x["quantity"])
    facts: list[str | list[str]] = [line["title"], count_fact(line["quantity"])]
    return Made(facts, [call("lookup_order", order_id=e["oid"])], ORDER)


def _track(e: dict[str, Any], *, direct: bool = False) -> tuple[dict[str, Any], list[Any]]:
    if direct:
        parcel = track_parcel(e["trk"])
        return parcel, [call("track_parcel", tracking_no=e["trk"])]
    order = lookup_order(e["oid"])
    parcel = track_parcel(order["tracking_no"])
    calls = [
        call("lookup_order", order_id=e["oid"]),
        call("track_parcel", tracking_no=order["tracking_no"]),
    ]
    return parcel, calls


def parcel_when(parcel: dict[str, Any]) -> list[str | list[str]]:
    facts: list[str | list[str]] = [fact(PARCEL_STATUS[parcel["status"]])]
    if parcel["eta"]:
        facts.append(fact(date_spellings(parcel["eta"])))
    else:
        facts.append(fact(location_spellings(parcel["location"])))
    return facts


def a_track(e: dict[str, Any]) -> Made:
    parcel, calls = _track(e)
    return Made(parcel_when(parcel), calls, ORDER)


def a_track_direct(e: dict[str, Any]) -> Made:
    parcel, calls = _track(e, direct=True)
    return Made(parcel_when(parcel), calls, ORDER)


def a_track_where(e: dict[str, Any]) -> Made:
    parcel, calls = _track(e)
    facts = [fact(PARCEL_STATUS[parcel["status"]]), fact(location_spellings(parcel["location"]))]
    return Made(facts, calls, ORDER)


def a_track_delay(e: dict[str, Any]) -> Made:
    parcel, calls = _track(e)
    reason = re.search(r"\(([^)]+)\)", parcel["last_scan"])
    assert reason, parcel
    facts = [fact(PARCEL_STATUS[parcel["status"]]), reason.group(1)]
    facts.append(fact(date_spellings(parcel["eta"])))
    return Made(facts, calls, ORDER)


def a_return_ok(e: dict[str, Any]) -> Made:
    started = start_return(order_id=e["oid"], reason=e["reason"])
    calls = [
        call("lookup_order", order_id=e["oid"]),
        call("start_return", order_id=e["oid"], reason=e["reason"]),
    ]
    return Made([started["return_id"], money(started["refund"])], calls, ORDER)


def a_return_refused(e: dict[str, Any]) -> Made:
    message = tool_error(start_return, order_id=e["oid"], reason=e["reason"])
    order = lookup_order(e["oid"])
    calls = [
        call("lookup_order", order_id=e["oid"]),
        refused("start_return", order_id=e["oid"], reason=e["reason"]),
    ]
    if "outside" in message:
        window = shop.POLICIES["returns"]["window_days"]
        assert f"{window}-day" in message, message
        return Made([fact(RETURN_LATE), str(window)], calls, ORDER)
    assert "not delivered" in message, message
    return Made([fact(ORDER_STATUS[order["status"]]), fact(NOT_DELIVERED)], calls, ORDER)


def a_book(what: str) -> Callable[[dict[str, Any]], Made]:
    def make(e: dict[str, Any]) -> Made:
        hit = book_hit(e["query"], e["isbn"])
        facts: list[str | list[str]] = []
        if what != "author":
            facts.append(hit["title"])
        if what in ("price", "price_stock"):
            facts.append(money(hit["price"]))
        if what in ("stock", "price_stock"):
            facts.append(fact(STOCK[hit["in_stock"]]))
        if what == "format":
            facts.append(fact(FORMAT[hit["format"]]))
        if what == "author":
            facts.append(fact([hit["author"], surname(hit["author"])]))
        return Made(facts, [call("search_catalog", query=e["query"])], BOOK)

    return make


def a_by_author(e: dict[str, Any]) -> Made:
    result = search_catalog(e["query"])
    assert 1 < result["count"] <= 5, (e, result["count"])
    authors = {b["author"] for b in result["results"]}
    assert len(authors) == 1, (e, authors)  # every hit is by the author asked about
    facts: list[str | list[str]] = [b["title"] for b in result["results"]]
    return Made(facts, [call("search_catalog", query=e["query"])], BOOK)


def a_policy(topic: str, aspect: str) -> Callable[[dict[str, Any]], Made]:
    def make(e: dict[str, Any]) -> Made:
        return Made(policy_facts(topic, aspect), [call("get_policy", topic=topic)], POLICY)

    return make


def both(*parts: Callable[[dict[str, Any]], Made]) -> Callable[[dict[str, Any]], Made]:
    """Two asks in one message: the facts, calls and skills of each, in order."""

    def make(e: dict[str, Any]) -> Made:
        made = [p(e) for p in parts]
        skills = list(dict.fromkeys(s for m in made for s in m.skills))
        return Made([f for m in made for f in m.facts], [c for m in made for c in m.calls], skills)

    return make


def second(part: Callable[[dict[str, Any]], Made]) -> Callable[[dict[str, Any]], Made]:
    """The part about the entity's second order or book (`oid2`, `isbn2`, `query2`)."""

    def make(e: dict[str, Any]) -> Made:
        return part({**e, "oid": e.get("oid2"), "isbn": e.get("isbn2"), "query": e.get("query2")})

    return make


def a_cancel(e: dict[str, Any]) -> Made:
    order = lookup_order(e["oid"])
    aspect = "how" if order["status"] == "processing" else "shipped"
    facts = [fact(ORDER_STATUS[order["status"]]), *policy_facts("cancellations", aspect)]
    calls = [call("lookup_order", order_id=e["oid"]), call("get_policy", topic="cancellations")]
    return Made(facts, calls, ORDER + POLICY)


def a_damaged(e: dict[str, Any]) -> Made:
    order = lookup_order(e["oid"])
    assert order["status"] == "delivered", order
    facts = [*policy_facts("damaged", "report"), policy_facts("damaged", "keep")[0]]
    calls = [call("lookup_order", order_id=e["oid"]), call("get_policy", topic="damaged")]
    return Made(facts, calls, ORDER + POLICY)


def a_order_missing(e: dict[str, Any]) -> Made:
    message = tool_error(lookup_order, order_id=e["oid"])
    assert message == f"no order {e['oid']}", message
    facts = [e["oid"], fact(ORDER_NOT_FOUND)]
    return Made(facts, [refused("lookup_order", order_id=e["oid"])], ORDER)


def a_parcel_missing(e: dict[str, Any]) -> Made:
    message = tool_error(track_parcel, tracking_no=e["trk"])
    assert message.startswith("no parcel"), message
    facts = [e["trk"], fact(PARCEL_NOT_FOUND)]
    return Made(facts, [refused("track_parcel", tracking_no=e["trk"])], ORDER)


def a_book_missing(e: dict[str, Any]) -> Made:
    result = search_catalog(e["query"])
    assert result["count"] == 0, (e, result)
    return Made([fact(BOOK_NOT_FOUND)], [call("search_catalog", query=e["query"])], BOOK)


def a_no_number(e: dict[str, Any]) -> Made:
    return Made([fact(ASK_ORDER_NUMBER)], [], ORDER)


# ----------------------------------------------------------------------------- entities


def _order(oid: str) -> dict[str, Any]:
    return lookup_order(oid)


def returnable(oid: str) -> bool:
    try:
        start_return(order_id=oid, reason="check")
    except ToolError:
        return False
    return True


def delivered_late(oid: str) -> bool:
    return _order(oid)["status"] == "delivered" and not returnable(oid)


def in_flight(oid: str) -> bool:
    """Shipped, with a parcel that is not delivered."""
    order = _order(oid)
    return order["status"] == "shipped" and track_parcel(order["tracking_no"])["eta"] is not None


def parcel_status(oid: str) -> str | None:
    order = _order(oid)
    return track_parcel(order["tracking_no"])["status"] if order["tracking_no"] else None


def order_bucket(oid: str) -> str:
    order = _order(oid)
    if order["status"] == "delivered":
        return "delivered-in-window" if returnable(oid) else "delivered-late"
    if order["status"] == "shipped":
        return f"shipped-{parcel_status(oid)}"
    return str(order["status"])


LEGACY_TEST_ORDERS = ("PT-1042", "PT-1043", "PT-1046")
LEGACY_TRAIN_ORDERS = ("PT-1044", "PT-1045", "PT-1047", "PT-1048")
LEGACY_ONLY_ORDERS = ("PT-1041",)
"""In a legacy task of each split (orders-3, returns-1): no generated task uses it."""
LEGACY_TEST_AUTHORS = ("Yuval Noah Harari", "Cormac McCarthy")
LEGACY_TRAIN_AUTHORS = ("J. R. R. Tolkien", "Andy Weir", "Aldous Huxley", "Markus Zusak")

MISSING_ORDERS = (
    "PT-1093", "PT-1095", "PT-1099", "PT-1100", "PT-1140", "PT-1031", "PT-1008", "PT-2041",
    "PT-1204", "PT-1096", "PT-1117", "PT-1350",
)  # fmt: skip
MISSING_PARCELS = ("RM100234GB", "RM777120GB", "RM305511GB", "RM650019GB", "RM218845GB")
MISSING_TITLES = (
    "The Great Gatsby", "Wuthering Heights", "Jane Eyre", "The Kite Runner", "Little Women",
    "The Alchemist", "Life of Pi", "Gone Girl", "Middlemarch", "The Secret History",
)  # fmt: skip
REASONS = (
    "wrong book", "changed my mind", "bought it twice", "no longer needed",
    "ordered the wrong edition", "not what I expected", "already have it", "gift they didn't want",
    "ordered it by mistake", "it was meant to be the hardback", "arrived after the birthday",
    "the print is too small",
)  # fmt: skip


@dataclass
class Pools:
    """Entities of one split (module doc: train and test pools are disjoint)."""

    orders: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    missing_orders: list[str] = field(default_factory=list)
    missing_parcels: list[str] = field(default_factory=list)
    missing_titles: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    def books(self) -> list[dict[str, Any]]:
        return [b for b in shop.BOOKS if b["author"] in self.authors]


def hold_out(rng: random.Random, items: Iterable[str]) -> tuple[list[str], list[str]]:
    """(train, test): a seeded TEST_SHARE of `items` (at least one when there are two)."""
    items = sorted(items)
    rng.shuffle(items)
    k = max(1, round(len(items) * TEST_SHARE)) if len(items) > 1 else 0
    return sorted(items[k:]), sorted(items[:k])


def make_pools(rng: random.Random) -> dict[str, Pools]:
    train, test = Pools(), Pools()
    legacy = set(LEGACY_TEST_ORDERS) | set(LEGACY_TRAIN_ORDERS) | set(LEGACY_ONLY_ORDERS)
    buckets: dict[str, list[str]] = defaultdict(list)
    for oid in sorted(shop.ORDERS):
        if oid not in legacy:
            buckets[order_bucket(oid)].append(oid)
    for name in sorted(buckets):
        tr, te = hold_out(rng, buckets[name])
        train.orders += tr
        test.orders += te
    train.orders = sorted(train.orders + list(LEGACY_TRAIN_ORDERS))
    test.orders = sorted(test.orders + list(LEGACY_TEST_ORDERS))
    legacy_authors = set(LEGACY_TEST_AUTHORS) | set(LEGACY_TRAIN_AUTHORS)
    authors = sorted({b["author"] for b in shop.BOOKS} - legacy_authors)
    tr, te = hold_out(rng, authors)
    train.authors = sorted(tr + list(LEGACY_TRAIN_AUTHORS))
    test.authors = sorted(te + list(LEGACY_TEST_AUTHORS))
    for name, items in (
        ("missing_orders", MISSING_ORDERS),
        ("missing_parcels", MISSING_PARCELS),
        ("missing_titles", MISSING_TITLES),
        ("reasons", REASONS),
    ):
        tr, te = hold_out(rng, items)
        setattr(train, name, tr)
        setattr(test, name, te)
    return {"train": train, "test": test}


# ----------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class Template:
    """A phrasing with slots: {oid} {oid2} {trk} {title} {title2} {author} {query} {reason}.

    `needs` says which entities fill it: order (with `when`, a test on the order id), order2,
    trk (the tracking number of an order), book, book2, author, surname, missing_order,
    missing_parcel, missing_title, none. `history` is earlier turns, slots allowed; `free`:
    the customer's greeting, sign-off, casing and typos vary (False: written exactly)."""

    tid: str
    split: str
    category: str
    make: Callable[[dict[str, Any]], Made]
    text: str
    needs: str = "none"
    when: Callable[[str], bool] | None = None
    history: tuple[tuple[str, str], ...] = ()
    free: bool = True


TEMPLATES: list[Template] = []


def t(
    tid: str,
    split: str,
    category: str,
    make: Callable[[dict[str, Any]], Made],
    needs: str,
    *texts: str,
    when: Callable[[str], bool] | None = None,
    history: tuple[tuple[str, str], ...] = (),
    free: bool = True,
) -> None:
    """One template per text, ids `tid`, `tid.2`, ..."""
    for i, text in enumerate(texts):
        name = tid if i == 0 else f"{tid}.{i + 1}"
        TEMPLATES.append(Template(name, split, category, make, text, needs, when, history, free))


def is_status(*statuses: str) -> Callable[[str], bool]:
    return lambda oid: _order(oid)["status"] in statuses


def is_parcel(*statuses: str) -> Callable[[str], bool]:
    return lambda oid: parcel_status(oid) in statuses


def has_copies(oid: str) -> bool:
    return max(int(q) for _, q in shop.ORDERS[oid]["items"]) > 1


def recent_delivery(oid: str) -> bool:
    order = _order(oid)
    return order["status"] == "delivered" and (
        TODAY - date.fromisoformat(order["delivered_on"])
    ).days <= int(shop.POLICIES["damaged"]["window_days"])


TR, TE = "train", "test"

# --- orders
t("ord-status", TR, "orders", a_status, "order",
  "what's the status of {oid}?",
  "Hi there, could you check on order {oid} for me please",
  "any update on {oid}",
  "Hello, I placed order {oid} a little while ago and haven't heard anything since. "
  "What's happening with it?")  # fmt: skip
t("ord-status-h", TR, "orders", a_status, "order", "it's {oid}",
  history=(("user", "hi, can you tell me what's going on with my order?"),
           ("assistant", "Of course! What's the order number? It starts with PT-.")),
  free=False)  # fmt: skip
t("ord-shipped", TR, "orders", a_status, "order",
  "has {oid} been sent out yet?", when=is_status("processing", "shipped", "cancelled"))  # fmt: skip
t("ord-items", TR, "orders", a_items, "order",
  "what was in order {oid}? can't remember what I ordered lol",
  "Could you remind me which books are in {oid} and what the total came to?")  # fmt: skip
t("ord-total", TR, "orders", a_total, "order",
  "how much did I pay for {oid}?")  # fmt: skip
t("ord-placed", TR, "orders", a_placed, "order",
  "when did I place order {oid}? need it for my expenses")  # fmt: skip
t("ord-qty", TR, "orders", a_quantity, "order",
  "how many copies did I order in {oid}? I think I doubled up by accident",
  when=has_copies)  # fmt: skip
t("ord-delivered", TR, "orders", a_status, "order",
  "was {oid} delivered? my flatmate thinks a parcel came", when=is_status("delivered"))  # fmt: skip

t("ord-status-x", TE, "orders", a_status, "order",
  "status of {oid} pls",
  "Good afternoon. I would be grateful if you could let me know where things stand with "
  "order number {oid}.")  # fmt: skip
t("ord-status-xh", TE, "orders", a_status, "order", "{oid}",
  history=(("user", "hello i need help with an order"),
           ("assistant", "Happy to help. Which order is it? The number starts with PT- and "
                         "has four digits.")),
  free=False)  # fmt: skip
t("ord-items-x", TE, "orders", a_items, "order",
  "I've lost the confirmation email for {oid} - which titles did I buy and what was the "
  "total?")  # fmt: skip
t("ord-placed-x", TE, "orders", a_placed, "order",
  "what date was {oid} ordered on")  # fmt: skip
t("ord-total-x", TE, "orders", a_total, "order",
  "total for {oid}?")  # fmt: skip

# --- tracking
t("trk-when", TR, "tracking", a_track, "order",
  "when will {oid} arrive?",
  "where's my parcel? order {oid}",
  "my order {oid} still hasn't come, any idea when it will?",
  "Hi! I ordered a birthday present for my sister ({oid}) and her birthday is this weekend. "
  "Will it get here in time?", when=in_flight)  # fmt: skip
t("trk-when-h", TR, "tracking", a_track, "order", "sure, it's {oid}",
  history=(("user", "hiya, my books still haven't turned up"),
           ("assistant", "Sorry to hear that! Could you give me the order number so I can check?")),
  when=in_flight, free=False)  # fmt: skip
t("trk-where", TR, "tracking", a_track_where, "order",
  "where exactly is the parcel for {oid} right now?", when=in_flight)  # fmt: skip
t("trk-delay", TR, "tracking", a_track_delay, "order",
  "why is {oid} taking so long?? it should have been here by now",
  when=is_parcel("delayed"))  # fmt: skip
t("trk-direct", TR, "tracking", a_track_direct, "trk",
  "can you track {trk} for me", "tracking number {trk} - when's it coming?",
  when=in_flight)  # fmt: skip
t("trk-gone", TR, "tracking", a_track_where, "order",
  "it says {oid} was delivered but there's nothing on my doorstep, where did it go?",
  when=is_status("delivered"))  # fmt: skip

t("trk-when-x", TE, "tracking", a_track, "order",
  "eta on {oid}?",
  "Hello, I'm going away on Friday and want to be home when {oid} is delivered. "
  "Which day should I expect it?", when=in_flight)  # fmt: skip
t("trk-where-x", TE, "tracking", a_track_where, "order",
  "{oid} - whereabouts is it at the moment", when=in_flight)  # fmt: skip
t("trk-delay-x", TE, "tracking", a_track_delay, "order",
  "what's the hold up with {oid}", when=is_parcel("delayed"))  # fmt: skip
t("trk-direct-x", TE, "tracking", a_track_direct, "trk",
  "Could you tell me the latest on parcel {trk}, please?", when=in_flight)  # fmt: skip
t("trk-gone-x", TE, "tracking", a_track_where, "order",
  "tracking for {oid} says delivered?? I never got it", when=is_status("delivered"))  # fmt: skip

# --- returns
t("ret-ok", TR, "returns", a_return_ok, "order",
  "I'd like to return {oid}, reason: {reason}",
  "can I send back {oid}? {reason}",
  "Hi, please could you start a return for order {oid}. The reason is {reason}. Thanks",
  when=returnable)  # fmt: skip
t("ret-late", TR, "returns", a_return_refused, "order",
  "I want to return {oid} - {reason}", "is it too late to send back {oid}? {reason}",
  when=delivered_late)  # fmt: skip
t("ret-early", TR, "returns", a_return_refused, "order",
  "please return {oid}, {reason}", when=is_status("processing", "shipped"))  # fmt: skip

t("ret-ok-x", TE, "returns", a_return_ok, "order",
  "return for {oid} please. reason - {reason}",
  "Good morning, I need to send order {oid} back ({reason}). Can you set that up?",
  when=returnable)  # fmt: skip
t("ret-late-x", TE, "returns", a_return_refused, "order",
  "hello, can {oid} still be returned? {reason}", when=delivered_late)  # fmt: skip
t("ret-early-x", TE, "returns", a_return_refused, "order",
  "start a return on {oid}: {reason}", when=is_status("processing", "shipped"))  # fmt: skip

# --- books
t("bk-price", TR, "books", a_book("price"), "book",
  "how much is {title}?", "price for {title} please", "what does {title} cost")  # fmt: skip
t("bk-stock", TR, "books", a_book("stock"), "book",
  "do you have {title} in stock?", "is {title} available at the moment?",
  "Hi, my book club is reading {title} next month. Can I get a copy from you?")  # fmt: skip
t("bk-price-stock", TR, "books", a_book("price_stock"), "book",
  "have you got {title}, and how much is it?")  # fmt: skip
t("bk-format", TR, "books", a_book("format"), "book",
  "is {title} a hardback or paperback?")  # fmt: skip
t("bk-author", TR, "books", a_book("author"), "book",
  "who wrote {title}?")  # fmt: skip
t("bk-by", TR, "books", a_by_author, "author",
  "what books by {author} do you sell?", "anything by {author}?")  # fmt: skip
t("bk-by-s", TR, "books", a_by_author, "surname",
  "got any {author}?")  # fmt: skip
t("bk-stock-h", TR, "books", a_book("stock"), "book2", "great. and {title}?",
  history=(("user", "do you have {title2}?"), ("assistant", "{answer2}")), free=False)  # fmt: skip

t("bk-price-x", TE, "books", a_book("price"), "book",
  "{title} - price?", "Could you tell me what you charge for {title}?")  # fmt: skip
t("bk-stock-x", TE, "books", a_book("stock"), "book",
  "looking for a copy of {title}, do u have one")  # fmt: skip
t("bk-format-x", TE, "books", a_book("format"), "book",
  "Which edition of {title} do you sell - hardcover or paperback?")  # fmt: skip
t("bk-author-x", TE, "books", a_book("author"), "book",
  "{title} is by who again?")  # fmt: skip
t("bk-by-x", TE, "books", a_by_author, "author",
  "Which {author} titles do you carry?")  # fmt: skip
t("bk-price-stock-xh", TE, "books", a_book("price_stock"), "book2", "ok and what about {title}",
  history=(("user", "is {title2} in?"), ("assistant", "{answer2}")), free=False)  # fmt: skip

# --- policy: (template id, topic, aspect, split, phrasings)
POLICY_TEMPLATES = (
    ("pol-ret-window", "returns", "window", TR, (
        "how many days do I get to return something?",
        "what's your returns window",
    )),
    ("pol-ret-cond", "returns", "condition", TR, (
        "what condition do books need to be in to be returned?",
    )),
    ("pol-ret-label", "returns", "label", TR, ("do I have to pay postage to send a return back?",)),
    ("pol-ref-time", "refunds", "time", TR, (
        "how long does a refund take?",
        "I sent a book back, when will I see the money?",
    )),
    ("pol-ref-method", "refunds", "method", TR, (
        "will my refund go back on my card or as store credit?",
    )),
    ("pol-ship-cost", "shipping", "cost", TR, (
        "what do you charge for postage?",
        "do you do free delivery?",
    )),
    ("pol-ship-time", "shipping", "time", TR, ("how long does standard delivery take?",)),
    ("pol-dmg", "damaged", "report", TR, (
        "the book I got has water damage, what do I do?",
        "pages are falling out of a book you sent me :(",
    )),
    ("pol-dmg-keep", "damaged", "keep", TR, (
        "my book came with a bent cover, do I need to post it back to you?",
    )),
    ("pol-exch", "exchanges", "window", TR, (
        "can I swap a book for a different one?",
        "I'd rather have the paperback, can I exchange?",
    )),
    ("pol-exch-diff", "exchanges", "difference", TR, (
        "if I exchange for a more expensive book do I pay extra?",
    )),
    ("pol-cancel", "cancellations", "how", TR, (
        "how do I cancel an order?",
        "I ordered something by mistake, can I cancel?",
    )),
    ("pol-cancel-shipped", "cancellations", "shipped", TR, (
        "can I cancel after it's been shipped?",
    )),
    ("pol-intl", "international", "cost", TR, ("do you ship abroad? how much is it?",)),
    ("pol-intl-time", "international", "time", TR, ("how long does delivery to the USA take",)),
    ("pol-intl-where", "international", "where", TR, ("can you deliver to Spain?",)),
    ("pol-intl-duty", "international", "duties", TR, (
        "will I have to pay customs if you send to Canada?",
    )),
    ("pol-pre", "preorders", "charge", TR, (
        "when do you take payment for a pre-order?",
        "how do preorders work",
    )),
    ("pol-wrap", "gift-wrap", "cost", TR, (
        "do you gift wrap? how much?",
        "Can I get a book wrapped as a present?",
    )),
    ("pol-wrap-receipt", "gift-wrap", "receipt", TR, (
        "if I send a gift, will the price be on the receipt?",
    )),
    ("pol-ret-window-x", "returns", "window", TE, ("whats the time limit for returns",)),
    ("pol-ret-cond-x", "returns", "condition", TE, (
        "Can any book be returned, or are there conditions?",
    )),
    ("pol-ref-time-x", "refunds", "time", TE, (
        "Once you receive my return, how quickly is the money refunded?",
    )),
    ("pol-ship-cost-x", "shipping", "cost", TE, ("delivery charges?",)),
    ("pol-ship-time-x", "shipping", "time", TE, ("if i order today how many days till it comes",)),
    ("pol-dmg-x", "damaged", "report", TE, (
        "Hello, my book arrived with the spine cracked. How do I report this?",
    )),
    ("pol-exch-x", "exchanges", "window", TE, (
        "is it possible to exchange a book I haven't read?",
    )),
    ("pol-cancel-x", "cancellations", "how", TE, ("need to cancel an order i just placed, how?",)),
    ("pol-intl-x", "international", "cost", TE, (
        "I live in Germany, can I order from you and what would shipping cost?",
    )),
    ("pol-pre-x", "preorders", "charge", TE, (
        "if I pre-order a book, when does my card get charged?",
    )),
    ("pol-wrap-x", "gift-wrap", "cost", TE, ("is gift wrapping available and what does it cost?",)),
    ("pol-intl-duty-x", "international", "duties", TE, (
        "who pays import tax on orders going to the US?",
    )),
)  # fmt: skip
for tid, topic, aspect, split, texts in POLICY_TEMPLATES:
    t(tid, split, "policy", a_policy(topic, aspect), "none", *texts)

# --- multi: two asks in one message
t("mul-status-ref", TR, "multi", both(a_status, a_policy("refunds", "time")), "order",
  "what's happening with {oid}? also how long do refunds usually take?")  # fmt: skip
t("mul-track-ret", TR, "multi", both(a_track, a_policy("returns", "window")), "order",
  "when is {oid} arriving, and how long will I have to return it if I don't like it?",
  when=in_flight)  # fmt: skip
t("mul-price-ship", TR, "multi", both(a_book("price"), a_policy("shipping", "cost")), "book",
  "how much is {title} and what's the delivery charge?")  # fmt: skip
t("mul-two-books", TR, "multi", both(a_book("price"), second(a_book("price"))), "book+book2",
  "prices for {title} and {title2} please")  # fmt: skip
t("mul-two-orders", TR, "multi", both(a_status, second(a_status)), "order+order2",
  "can you check {oid} and {oid2} for me?")  # fmt: skip
t("mul-ret-ref", TR, "multi", both(a_return_ok, a_policy("refunds", "time")), "order",
  "please return {oid} ({reason}) - when will I get my money back?", when=returnable)  # fmt: skip
t("mul-wrap", TR, "multi", both(a_book("price"), a_policy("gift-wrap", "cost")), "book",
  "I want {title} as a present, how much is it and can you gift wrap it?")  # fmt: skip
t("mul-damaged", TR, "multi", a_damaged, "order",
  "one of the books in {oid} arrived with a ripped cover. what now?",
  when=recent_delivery)  # fmt: skip
t("mul-cancel", TR, "multi", a_cancel, "order",
  "can you cancel {oid} please? don't need it anymore",
  when=is_status("processing", "shipped"))  # fmt: skip

t("mul-status-ret-x", TE, "multi", both(a_status, a_policy("returns", "window")), "order",
  "Two things: where is order {oid}, and what's your return policy window?")  # fmt: skip
t("mul-stock-intl-x", TE, "multi", both(a_book("stock"), a_policy("international", "cost")),
  "book", "do you have {title}? and do you post to Ireland, how much?")  # fmt: skip
t("mul-two-books-x", TE, "multi", both(a_book("stock"), second(a_book("stock"))), "book+book2",
  "are {title} and {title2} both in stock?")  # fmt: skip
t("mul-two-orders-x", TE, "multi", both(a_status, second(a_status)), "order+order2",
  "I have two orders, {oid} and {oid2} - status on both?")  # fmt: skip
t("mul-damaged-x", TE, "multi", a_damaged, "order",
  "Hi, a book from order {oid} came with torn pages. What are my options?",
  when=recent_delivery)  # fmt: skip
t("mul-cancel-x", TE, "multi", a_cancel, "order",
  "please cancel order {oid}, I found it cheaper elsewhere",
  when=is_status("processing", "shipped"))  # fmt: skip

# --- unknown: the order, parcel or book does not exist, or no order number is given
t("unk-order", TR, "unknown", a_order_missing, "missing_order",
  "where is my order {oid}?", "what's the status of {oid}")  # fmt: skip
t("unk-parcel", TR, "unknown", a_parcel_missing, "missing_parcel",
  "track parcel {trk} please")  # fmt: skip
t("unk-book", TR, "unknown", a_book_missing, "missing_title",
  "do you sell {title}?", "how much is {title}")  # fmt: skip
t("unk-nonum", TR, "unknown", a_no_number, "none",
  "where's my order?", "I want to return a book",
  "my parcel is late, can you check on it")  # fmt: skip

t("unk-order-x", TE, "unknown", a_order_missing, "missing_order",
  "Hello, could you look up order {oid} for me?")  # fmt: skip
t("unk-parcel-x", TE, "unknown", a_parcel_missing, "missing_parcel",
  "what's happening with tracking no. {trk}")  # fmt: skip
t("unk-book-x", TE, "unknown", a_book_missing, "missing_title",
  "is {title} in stock")  # fmt: skip
t("unk-nonum-x", TE, "unknown", a_no_number, "none",
  "when is my delivery coming?")  # fmt: skip


# ----------------------------------------------------------------------------- the 23 first tasks

LEGACY: tuple[tuple[str, str, str, Callable[[dict[str, Any]], Made], dict[str, Any]], ...] = (
    ("orders-1", "Hi, has my order PT-1043 shipped yet?", TE, a_status, {"oid": "PT-1043"}),
    ("orders-2", "what happened to order PT-1046?", TE, a_status, {"oid": "PT-1046"}),
    ("orders-3", "Can you tell me the status of PT-1041 please", TR, a_status, {"oid": "PT-1041"}),
    ("orders-4", "was PT-1047 delivered?", TR, a_status, {"oid": "PT-1047"}),
    ("orders-5", "Order PT-1044 - what did I buy and how much was it?", TR, a_items,
     {"oid": "PT-1044"}),
    ("tracking-1", "Where is my parcel for order PT-1042?", TE, a_track, {"oid": "PT-1042"}),
    ("tracking-2", "my order PT-1045 still hasn't come, where is it??", TR, a_track,
     {"oid": "PT-1045"}),
    ("tracking-3", "When will PT-1048 arrive?", TR, a_track, {"oid": "PT-1048"}),
    ("books-1", "Do you have Sapiens in stock?", TE, a_book("stock"), {"query": "Sapiens"}),
    ("books-2", "how much is The Road", TE, a_book("price"), {"query": "The Road"}),
    ("books-3", "Is The Hobbit available?", TR, a_book("stock"), {"query": "Hobbit"}),
    ("books-4", "Any books by Andy Weir?", TR, a_by_author, {"query": "Andy Weir"}),
    ("books-5", "price of Brave New World?", TR, a_book("price"), {"query": "Brave New World"}),
    ("books-6", "Do you sell The Book Thief", TR, a_book("price"), {"query": "Book Thief"}),
    ("policy-1", "How long do I have to return a book?", TE, a_policy("returns", "window"), {}),
    ("policy-2", "when do I get my refund?", TE, a_policy("refunds", "time"), {}),
    ("policy-3", "How much is delivery?", TR, a_policy("shipping", "cost"), {}),
    ("policy-4", "My book arrived with a torn cover, what can I do?", TR,
     a_policy("damaged", "report"), {}),
    ("policy-5", "is shipping free?", TR, a_policy("shipping", "cost"), {}),
    ("returns-1", "I'd like to return PT-1041, I got it as a duplicate gift", TE, a_return_ok,
     {"oid": "PT-1041", "reason": "duplicate gift"}),
    ("returns-2", "Please start a return for PT-1047 - wrong book", TR, a_return_ok,
     {"oid": "PT-1047", "reason": "wrong book"}),
    ("returns-3", "Can I return order PT-1044? didn't like it", TR, a_return_refused,
     {"oid": "PT-1044", "reason": "did not like it"}),
)  # fmt: skip
"""The first file's tasks (id, message, split, aspect, entity): same messages, calls and
splits; facts recomputed from the tools."""

JUDGE_TASK = {
    "id": "judge-1",
    "message": "Can I send back a book I already read?",
    "facts": [],
    "gold_calls": [call("get_policy", topic="returns")],
    "skills": POLICY,
    "category": "policy",
    "split": TR,
    "reference": "No: books can be returned within 30 days of delivery only if they are "
    "unread and undamaged.",
}
"""The one reference-only task (graded by an LLM judge); its reference is checked against
the returns policy below."""

LEGACY_BOOKS = {
    "books-1": "9780099590088",
    "books-2": "9780241950425",
    "books-3": "9780007525546",
    "books-5": "9780141182803",
    "books-6": "9780552779777",
}


# ----------------------------------------------------------------------------- customer voice

GREETINGS = ("Hi, ", "Hello, ", "hey ", "Hiya! ", "Good morning, ", "Hi there. ")
SIGN_OFFS = (" Thanks!", " thanks", " Cheers, Tom", " Many thanks, Priya", " ta", " Thank you :)")
TYPOS = {
    "please": ("pls", "plz"),
    "you": ("u",),
    "your": ("ur",),
    "thanks": ("thx",),
    "arrive": ("arive",),
    "arriving": ("ariving",),
    "what": ("wat",),
    "what's": ("whats",),
    "where's": ("wheres",),
    "it's": ("its",),
    "don't": ("dont",),
    "haven't": ("havent",),
    "still": ("stil",),
    "order": ("ordr", "oder"),
    "because": ("cos",),
    "know": ("kno",),
    "return": ("retrun",),
    "delivered": ("deliverd",),
    "available": ("availible",),
    "much": ("mcuh",),
}
SLOT = re.compile(r"\{(\w+)\}")


def voice(rng: random.Random, text: str) -> tuple[str, bool]:
    """A customer's way of writing `text` (slots untouched): maybe a greeting and a sign-off,
    maybe lower case and typos. Returns (text, whether entities are lower case too)."""
    lower = rng.random() < 0.3
    if rng.random() < 0.35:
        words = re.split(r"(\s+)", text)
        for i, word in enumerate(words):
            bare = word.strip("?,.!-:()")
            if bare.lower() in TYPOS and "{" not in word and rng.random() < 0.6:
                words[i] = word.replace(bare, rng.choice(TYPOS[bare.lower()]))
        text = "".join(words)
    starts_plain = not re.match(r"(?i)(hi|hello|hey|good|two|i have)\b", text)
    if starts_plain and rng.random() < 0.3:
        text = rng.choice(GREETINGS) + (text[0].lower() + text[1:] if text[:1].isupper() else text)
    if rng.random() < 0.25 and not re.search(r"(?i)(thanks|thank you)\W*$", text):
        sign_off = rng.choice(SIGN_OFFS)
        if text.rstrip()[-1:].isalnum() and sign_off[1:2].isupper():
            text = text.rstrip() + "."  # "... please. Many thanks, Priya"
        text = text.rstrip() + sign_off
    if lower:
        text = text.lower()
    return text, lower


def order_spelling(rng: random.Random, oid: str, lower: bool) -> str:
    digits = oid.split("-")[1]
    if lower:
        return rng.choice([f"pt-{digits}", f"pt{digits}", f"pt-{digits}", f"pt {digits}"])
    return oid if rng.random() < 0.85 else f"PT{digits}"


# ----------------------------------------------------------------------------- generation


@dataclass
class Generated:
    rows: list[dict[str, Any]]
    template_of: dict[str, str]
    entity_of: dict[str, str]
    pools: dict[str, Pools]


def answer_line(book: dict[str, Any]) -> str:
    """The assistant's earlier reply about a book, from the tool's result."""
    hit = book_hit(book["title"], book["isbn"])
    stock = "in stock" if hit["in_stock"] else "out of stock at the moment"
    return f"We do list {hit['title']} by {hit['author']}: {hit['format']}, {stock}."


def candidates(template: Template, pools: Pools) -> list[dict[str, Any]]:
    """Every entity that can fill `template` in its split, with a key naming it."""
    orders = [o for o in pools.orders if template.when is None or template.when(o)]
    books = pools.books()
    needs = template.needs
    if needs == "order":
        return [{"key": o, "oid": o} for o in orders]
    if needs == "trk":
        return [{"key": o, "oid": o, "trk": shop.ORDERS[o]["tracking_no"]} for o in orders]
    if needs == "book":
        return [{"key": b["isbn"], "isbn": b["isbn"], "title": b["title"]} for b in books]
    if needs == "book2":  # the task's book, and an earlier one from the history
        return [
            {"key": b["isbn"], "isbn": b["isbn"], "title": b["title"], "book2": b2}
            for b in books
            for b2 in books
            if b2["author"] != b["author"]
        ]
    if needs == "book+book2":
        return [
            {"key": f"{a['isbn']}+{b['isbn']}", "isbn": a["isbn"], "title": a["title"],
             "isbn2": b["isbn"], "title2": b["title"]}
            for a in books for b in books if a["author"] < b["author"]
        ]  # fmt: skip
    if needs == "order+order2":
        return [
            {"key": f"{a}+{b}", "oid": a, "oid2": b}
            for a in orders
            for b in orders
            if a < b and shop.ORDERS[a]["status"] != shop.ORDERS[b]["status"]
        ]
    if needs in ("author", "surname"):
        by = Counter(b["author"] for b in books)
        return [
            {"key": a, "author": a if needs == "author" else surname(a)}
            for a in sorted(by)
            if by[a] > 1
        ]
    if needs == "missing_order":
        return [{"key": o, "oid": o} for o in pools.missing_orders]
    if needs == "missing_parcel":
        return [{"key": p, "trk": p} for p in pools.missing_parcels]
    if needs == "missing_title":
        return [{"key": m, "title": m} for m in pools.missing_titles]
    assert needs == "none", needs
    return [{"key": "-"}]


def fill(
    rng: random.Random, template: Template, entity: dict[str, Any], pools: Pools
) -> tuple[str, list[dict[str, str]], dict[str, Any]]:
    """The message, history and entity (with the tool-facing `query`, `reason`) of one task."""
    e = dict(entity)
    if template.free:
        text, lower = voice(rng, template.text)
    else:
        text, lower = template.text, False
    slots = set(SLOT.findall(text)) | {s for _, h in template.history for s in SLOT.findall(h)}
    values: dict[str, str] = {}
    if "reason" in slots:
        e["reason"] = rng.choice(pools.reasons)
        values["reason"] = e["reason"].lower() if lower else e["reason"]
    for key in ("oid", "oid2"):
        if key in slots:
            values[key] = order_spelling(rng, e[key], lower)
    if "trk" in slots:
        values["trk"] = e["trk"].lower() if lower else e["trk"]
    if "title" in slots:
        values["title"] = e["title"].lower() if lower else e["title"]
        e["query"] = values["title"]
    if "title2" in slots and "book2" not in e:
        values["title2"] = e["title2"].lower() if lower else e["title2"]
        e["query2"] = values["title2"]
    if "author" in slots:
        values["author"] = e["author"].lower() if lower else e["author"]
        e["query"] = values["author"]
    if "book2" in e:
        values["title2"] = e["book2"]["title"]
        values["answer2"] = answer_line(e["book2"])
    message = text.format(**values)
    history = [{"role": r, "content": h.format(**values)} for r, h in template.history]
    return message, history, e


def row(
    tid: str, message: str, history: list[dict[str, str]], made: Made, category: str, split: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": tid, "message": message}
    if history:
        out["history"] = history
    out.update(
        facts=made.facts,
        gold_calls=made.calls,
        skills=made.skills,
        category=category,
        split=split,
    )
    return out


def generate() -> Generated:
    rng = random.Random(SEED)
    pools = make_pools(rng)
    rows: list[dict[str, Any]] = []
    template_of: dict[str, str] = {}
    entity_of: dict[str, str] = {}
    numbers: Counter[str] = Counter()

    for tid, message, split, make, entity in LEGACY:
        e = dict(entity)
        if tid in LEGACY_BOOKS:
            e["isbn"] = LEGACY_BOOKS[tid]
        category = tid.split("-")[0]
        rows.append(row(tid, message, [], make(e), category, split))
        numbers[category] = max(numbers[category], int(tid.split("-")[1]))
        template_of[tid] = f"legacy:{tid}"
        entity_of[tid] = str(e.get("oid") or e.get("isbn") or e.get("query") or "-")
    returns_text = get_policy("returns")["text"]
    assert all(states(returns_text, p) for p in ("30 days", "unread", "undamaged"))
    rows.append(dict(JUDGE_TASK))
    template_of["judge-1"], entity_of["judge-1"] = "legacy:judge-1", "returns"

    for category, (n_train, n_test) in COUNTS.items():
        for split, n in ((TR, n_train), (TE, n_test)):
            templates = [x for x in TEMPLATES if x.category == category and x.split == split]
            assert templates, (category, split)
            options = {x.tid: candidates(x, pools[split]) for x in templates}
            used: dict[str, set[str]] = {x.tid: set() for x in templates}
            load: Counter[str] = Counter()
            made_here = 0
            # One stream per category and split: more train tasks leave the test tasks as they are.
            rng = random.Random(f"{SEED}:{category}:{split}")
            order = list(templates)
            rng.shuffle(order)
            while made_here < n:
                progressed = False
                for template in order:
                    if made_here >= n:
                        break
                    free = [c for c in options[template.tid] if c["key"] not in used[template.tid]]
                    if not free:
                        continue
                    least = min(load[c["key"]] for c in free)
                    entity = rng.choice([c for c in free if load[c["key"]] == least])
                    used[template.tid].add(entity["key"])
                    load[entity["key"]] += 1
                    message, history, e = fill(rng, template, entity, pools[split])
                    numbers[category] += 1
                    tid = f"{category}-{numbers[category]}"
                    rows.append(row(tid, message, history, template.make(e), category, split))
                    template_of[tid] = template.tid
                    entity_of[tid] = entity["key"]
                    made_here += 1
                    progressed = True
                if not progressed:
                    raise SystemExit(f"{category}/{split}: only {made_here} of {n} tasks possible")
    return Generated(rows, template_of, entity_of, pools)


def render(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


# ----------------------------------------------------------------------------- checks


def hygiene(gen: Generated) -> list[str]:
    """Split hygiene (module doc)."""
    problems: list[str] = []
    split_of = {r["id"]: r["split"] for r in gen.rows}
    templates: dict[str, set[str]] = defaultdict(set)
    for tid, template in gen.template_of.items():
        templates[template].add(split_of[tid])
    problems += [f"template {t} is in both splits" for t, s in templates.items() if len(s) > 1]
    messages: dict[str, set[str]] = defaultdict(set)
    for r in gen.rows:
        messages[" ".join(r["message"].lower().split())].add(r["split"])
    problems += [f"message {m!r} is in both splits" for m, s in messages.items() if len(s) > 1]
    pairs = Counter((gen.template_of[i], gen.entity_of[i]) for i in gen.template_of)
    problems += [f"(template, entity) {p} is used twice" for p, n in pairs.items() if n > 1]
    train, test = gen.pools[TR], gen.pools[TE]
    for name in ("orders", "authors", "missing_orders", "missing_parcels", "missing_titles"):
        shared = set(getattr(train, name)) & set(getattr(test, name))
        if shared:
            problems.append(f"{name} in both pools: {sorted(shared)}")
    generated = [r for r in gen.rows if not gen.template_of[r["id"]].startswith("legacy:")]
    for r in generated:
        pool = train if r["split"] == TR else test
        other = test if r["split"] == TR else train
        for c in r["gold_calls"]:
            oid = c["arguments"].get("order_id")
            if oid and oid in other.orders:
                problems.append(f"{r['id']}: order {oid} is in the other split's pool")
            if oid and oid not in pool.orders and oid not in pool.missing_orders:
                problems.append(f"{r['id']}: order {oid} is in no pool of its split")
    return problems


SCHEMA_WORDS = {"object", "string", "integer", "number", "boolean", "array", "null"}
"""JSON Schema type names in distractor tools' parameters: structure, not bank text."""


def _whole_word(needle: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text) is not None


def bank_problems() -> list[str]:
    """The desk's banks validate, and train and held-out share no string, not even as whole
    words inside another string (the shipped banks' rule, tests/test_hsa_invariants.py), also
    when layered over the shipped banks; the operator edit's new names are in neither."""
    from core.hsa.banks import layer_bank, read_bank_folder
    from core.hsa.transform import Bank, BankName, load_bank

    problems: list[str] = []
    own: dict[str, set[str]] = {}
    layered: dict[str, set[str]] = {}
    for bank in BankName:
        try:
            data = read_bank_folder(EXAMPLE / "hsa" / bank.value)
            layered[bank.value] = layer_bank(load_bank(bank), EXAMPLE / "hsa").strings()
        except Exception as exc:  # the reader's message names the file and table
            problems.append(f"hsa/{bank.value}: {exc}")
            continue
        own[bank.value] = {x.lower().strip() for x in Bank(bank, data).strings()} - SCHEMA_WORDS
    if len(own) < 2:
        return problems
    for ours, theirs in ((TR, "heldout"), ("heldout", TR)):
        for needle in sorted(own[ours]):
            inside = [x for x in own[theirs] if _whole_word(needle, x)]
            if inside:
                problems.append(f"hsa/{ours} {needle!r} is in hsa/{theirs}: {inside[:3]}")
    shared = {x.lower() for x in layered[TR]} & {x.lower() for x in layered["heldout"]}
    if shared - SCHEMA_WORDS:
        problems.append(f"the layered banks share {sorted(shared - SCHEMA_WORDS)[:10]}")
    edit = ("get_order", "order_number", "catalogue_search", "orders-and-parcels")
    for name in edit:
        for label, strings in own.items():
            if any(_whole_word(name, x) for x in strings):
                problems.append(f"the edit's new name {name!r} is in hsa/{label}")
    return problems


def translated(task: Any, original: Any, edited: Any) -> Any:
    """`task` in the names of `edited`: tools by binding, parameters through `binding_args`,
    skills by role."""
    by_binding = {t.binding: t for t in edited.tools}
    calls = []
    for gold in task.gold_calls:
        source = next(t for t in original.tools if t.name == gold.tool)
        target = by_binding[source.binding]
        back = {v: k for k, v in target.binding_args.items()}
        arguments = {
            back.get(source.binding_args.get(k, k), source.binding_args.get(k, k)): v
            for k, v in gold.arguments.items()
        }
        calls.append({"tool": target.name, "arguments": arguments})
    roles = {str(s.metadata.get("role") or s.name): s.name for s in edited.skills}
    skills = [roles[s] for s in task.skills]
    return type(task).model_validate(
        {**task.model_dump(mode="json"), "gold_calls": calls, "skills": skills}
    )


async def gold_problems(path: Path) -> tuple[list[str], int]:
    """Every task's gold through the real tools, under the desk and under the edited desk;
    (problems, golds in which a tool refused)."""
    from core.episode.gold import gold_trace
    from core.harness.folder import import_folder
    from core.runtime.tool_runtime import ToolRuntime
    from core.runtime.trace import ToolCallStep
    from core.sim.graders import GraderResult
    from core.taskfile.grading import grade_own
    from core.taskfile.models import load_task_file

    desk = import_folder(EXAMPLE / "harness", trust_python_hooks=True)
    edited = import_folder(EXAMPLE / "harness-edited", trust_python_hooks=True)
    problems: list[str] = []
    refused = 0
    tasks = load_task_file(path)
    for label, harness in (("desk", desk), ("edited", edited)):
        async with ToolRuntime(harness) as tools:
            for task in tasks:
                played = task if harness is desk else translated(task, desk, edited)
                trace = await gold_trace(played, harness, tools)
                judged = GraderResult(score=1.0) if task.needs_judge else None
                grades = grade_own(task, trace, harness, written_for=desk, judged=judged)
                if harness is desk and any(s.error for s in trace.steps_of(ToolCallStep)):
                    refused += 1
                if not trace.ok or not grades.full_marks:
                    scores = grades.scores()
                    reasons = [
                        r
                        for g in (
                            grades.accuracy,
                            grades.effectiveness,
                            grades.tool_rationality,
                            grades.skill_selection,
                        )
                        for r in g.reasons
                    ]
                    problems.append(f"{label} {task.id}: {scores} {trace.reason or ''} {reasons}")
    return problems, refused


def summary(rows: list[dict[str, Any]]) -> str:
    counts = Counter((r["category"], r["split"]) for r in rows)
    categories = list(dict.fromkeys(r["category"] for r in rows))
    lines = [f"{'category':<10} {'train':>5} {'test':>5}"]
    for c in categories:
        lines.append(f"{c:<10} {counts[(c, TR)]:>5} {counts[(c, TE)]:>5}")
    train = sum(v for (_, s), v in counts.items() if s == TR)
    lines.append(f"{'all':<10} {train:>5} {len(rows) - train:>5}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="check the file; write nothing")
    args = parser.parse_args(argv)
    gen = generate()
    text = render(gen.rows)
    if not args.check:
        OUT.write_text(text, encoding="utf-8")
        print(f"wrote {OUT.relative_to(ROOT)}: {len(gen.rows)} tasks")
        print(summary(gen.rows))
        return 0
    problems: list[str] = []
    if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
        problems.append(f"{OUT.relative_to(ROOT)} is stale: run scripts/make_order_desk_tasks.py")
    problems += hygiene(gen)
    problems += bank_problems()
    golds, refused = asyncio.run(gold_problems(OUT))
    problems += golds
    print(summary(gen.rows))
    print(f"{refused} golds include a tool refusal (an unknown order or parcel, a refused return)")
    for p in problems:
        print(f"PROBLEM {p}")
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
