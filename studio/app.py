"""`hat-studio`: the desktop application entry point.

    hat-studio [--home FOLDER] [--theme light|dark] [--smoke]

`--smoke` opens the main window, waits until the workspace has opened (database migrated, demo
harness loaded), prints the window title and exits 0 (1 when the workspace fails to open, 3
after 120 s): the packaged build's start-up check (tests/test_packaging.py).

Start-up order, tuned so the window paints fast (benchmarks/studio_bench.py): Qt only, then
the single-instance lock of the home folder, then the window; the workspace (database, harness
models) opens in a worker after the first frame. The event loop is qasync's, so pages can run
asyncio tasks (created only once the loop runs; all pending ones are cancelled on aboutToQuit).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def create_app(argv: list[str] | None = None) -> Any:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    app.setApplicationName("HAT Studio")
    app.setOrganizationName("hat-studio")
    app.setApplicationDisplayName("HAT Studio")
    # The Wayland app id and the match for packaging/hat-studio.desktop (X11 matches its
    # StartupWMClass against WM_CLASS, whose class part is the application name).
    app.setDesktopFileName("hat-studio")
    return app


def create_window(
    home: Path, *, theme_name: str | None = None, guard: Any = None, busy_timeout: float = 3.0
) -> Any:
    """The main window on `home` (the caller holds `guard`, the home's instance lock)."""
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from studio import theme, workspace
    from studio.main_window import MainWindow

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    wanted = theme_name or str(workspace.settings(home).value("window/theme", "light") or "light")
    theme.apply(app, wanted)
    app.setWindowIcon(QIcon(theme.logo_pixmap(64)))
    return MainWindow(home, guard, busy_timeout=busy_timeout)


def _home(arg: str | None) -> Path:
    if arg:
        return Path(arg).expanduser().resolve()
    from studio.workspace import default_home

    return default_home()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hat-studio", description="HAT Studio desktop workbench")
    parser.add_argument(
        "--home", help="workspace folder (default: $HAT_HOME or the user data folder)"
    )
    parser.add_argument(
        "--theme", choices=["light", "dark"], help="colour theme (default: the last one used)"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="open the window and workspace, print, exit"
    )
    args = parser.parse_args(argv)
    try:
        from PySide6.QtWidgets import QMessageBox
    except ImportError:
        print(
            "error: the studio needs the GUI extra: pip install 'hat-studio[studio]'",
            file=sys.stderr,
        )
        return 1
    from core.doctor import qtlibs

    if qtlibs.uses_xcb():  # Qt would abort (SIGABRT) on a missing X library: say which
        missing = qtlibs.missing_qt_libraries()
        if missing:
            print(f"error: {qtlibs.message(missing)}", file=sys.stderr)
            return 1
    app = create_app()
    home = _home(args.home)
    from studio.workspace import AnotherInstance, InstanceGuard

    guard = InstanceGuard(home)
    try:
        guard.acquire()
    except AnotherInstance as exc:
        print(f"hat-studio: {exc}", file=sys.stderr)
        if app.platformName() not in ("offscreen", "minimal"):
            QMessageBox.warning(None, "HAT Studio is already open", str(exc))
        return 2
    window = create_window(home, theme_name=args.theme, guard=guard)
    window.show()
    smoke = _smoke(app, window) if args.smoke else None
    code = run_event_loop(app)
    return smoke[0] if smoke else code


def _smoke(app: Any, window: Any, timeout_s: float = 120.0) -> list[int]:
    """Quit once the workspace opened (code 0), failed (1) or after `timeout_s` (3), saying
    so; the returned list receives the code."""
    import time

    from PySide6.QtCore import QTimer

    started = time.monotonic()
    title = window.windowTitle().replace("[*]", "")
    result = [3]

    def finish(code: int, what: str) -> None:
        print(f"smoke: {title!r} {what} ({time.monotonic() - started:.2f} s)", flush=True)
        result[0] = code
        app.quit()

    def opened() -> None:
        from PySide6.QtGui import QFontInfo

        # the font says whether a bundle carries resources/studio/fonts
        finish(0, f"shown, workspace opened, font {QFontInfo(app.font()).family()}")

    window.ctx.opened.connect(opened)
    window.ctx.openFailed.connect(lambda message: finish(1, f"workspace failed: {message}"))
    QTimer.singleShot(int(timeout_s * 1000), lambda: finish(3, "timed out"))
    return result


def run_event_loop(app: Any) -> int:
    """Run Qt's event loop under qasync; cancel pending tasks and jobs on aboutToQuit."""
    import asyncio

    from studio.jobs import reset_jobs

    try:
        import qasync
    except ImportError:  # pragma: no cover - qasync is part of the studio extra
        app.aboutToQuit.connect(reset_jobs)
        return int(app.exec())
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    closing = asyncio.Event()

    def about_to_quit() -> None:
        reset_jobs()
        for task in asyncio.all_tasks(loop):
            if task is not current:
                task.cancel()
        closing.set()

    app.aboutToQuit.connect(about_to_quit)
    current: asyncio.Task[Any] | None = None

    async def until_closed() -> None:
        nonlocal current
        current = asyncio.current_task()
        await closing.wait()

    with loop:
        loop.run_until_complete(until_closed())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
