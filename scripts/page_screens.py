"""Every page of the studio at 1280x800 and 1920x1080, light and dark, as PNGs, with the
layout checks the GUI tests run (nothing cut through, drawn over something else or scrolled
sideways), so a change to a page is looked at at the sizes operators use.

    python scripts/page_screens.py [--out docs/screenshots/pages]

A fresh temporary workspace (the demo harness and, when its package is installed, the demo
model); prints one line per screen and any layout problem, and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = ((1280, 800), (1920, 1080))
PAGES = ("harness", "versions", "variants", "data", "train", "evaluate", "chat", "runs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots" / "pages"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="hat-pages-"))
    os.environ["HAT_HOME"] = str(home)
    os.environ["HAT_STUDIO_DEMO_IMPORT"] = "0"

    from studio import theme
    from studio.app import create_app
    from tests.studio_helpers import idle, layout_problems, open_studio, shut, spin, wait_until

    app = create_app([])
    try:
        from core.models import DEMO_MODEL_NAME, add_demo
        from core.store import Store

        with Store.open() as store:  # the pickers then show a model, as after a first start
            add_demo(store)
            print(f"registered {DEMO_MODEL_NAME}")
    except Exception as exc:
        print(f"no demo model: {exc}")
    win = open_studio(home, size=SIZES[0], timeout=120)
    found: list[str] = []
    try:
        for name in ("light", "dark"):
            theme.apply(app, name)
            for width, height in SIZES:
                win.resize(width, height)
                spin(50)
                for page in PAGES:
                    shown = _show(win, page, idle, wait_until)
                    spin(80)
                    path = out / f"{page}-{width}x{height}-{name}.png"
                    win.grab().save(str(path))
                    problems = layout_problems(shown)
                    print(f"{path.name}: {len(problems)} layout problem(s)")
                    found += [f"{path.name}: {p}" for p in problems]
    finally:
        shut(win)
    for line in found:
        print(line)
    return 1 if found else 0


def _show(win, page: str, idle, wait_until):  # type: ignore[no-untyped-def]
    if page in ("harness", "versions"):
        win.show_page("harness")
        harness = win.harness_page
        harness.tabs.setCurrentIndex(1 if page == "versions" else 0)
        if page == "harness":
            harness.tree.select_name("tools", "check_stock")
        idle()
        return harness
    win.show_page(page)
    if page == "variants":
        wait_until(lambda: win.variants_page.view is not None, timeout=60)
    idle()
    return win.pages.currentWidget()


if __name__ == "__main__":
    raise SystemExit(main())
