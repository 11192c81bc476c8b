"""Metric charts (pyqtgraph) for live training runs.

    chart = MetricChart("Loss")
    chart.set_series("loss", xs, ys)      # first call creates the curve, later ones setData

One `PlotDataItem` per series for the life of the chart: new points go through `setData` on
that item (re-plotting per point leaks items and slows down as the run grows). `reset()`
removes the curves when the chart is given to another run. Colours, axes and grid follow the
studio theme (light / dark).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QFrame, QHBoxLayout, QVBoxLayout, QWidget

from studio import theme
from studio.widgets.common import label

pg.setConfigOptions(antialias=True, foreground="k", background=None)

SERIES_COLORS = {
    "light": ("#5B50E6", "#16804A", "#C9372C", "#B76E00", "#1F5FBF", "#8A3FFC", "#00838F"),
    "dark": ("#8E86FF", "#4CC38A", "#FF6B61", "#F0B453", "#7FB0FF", "#C49BFF", "#4DD0E1"),
}


def series_color(index: int) -> str:
    colors = SERIES_COLORS.get(theme.current(), SERIES_COLORS["light"])
    return colors[index % len(colors)]


def format_value(value: float) -> str:
    """A compact number for the chart's latest-value readout."""
    magnitude = abs(value)
    if magnitude and (magnitude < 1e-3 or magnitude >= 1e5):
        return f"{value:.2e}"
    if magnitude >= 100:
        return f"{value:.1f}"
    return f"{value:.4g}"


class StepAxis(pg.AxisItem):
    """An x axis of optimizer steps: whole numbers only (no 1.5 between steps 1 and 2)."""

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list[Any]:
        levels = []
        for spacing, values in super().tickValues(minVal, maxVal, size):
            if spacing >= 1:
                levels.append((spacing, [v for v in values if float(v).is_integer()]))
        if not levels and maxVal - minVal < 50:
            levels = [(1.0, [float(v) for v in range(math.ceil(minVal), math.floor(maxVal) + 1)])]
        return levels

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        return [str(round(v)) for v in values]


