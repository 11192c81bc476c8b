"""The Data page: the simulator's tasks (by split, suite and category, with the oracle's gold
play), the trajectories generated from them (grades, reasons, provenance, the harness variant
they were made under), and teacher generation as a background job with progress and cancel.

Everything heavy (task generation, reading datasets, the oracle, the generator) runs in studio
jobs; the widgets only show what `studio.logic.data_*` returns.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from studio import theme
from studio.context import StudioContext
from studio.pages.data_generate_view import GenerateView
from studio.pages.data_rows_view import TrajectoriesView
from studio.pages.data_tasks_view import TasksView
from studio.widgets.common import PageHeader, button

TABS = ("tasks", "trajectories", "generate")


class DataPage(QWidget):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Page")
        self.ctx = ctx
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.header = PageHeader(
            "Data",
            "Simulator tasks, generated trajectories with grades and provenance, and teacher "
            "generation",
        )
        self.open_button = button(
            "Open dataset…", "folder", "", "Open a JSONL dataset from anywhere"
        )
        self.generate_button = button(
            "Generate data", "sparkles", "primary", "Run a teacher over tasks and harness variants"
        )
        self.header.add(self.open_button)
        self.header.add(self.generate_button)
        lay.addWidget(self.header)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tasks = TasksView(ctx)
        self.trajectories = TrajectoriesView(ctx)
        self.generate = GenerateView(ctx)
        self.tabs.addTab(self.tasks, theme.icon("beaker"), "Tasks")
        self.tabs.addTab(self.trajectories, theme.icon("data"), "Trajectories")
        self.tabs.addTab(self.generate, theme.icon("sparkles"), "Generate")
        lay.addWidget(self.tabs, 1)
        theme.bind(self.tabs, lambda w: self._tab_icons())  # type: ignore[attr-defined]

        self.open_button.clicked.connect(self._open_dataset)
        self.generate_button.clicked.connect(lambda: self.show_tab("generate"))
        self.generate.open_button.clicked.connect(self._open_generated)
        self.generate.finished.connect(lambda _r: self.trajectories.refresh(reopen=True))
        self.tabs.currentChanged.connect(lambda i: self.ctx.settings.setValue("data/tab", TABS[i]))
        wanted = str(ctx.settings.value("data/tab", "tasks") or "tasks")
        self.show_tab(wanted if wanted in TABS else "tasks")

    def _tab_icons(self) -> None:
        for i, name in enumerate(("beaker", "data", "sparkles")):
            self.tabs.setTabIcon(i, theme.icon(name))

    def show_tab(self, name: str) -> None:
        self.tabs.setCurrentIndex(TABS.index(name))

    def _open_dataset(self) -> None:
        self.show_tab("trajectories")
        self.trajectories.open_file_dialog()

    def _open_generated(self) -> None:
        out: Any = self.generate.output_path()
        self.show_tab("trajectories")
        if out is not None:
            self.trajectories.refresh(select=out)
