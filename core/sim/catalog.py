"""The demo catalog: loading, validation and the small computations every part of the sim shares.

The bundled catalog is resources/catalog/catalog.json, generated deterministically by
scripts/build_catalog.py (75 products in 7 categories, link numbers between 1 and 120). The
show it belongs to runs over one weekend, `SHOW_START` to `SHOW_END`; coupon expiries are
spread before, during and after it, so whether a coupon is valid depends on the room clock.

Conventions of the catalog data:

- `colors` is the product's variant axis: a colour, a shade (lipstick), a flavour (snacks) or a
  pack size; `sizes` is `["One Size"]` for products without sizes.
- `stock[size][color]` is units on hand; 0 is sold out, 1-`LOW_STOCK` is low stock.
- A coupon is valid while the room clock is before its `expires`; `threshold` is the minimum
  spend (0: none). One coupon per order: coupons never stack.
- `shipping` lists only the regions the product ships to; `fee` 0 means free shipping.
- Apparel size charts carry height and weight ranges that tile the population without overlap,
  so `recommend_size` is a function of (chart, height, weight).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from core.sim.models import Catalog, CouponRule, Product, SizeChartRow

SHOW_START = "2025-06-13T19:00:00+00:00"
SHOW_END = "2025-06-15T23:00:00+00:00"
LOW_STOCK = 5
"""Units at or below which a variant is reported as `low_stock`."""
ONE_SIZE = "One Size"


class CatalogError(ValueError):
    """A catalog file that cannot be read or does not validate; the message names file and field."""


def default_catalog_path() -> Path:
    """resources/catalog/catalog.json inside the installed `resources` package."""
    root = resources.files("resources")
    if not isinstance(root, Path):  # a zipped install
        raise CatalogError("the resources package is not installed as plain files")
    return root / "catalog" / "catalog.json"


_CACHE: dict[tuple[str, float], Catalog] = {}


def load_catalog(path: str | Path | None = None) -> Catalog:
    """Read and validate a catalog JSON file (default: the bundled demo catalog).

    Raises CatalogError naming the file and the first offending field, e.g.
    `catalog.json: products.3.price: Input should be greater than 0`. Also checks what the
    schema cannot: unique link numbers, stock keyed by the product's sizes and colours, size
    charts covering the sizes, shipping regions among `regions`. Loads are cached per
    (path, mtime); the returned Catalog is shared, so treat it as read-only.
    """
    file = Path(path) if path is not None else default_catalog_path()
    try:
        key = (str(file.resolve()), file.stat().st_mtime)
    except OSError as exc:
        raise CatalogError(f"{file}: cannot read catalog: {exc.strerror or exc}") from None
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"{file}: cannot read catalog: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CatalogError(f"{file}: not valid JSON: {exc}") from None
    catalog = parse_catalog(data, source=str(file))
    _CACHE[key] = catalog
    return catalog


def parse_catalog(data: object, *, source: str = "catalog") -> Catalog:
    """Validate catalog data already parsed from JSON; errors name `source` and the field."""
    try:
        catalog = Catalog.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        raise CatalogError(f"{source}: {where}: {first['msg']}{more}") from None
    problems = catalog_problems(catalog)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise CatalogError(f"{source}: {problems[0]}{more}")
    return catalog


def catalog_problems(catalog: Catalog) -> list[str]:
    """Consistency problems the pydantic schema cannot express, each naming its field."""
    problems: list[str] = []
    seen: set[int] = set()
    regions = set(catalog.regions)
    for i, p in enumerate(catalog.products):
        where = f"products.{i}"
        if p.link_no in seen:
            problems.append(f"{where}.link_no: duplicate link number {p.link_no}")
        seen.add(p.link_no)
        if not p.colors:
            problems.append(f"{where}.colors: at least one colour or variant is required")
        if not p.sizes:
            problems.append(f"{where}.sizes: at least one size is required")
        if p.list_price < p.price:
            problems.append(f"{where}.list_price: {p.list_price} is below price {p.price}")
        if set(p.stock) != set(p.sizes):
            problems.append(f"{where}.stock: keys {sorted(p.stock)} differ from sizes {p.sizes}")
        for size, row in p.stock.items():
            if set(row) != set(p.colors):
                problems.append(f"{where}.stock.{size}: colours {sorted(row)} differ from colors")
            for color, units in row.items():
                if units < 0:
                    problems.append(f"{where}.stock.{size}.{color}: negative units {units}")
        if p.size_chart is not None and [r.size for r in p.size_chart] != p.sizes:
            problems.append(f"{where}.size_chart: rows do not match sizes {p.sizes}")
        for region in p.shipping:
            if region not in regions:
                problems.append(f"{where}.shipping.{region}: region not in catalog regions")
        for j, option in enumerate(p.shipping.values()):
            if option.days_max < option.days_min:
                problems.append(f"{where}.shipping.{j}: days_max below days_min")
        for j, coupon in enumerate(p.coupons):
            try:
                parse_time(coupon.expires)
            except ValueError:
                problems.append(f"{where}.coupons.{j}.expires: not ISO 8601: {coupon.expires!r}")
    return problems


# ----------------------------------------------------------------------------- shared helpers


def parse_time(value: str) -> datetime:
    """ISO 8601 to an aware datetime (naive values are taken as UTC)."""
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def coupon_valid(coupon: CouponRule, clock: str) -> bool:
    """Valid while the clock is strictly before the expiry."""
    return parse_time(clock) < parse_time(coupon.expires)


def has_sizes(product: Product) -> bool:
    return product.sizes != [ONE_SIZE]


def stock_status(units: int) -> str:
    """`sold_out` (0), `low_stock` (1..LOW_STOCK) or `in_stock`."""
    if units <= 0:
        return "sold_out"
    return "low_stock" if units <= LOW_STOCK else "in_stock"


def total_units(product: Product) -> int:
    return sum(sum(row.values()) for row in product.stock.values())


def recommend_size(chart: list[SizeChartRow], height_cm: int, weight_kg: int) -> str | None:
    """The size-advice rule of the demo harness's size-advice skill, as a function.

    The row whose height and weight ranges (inclusive) hold both values; if height and weight
    fall in different rows, the larger of the two (rows are ordered small to large); values
    beyond the chart clamp to its first or last row. None when the chart has no height/weight
    ranges (shoes, bedding) or no rows.
    """
    rows = [r for r in chart if r.height_cm is not None and r.weight_kg is not None]
    if not rows:
        return None

    def index(value: int, ranges: list[tuple[int, int]]) -> int:
        for i, (lo, hi) in enumerate(ranges):
            if lo <= value <= hi:
                return i
        if value < ranges[0][0]:
            return 0
        if value > ranges[-1][1]:
            return len(ranges) - 1
        # in a gap between rows: the next row up
        return next(i for i, (lo, _) in enumerate(ranges) if value < lo)

    heights = [r.height_cm for r in rows if r.height_cm is not None]
    weights = [r.weight_kg for r in rows if r.weight_kg is not None]
    return rows[max(index(height_cm, heights), index(weight_kg, weights))].size
