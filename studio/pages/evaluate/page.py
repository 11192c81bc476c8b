"""The Evaluate page: stored runs with scores and 95 % intervals, the per-HSA-dimension cost,
the distribution over harness variants per model and every item's trace (Results); the
harness-change impact gate between two stored versions (Impact); and launching a suite run
for a model, an adapter or an oracle baseline as a background job (Run).

The numbers are core.eval's (stats, report, impact); studio.logic.eval_view shapes them and
runs the jobs in workers, so the window never waits on a model.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

from studio.context import StudioContext
from studio.pages.evaluate.impact_view import ImpactView
from studio.pages.evaluate.results_view import ResultsView
from studio.pages.evaluate.run_view import RunView
from studio.pages.tabbed_page import TabbedPage
from studio.widgets.common import button


class EvaluatePage(TabbedPage):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(
            ctx,
            "evaluate",
            "Evaluate",
            "Suite scores with intervals, robustness to harness variants, and what a harness "
            "edit does to a model",
            parent,
        )
        self.impact_button = button(
            "Check a harness edit", "diff", "", "Compare two harness versions on one model"
        )
        self.new_button = button("New evaluation", "play", "primary", "Run suites for a model")
        self.header.add(self.impact_button)
        self.header.add(self.new_button)

        self.results = ResultsView(ctx)
        self.impact = ImpactView(ctx)
        self.run = RunView(ctx)
        self.add_tab("results", self.results, "evaluate", "Results")
        self.add_tab("impact", self.impact, "diff", "Harness impact")
        self.add_tab("run", self.run, "play", "Run")

        self.new_button.clicked.connect(lambda: self.show_tab("run"))
        self.impact_button.clicked.connect(lambda: self.show_tab("impact"))
        self.run.finished.connect(lambda run: self.results.refresh(select=run.id))
        self.run.results_button.clicked.connect(self._open_result)
        self.results.resume_requested.connect(self.resume)
        self.restore_tab()

    def _open_result(self) -> None:
        run: Any = self.run.result
        self.show_tab("results")
        if run is not None:
            self.results.refresh(select=run.id)

    def resume(self, run_id: str) -> None:
        """Continue a stopped or failed run in the Run tab's progress pane."""
        if self.run.running or self.ctx.store is None:
            self.ctx.message.emit("info", "An evaluation is already running")
            return
        from studio.logic.eval_view import resume_job

        try:
            job = resume_job(self.ctx.store, run_id)
        except Exception as exc:  # unknown run: shown, not raised
            self.ctx.message.emit("error", f"Cannot resume {run_id}: {exc}")
            return
        self.show_tab("run")
        self.run.begin(job, f"Resuming {run_id}")