class MetricChart(QFrame):
    """A titled chart card with one curve per series and the latest value in the corner."""

    def __init__(
        self,
        title: str,
        *,
        empty_text: str = "no data yet",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("Pane")
        self.title = title
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.labels: dict[str, str] = {}
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 10, 12, 8)
        lay.setSpacing(4)
        head = QHBoxLayout()
        head.setSpacing(6)
        self.title_label = label(title, "SubTitle")
        head.addWidget(self.title_label)
        head.addStretch(1)
        self.latest = label("", "Faint")
        head.addWidget(self.latest)
        lay.addLayout(head)
        self.plot = pg.PlotWidget(axisItems={"bottom": StepAxis(orientation="bottom")})
        self.plot.setMinimumHeight(140)
        self.plot.setMenuEnabled(False)
        self.plot.hideButtons()
        item = self.plot.getPlotItem()
        item.setContentsMargins(0, 0, 4, 0)
        item.showGrid(x=True, y=True, alpha=0.18)
        item.getViewBox().setMouseEnabled(x=True, y=False)
        self.plot.setFrameShape(QFrame.Shape.NoFrame)
        self.legend: pg.LegendItem | None = None
        self.markers: list[pg.InfiniteLine] = []
        self._marker_xs: list[float] = []
        lay.addWidget(self.plot, 1)
        self.empty = label(empty_text, "Faint")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setParent(self.plot)
        theme.bind(self, lambda _w: self._apply_theme())

    # ------------------------------------------------------------------ data

    def set_series(
        self, name: str, xs: Sequence[float], ys: Sequence[float], *, legend: str | None = None
    ) -> pg.PlotDataItem:
        """Show `xs, ys` as the series `name` (its curve is created once, then updated)."""
        curve = self.curves.get(name)
        if curve is None:
            color = series_color(len(self.curves))
            curve = pg.PlotDataItem(pen=pg.mkPen(color, width=2))
            self.labels[name] = legend or name
            self.curves[name] = curve
            self.plot.addItem(curve)
            if len(self.curves) == 2 and self.legend is None:
                self._add_legend()
            elif self.legend is not None:
                self.legend.addItem(curve, self.labels[name])
        curve.setData(list(xs), list(ys))
        if len(xs) == 1:  # one point draws no line: show it as a dot until the second
            curve.setSymbol("o")
            curve.setSymbolSize(5)
            curve.setSymbolBrush(curve.opts["pen"].color())
            curve.setSymbolPen(None)
        elif curve.opts.get("symbol") is not None:
            curve.setSymbol(None)
        self._update_latest()
        self._fit_flat()
        self.empty.setVisible(not self.has_data)
        return curve

    def _fit_flat(self) -> None:
        """A constant series (a constant learning rate) gets a range around its value; the
        automatic range would centre a tiny value in ±0.5 and draw it as zero."""
        values = [float(v) for c in self.curves.values() if c.yData is not None for v in c.yData]
        if not values:
            return
        low, high = min(values), max(values)
        scale = max(abs(low), abs(high))
        if high - low <= scale * 1e-6:
            pad = scale * 0.5 if scale else 1.0
            self.plot.setYRange(low - pad, high + pad, padding=0)
        else:
            self.plot.enableAutoRange(axis="y")

    def set_markers(self, xs: Sequence[float], tip: str = "") -> None:
        """Dashed vertical lines at `xs` (where a run was resumed); redrawn only on change."""
        if list(xs) == self._marker_xs:
            return
        for line in self.markers:
            self.plot.removeItem(line)
        self.markers = []
        for x in xs:
            line = pg.InfiniteLine(pos=x, angle=90, movable=False, pen=self._marker_pen())
            line.setToolTip(tip)
            self.plot.addItem(line)
            self.markers.append(line)
        self._marker_xs = list(xs)

    def _marker_pen(self) -> Any:
        return pg.mkPen(theme.color("text-faint"), width=1, style=Qt.PenStyle.DashLine)

    def point_count(self, name: str) -> int:
        curve = self.curves.get(name)
        if curve is None or curve.xData is None:
            return 0
        return len(curve.xData)

    def reset(self) -> None:
        """Remove every curve (the chart now shows another run)."""
        for curve in self.curves.values():
            self.plot.removeItem(curve)
        self.curves.clear()
        self.labels.clear()
        if self.legend is not None:
            self.legend.clear()
            scene = self.legend.scene()
            if scene is not None:
                scene.removeItem(self.legend)
            self.legend = None
        self.set_markers([])
        self.latest.setText("")
        self.empty.setVisible(True)

    @property
    def has_data(self) -> bool:
        return any(self.point_count(name) for name in self.curves)

    def _add_legend(self) -> None:
        self.legend = self.plot.getPlotItem().addLegend(offset=(-8, 6), labelTextSize="8pt")
        self.legend.setColumnCount(3)
        for name, curve in self.curves.items():
            self.legend.addItem(curve, self.labels[name])
        self._style_legend()

    def _update_latest(self) -> None:
        if len(self.curves) != 1:
            self.latest.setText("")
            return
        curve = next(iter(self.curves.values()))
        if curve.yData is not None and len(curve.yData):
            self.latest.setText(f"{format_value(float(curve.yData[-1]))}")

    # ------------------------------------------------------------------ look

    def _apply_theme(self) -> None:
        item = self.plot.getPlotItem()
        self.plot.setBackground(QColor(theme.color("surface")))
        axis_pen = pg.mkPen(theme.color("border-strong"))
        text_pen = pg.mkPen(theme.color("text-faint"))
        font = QFont(theme.ui_font(10))
        for side in ("left", "bottom"):
            axis = item.getAxis(side)
            axis.setPen(axis_pen)
            axis.setTextPen(text_pen)
            axis.setStyle(tickFont=font, tickLength=-4)
        item.getAxis("left").setWidth(44)
        for line in self.markers:
            line.setPen(self._marker_pen())
        for index, curve in enumerate(self.curves.values()):
            color = series_color(index)
            curve.setPen(pg.mkPen(color, width=2))
            if curve.opts.get("symbol") is not None:
                curve.setSymbolBrush(QColor(color))
        self._style_legend()

    def _style_legend(self) -> None:
        if self.legend is None:
            return
        self.legend.setLabelTextColor(QColor(theme.color("text-muted")))
        self.legend.setBrush(pg.mkBrush(QColor(theme.color("surface"))))
        self.legend.setPen(pg.mkPen(theme.color("border")))

    def resizeEvent(self, event: object) -> None:
        super().resizeEvent(event)  # type: ignore[arg-type]
        self.empty.setGeometry(0, 0, self.plot.width(), self.plot.height())
