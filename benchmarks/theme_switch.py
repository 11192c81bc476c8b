"""How long the studio's light/dark switch takes with every page built, against the part Qt
itself needs: setting the same application stylesheet on the same widgets.

    python benchmarks/theme_switch.py [--runs 5]

Offscreen, a fresh temporary workspace; prints medians in seconds and their ratio as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["HAT_STUDIO_DEMO_IMPORT"] = "0"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="hat-theme-"))
    os.environ["HAT_HOME"] = str(home)

    from studio import theme
    from studio.app import create_app
    from tests.studio_helpers import idle, open_studio, shut

    app = create_app([])
    win = open_studio(home, size=(1440, 900))
    try:
        for page in ("variants", "data", "train", "evaluate", "chat", "runs", "harness"):
            win.show_page(page)
            idle()
        toggles, sheets = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            win.toggle_theme()
            app.processEvents()
            toggles.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            app.setStyleSheet(theme.stylesheet(theme.current()))  # Qt's re-polish alone
            app.processEvents()
            sheets.append(time.perf_counter() - t0)
    finally:
        shut(win)
    toggle, sheet = statistics.median(toggles), statistics.median(sheets)
    print(json.dumps({"toggle_s": round(toggle, 3), "stylesheet_only_s": round(sheet, 3),
                      "ratio": round(toggle / sheet, 2), "load": os.getloadavg()}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
