"""The variant-distribution plot: per model, every HV-QA variant's score as a dot (spread
sideways so equal scores stay visible), with the mean, the 5th percentile and the worst
variant marked, so "how bad does it get under an unseen harness" reads at a glance.

pyqtgraph items are created once per series and pool slot and updated with `setData`
(re-plotting leaks); models beyond the pool's current size grow it, fewer hide the rest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics

from studio import theme

SERIES = ("dots", "mean", "p5", "worst")


def _jitter(i: int, n: int) -> float:
    """A stable sideways offset in [-0.22, 0.22] for the i-th of n dots."""
    digest = hashlib.blake2b(f"{i}:{n}".encode(), digest_size=4).digest()
    return (int.from_bytes(digest, "big") / 2**32 - 0.5) * 0.44


def _tick_font() -> QFont:
    """The axes' tick font; the bottom labels are shortened to what fits in it."""
    return QFont(theme.ui_font(11))


TICK_GAP = 12
"""Pixels kept free between neighbouring tick labels."""


def short(text: str, room: float, metrics: QFontMetrics) -> str:
    """A tick label at most `room` pixels wide (pyqtgraph draws labels that do not fit into
    each other): a fixed-harness oracle by its version, anything else ending in "…"."""
    if metrics.horizontalAdvance(text) <= room:
        return text
    if text.startswith("oracle fixed @ "):
        text = "fixed " + text.removeprefix("oracle fixed @ ")
    return metrics.elidedText(text, Qt.TextElideMode.ElideRight, max(0, int(room)))


class VariantPlot(pg.PlotWidget):
    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent=parent)
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.getPlotItem().setContentsMargins(6, 8, 10, 4)
        self.setYRange(0, 1.04, padding=0)
        self.showGrid(x=False, y=True, alpha=0.25)
        self.slots: list[dict[str, Any]] = []
        self.labels: list[str] = []
        self.data: list[Any] = []
        theme.bind(self, lambda w: w._restyle())  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ styling

    def _pens(self) -> dict[str, Any]:
        accent = QColor(theme.color("accent"))
        dot = QColor(accent)
        dot.setAlpha(120)
        return {
            "dot_brush": pg.mkBrush(dot),
            "dot_pen": pg.mkPen(None),
            "mean": pg.mkPen(theme.color("accent-text"), width=3),
            "p5": pg.mkPen(theme.color("warning"), width=2, style=Qt.PenStyle.DashLine),
            "worst": pg.mkPen(theme.color("danger"), width=2),
        }

    def _restyle(self) -> None:
        self.setBackground(theme.color("surface"))
        font = _tick_font()
        for name in ("left", "bottom"):
            axis = self.getPlotItem().getAxis(name)
            axis.setPen(pg.mkPen(theme.color("border-strong")))
            axis.setTextPen(pg.mkPen(theme.color("text-muted")))
            axis.setStyle(tickFont=font)
        self.getPlotItem().getAxis("left").setLabel("score", color=theme.color("text-muted"))
        pens = self._pens()
        for slot in self.slots:
            slot["dots"].setBrush(pens["dot_brush"])
            slot["dots"].setPen(pens["dot_pen"])
            for key in ("mean", "p5", "worst"):
                slot[key].setPen(pens[key])
        if self.data:
            self.set_models(self.data)

    def _slot(self, index: int) -> dict[str, Any]:
        while len(self.slots) <= index:
            pens = self._pens()
            dots = pg.ScatterPlotItem(size=7, brush=pens["dot_brush"], pen=pens["dot_pen"])
            mean = pg.PlotDataItem(pen=pens["mean"])
            p5 = pg.PlotDataItem(pen=pens["p5"])
            worst = pg.PlotDataItem(pen=pens["worst"])
            for item in (dots, mean, p5, worst):
                self.addItem(item)
            slot = {"dots": dots, "mean": mean, "p5": p5, "worst": worst}
            self.slots.append(slot)
        return self.slots[index]

    # ------------------------------------------------------------------ data

    def set_models(self, models: Sequence[Any]) -> None:
        """`models`: objects with `.label` and `.distribution` (core.eval.stats
        VariantDistribution), in display order."""
        self.data = list(models)
        for i, m in enumerate(self.data):
            slot = self._slot(i)
            d = m.distribution
            n = len(d.scores)
            xs = [i + _jitter(k, n) for k in range(n)]
            slot["dots"].setData(xs, list(d.scores))
            for key, value in (("mean", d.mean), ("p5", d.p5), ("worst", d.worst)):
                half = 0.34 if key == "mean" else 0.28
                slot[key].setData([i - half, i + half], [value, value])
            for key in SERIES:
                slot[key].setVisible(True)
        for slot in self.slots[len(self.data) :]:
            slot["dots"].setData([], [])
            for key in ("mean", "p5", "worst"):
                slot[key].setData([], [])
        self._set_ticks()
        n = max(1, len(self.data))
        self.setXRange(-0.6, n - 0.4, padding=0)
        self.setYRange(-0.04, 1.06, padding=0)
        self.getPlotItem().getAxis("left").setTicks([[(v / 4, f"{v / 4:.2f}") for v in range(5)]])

    def _set_ticks(self) -> None:
        """Model names under their clusters, shortened to the room each cluster has now
        (pyqtgraph draws labels that do not fit into each other)."""
        item = self.getPlotItem()
        if item is None:  # closed
            return
        axis = item.getAxis("bottom")
        room = item.vb.width() / max(1, len(self.data)) - TICK_GAP
        metrics = QFontMetrics(_tick_font())
        axis.setTicks([[(i, short(m.label, room, metrics)) for i, m in enumerate(self.data)]])

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if self.__dict__.get("data"):  # (Qt resizes the widget while it is being built)
            self._set_ticks()

    def series_counts(self) -> list[int]:
        """Dots per model as drawn (tests read it)."""
        return [len(self.slots[i]["dots"].data) for i in range(len(self.data))]
