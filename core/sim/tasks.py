"""Seeded generator of viewer tasks over the demo catalog, split train/dev/test.

    tasks = generate_tasks(Split.TEST, seed=0)          # 45 per category by default

Splits are disjoint twice over, and both partitions are FIXED (independent of `seed`), so
training data generated with any seed never meets a test product or a test phrasing:

- by product: `split_links(catalog)` deals each category's link numbers into test / dev / train
  (about 30 / 20 / 50 %) with a fixed shuffle;
- by phrasing template: every template in core/sim/phrasings.py belongs to one split.

What a task's fields mean (the oracle and graders rely on this):

- `intents`: what the viewer wants, in the order the message asks. An intent's `link_no` is the
  product the message names by number; None means "this one", the room's pinned product
  (`room.pinned_link`, always a product of the task's split). A chit-chat intent has no product.
- comparison: `link_nos` are the products named by number, in message order; when the message
  also means the pinned product ("this one or link 8?"), `link_no` is None and `link_nos` has
  one entry. `link_no` is always None for comparisons.
- stock / purchase: `size`, `color` are set only when the message names them (product labels).
- shipping: `region` is the canonical region (the message may use an alias such as "NYC");
  None when the message names no region (the host should ask).
- size advice: `height_cm`, `weight_kg` when given (both lie in one row of the chart, so the
  recommended size is `catalog.recommend_size(...)` without ties); None when not given (ask).
- spec: `spec_key` is a key of the product's `specs`.
- after-sales: `topic` is return | exchange | warranty | refund; exchange may carry a size.
- adversarial: `claim` is one of the CLAIM_* phrases of phrasings.py.
- `room`: pinned product, promotions (some already ended at the clock), room-wide coupons (some
  expired) and the clock, a minute inside one of the weekend's show sessions.
- `seed`: per-task seed for anything random about running it (distractor placement, faults).

Suites: `ls-qa` is the test split (540 tasks at seed 0); `robustness` takes test tasks that
call tools and adds one or two `FaultSpec`s (every fault kind, on bindings the task's gold
behaviour calls) and 1-4 distractor tools. Bundled copies live in resources/tasks/*.jsonl and
are byte-reproducible: `suite_bytes(build_suite(name, seed=0))` equals the file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from core.jsonl import jsonl_lines
from core.sim.catalog import has_sizes, load_catalog, parse_time, recommend_size
from core.sim.faults import FAULT_KINDS
from core.sim.handlers import MATERIAL_KEYS
from core.sim.models import (
    Catalog,
    Category,
    CouponRule,
    FaultKind,
    FaultSpec,
    Intent,
    IntentKind,
    Product,
    Promotion,
    RoomState,
    Split,
    Task,
    TaskCategory,
)
from core.sim.phrasings import (
    CLAIM_LIFETIME_WARRANTY,
    CLAIM_LOWEST_PRICE,
    CLAIM_NEVER_BREAKS,
    CLAIM_PRICE_DROP,
    NEEDS_CHART,
    NEEDS_COLORS,
    NEEDS_DURABLE,
    NEEDS_FOOD,
    NEEDS_SIZES,
    NEEDS_SKIN,
    Template,
    templates,
)

SPLITS: tuple[Split, ...] = (Split.TRAIN, Split.DEV, Split.TEST)
CATEGORIES: tuple[TaskCategory, ...] = tuple(TaskCategory)
DEFAULT_PER_CATEGORY: dict[Split, int] = {Split.TRAIN: 150, Split.DEV: 20, Split.TEST: 45}
SPLIT_SHARE = {Split.TEST: 0.3, Split.DEV: 0.2}  # train: the rest
SUITES = ("ls-qa", "robustness")

SPEC_FAMILIES: dict[str, tuple[str, ...]] = {
    "material": MATERIAL_KEYS[:5],
    "battery": ("battery life",),
    "ingredients": ("ingredients", "key ingredients"),
    "water": ("water resistance", "waterproof rating", "waterproofing", "water friendly"),
}
GENERIC_SPEC_SKIP = frozenset({"ships from"})

# Show sessions (UTC) of the weekend; the clock of a task is a minute inside one of them.
SESSIONS: tuple[tuple[str, int], ...] = (
    ("2025-06-13T19:00:00+00:00", 240),
    ("2025-06-14T12:00:00+00:00", 660),
    ("2025-06-15T12:00:00+00:00", 660),
)
REGION_ALIASES: dict[str, tuple[str, ...]] = {
    "California": ("Cali", "LA", "California", "SF"),
    "Texas": ("TX", "Houston", "Texas"),
    "New York": ("NYC", "NY", "New York"),
    "Florida": ("FL", "Miami", "Florida"),
    "Illinois": ("Chicago", "IL", "Illinois"),
    "Washington": ("Seattle", "WA", "Washington state"),
    "Alaska": ("Anchorage", "Alaska"),
    "Hawaii": ("Honolulu", "Hawaii"),
    "Canada": ("Toronto", "Vancouver", "Canada"),
}
PROMOTIONS: tuple[tuple[str, str], ...] = (
    ("Flash deal", "Link {n}: free gift wrap and a handwritten card with every order"),
    ("Free sample", "Orders of link {n} get a free travel-size sample"),
    ("Early bird", "The first 100 orders of link {n} get a free canvas tote"),
    ("Live exclusive", "Link {n} ships with a free care kit during the show"),
    ("Lucky draw", "Every order in the next hour enters a draw for a 50 USD gift card"),
    ("Bundle bonus", "Buy link {n} with any other link and get a free mystery gift"),
)
ROOM_COUPON_CODES = ("LIVEROOM", "WEEKEND", "HELLOLIVE", "ROOMVIP")


# ----------------------------------------------------------------------------- partitions


def split_links(catalog: Catalog | None = None) -> dict[Split, list[int]]:
    """The fixed product partition: per category, a seed-independent shuffle of its link
    numbers, dealt ~30 % test, ~20 % dev, the rest train (each split gets at least one product
    of every category with 3+ products). Sorted link numbers per split."""
    cat = catalog if catalog is not None else load_catalog()
    out: dict[Split, list[int]] = {s: [] for s in SPLITS}
    for category in Category:
        links = sorted(p.link_no for p in cat.products if p.category is category)
        random.Random(f"hat-partition:{category.value}").shuffle(links)
        n = len(links)
        n_test = max(1, round(n * SPLIT_SHARE[Split.TEST])) if n >= 3 else 0
        n_dev = max(1, round(n * SPLIT_SHARE[Split.DEV])) if n >= 3 else 0
        out[Split.TEST] += links[:n_test]
        out[Split.DEV] += links[n_test : n_test + n_dev]
        out[Split.TRAIN] += links[n_test + n_dev :]
    return {s: sorted(v) for s, v in out.items()}


def split_of_link(link_no: int, catalog: Catalog | None = None) -> Split | None:
    for split, links in split_links(catalog).items():
        if link_no in links:
            return split
    return None


# ----------------------------------------------------------------------------- product fit


def spec_keys(product: Product, family: str | None) -> list[str]:
    """Spec keys of `product` a template can ask about (a fixed family, or any)."""
    if family is None:
        return [k for k in product.specs if k not in GENERIC_SPEC_SKIP]
    return [k for k in SPEC_FAMILIES[family] if k in product.specs]


def product_fits(product: Product, template: Template) -> bool:
    """Whether the template's slots and claims make sense for `product`."""
    for need in template.needs:
        if need == NEEDS_SIZES and not has_sizes(product):
            return False
        if need == NEEDS_COLORS and len(product.colors) < 2:
            return False
        if need == NEEDS_CHART and not _chart_rows(product):
            return False
        if need == NEEDS_SKIN and product.category is not Category.BEAUTY:
            return False
        if need == NEEDS_FOOD and product.category is not Category.FOOD:
            return False
        if need == NEEDS_DURABLE and product.category in (Category.FOOD, Category.BEAUTY):
            return False
        if need.startswith("spec:") and not spec_keys(product, need[5:]):
            return False
    return not ("{spec}" in template.text and not spec_keys(product, template.spec))


