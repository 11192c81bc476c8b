"""PNG plots for evaluation reports (core/eval/report.py).

matplotlib is imported inside the functions (it costs ~0.5 s and nothing else in core needs
it), and only through its object API with the Agg canvas: no pyplot, so no global backend is
chosen and a Qt application that imports this module keeps its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.eval.results import HV_BASE, SUITE_LABELS, Suite

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from core.eval.report import EvalReport
    from core.eval.stats import DimensionCost, Interval, VariantDistribution

PALETTE = ("#3b6fb6", "#e07b39", "#4a9c5d", "#b5485d", "#7a5fb0", "#8c7a5b", "#3aa6a6")
"""Colour per model, in the order the models are given."""
INK = "#2b2b2b"
GRID = "#e3e3e3"
DPI = 150


def _figure(width: float, height: float) -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.spines[["top", "right"]].set_visible(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_color("#9a9a9a")
    ax.tick_params(colors=INK, labelsize=9)
    ax.set_axisbelow(True)
    return fig, ax


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, facecolor="white")
    return path


def _whiskers(cis: Sequence[Interval | None]) -> np.ndarray[Any, np.dtype[np.float64]]:
    lo = [max(0.0, ci.mean - ci.low) if ci else 0.0 for ci in cis]
    hi = [max(0.0, ci.high - ci.mean) if ci else 0.0 for ci in cis]
    return np.array([lo, hi], dtype=np.float64)


def _legend(ax: Axes, count: int) -> None:
    if count > 1:
        ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))


# ----------------------------------------------------------------------------- scores


def plot_scores(reports: Mapping[str, EvalReport], path: Path, *, title: str | None = None) -> Path:
    """Grouped bars: suites on x, one bar per model, 95 % interval whiskers, value labels."""
    suites = [s for s in Suite if any(r.suite(s) for r in reports.values())]
    labels = list(reports)
    width = 0.8 / max(1, len(labels))
    fig, ax = _figure(max(4.8, 1.2 + 1.3 * len(suites) * max(1, len(labels)) ** 0.5), 3.6)
    x = np.arange(len(suites), dtype=np.float64)
    level = next(iter(reports.values())).level if reports else 0.95
    for i, label in enumerate(labels):
        report = reports[label]
        cis = [sr.score if (sr := report.suite(s)) else None for s in suites]
        means = [ci.mean if ci else np.nan for ci in cis]
        pos = x - 0.4 + width * (i + 0.5)
        color = PALETTE[i % len(PALETTE)]
        ax.bar(pos, means, width * 0.92, color=color, label=label, zorder=2)
        ax.errorbar(
            pos, means, yerr=_whiskers(cis), fmt="none", ecolor=INK, elinewidth=1.1,
            capsize=3, zorder=3,
        )  # fmt: skip
        for p, ci in zip(pos, cis, strict=True):
            if ci is not None:
                ax.annotate(
                    f"{ci.mean:.2f}",
                    (p, ci.high),
                    xytext=(0, 3),
                    textcoords="offset points",
                    ha="center",
                    fontsize=7.5,
                    color=INK,
                )
    ax.set_xticks(x, [SUITE_LABELS[s] for s in suites])
    ax.set_ylim(0, 1.12)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.yaxis.grid(True, color=GRID, linewidth=0.8)
    ax.set_ylabel("score", color=INK)
    heading = title or "Score by suite"
    ax.set_title(
        f"{heading}\nbars: mean; whiskers: {level:.0%} bootstrap interval over tasks",
        fontsize=10,
        color=INK,
    )
    _legend(ax, len(labels))
    return _save(fig, path)


# ----------------------------------------------------------------------------- variants


def plot_variants(
    distributions: Mapping[str, VariantDistribution], path: Path, *, title: str = "HV-QA"
) -> Path:
    """Per model, the scores of every harness variant: a box, the variants as jittered dots,
    the mean (diamond), P5 (bar) and the worst variant (cross)."""
    labels = list(distributions)
    fig, ax = _figure(max(4.4, 1.4 + 1.5 * len(labels)), 4.0)
    rng = np.random.default_rng(0)  # the same jitter on every run
    data = [np.asarray(distributions[label].scores, dtype=np.float64) for label in labels]
    positions = np.arange(1, len(labels) + 1, dtype=np.float64)
    box = ax.boxplot(
        data,
        positions=positions,
        widths=0.5,
        showfliers=False,
        patch_artist=True,
        medianprops={"color": INK, "linewidth": 1.2},
        whiskerprops={"color": "#8a8a8a"},
        capprops={"color": "#8a8a8a"},
    )
    for i, patch in enumerate(box["boxes"]):
        patch.set_facecolor(PALETTE[i % len(PALETTE)])
        patch.set_alpha(0.25)
        patch.set_edgecolor(PALETTE[i % len(PALETTE)])
    for i, (pos, values) in enumerate(zip(positions, data, strict=True)):
        color = PALETTE[i % len(PALETTE)]
        jitter = rng.uniform(-0.17, 0.17, size=values.size)
        ax.scatter(pos + jitter, values, s=12, color=color, alpha=0.65, linewidths=0, zorder=3)
        dist = distributions[labels[i]]
        first = i == 0
        ax.scatter(
            [pos], [dist.mean], marker="D", s=38, color="white", edgecolors=INK,
            zorder=4, label="mean" if first else "_nolegend_",
        )  # fmt: skip
        ax.hlines(
            dist.p5, pos - 0.3, pos + 0.3, colors="#b5485d", linestyles="--", linewidth=1.3,
            zorder=4, label="P5" if first else "_nolegend_",
        )  # fmt: skip
        ax.scatter(
            [pos + 0.34], [dist.worst], marker="x", s=32, color="#b5485d", zorder=4,
            label="worst" if first else "_nolegend_",
        )  # fmt: skip
    ticks = [
        f"{label}\n{d.variants} variants\nmean {d.mean:.2f} · P5 {d.p5:.2f}\nworst {d.worst:.2f}"
        for label, d in distributions.items()
    ]
    ax.set_xticks(positions, ticks, fontsize=8)
    ax.set_xlim(0.45, len(labels) + 0.6)
    ax.set_ylim(-0.04, 1.04)
    ax.yaxis.grid(True, color=GRID, linewidth=0.8)
    ax.set_ylabel("variant score", color=INK)
    ax.set_title(f"{title}: score distribution over harness variants", fontsize=10, color=INK)
    ax.legend(frameon=False, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _save(fig, path)


# ----------------------------------------------------------------------------- dimensions


def plot_dimensions(dimensions: Mapping[str, Sequence[DimensionCost]], path: Path) -> Path:
    """Per HSA dimension, the cost against the original harness (LS-QA − HV-QA on the same
    tasks) with its interval, one bar per model; costliest (first model) at the top. Without
    LS-QA rows the HV-QA score per dimension is drawn instead."""
    labels = list(dimensions)
    use_cost = any(d.cost is not None for dims in dimensions.values() for d in dims)
    order: list[str] = []
    for dims in dimensions.values():
        for d in dims:
            if d.dimension not in order:
                order.append(d.dimension)
    height = 0.8 / max(1, len(labels))
    fig, ax = _figure(6.4, max(2.6, 0.9 + 0.42 * len(order) * max(1, len(labels)) ** 0.5))
    y = np.arange(len(order), dtype=np.float64)[::-1]
    for i, label in enumerate(labels):
        by_name = {d.dimension: d for d in dimensions[label]}
        cis: list[Interval | None] = []
        for name in order:
            found = by_name.get(name)
            cis.append(None if found is None else (found.cost if use_cost else found.score))
        means = [ci.mean if ci else np.nan for ci in cis]
        pos = y + 0.4 - height * (i + 0.5)
        color = PALETTE[i % len(PALETTE)]
        ax.barh(pos, means, height * 0.9, color=color, label=label, zorder=2)
        ax.errorbar(
            means, pos, xerr=_whiskers(cis), fmt="none", ecolor=INK, elinewidth=1.0,
            capsize=2.5, zorder=3,
        )  # fmt: skip
        for p, ci in zip(pos, cis, strict=True):
            if ci is not None:
                right = ci.high if ci.mean >= 0 else ci.low
                ax.annotate(
                    f"{ci.mean:+.2f}".replace("-", "−") if use_cost else f"{ci.mean:.2f}",
                    (right, p),
                    xytext=(4 if ci.mean >= 0 else -4, 0),
                    textcoords="offset points",
                    ha="left" if ci.mean >= 0 else "right",
                    va="center",
                    fontsize=7.5,
                    color=INK,
                )
    ax.set_yticks(y, order)
    ax.xaxis.grid(True, color=GRID, linewidth=0.8)
    if use_cost:
        ax.axvline(0, color="#8a8a8a", linewidth=0.9, zorder=1)
        lo, hi = ax.get_xlim()
        span = max(abs(lo), abs(hi), 0.1)
        ax.set_xlim(min(lo, 0) - 0.12 * span, max(hi, 0) + 0.22 * span)
        ax.set_xlabel("cost = LS-QA − HV-QA on the same tasks (higher costs more)", color=INK)
        title = "Which HSA dimension costs the most"
    else:
        ax.set_xlim(0, 1.15)
        ax.set_xlabel("HV-QA score", color=INK)
        title = "HV-QA score per HSA dimension"
    if len(labels) == 1:
        title = f"{labels[0]}: {title[0].lower()}{title[1:]}"
    ax.set_title(title, fontsize=10, color=INK)
    _legend(ax, len(labels))
    return _save(fig, path)


# ----------------------------------------------------------------------------- sets


def report_plots(report: EvalReport, out_dir: Path) -> list[Path]:
    """scores.png, and variants.png / dimensions.png when the report has them."""
    label = report.label
    paths = [plot_scores({label: report}, out_dir / "scores.png", title=f"{label}: score by suite")]
    dists = {f"{s.label}": s.variants for s in report.suites if s.variants is not None}
    if dists:
        paths.append(plot_variants(dists, out_dir / "variants.png", title=label))
    if report.dimensions:
        paths.append(plot_dimensions({label: report.dimensions}, out_dir / "dimensions.png"))
    return paths


def comparison_plots(reports: Mapping[str, EvalReport], out_dir: Path) -> list[Path]:
    """comparison.png (scores by suite and model), and, when any model has them,
    comparison_variants.png (HV-QA variants per model) and comparison_dimensions.png."""
    paths = [plot_scores(reports, out_dir / "comparison.png")]
    dists = {
        label: sr.variants
        for label, r in reports.items()
        if (sr := _hv_suite(r)) is not None and sr.variants is not None
    }
    if dists:
        paths.append(plot_variants(dists, out_dir / "comparison_variants.png"))
    dims = {label: r.dimensions for label, r in reports.items() if r.dimensions}
    if dims:
        paths.append(plot_dimensions(dims, out_dir / "comparison_dimensions.png"))
    return paths


def _hv_suite(report: EvalReport) -> Any:
    """The report's Harness-Variant suite (HV-QA, else the task file's), or None."""
    for hv in HV_BASE:
        found = report.suite(hv)
        if found is not None:
            return found
    return None
