"""Pages of the next release (Data, Train, Evaluate, Chat, Runs): a clear description of what
each will do and what to use meanwhile, so the navigation already shows the whole workflow."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from studio import theme
from studio.widgets.common import PageHeader, chip, label


@dataclass(frozen=True)
class PlannedPage:
    key: str
    title: str
    icon: str
    subtitle: str
    pitch: str
    features: tuple[str, ...]
    meanwhile: str


PLANNED = (
    PlannedPage(
        "data",
        "Data",
        "data",
        "Tasks, trajectories and teacher generation",
        "Browse the simulator's tasks and the trajectories generated for them, with grades and "
        "provenance, and launch teacher generation over harness variants.",
        (
            "Tasks by split and category, with the gold behaviour the oracle plays",
            "Trajectories with grades, judge verdicts and the variant they were made under",
            "Teacher generation against any OpenAI-compatible endpoint, with live progress",
        ),
        "hat data generate --teacher oracle --tasks train --out sft.jsonl",
    ),
    PlannedPage(
        "train",
        "Train",
        "train",
        "HSA-SFT, on-policy distillation and HSA-RL",
        "Launch the three HAT stages as child processes and watch them live: loss, learning "
        "rate, rewards and throughput, with stop, cancel and resume.",
        (
            "Stage forms generated from the stage configs, with the exact launch command",
            "Live charts of loss, grad norm, reward components and completion length",
            "Single GPU to multi-node via accelerate (FSDP / ZeRO), GPU memory per device",
        ),
        "python -m training sft --help",
    ),
    PlannedPage(
        "evaluate",
        "Evaluate",
        "evaluate",
        "Suites, variant robustness and harness-change impact",
        "Run Live-Stream QA, Harness-Variant QA, robustness and IFEval against any model or "
        "adapter, and see what a harness edit does to the deployed model.",
        (
            "Results tables with confidence intervals, per-dimension breakdowns",
            "Variant-distribution plot per model",
            "Pick two harness versions: flipped tasks grouped by the component that changed",
        ),
        "hat sim tasks --suite ls-qa",
    ),
    PlannedPage(
        "chat",
        "Chat",
        "chat",
        "Talk to the served model through the agent loop",
        "Start a model server, pick a harness version, and chat: skill loads, tool calls and "
        "hook decisions appear as cards, with latency for every reply.",
        (
            "TTFT, tokens/s, end-to-end and agent end-to-end per reply; session P50/P95",
            "Viewer-message presets and a live-room replay mode",
            "A/B: the same message to two models or two harness versions side by side",
        ),
        "hat harness render resources/demo/live-host",
    ),
    PlannedPage(
        "runs",
        "Runs",
        "runs",
        "Every job in this workspace",
        "One place for training runs, evaluations and data jobs: status, frozen config, logs and "
        "artifacts, re-attached when the studio reopens.",
        (
            "Running and finished jobs, with their exact configuration",
            "Logs, metrics and checkpoints per run",
            "Restart or resume after a crash; nothing is lost when the studio closes",
        ),
        'ls "$HAT_HOME/runs"',
    ),
)


class PlaceholderPage(QWidget):
    def __init__(self, page: PlannedPage, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Page")
        self.page = page
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(PageHeader(page.title, page.subtitle))
        body = QWidget()
        body.setObjectName("PageBody")
        bl = QVBoxLayout(body)
        bl.setContentsMargins(40, 40, 40, 40)
        bl.addStretch(2)
        card = QFrame()
        card.setObjectName("Card")
        card.setMaximumWidth(640)
        cl = QVBoxLayout(card)
        cl.setContentsMargins(36, 32, 36, 30)
        cl.setSpacing(14)
        hero = QLabel()
        hero.setObjectName("HeroIcon")
        hero.setFixedSize(64, 64)
        hero.setAlignment(Qt.AlignmentFlag.AlignCenter)
        theme.bind_icon(hero, page.icon, "accent", 30)
        top = QHBoxLayout()
        top.addWidget(hero)
        top.addStretch(1)
        top.addWidget(chip("Coming in the next release", "soon"), 0, Qt.AlignmentFlag.AlignTop)
        cl.addLayout(top)
        cl.addWidget(label(page.title, "EmptyTitle"))
        cl.addWidget(label(page.pitch, "EmptyText", wrap=True))
        cl.addSpacing(4)
        for feature in page.features:
            row = QHBoxLayout()
            row.setSpacing(10)
            tick = QLabel()
            theme.bind_icon(tick, "check", "success", 16)
            row.addWidget(tick, 0, Qt.AlignmentFlag.AlignTop)
            row.addWidget(label(feature, "FeatureItem", wrap=True), 1)
            cl.addLayout(row)
        cl.addSpacing(6)
        cl.addWidget(label("Meanwhile, from a terminal:", "Faint"))
        code = label(page.meanwhile, "CodeLine")
        code.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        cl.addWidget(code)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(card, 10)
        row.addStretch(1)
        bl.addLayout(row)
        bl.addStretch(3)
        lay.addWidget(body, 1)
