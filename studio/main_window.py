"""The main window: left navigation, the pages, the status bar, shortcuts, restored state.

The window paints before anything heavy is imported: the shell here needs Qt only, and the
workspace (SQLAlchemy, alembic, the harness models) is opened in a worker once the first frame
is on screen. Pages fill in when `StudioContext.opened` fires.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QEvent, QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QButtonGroup,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio import dialogs, theme, workspace
from studio.context import StoreChange, StudioContext
from studio.jobs import jobs
from studio.logic.servers import server_status_line
from studio.widgets.common import PageHeader, Toast, label

NAV = (
    ("harness", "Harness", "harness"),
    ("variants", "Variants", "variants"),
    ("data", "Data", "data"),
    ("train", "Train", "train"),
    ("evaluate", "Evaluate", "evaluate"),
    ("chat", "Chat", "chat"),
    ("runs", "Runs", "runs"),
)
SUBTITLES = {
    "harness": "Opening the workspace…",
    "variants": "Harness-State Augmentation preview",
    "data": "Tasks, trajectories and teacher generation",
    "train": "HSA-SFT, on-policy distillation and HSA-RL",
    "evaluate": "Suites, variant robustness and harness-change impact",
    "chat": "Talk to the served model through the agent loop",
    "runs": "Every job in this workspace",
}
"""What a page's skeleton says under its title until the page is built."""


FIRST_LAUNCH_HINT = (
    "The loop: edit the harness here → preview Variants → make Data (Generate) → Train → "
    "Evaluate → Chat. Each page starts from what the one before made: the dataset, the "
    "trained model, the running server."
)


class _FirstPaint(QObject):
    painted = Signal()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            obj.removeEventFilter(self)
            QTimer.singleShot(0, self.painted.emit)
        return False


class _Skeleton(QWidget):
    """What a page shows before it is built: its header, and nothing that needs loading."""

    def __init__(self, title: str, subtitle: str) -> None:
        super().__init__()
        self.setObjectName("Page")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(PageHeader(title, subtitle))
        lay.addStretch(1)


DEMO_IMPORT_ENV = "HAT_STUDIO_DEMO_IMPORT"
"""Set to "0" and a first start registers no demo model (the test suite: a fresh home per
test would import it every time)."""
DEMO_OFFERED_KEY = "models/demo_offered"

SIDEBAR_WIDTH = 212
COMPACT_SIDEBAR_WIDTH = 64
COMPACT_BELOW = 1320  # window width under which the sidebar shows icons only


