"""Issue 19, item 14: missing X libraries are named with their install command, no abort."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.doctor.qtlibs import check_qt_libraries, install_command, missing_qt_libraries, parse_ldd
from core.doctor.report import Status

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd)
\tlibQt6XcbQpa.so.6 => /x/PySide6/Qt/lib/libQt6XcbQpa.so.6 (0x00007f)
\tlibxcb-cursor.so.0 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-cursor.so.0 => not found
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux/X11 only")


def _fake_ldd(tmp_path: Path) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "out.txt").write_text(LDD)
    ldd = bindir / "ldd"
    ldd.write_text(f"#!/bin/sh\ncat {bindir / 'out.txt'}\n")
    ldd.chmod(0o755)
    return ldd


def test_ldd_output_maps_to_packages() -> None:
    missing = parse_ldd(LDD)
    assert missing == ["libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert install_command(missing).endswith(
        "apt-get install -y libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1"
    )


def test_missing_libraries_of_a_plugin(tmp_path: Path) -> None:
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"\x7fELF")
    assert missing_qt_libraries([plugin], ldd=str(_fake_ldd(tmp_path)))[0] == "libxcb-cursor.so.0"


def test_launcher_check_exits_with_the_install_command(tmp_path: Path) -> None:
    """scripts/studio.sh runs this before hat-studio: a message and exit 1, not SIGABRT."""
    pytest.importorskip("PySide6")
    _fake_ldd(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}
    env["PATH"] = f"{tmp_path / 'bin'}:{env['PATH']}"
    run = subprocess.run(
        [sys.executable, "-m", "core.doctor.qtlibs"], env=env, capture_output=True, text=True
    )
    assert run.returncode == 1
    assert "apt-get install -y libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in run.stderr
    script = Path("scripts/studio.sh").read_text()
    assert "python -m core.doctor.qtlibs || exit 1" in script
    assert script.index("core.doctor.qtlibs") < script.index("exec hat-studio")


def test_doctor_line_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("PySide6")
    monkeypatch.setattr("core.doctor.qtlibs.missing_qt_libraries", lambda: ["libxcb-cursor.so.0"])
    result = check_qt_libraries()
    assert result.status is Status.WARN
    assert result.fix.endswith("apt-get install -y libxcb-cursor0")