def _chart_rows(product: Product) -> list[Any]:
    return [
        r for r in product.size_chart or [] if r.height_cm is not None and r.weight_kg is not None
    ]


# ----------------------------------------------------------------------------- generation


def generate_tasks(
    split: Split,
    *,
    seed: int = 0,
    per_category: int | None = None,
    catalog: Catalog | None = None,
    categories: Sequence[TaskCategory] | None = None,
) -> list[Task]:
    """`per_category` tasks (default DEFAULT_PER_CATEGORY[split]) of each category for `split`.

    Deterministic in (split, seed, per_category, catalog, categories). Within a category the
    split's templates are used round-robin (every template appears once `per_category` reaches
    their number); products, slot values and room states are drawn from
    `random.Random(f"{seed}:{split}:{category}")`, so adding a category never changes another's
    tasks. Task ids: `<split>.<category>.<nnnn>`.
    """
    cat = catalog if catalog is not None else load_catalog()
    count = per_category if per_category is not None else DEFAULT_PER_CATEGORY[split]
    links = split_links(cat)[split]
    products = [p for p in cat.products if p.link_no in links]
    tasks: list[Task] = []
    for category in categories or CATEGORIES:
        rng = random.Random(f"{seed}:{split.value}:{category.value}")
        usable = [
            t for t in templates(category, split) if any(product_fits(p, t) for p in products)
        ]
        if not usable:
            raise ValueError(
                f"no {category.value} template of split {split.value} fits its products"
            )
        for i in range(count):
            template = usable[i % len(usable)]
            task_id = f"{split.value}.{category.value}.{i:04d}"
            tasks.append(_make_task(task_id, split, template, products, cat, rng))
    return tasks


