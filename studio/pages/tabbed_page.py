"""A page made of a header and tabs (Data, Evaluate): the tab last shown comes back at the next
start (settings key `<key>/tab`), and the tab icons follow the theme."""

from __future__ import annotations

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from studio import theme
from studio.context import StudioContext
from studio.widgets.common import PageHeader


class TabbedPage(QWidget):
    def __init__(
        self,
        ctx: StudioContext,
        key: str,
        title: str,
        subtitle: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("Page")
        self.ctx = ctx
        self._key = key
        self._names: list[str] = []
        self._icons: list[str] = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.header = PageHeader(title, subtitle)
        lay.addWidget(self.header)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        lay.addWidget(self.tabs, 1)
        theme.bind(self.tabs, lambda _w: self._tab_icons())  # type: ignore[attr-defined]

    def add_tab(self, name: str, widget: QWidget, icon: str, title: str) -> None:
        self._names.append(name)
        self._icons.append(icon)
        self.tabs.addTab(widget, theme.icon(icon), title)

    def restore_tab(self) -> None:
        """Show the tab remembered from the last session (the first one otherwise), then
        remember every change."""
        wanted = str(self.ctx.settings.value(f"{self._key}/tab", "") or "")
        self.show_tab(wanted if wanted in self._names else self._names[0])
        self.tabs.currentChanged.connect(
            lambda i: self.ctx.settings.setValue(f"{self._key}/tab", self._names[i])
        )

    def show_tab(self, name: str) -> None:
        self.tabs.setCurrentIndex(self._names.index(name))

    def _tab_icons(self) -> None:
        for i, name in enumerate(self._icons):
            self.tabs.setTabIcon(i, theme.icon(name))
