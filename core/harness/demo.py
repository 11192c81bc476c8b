"""The demo harness shipped with HAT Studio: a live-stream shopping host (resources/demo/live-host).

It is the default workspace of the studio, the harness the simulator's tools are bound to
(`sim.<tool>` bindings) and the reference harness of the tests.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from core.harness.folder import import_folder
from core.harness.models import Harness

DEMO_HARNESS = "live-host"


def demo_root() -> Path:
    """resources/demo: the demo harness folder (and, later, the demo catalog)."""
    root = resources.files("resources")
    if not isinstance(root, Path):  # e.g. a zipped install; the studio needs real files
        raise FileNotFoundError("the resources package is not installed as plain files")
    return root / "demo"


def demo_harness_path() -> Path:
    """Folder of the demo harness (canonical folder format)."""
    return demo_root() / DEMO_HARNESS


def load_demo_harness() -> Harness:
    """Import the demo harness; it validates, so this raises only if the install is broken."""
    return import_folder(demo_harness_path())
