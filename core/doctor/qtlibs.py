"""The system libraries Qt's X11 platform plugin needs, found without loading Qt.

Qt 6.5+ needs `libxcb-cursor0` and a handful of other X libraries that minimal Linux images
lack; without them PySide6 aborts the process (SIGABRT, a core dump) with a plugin message.
`missing_qt_libraries()` runs `ldd` on PySide6's `libqxcb.so` and its `libQt6XcbQpa` and
maps every "not found" library to its Debian/Ubuntu package, so the studio launcher and
`hat doctor` can print the exact install command instead.

    python -m core.doctor.qtlibs      exit 0 when nothing is missing (or not applicable),
                                      else 1 with the install command on stderr
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core.doctor.report import CheckResult, Status

if TYPE_CHECKING:
    from core.doctor.report import CheckResult

# shared object -> Debian/Ubuntu package (Qt 6.5+'s xcb plugin and what it links)
PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xinerama.so.0": "libxcb-xinerama0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
}
_NOT_FOUND = re.compile(r"^\s*(\S+)\s*=>\s*not found", re.MULTILINE)


def xcb_plugin_files() -> list[Path]:
    """PySide6's xcb platform plugin and its Qt library, where PySide6 is installed."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or spec.origin is None:
        return []
    root = Path(spec.origin).parent / "Qt"
    found = [root / "plugins" / "platforms" / "libqxcb.so"]
    found += sorted((root / "lib").glob("libQt6XcbQpa.so*"))[:1]
    return [p for p in found if p.exists()]


def parse_ldd(output: str) -> list[str]:
    """The libraries `ldd` reports as "not found", in order, without repeats."""
    return list(dict.fromkeys(_NOT_FOUND.findall(output)))


def missing_qt_libraries(files: list[Path] | None = None, ldd: str = "ldd") -> list[str]:
    """Shared libraries Qt's xcb plugin needs and the system lacks ([] when all are there,
    or when this is not Linux, PySide6 is absent, or ldd cannot run)."""
    if not sys.platform.startswith("linux"):
        return []
    targets = xcb_plugin_files() if files is None else files
    missing: list[str] = []
    for target in targets:
        try:
            run = subprocess.run(
                [ldd, str(target)], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return []
        missing += [m for m in parse_ldd(run.stdout + run.stderr) if m not in missing]
    return missing


def install_command(missing: list[str]) -> str:
    packages = sorted({PACKAGES.get(lib, lib) for lib in missing})
    sudo = "" if hasattr(os, "geteuid") and os.geteuid() == 0 else "sudo "
    return f"{sudo}apt-get install -y {' '.join(packages)}"


def uses_xcb() -> bool:
    """Whether Qt would load the xcb plugin (QT_QPA_PLATFORM unset or xcb…)."""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    return sys.platform.startswith("linux") and (not platform or platform.startswith("xcb"))


def message(missing: list[str]) -> str:
    return (
        "the studio cannot open a window: Qt's X11 plugin needs system libraries this machine "
        f"lacks ({', '.join(missing)}). Install them with:\n    {install_command(missing)}\n"
        "(other distributions: install the packages that provide these files; or run "
        "headless with QT_QPA_PLATFORM=offscreen)"
    )


def main() -> int:
    if not uses_xcb():
        return 0
    missing = missing_qt_libraries()
    if not missing:
        return 0
    print(f"error: {message(missing)}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())


def check_qt_libraries() -> CheckResult:
    """`hat doctor`'s line: the libraries the studio's window needs (Linux, X11)."""

    title = "Studio display libraries"
    if not sys.platform.startswith("linux"):
        return CheckResult("qt-libs", title, Status.INFO, "not needed on this platform")
    if not xcb_plugin_files():
        return CheckResult("qt-libs", title, Status.INFO, "PySide6 is not installed here")
    missing = missing_qt_libraries()
    if not missing:
        return CheckResult("qt-libs", title, Status.OK, "Qt's X11 plugin finds all it needs")
    return CheckResult(
        "qt-libs",
        title,
        Status.WARN,
        f"missing for the studio's window: {', '.join(missing)}",
        ["hat-studio would abort at start-up; QT_QPA_PLATFORM=offscreen runs without them"],
        install_command(missing),
    )
