"""The Variants page: pick a task and a policy, see the original and the augmented harness side
by side with the changes highlighted, and the task's gold trajectory before and after remap.

Everything shown comes from `studio.logic.variants.compute_variant` (core HSA + the oracle),
run in a worker; a newer request makes an older result stale, so quick clicks never show an
out-of-date variant.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QSpinBox,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.hsa.dimensions import DIMENSION_LABELS, Dimension
from studio import dialogs
from studio.context import StudioContext
from studio.widgets.common import Banner, PageHeader, Segmented, button, chip, clear_layout, label
from studio.widgets.diffview import SideBySideDiff

DIMENSIONS = tuple((d.value, DIMENSION_LABELS[d]) for d in Dimension)
VIEWS = ("System prompt", "Skills", "Tools", "Hooks")


class VariantsPage(QWidget):
    def __init__(self, ctx: StudioContext, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Page")
        self.ctx = ctx
        self.view: Any = None
        self._token = 0
        self._ready = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        self.header = PageHeader(
            "Variants",
            "Harness-State Augmentation: the same task and behaviour under a different harness "
            "surface",
        )
        self.another = button("Another seed", "dice", "", "Sample a new variant with a fresh seed")
        self.export_button = button(
            "Export variant…", "export", "primary", "Write the variant harness and its provenance"
        )
        self.header.add(self.another)
        self.header.add(self.export_button)
        lay.addWidget(self.header)

        body = QVBoxLayout()
        body.setContentsMargins(24, 14, 24, 16)
        body.setSpacing(12)
        # ---- controls
        controls = QFrame()
        controls.setObjectName("Card")
        grid = QGridLayout(controls)
        grid.setContentsMargins(16, 12, 16, 12)
        grid.setHorizontalSpacing(14)
        grid.setVerticalSpacing(8)
        self.task = QComboBox()
        self.task.setMinimumWidth(280)
        self.task.setMaxVisibleItems(18)
        self.bank = Segmented([("train", "Train bank"), ("heldout", "Held-out bank")])
        self.strength = Segmented([("light", "Light"), ("medium", "Medium"), ("heavy", "Heavy")])
        self.strength.set_value("medium")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2_000_000_000)
        self.seed.setValue(1)
        self.seed.setPrefix("seed ")
        self.seed.setMinimumWidth(120)
        # three rows: task, policy and dimensions side by side need more than the window's
        # minimum width, and a squeezed grid draws its widgets over each other
        grid.addWidget(label("Task", "FieldLabel"), 0, 0)
        grid.addWidget(self.task, 0, 1)
        grid.addWidget(label("Policy", "FieldLabel"), 1, 0)
        policy = QHBoxLayout()
        policy.setSpacing(14)
        for widget in (self.bank, self.strength, self.seed):
            policy.addWidget(widget)
        policy.addStretch(1)
        grid.addLayout(policy, 1, 1)
        grid.addWidget(label("Dimensions", "FieldLabel"), 2, 0)
        dims = QHBoxLayout()
        dims.setSpacing(6)
        self.dimension_buttons: dict[str, QToolButton] = {}
        for key, title in DIMENSIONS:
            b = QToolButton()
            b.setObjectName("Toggle")
            b.setText(title)
            b.setCheckable(True)
            b.setChecked(True)
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            b.toggled.connect(self._dimension_toggled)
            self.dimension_buttons[key] = b
            dims.addWidget(b)
        dims.addStretch(1)
        grid.addLayout(dims, 2, 1)
        grid.setColumnStretch(1, 1)
        body.addWidget(controls)

        self.banner = Banner()
        body.addWidget(self.banner)
        self.source = label("", "Faint", wrap=True)
        self.source.setTextFormat(Qt.TextFormat.PlainText)
        body.addWidget(self.source)
        self._version_titles: dict[str, str] = {}
        self.summary = QHBoxLayout()
        self.summary.setSpacing(6)
        body.addLayout(self.summary)

        split = QSplitter(Qt.Orientation.Vertical)
        top = QFrame()
        top.setObjectName("Pane")
        tl = QVBoxLayout(top)
        tl.setContentsMargins(14, 10, 14, 12)
        tl.setSpacing(8)
        th = QHBoxLayout()
        th.addWidget(label("Harness", "SectionTitle"))
        th.addSpacing(10)
        self.view_picker = Segmented([(v, v) for v in VIEWS])
        th.addWidget(self.view_picker)
        th.addStretch(1)
        self.view_meta = label("", "Faint")
        th.addWidget(self.view_meta)
        tl.addLayout(th)
        # each skill and tool of the variant faces the one it came from, not the one at its
        # position (after a rename and a reorder those differ)
        self.harness_diff = SideBySideDiff("Original", "Variant, paired by identity")
        tl.addWidget(self.harness_diff, 1)
        split.addWidget(top)
        bottom = QFrame()
        bottom.setObjectName("Pane")
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(14, 10, 14, 12)
        bl.setSpacing(8)
        bh = QHBoxLayout()
        bh.addWidget(label("Gold trajectory", "SectionTitle"))
        bh.addStretch(1)
        self.gold_meta = label(
            "played by the oracle, remapped through the variant's mapping chain", "Faint"
        )
        bh.addWidget(self.gold_meta)
        bl.addLayout(bh)
        self.gold_diff = SideBySideDiff("Original harness", "After remap")
        bl.addWidget(self.gold_diff, 1)
        split.addWidget(bottom)
        split.setSizes([520, 260])
        body.addWidget(split, 1)
        lay.addLayout(body, 1)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)
        self._timer.timeout.connect(self.compute)
        self.task.currentIndexChanged.connect(lambda _i: self.schedule())
        self.bank.changed.connect(lambda _v: self.schedule())
        self.strength.changed.connect(lambda _v: self.schedule())
        self.seed.valueChanged.connect(lambda _v: self.schedule())
        self.view_picker.changed.connect(lambda _v: self._show_view())
        self.another.clicked.connect(self.another_seed)
        self.export_button.clicked.connect(self.export_dialog)
        self.export_button.setEnabled(False)
        ctx.opened.connect(self._load_tasks)
        ctx.versionsChanged.connect(self._version_titles.clear)  # labels may have moved
        if ctx.store is not None:
            self._load_tasks()

    # ------------------------------------------------------------------ tasks

    def _load_tasks(self) -> None:
        def work() -> Any:
            from studio.logic.variants import task_choices, task_label

            return [(t.id, task_label(t)) for t in task_choices()]

        self.ctx.jobs.run(
            work,
            on_done=self._tasks_loaded,
            on_error=lambda e: self.banner.show_message("error", str(e)),
            label="Loading tasks",
        )

    def _tasks_loaded(self, tasks: list[tuple[str, str]]) -> None:
        self.task.blockSignals(True)
        self.task.clear()
        for task_id, text in tasks:
            self.task.addItem(text, task_id)
        wanted = str(self.ctx.settings.value("variants/task", "") or "")
        idx = self.task.findData(wanted)
        self.task.setCurrentIndex(idx if idx >= 0 else 0)
        self.task.blockSignals(False)
        self._ready = True
        if self.isVisible():
            self.schedule()

    def showEvent(self, event: Any) -> None:
        doc = self.ctx.session.doc
        stale = (
            self.view is not None
            and doc is not None
            and (
                self.view.original is not doc.harness
                or self.view.request.version_id != (doc.version_id or "")
            )
        )
        if self._ready and (self.view is None or stale):
            self.schedule()  # the editor moved on since this preview: show its harness now
        super().showEvent(event)

    # ------------------------------------------------------------------ requests

    def _dimension_toggled(self) -> None:
        on = [k for k, b in self.dimension_buttons.items() if b.isChecked()]
        if not on:  # a policy needs at least one dimension
            sender = self.sender()
            if isinstance(sender, QToolButton):
                sender.blockSignals(True)
                sender.setChecked(True)
                sender.blockSignals(False)
            self.banner.show_message("info", "A policy needs at least one dimension.")
            return
        self.schedule()

    def another_seed(self) -> None:
        self.seed.setValue(random.randint(1, 999_999))

    def schedule(self) -> None:
        if self._ready:
            self._timer.start()

    def request(self) -> Any:
        from studio.logic.variants import VariantRequest

        doc = self.ctx.session.doc
        return VariantRequest(
            task_id=self.task.currentData(),
            bank=self.bank.value(),
            strength=self.strength.value(),
            dimensions=tuple(k for k, b in self.dimension_buttons.items() if b.isChecked()),
            seed=self.seed.value(),
            version_id=(doc.version_id or "") if doc is not None else "",
            unsaved=self.ctx.session.dirty,
        )

    def source_text(self, request: Any, harness_name: str) -> str:
        """Which harness the preview is of: the stored version the editor holds (labels,
        short id, message) and whether unsaved edits are in it, so a variant is never taken
        for one of another version."""
        from studio.logic.version_names import short_id

        vid = request.version_id
        if not vid:
            where = f"{harness_name} (not saved as a version yet)"
        else:
            where = f"{harness_name} · {self._version_titles.get(vid) or short_id(vid)}"
        edits = " + unsaved edits from the editor" if request.unsaved else ""
        return f"Previewing {where}{edits}"

    def _want_title(self, version_id: str) -> None:
        """Read the version's title once (labels and message live in the store)."""
        if not version_id or version_id in self._version_titles or self.ctx.store is None:
            return
        self._version_titles[version_id] = ""

        def done(info: Any) -> None:
            from studio.logic.version_names import version_title

            self._version_titles[version_id] = version_title(info)
            if self.view is not None and self.view.request.version_id == version_id:
                self.source.setText(self.source_text(self.view.request, self.view.original.name))

        self.ctx.run_store(
            lambda store: store.info(version_id),
            on_done=done,
            on_error=lambda _e: None,
            label="Reading version",
        )

    def compute(self) -> None:
        self._timer.stop()
        doc = self.ctx.session.doc
        if doc is None or self.task.currentData() is None:
            return
        from studio.logic.variants import compute_variant

        self._token += 1
        token = self._token
        harness = doc.harness
        req = self.request()
        self.ctx.settings.setValue("variants/task", req.task_id)
        self._want_title(req.version_id)
        self.source.setText(self.source_text(req, harness.name))
        self.view_meta.setText("sampling…")

        def done(view: Any) -> None:
            if token == self._token:
                self.show_view(view)

        def fail(exc: BaseException) -> None:
            if token == self._token:
                self.view_meta.setText("")
                self.banner.show_message("error", f"No variant: {exc}")

        self.ctx.jobs.run(
            compute_variant, harness, req, on_done=done, on_error=fail, label="Sampling variant"
        )

    # ------------------------------------------------------------------ display

    def show_view(self, view: Any) -> None:
        from studio.logic.variants import transform_label

        self.view = view
        self.source.setText(self.source_text(view.request, view.original.name))
        self.export_button.setEnabled(True)
        if view.gold_problem:
            self.banner.show_message("warning", f"No gold trajectory: {view.gold_problem}")
        else:
            self.banner.hide()
        clear_layout(self.summary)
        self.summary.addWidget(label("Applied", "FieldLabel"))
        if view.applied:
            shown = view.applied[:5]
            for name in shown:
                self.summary.addWidget(chip(transform_label(name), "custom"))
            if len(view.applied) > len(shown):
                more = chip(f"+{len(view.applied) - len(shown)} more", "custom")
                more.setToolTip("\n".join(transform_label(n) for n in view.applied[len(shown) :]))
                self.summary.addWidget(more)
        else:
            self.summary.addWidget(chip("nothing (every pick was skipped)", "neutral"))
        if view.skipped:
            sk = chip(f"{len(view.skipped)} skipped", "neutral")
            sk.setToolTip("\n".join(f"{transform_label(n)}: {r}" for n, r in view.skipped))
            self.summary.addSpacing(8)
            self.summary.addWidget(sk)
        if view.dropped:
            dr = chip(f"{len(view.dropped)} dropped by verification", "modified")
            dr.setToolTip("\n".join(f"{transform_label(n)}: {r}" for n, r in view.dropped))
            self.summary.addWidget(dr)
        self.summary.addStretch(1)
        self.summary.addWidget(label(f"{view.task.id} · seed {view.request.seed}", "Faint"))
        self._show_view()
        if view.gold_before:
            self.gold_diff.set_texts(view.gold_before, view.gold_after, wrap=True)
        else:
            self.gold_diff.set_texts("(no gold trajectory)", "(no gold trajectory)")

    def _show_view(self) -> None:
        if self.view is None:
            return
        name = self.view_picker.value()
        self.harness_diff.set_texts(
            self.view.before[name], self.view.after[name], wrap=name != "Tools"
        )
        self.harness_diff.scroll_to_first_change()
        from studio.logic.textdiff import stats

        s = stats(self.harness_diff.rows)
        self.view_meta.setText(
            f"{s.changed} changed · {s.added} added · {s.removed} removed lines"
            if s.total
            else "no change in this view"
        )

    # ------------------------------------------------------------------ export

    def export_dialog(self) -> None:
        if self.view is None:
            return
        path = dialogs.choose_folder(self, "Export the variant into…")
        if path:
            self.export(Path(path) / f"{self.view.variant.name}-variant-{self.view.request.seed}")

    def export(self, folder: Path) -> None:
        from studio.logic.variants import export_variant

        view = self.view
        self.ctx.jobs.run(
            export_variant,
            view,
            folder,
            on_done=lambda sidecar: self.ctx.message.emit(
                "success", f"Exported to {folder} (+ {Path(sidecar).name})"
            ),
            on_error=lambda exc: self.banner.show_message("error", f"Export failed: {exc}"),
            label="Exporting variant",
        )