def _make_task(
    task_id: str,
    split: Split,
    template: Template,
    products: list[Product],
    catalog: Catalog,
    rng: random.Random,
) -> Task:
    fitting = [p for p in products if product_fits(p, template)]
    product = rng.choice(fitting)
    slots: dict[str, str] = {"link": str(product.link_no)}
    text = template.text
    size: str | None = None
    color: str | None = None
    if "{size}" in text or "{color}" in text:
        size, color = _variant(product, rng, "{size}" in text, "{color}" in text)
        if size is not None:
            slots["size"] = size
        if color is not None:
            slots["color"] = color
    region: str | None = None
    if "{region}" in text:
        region = _region(catalog, product, rng)
        slots["region"] = rng.choice(REGION_ALIASES.get(region, (region,)))
    spec_key: str | None = None
    if "{spec}" in text or template.spec is not None:
        spec_key = rng.choice(spec_keys(product, template.spec))
        slots["spec"] = spec_key
    height = weight = None
    if "{height}" in text:
        row = rng.choice(_chart_rows(product))
        height = rng.randint(*row.height_cm)
        weight = rng.randint(*row.weight_kg)
        assert recommend_size(product.size_chart or [], height, weight) == row.size
        slots["height"] = str(height)
        slots["weight"] = str(weight)
    others: list[int] = []
    if "{link2}" in text:
        want = 2 if "{link3}" in text else 1
        others = _comparison_partners(product, products, want, rng)
        slots["link2"] = str(others[0])
        if want == 2:
            slots["link3"] = str(others[1])
    message = text.format(**slots)
    if rng.random() < 0.15 and any(c.isupper() for c in message):
        message = message.lower()

    pinned_ref = template.ref == "pinned"
    link = None if pinned_ref else product.link_no
    intents: list[Intent] = []
    for kind in template.kinds:
        intents.append(
            _intent(
                kind, template, link, product, others, size, color, region, spec_key, height, weight
            )
        )
    pinned = product.link_no if pinned_ref else rng.choice(products).link_no
    room = _room(catalog, products, pinned, rng)
    return Task(
        id=task_id,
        split=split,
        category=template.category,
        viewer_message=message,
        template_id=template.id,
        intents=intents,
        room=room,
        seed=rng.randrange(1, 2**31),
    )


def _intent(
    kind: IntentKind,
    template: Template,
    link: int | None,
    product: Product,
    others: list[int],
    size: str | None,
    color: str | None,
    region: str | None,
    spec_key: str | None,
    height: int | None,
    weight: int | None,
) -> Intent:
    if kind is IntentKind.CHIT_CHAT:
        return Intent(kind=kind)
    if kind is IntentKind.COMPARISON:
        named = ([link] if link is not None else []) + others
        return Intent(kind=kind, link_no=None, link_nos=named)
    fields: dict[str, Any] = {}
    if kind in (IntentKind.STOCK, IntentKind.PURCHASE_INTENT):
        fields = {"size": size, "color": color}
    elif kind is IntentKind.SHIPPING:
        fields = {"region": region}
    elif kind is IntentKind.SPEC:
        fields = {"spec_key": spec_key}
    elif kind is IntentKind.SIZE_ADVICE:
        fields = {"height_cm": height, "weight_kg": weight}
    elif kind is IntentKind.AFTER_SALES:
        fields = {"topic": template.topic}
        if template.topic == "exchange":
            fields.update(size=size, color=color)
    elif kind is IntentKind.ADVERSARIAL:
        fields = {"claim": template.claim}
    return Intent(kind=kind, link_no=link, **fields)