class MainWindow(QMainWindow):
    def __init__(
        self,
        home: Path,
        guard: workspace.InstanceGuard | None = None,
        *,
        busy_timeout: float = 3.0,
        open_on_paint: bool = True,
    ) -> None:
        super().__init__()
        self.home = Path(home)
        self.guard = guard
        self._closing_ok = False
        self.settings = workspace.settings(self.home)
        self.ctx = StudioContext(self.home, self.settings, jobs(), busy_timeout, parent=self)
        self.setWindowTitle("HAT Studio[*]")
        self.setMinimumSize(1080, 680)

        central = QWidget()
        row = QHBoxLayout(central)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(self._build_sidebar())
        self.pages = QStackedWidget()
        row.addWidget(self.pages, 1)
        self.setCentralWidget(central)
        self.page_widgets: dict[str, QWidget] = {}
        self._factories: dict[str, Callable[[], QWidget]] = {}
        self._build_pages()
        self._build_status()
        self._build_actions()
        self.toast = Toast(self.pages)
        # the stack raises the page it switches to: keep a showing toast above it
        self.pages.currentChanged.connect(lambda _i: self.toast.raise_())
        self.ctx.message.connect(self._message)
        self.ctx.opened.connect(self._opened)
        self.ctx.openFailed.connect(lambda m: self.status_version.setText("workspace not opened"))
        self._restore()
        if open_on_paint:
            self._first_paint = _FirstPaint(self)
            self._first_paint.painted.connect(self._after_first_paint)
            self.installEventFilter(self._first_paint)

    # ------------------------------------------------------------------ building

    def _build_sidebar(self) -> QWidget:
        side = QFrame()
        side.setObjectName("Sidebar")
        side.setFixedWidth(SIDEBAR_WIDTH)
        self.sidebar = side
        self._sidebar_texts: list[QWidget] = []  # hidden when the sidebar is compact
        lay = QVBoxLayout(side)
        lay.setContentsMargins(12, 16, 12, 12)
        lay.setSpacing(2)
        brand = QHBoxLayout()
        brand.setSpacing(10)
        logo = QLabel()
        logo.setPixmap(theme.logo_pixmap(30))
        brand.addWidget(logo)
        names = QVBoxLayout()
        names.setSpacing(0)
        for text, style in (("HAT Studio", "AppTitle"), ("Harness-aware training", "AppSubtitle")):
            names.addWidget(name := label(text, style))
            self._sidebar_texts.append(name)
        brand.addLayout(names, 1)
        lay.addLayout(brand)
        lay.addSpacing(14)
        self.nav_group = QButtonGroup(self)
        self.nav_group.setExclusive(True)
        self.nav_buttons: dict[str, QToolButton] = {}
        sections = {"harness": "AUTHOR", "data": "TRAIN & EVALUATE", "chat": "USE"}
        for i, (key, title, icon) in enumerate(NAV):
            if key in sections:
                if key != "harness":
                    lay.addSpacing(6)
                lay.addWidget(heading := label(sections[key], "NavSection"))
                self._sidebar_texts.append(heading)
            b = QToolButton()
            b.setObjectName("NavButton")
            b.setText(f"  {title}")
            b.setCheckable(True)
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
            b.setSizePolicy(
                b.sizePolicy().horizontalPolicy().Expanding, b.sizePolicy().verticalPolicy()
            )
            b.setCursor(Qt.CursorShape.PointingHandCursor)
            b.setToolTip(f"{title}  (Ctrl+{i + 1})")
            b.setAccessibleName(title)  # the name stays when the sidebar shows icons only
            theme.bind(
                b,
                lambda w, ic=icon: w.setIcon(
                    theme.icon(ic, "accent-text" if w.isChecked() else "text-muted")
                ),
            )  # type: ignore[attr-defined]
            b.toggled.connect(
                lambda _on, w=b, ic=icon: w.setIcon(
                    theme.icon(ic, "accent-text" if w.isChecked() else "text-muted")
                )
            )
            b.clicked.connect(lambda _c=False, k=key: self.show_page(k))
            self.nav_group.addButton(b)
            self.nav_buttons[key] = b
            lay.addWidget(b)
        lay.addStretch(1)
        lay.addWidget(heading := label("WORKSPACE", "NavSection"))
        self._sidebar_texts.append(heading)
        self.workspace_button = QToolButton()
        self.workspace_button.setObjectName("WorkspaceButton")
        self.workspace_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.workspace_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        theme.bind_icon(self.workspace_button, "folder", "text-muted")
        self.workspace_menu = QMenu(self.workspace_button)
        self.workspace_menu.aboutToShow.connect(self._fill_workspace_menu)
        self.workspace_button.setMenu(self.workspace_menu)
        lay.addWidget(self.workspace_button)
        lay.addSpacing(8)
        bottom = QHBoxLayout()
        bottom.setSpacing(6)
        self.theme_button = QToolButton()
        self.theme_button.setObjectName("ThemeButton")
        self.theme_button.setToolTip("Switch between light and dark  (Ctrl+Shift+L)")
        self.theme_button.clicked.connect(self.toggle_theme)
        theme.bind(
            self.theme_button,
            lambda w: w.setIcon(theme.icon("moon" if theme.current() == "light" else "sun")),
        )  # type: ignore[attr-defined]
        bottom.addWidget(self.theme_button)
        bottom.addWidget(version := label("v0.1", "Faint"))
        self._sidebar_texts.append(version)
        bottom.addStretch(1)
        lay.addLayout(bottom)
        self._update_workspace_button()
        self.compact_sidebar = False
        return side

    def set_compact_sidebar(self, compact: bool) -> None:
        """Icons only (names in the tooltips), so that a window at its minimum width still
        leaves the editors the room they are laid out for; `resizeEvent` switches it."""
        if compact == self.compact_sidebar:
            return
        self.compact_sidebar = compact
        self.sidebar.setFixedWidth(COMPACT_SIDEBAR_WIDTH if compact else SIDEBAR_WIDTH)
        for widget in self._sidebar_texts:
            widget.setVisible(not compact)
        style = (
            Qt.ToolButtonStyle.ToolButtonIconOnly
            if compact
            else Qt.ToolButtonStyle.ToolButtonTextBesideIcon
        )
        for b in (*self.nav_buttons.values(), self.workspace_button):
            b.setToolButtonStyle(style)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        self.set_compact_sidebar(self.width() < COMPACT_BELOW)

    def _build_pages(self) -> None:
        """Pages start as light skeletons (a header); each is built the first time it is
        shown, the current one right after the first paint. That keeps the editors' imports
        (pydantic models, jsonschema, the agent loop) and hundreds of widgets off the path to
        the first frame: each factory imports its page when it is called."""
        ctx = self.ctx

        def harness() -> QWidget:
            from studio.pages.harness.page import HarnessPage

            return HarnessPage(ctx)

        def variants() -> QWidget:
            from studio.pages.variants.page import VariantsPage

            return VariantsPage(ctx)

        def data() -> QWidget:
            from studio.pages.data.page import DataPage

            return DataPage(ctx)

        def train() -> QWidget:
            from studio.pages.train.page import TrainPage

            return TrainPage(ctx)

        def evaluate() -> QWidget:
            from studio.pages.evaluate.page import EvaluatePage

            return EvaluatePage(ctx)

        def chat() -> QWidget:
            from studio.pages.chat.page import ChatPage

            return ChatPage(ctx)

        def runs() -> QWidget:
            from studio.pages.train.runs_page import RunsPage

            return RunsPage(ctx)

        self._factories = {
            "harness": harness,
            "variants": variants,
            "data": data,
            "train": train,
            "evaluate": evaluate,
            "chat": chat,
            "runs": runs,
        }
        for key, title, _icon in NAV:
            skeleton = _Skeleton(title, SUBTITLES[key])
            self.page_widgets[key] = skeleton
            self.pages.addWidget(skeleton)

    def page(self, key: str) -> Any:
        """The page `key`, built now if it is still a skeleton."""
        widget = self.page_widgets[key]
        factory = self._factories.pop(key, None)
        if factory is None:
            return widget
        real = factory()
        index = self.pages.indexOf(widget)
        current = self.pages.currentWidget() is widget
        self.pages.insertWidget(index, real)
        self.page_widgets[key] = real
        if current:
            self.pages.setCurrentWidget(real)
        self.pages.removeWidget(widget)
        widget.deleteLater()
        if hasattr(self, "toast"):
            self.toast.raise_()
        return real

    @property
    def harness_page(self) -> Any:
        return self.page("harness")

    @property
    def variants_page(self) -> Any:
        return self.page("variants")

    def _after_first_paint(self) -> None:
        self.page(self.current_page())
        self.harness_page  # noqa: B018 - built before the workspace opens (it loads the harness)
        self.ctx.open()

    def _build_status(self) -> None:
        bar = self.statusBar()
        bar.setSizeGripEnabled(False)
        self.status_workspace = QLabel()
        self.status_workspace.setObjectName("StatusItem")
        bar.addWidget(self.status_workspace)
        self.status_version = label("opening workspace…", "StatusItem")
        bar.addWidget(self.status_version)
        self.status_model = label("", "StatusItem")
        self.status_model.setToolTip(
            "The model the pages start from: the last one trained or picked (Chat, Evaluate)"
        )
        bar.addWidget(self.status_model)
        self.status_server = QLabel()
        self.status_server.setObjectName("StatusItem")
        self.status_jobs = QLabel()
        self.status_jobs.setObjectName("StatusItem")
        bar.addPermanentWidget(self.status_server)
        bar.addPermanentWidget(self.status_jobs)
        theme.bind(self, lambda _w: self._refresh_status())
        jobs().countChanged.connect(lambda _n: self._refresh_status())
        self.ctx.session.dirtyChanged.connect(lambda _d: self._refresh_status())
        self.ctx.storeChanged.connect(lambda _c: self._refresh_status())
        self.ctx.harnessChanged.connect(lambda _n: self._refresh_status())
        self.ctx.serversChanged.connect(self._refresh_status)
        self.ctx.currentModelChanged.connect(lambda _n: self._refresh_status())
        # training runs are child processes, not jobs: the count follows the run hub too,
        # once a page that launches or lists runs has made it (none at start-up)
        self.ctx.runHubCreated.connect(self._follow_hub)

    def _follow_hub(self, hub: Any) -> None:
        self._hub = hub
        hub.runsChanged.connect(self._refresh_status)
        self._refresh_status()

    def _refresh_status(self) -> None:
        faint, ok = theme.color("text-faint"), theme.color("success")
        self.status_workspace.setText(f"Workspace  {workspace.describe_home(self.home)}")
        server = server_status_line(self.ctx.servers)
        tone = {"ok": ok, "busy": theme.color("warning"), "error": theme.color("danger")}
        dot = tone.get(server.tone, faint)
        shown = html.escape(server.text)  # a model id is the user's text
        self.status_server.setText(f"<span style='color:{dot}'>●</span>&nbsp; {shown}")
        self.status_server.setToolTip(server.tooltip)
        n = jobs().running
        hub = getattr(self, "_hub", None)  # made with the Train or Runs page
        training = [r.id for r in hub.live_runs()] if hub is not None else []
        dot = ok if n or training else faint
        parts = [f"{n} job{'s' if n != 1 else ''} running"]
        if training:
            runs = len(training)
            parts.insert(0, f"{runs} training run{'s' if runs != 1 else ''}")
        self.status_jobs.setText(f"<span style='color:{dot}'>●</span>&nbsp; {' · '.join(parts)}")
        names = [*(f"training {run}" for run in training), *jobs().labels()]
        self.status_jobs.setToolTip(", ".join(names) or "No background work")
        current = self.ctx.current_model
        self.status_model.setText(f"model  {current}" if current else "")
        self.status_model.setVisible(bool(current))
        doc = self.ctx.session.doc
        if doc is not None:
            star = "  · unsaved changes" if self.ctx.session.dirty else ""
            self.status_version.setText(f"{doc.harness.name} @ {(doc.version_id or '')[:10]}{star}")

    def _build_actions(self) -> None:
        def add(text: str, keys: list[QKeySequence | str], slot: Any) -> QAction:
            act = QAction(text, self)
            act.setShortcuts([QKeySequence(k) for k in keys])
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(slot)
            self.addAction(act)
            return act

        self.save_action = add(
            "Save version", [QKeySequence.StandardKey.Save], lambda: self.harness_page.save()
        )
        self.undo_action = add(
            "Undo", [QKeySequence.StandardKey.Undo], lambda: self.harness_page.undo()
        )
        self.redo_action = add("Redo", ["Ctrl+Shift+Z", "Ctrl+Y"], lambda: self.harness_page.redo())
        self.filter_action = add("Filter", [QKeySequence.StandardKey.Find], self._focus_filter)
        self.theme_action = add("Toggle theme", ["Ctrl+Shift+L"], self.toggle_theme)
        self.page_actions = [
            add(f"Go to {title}", [f"Ctrl+{i + 1}"], lambda _c=False, k=key: self.show_page(k))
            for i, (key, title, _icon) in enumerate(NAV)
        ]

    # ------------------------------------------------------------------ pages

    def show_page(self, key: str) -> None:
        if key not in self.page_widgets:
            return
        widget = (
            self.page_widgets[key]
            if key in self._factories and not self.isVisible()
            else self.page(key)
        )
        self.pages.setCurrentWidget(widget)
        button = self.nav_buttons[key]
        if not button.isChecked():
            button.setChecked(True)
        self.settings.setValue("window/page", key)

    def current_page(self) -> str:
        widget = self.pages.currentWidget()
        if widget is None:
            return "harness"
        return next((k for k, w in self.page_widgets.items() if w is widget), "harness")

    def _focus_filter(self) -> None:
        if self.current_page() != "harness":
            self.show_page("harness")
        self.harness_page.tabs.setCurrentIndex(0)
        self.harness_page.tree.focus_filter()

    def toggle_theme(self) -> None:
        name = "dark" if theme.current() == "light" else "light"
        app = QApplication.instance()
        if isinstance(app, QApplication):
            theme.apply(app, name)
        self.settings.setValue("window/theme", name)

    def _message(self, kind: str, text: str) -> None:
        if kind == "error":
            self.harness_page.banner.show_message("error", text)
            if self.current_page() != "harness":
                self.toast.show_text(text, "alert", 4000)
        else:
            self.toast.show_text(text, "check" if kind == "success" else "info")

    def _opened(self) -> None:
        self._refresh_status()
        self._offer_demo_model()
        if self.ctx.created_demo:
            self.ctx.message.emit(
                "success", "Welcome: the demo workspace is ready (live-host harness)"
            )
            # a new workspace: say once what the pages are for and in which order
            self.harness_page.banner.show_message("info", FIRST_LAUNCH_HINT)

    def _offer_demo_model(self) -> None:
        """First start of a home with no model registered: import the demo model in the
        background, so Train, Evaluate and Chat all offer it from the start (one registry;
        each page reloads on the models change). Once per home: a demo the operator removed is
        not brought back (Chat's "Add the demo model" is there for that)."""
        if os.environ.get(DEMO_IMPORT_ENV, "1") == "0":
            return
        if self.settings.value(DEMO_OFFERED_KEY, False, type=bool):
            return
        from core.models import add_demo, demo_to_offer

        def checked(wanted: bool) -> None:
            self.settings.setValue(DEMO_OFFERED_KEY, True)
            if not wanted:
                return
            self.ctx.message.emit(
                "info", "First start: registering the demo model (SmolLM2-135M-Instruct)…"
            )
            self.ctx.run_store(
                add_demo,
                changes=StoreChange.MODELS,
                on_done=lambda result: self.ctx.message.emit(
                    "success",
                    f"The demo model {result[0].name} is registered: Train, Evaluate and "
                    "Chat offer it",
                ),
                on_error=lambda exc: self.ctx.message.emit(
                    "error",
                    f"The demo model could not be registered ({exc}); add a model on the Chat page",
                ),
                label="Importing the demo model",
            )

        self.ctx.run_store(demo_to_offer, on_done=checked, on_error=lambda _e: None)

    # ------------------------------------------------------------------ workspace

    def _update_workspace_button(self) -> None:
        text = workspace.describe_home(self.home)
        metrics = self.workspace_button.fontMetrics()
        # cut from the left: the last folder names the workspace, its parents rarely do
        self.workspace_button.setText(metrics.elidedText(text, Qt.TextElideMode.ElideLeft, 150))
        self.workspace_button.setToolTip(f"Workspace folder: {self.home}")
        self.workspace_button.setAccessibleName(f"Workspace {text}")

    def _fill_workspace_menu(self) -> None:
        menu = self.workspace_menu
        menu.clear()
        head = menu.addAction(theme.icon("workspace"), str(self.home))
        head.setEnabled(False)
        menu.addSeparator()
        menu.addAction(theme.icon("folder"), "Open workspace folder…", self._choose_workspace)
        recents = [
            r
            for r in (self.settings.value("workspace/recent", []) or [])
            if r and r != str(self.home)
        ]
        if isinstance(recents, str):
            recents = [recents]
        if recents:
            menu.addSeparator()
            for path in recents[:6]:
                menu.addAction(
                    theme.icon("history"), path, lambda p=path: self.switch_workspace(Path(p))
                )

    def _choose_workspace(self) -> None:
        path = dialogs.choose_folder(
            self, "Open a workspace folder (a HAT home)", str(self.home.parent)
        )
        if path:
            self.switch_workspace(Path(path))

    def switch_workspace(self, home: Path) -> bool:
        """Open another home folder in this window (after asking about unsaved edits)."""
        home = Path(home)
        if home == self.home:
            return True
        if not self.harness_page.confirm_leave(
            "switching workspace", lambda: self.switch_workspace(home)
        ):
            return False
        guard = workspace.InstanceGuard(home)
        try:
            guard.acquire()
        except workspace.AnotherInstance as exc:
            dialogs.error(self, "Workspace in use", str(exc))
            return False
        self._save_state()
        previous = str(self.home)
        if self.guard is not None:
            self.guard.release()
        self.guard = guard
        self.ctx.close()
        self.home = home
        self.settings = workspace.settings(home)
        recents = [
            previous,
            *[r for r in (self.settings.value("workspace/recent", []) or []) if r != previous],
        ]
        self.settings.setValue("workspace/recent", recents[:8])
        self.ctx.home = home
        self.ctx.settings = self.settings
        self.ctx.session.doc = None
        self._update_workspace_button()
        self.status_version.setText("opening workspace…")
        self._refresh_status()
        self.ctx.open()
        return True

    # ------------------------------------------------------------------ state

    def _restore(self) -> None:
        geometry = self.settings.value("window/geometry")
        size = self.settings.value("window/size")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        if isinstance(size, QSize) and size.isValid() and not self.isMaximized():
            self.resize(size)  # some platforms (offscreen, Wayland) restore position only
        elif not isinstance(geometry, QByteArray):
            self.resize(1440, 900)
        page = str(self.settings.value("window/page", "harness") or "harness")
        self.show_page(page if page in self.page_widgets else "harness")
        wanted = str(self.settings.value("window/theme", "") or "")
        app = QApplication.instance()
        if wanted in theme.THEMES and wanted != theme.current() and isinstance(app, QApplication):
            theme.apply(app, wanted)

    def _save_state(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/size", self.size())
        self.settings.setValue("window/page", self.current_page())
        self.settings.setValue("window/theme", theme.current())
        self.settings.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self._closing_ok and not self.harness_page.confirm_leave(
            "closing", self._close_after_save
        ):
            event.ignore()
            return
        self._save_state()
        if "harness" not in self._factories:
            self.harness_page.autosave_now()  # clean now: removes the recovery file
        self.ctx.close()
        if self.guard is not None:
            self.guard.release()
        event.accept()

    def _close_after_save(self) -> None:
        self._closing_ok = True
        self.close()
