"""`hat-studio`: the desktop application entry point.

Until the studio screens land this opens a window that loads the demo workspace through core,
so the install and the core/studio boundary are exercised end to end.
"""

from __future__ import annotations

import sys


def build_window() -> object:
    from PySide6.QtWidgets import QLabel, QMainWindow, QVBoxLayout, QWidget

    from core.harness.demo import load_demo_harness

    harness = load_demo_harness()
    window = QMainWindow()
    window.setWindowTitle("HAT Studio")
    body = QWidget()
    layout = QVBoxLayout(body)
    title = QLabel(f"<h2>HAT Studio</h2><p>Demo workspace: <b>{harness.name}</b></p>")
    summary = QLabel(
        f"{len(harness.skills)} skills · {len(harness.tools)} tools · "
        f"{len(harness.hooks)} hooks · {len(harness.prompt.sections)} prompt sections"
    )
    layout.addWidget(title)
    layout.addWidget(summary)
    layout.addStretch(1)
    window.setCentralWidget(body)
    window.resize(900, 600)
    return window


def main() -> int:
    try:
        from PySide6.QtWidgets import QApplication
    except ImportError:
        print(
            "error: the studio needs the GUI extra: pip install 'hat-studio[studio]'",
            file=sys.stderr,
        )
        return 1
    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("hat-studio")
    window = build_window()
    window.show()  # type: ignore[attr-defined]
    return int(app.exec())


if __name__ == "__main__":
    raise SystemExit(main())