def _variant(
    product: Product, rng: random.Random, want_size: bool, want_color: bool
) -> tuple[str | None, str | None]:
    """A (size, colour) to ask about, biased towards sold-out and low-stock variants."""
    cells = [(s, c, product.stock[s][c]) for s in product.sizes for c in product.colors]
    roll = rng.random()
    pool = cells
    if roll < 0.25:
        pool = [x for x in cells if x[2] == 0] or cells
    elif roll < 0.4:
        pool = [x for x in cells if 0 < x[2] <= 5] or cells
    s, c, _ = rng.choice(pool)
    return (s if want_size else None), (c if want_color else None)


def _region(catalog: Catalog, product: Product, rng: random.Random) -> str:
    """Mostly regions the product ships to; sometimes one it does not (food to Canada)."""
    shipped = [r for r in catalog.regions if r in product.shipping]
    unshipped = [r for r in catalog.regions if r not in product.shipping]
    if unshipped and rng.random() < 0.3:
        return rng.choice(unshipped)
    return rng.choice(shipped or catalog.regions)


def _comparison_partners(
    product: Product, products: list[Product], want: int, rng: random.Random
) -> list[int]:
    same = [p.link_no for p in products if p.category is product.category and p is not product]
    other = [p.link_no for p in products if p.category is not product.category]
    rng.shuffle(same)
    rng.shuffle(other)
    pool = same + other if rng.random() < 0.85 else other + same
    return pool[:want]


def _room(catalog: Catalog, products: list[Product], pinned: int, rng: random.Random) -> RoomState:
    start, minutes = rng.choice(SESSIONS)
    now = parse_time(start) + timedelta(minutes=rng.randrange(minutes))
    promotions: list[Promotion] = []
    for name, text in rng.sample(PROMOTIONS, rng.choice([0, 1, 1, 2])):
        link_no = rng.choice([pinned, rng.choice(products).link_no])
        ended = rng.random() < 0.25
        delta = timedelta(minutes=rng.randrange(5, 60) if ended else rng.randrange(10, 120))
        promotions.append(
            Promotion(
                name=name,
                description=text.format(n=link_no),
                link_nos=[link_no] if "{n}" in text else [],
                ends_at=_iso(now - delta if ended else now + delta),
            )
        )
    coupons: list[CouponRule] = []
    for code in rng.sample(ROOM_COUPON_CODES, rng.choice([0, 0, 1, 1, 2])):
        amount = float(rng.choice([3, 5, 8, 10]))
        threshold = float(rng.choice([0, 30, 50, 80]))
        expired = rng.random() < 0.3
        delta = timedelta(minutes=rng.randrange(10, 600))
        coupons.append(
            CouponRule(
                code=f"{code}{int(amount)}",
                threshold=threshold,
                amount=amount,
                expires=_iso(now - delta if expired else now + delta),
            )
        )
    return RoomState(
        pinned_link=pinned, promotions=promotions, room_coupons=coupons, clock=_iso(now)
    )


def _iso(moment: Any) -> str:
    text: str = moment.isoformat(timespec="seconds")
    return text


# ----------------------------------------------------------------------------- fault targets


def fault_targets(task: Task) -> list[str]:
    """Bindings the task's correct behaviour surely calls (where an injected fault bites).

    Conservative: the room status for a "this one" intent; per intent the call its answer
    cannot do without (product card for price/spec and price claims, stock, coupons,
    shipping with a region, size chart with measurements, comparison, after-sales policy,
    warranty for warranty claims). Empty for chit-chat and for asks that need no tool.
    """
    out: list[str] = []

    def add(binding: str) -> None:
        if binding not in out:
            out.append(binding)

    for intent in task.intents:
        kind = intent.kind
        if kind is IntentKind.CHIT_CHAT:
            continue
        pinned = intent.link_no is None and (
            kind is not IntentKind.COMPARISON or len(intent.link_nos) < 2
        )
        if pinned and task.room.pinned_link is not None:
            add("sim.get_live_room_status")
        if kind in (IntentKind.PRICE, IntentKind.SPEC):
            add("sim.get_product_by_link")
        elif kind is IntentKind.STOCK:
            add("sim.check_stock")
        elif kind is IntentKind.COUPON:
            add("sim.list_coupons")
        elif kind is IntentKind.SHIPPING and intent.region is not None:
            add("sim.get_shipping_info")
        elif kind is IntentKind.SIZE_ADVICE and intent.height_cm is not None:
            add("sim.get_size_chart")
        elif kind is IntentKind.COMPARISON:
            add("sim.compare_products")
        elif kind is IntentKind.AFTER_SALES:
            add("sim.get_after_sales_policy")
        elif kind is IntentKind.PURCHASE_INTENT:
            if intent.link_no is not None:
                add("sim.get_product_by_link")
            if intent.size is not None or intent.color is not None:
                add("sim.check_stock")
        elif kind is IntentKind.ADVERSARIAL:
            if intent.claim in (CLAIM_LOWEST_PRICE, CLAIM_PRICE_DROP):
                if intent.link_no is not None or task.room.pinned_link is not None:
                    add("sim.get_product_by_link")
            elif intent.claim in (CLAIM_LIFETIME_WARRANTY, CLAIM_NEVER_BREAKS):
                add("sim.get_after_sales_policy")
    return out


