"""The Data page: the simulator's tasks (by split, suite and category, with the oracle's gold
play), the trajectories generated from them (grades, reasons, provenance, the harness variant
they were made under), teacher generation as a background job with progress and cancel, and
drafts of tasks from logged conversations to review into a task file.

Everything heavy (task generation, reading datasets, the oracle, the generator) runs in studio
jobs; the widgets only show what `studio.logic.data_*` returns.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from studio.context import StudioContext
from studio.pages.data.drafts_view import DraftsView
from studio.pages.data.generate_view import GenerateView
from studio.pages.data.rows_view import TrajectoriesView
from studio.pages.data.tasks_view import TasksView
from studio.pages.tabbed_page import TabbedPage
from studio.widgets.common import button


class DataPage(TabbedPage):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(
            ctx,
            "data",
            "Data",
            "Simulator tasks, generated trajectories with grades and provenance, teacher "
            "generation, and task drafts from logged conversations",
            parent,
        )
        self.open_button = button(
            "Open dataset…", "folder", "", "Open a JSONL dataset from anywhere"
        )
        self.generate_button = button(
            "Generate data", "sparkles", "primary", "Run a teacher over tasks and harness variants"
        )
        self.header.add(self.open_button)
        self.header.add(self.generate_button)

        self.tasks = TasksView(ctx)
        self.trajectories = TrajectoriesView(ctx)
        self.generate = GenerateView(ctx)
        self.drafts = DraftsView(ctx)
        self.add_tab("tasks", self.tasks, "beaker", "Tasks")
        self.add_tab("trajectories", self.trajectories, "data", "Trajectories")
        self.add_tab("generate", self.generate, "sparkles", "Generate")
        self.add_tab("drafts", self.drafts, "chat", "Drafts")

        self.open_button.clicked.connect(self._open_dataset)
        self.generate_button.clicked.connect(lambda: self.show_tab("generate"))
        self.generate.open_button.clicked.connect(self._open_generated)
        self.restore_tab()

    def _open_dataset(self) -> None:
        self.show_tab("trajectories")
        self.trajectories.open_file_dialog()

    def _open_generated(self) -> None:
        out: Any = self.generate.output_path()
        self.show_tab("trajectories")
        if out is not None:
            self.trajectories.refresh(select=out)