# ----------------------------------------------------------------------------- suites


def build_suite(name: str, *, seed: int = 0, catalog: Catalog | None = None) -> list[Task]:
    """`ls-qa`: the test split. `robustness`: test tasks with faults and distractor tools."""
    if name == "ls-qa":
        return generate_tasks(Split.TEST, seed=seed, catalog=catalog)
    if name == "robustness":
        return robustness_tasks(generate_tasks(Split.TEST, seed=seed, catalog=catalog), seed=seed)
    raise ValueError(f"unknown suite {name!r}; suites: {', '.join(SUITES)}")


def robustness_tasks(base: Iterable[Task], *, seed: int = 0, count: int = 300) -> list[Task]:
    """Up to `count` tasks derived from `base` (tasks with a fault target), each with one fault
    (every fifth task two, on different bindings), fault kinds in rotation so every kind is
    equally represented, and 1-4 distractor tools. Ids: `robustness.<base id>`."""
    rng = random.Random(f"{seed}:robustness")
    candidates = [t for t in base if fault_targets(t)]
    rng.shuffle(candidates)
    chosen = sorted(candidates[:count], key=lambda t: t.id)
    out: list[Task] = []
    kinds: list[FaultKind] = list(FAULT_KINDS)
    for i, task in enumerate(chosen):
        targets = fault_targets(task)
        faults = [
            FaultSpec(
                binding=rng.choice(targets),
                kind=kinds[i % len(kinds)],
                on_call=1,
            )
        ]
        if i % 5 == 4 and len(targets) > 1:
            second = rng.choice([b for b in targets if b != faults[0].binding])
            kind = kinds[(i // 5) % len(kinds)]
            faults.append(FaultSpec(binding=second, kind=kind, on_call=1))
        out.append(
            task.model_copy(
                update={
                    "id": f"robustness.{task.id}",
                    "faults": faults,
                    "distractor_tools": rng.randint(1, 4),
                },
                deep=True,
            )
        )
    return out


def task_line(task: Task) -> str:
    """One JSONL line: sorted keys, compact separators, UTF-8 text."""
    return json.dumps(
        task.model_dump(mode="json"), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )


def suite_bytes(tasks: Iterable[Task]) -> bytes:
    return "".join(task_line(t) + "\n" for t in tasks).encode("utf-8")


def write_tasks(tasks: Iterable[Task], path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(suite_bytes(tasks))
    return out


def read_tasks(path: str | Path) -> list[Task]:
    """Tasks from a JSONL file; ValueError naming the file and line on bad input."""
    file = Path(path)
    tasks = []
    for number, line in enumerate(jsonl_lines(file.read_text(encoding="utf-8")), start=1):
        if not line.strip():
            continue
        try:
            tasks.append(Task.model_validate_json(line))
        except ValueError as exc:
            raise ValueError(f"{file}:{number}: not a valid task: {exc}") from None
    return tasks


def suite_path(name: str) -> Path:
    """resources/tasks/<name>.jsonl (the bundled copy at seed 0)."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; suites: {', '.join(SUITES)}")
    root = resources.files("resources")
    if not isinstance(root, Path):
        raise FileNotFoundError("the resources package is not installed as plain files")
    return root / "tasks" / f"{name}.jsonl"


def load_suite(name: str) -> list[Task]:
    """The bundled suite (seed 0, bundled catalog)."""
    return read_tasks(suite_path(name))


def category_counts(tasks: Iterable[Task]) -> dict[TaskCategory, int]:
    counts = dict.fromkeys(CATEGORIES, 0)
    for task in tasks:
        counts[task.category] += 1
    return counts
