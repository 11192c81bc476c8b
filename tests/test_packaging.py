"""Desktop packaging: the .desktop entry, the packaged entry point, and the real PyInstaller build.

The fast tests check the desktop entry against what the application sets (name, desktop file
name, icon) and the entry point's Python-like calls, in real child processes.

The build smoke test (`slow`) runs packaging/build.sh into a temporary folder, then starts the
built app offscreen with `--smoke` (window shown and workspace opened, database migrated from
the bundled alembic scripts), runs the bundled `hat doctor`, and assembles the AppImage's
AppDir. It runs when PyInstaller is importable or HAT_PACKAGING_SMOKE=1 (HAT_PACKAGING_SMOKE=0
skips it); HAT_PACKAGING_DIST=<folder holding hat-studio/> reuses a finished build. Figures
(build time, bundle size, start time) are printed: `pytest -s` shows them.
"""

from __future__ import annotations

import configparser
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
DESKTOP = PACKAGING / "hat-studio.desktop"
ENTRY = PACKAGING / "hat_studio_entry.py"
BUILD_TIMEOUT_S = 1500
SMOKE_TIMEOUT_S = 180


def _desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(DESKTOP, encoding="utf-8")
    return parser["Desktop Entry"]


def test_desktop_entry_matches_the_application(qapp: object) -> None:
    from studio.app import create_app

    app = create_app()
    entry = _desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Name"] == app.applicationDisplayName()
    # X11 matches StartupWMClass against WM_CLASS, whose class is the application name; Wayland
    # matches the desktop file's name against the app id (desktopFileName).
    assert entry["StartupWMClass"] == app.applicationName() == "HAT Studio"
    assert DESKTOP.stem == app.desktopFileName() == "hat-studio"
    assert entry["Exec"].split()[0] == entry["TryExec"] == "hat-studio"
    assert entry["Icon"] == "hat-studio"
    assert entry["Terminal"] == "false"
    validate = shutil.which("desktop-file-validate")
    if validate:
        done = subprocess.run([validate, str(DESKTOP)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def _entry(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ENTRY), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
    )


def test_entry_point_answers_python_calls() -> None:
    """What core starts with `sys.executable` (Python hooks: `-I -c`), answered like Python."""
    done = _entry("-I", "-c", "import sys; print('hook', sys.argv[1:])", "a", "b")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hook ['a', 'b']"
    failed = _entry("-c", "raise SystemExit(7)")
    assert failed.returncode == 7
    refused = _entry("-m", "training", "sft")
    assert refused.returncode == 2
    assert "HAT_TRAINING_PYTHON" in refused.stderr and "hat doctor" in refused.stderr
    cli = _entry("-m", "core.cli.main", "doctor", "--help")
    assert cli.returncode == 0, cli.stderr
    assert "--migrate" in cli.stdout


def test_python_hook_runs_through_the_entry_point() -> None:
    """The real hook runner (core/runtime/python_hooks.py) against the entry point as the
    interpreter, as it runs inside the bundle."""
    import asyncio

    from core.harness.models import Hook
    from core.runtime.python_hooks import run_python_hook

    wrapper = Path(os.environ.get("TMPDIR", "/tmp")) / f"hat-entry-{os.getpid()}.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {ENTRY} "$@"\n')
    wrapper.chmod(0o755)
    try:
        hook = Hook.model_validate(
            {
                "name": "short",
                "event": "before_reply",
                "kind": "python",
                "trusted": True,
                "source": "def check(event):\n    return {'decision': 'block', 'reason': 'x'}\n",
            }
        )
        result = asyncio.run(run_python_hook(hook, {"text": "hi"}, python=str(wrapper)))
    finally:
        wrapper.unlink()
    assert result.decision == "block" and result.reason == "x", result


# ----------------------------------------------------------------------------- the real build


def _smoke_wanted() -> bool:
    flag = os.environ.get("HAT_PACKAGING_SMOKE")
    if flag is not None:
        return flag == "1"
    return importlib.util.find_spec("PyInstaller") is not None


_skip = pytest.mark.skipif(
    not _smoke_wanted(), reason="packaging smoke off: needs PyInstaller or HAT_PACKAGING_SMOKE=1"
)


def smoke(test: Any) -> Any:
    """Slow, skipped unless wanted, and allowed the build's time (whichever test runs first
    builds the bundle in its fixture)."""
    return pytest.mark.slow(pytest.mark.timeout(BUILD_TIMEOUT_S + 300)(_skip(test)))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reuse = os.environ.get("HAT_PACKAGING_DIST")
    if reuse:
        folder = Path(reuse) / "hat-studio"
        assert (folder / "hat-studio").is_file(), f"no build in {reuse}"
        return folder
    out = tmp_path_factory.mktemp("pyinstaller")
    started = time.monotonic()
    command = ["bash", str(PACKAGING / "build.sh"), "--distpath", str(out / "dist")]
    proc = subprocess.Popen(
        [*command, "--workpath", str(out / "work")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,  # PyInstaller's own children go with it on timeout
    )
    try:
        stdout, stderr = proc.communicate(timeout=BUILD_TIMEOUT_S)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    assert proc.returncode == 0, stdout[-3000:] + stderr[-3000:]
    print(f"\nbuild: {time.monotonic() - started:.0f} s; {stdout.strip().splitlines()[-1]}")
    return out / "dist" / "hat-studio"


def _bundle_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAT_")}
    env.update(QT_QPA_PLATFORM="offscreen", HAT_HOME=str(home), **extra)
    return env


@smoke
def test_built_app_opens_its_window_offscreen(bundle: Path, tmp_path: Path) -> None:
    from core.doctor.local import schema_state

    home = tmp_path / "home"
    started = time.monotonic()
    done = subprocess.run(
        [str(bundle / "hat-studio"), "--smoke", "--home", str(home)],
        capture_output=True,
        text=True,
        env=_bundle_env(home),
        timeout=SMOKE_TIMEOUT_S,
    )
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "smoke: 'HAT Studio' shown, workspace opened" in done.stdout
    assert "font Inter" in done.stdout  # the bundled UI font travelled with the bundle
    # The workspace opened from the bundle: alembic migrated a new database to head.
    assert schema_state(home / "hat.db").at_head
    files = [p for p in bundle.rglob("*") if p.is_file() and not p.is_symlink()]
    size_mb = sum(p.stat().st_size for p in files) / 1e6
    print(f"\nsmoke start to workspace opened: {seconds:.1f} s; bundle {size_mb:.0f} MB")


@smoke
def test_bundle_leaves_out_the_torch_stack_and_qml(bundle: Path) -> None:
    names = [str(p.relative_to(bundle)) for p in bundle.rglob("*")]
    for fragment in ("libQt6Qml", "libQt6Quick", "libQt6WebEngine", "QtWebEngineProcess"):
        assert not [n for n in names if fragment in n], fragment
    for package in ("torch", "transformers", "trl", "peft", "vllm"):
        assert not (bundle / "_internal" / package).exists(), package
    assert [n for n in names if n.endswith("libQt6Widgets.so.6")]
    assert (bundle / "_internal" / "core" / "store" / "migrations" / "env.py").is_file()
    assert (bundle / "_internal" / "resources" / "demo" / "live-host" / "harness.yaml").is_file()


@smoke
def test_bundled_cli_finds_the_training_environment(bundle: Path, tmp_path: Path) -> None:
    """`hat doctor` inside the bundle: no training environment is a FAIL with the fix; a
    <home>/envs/training link to this venv is picked up by itself."""
    home = tmp_path / "home"
    home.mkdir()

    def doctor() -> dict[str, dict[str, object]]:
        done = subprocess.run(
            [str(bundle / "hat"), "doctor", "--quick", "--json"],
            capture_output=True,
            text=True,
            env=_bundle_env(home),
            timeout=240,
        )
        assert done.stdout.strip(), done.stderr[-3000:]
        return {c["key"]: c for c in json.loads(done.stdout)["checks"]}

    checks = doctor()
    training = checks["training"]
    assert training["status"] == "fail"
    assert training["summary"].startswith("the packaged app has no training environment")
    assert f"{home}/envs/training" in str(training["fix"])
    venv = Path(sys.prefix)
    (home / "envs").mkdir()
    (home / "envs" / "training").symlink_to(venv)
    checks = doctor()
    assert checks["training"]["status"] == "ok", checks["training"]
    assert checks["serving"]["status"] == "ok", checks["serving"]
    assert f"{home}/envs/training/bin/python" in str(checks["training"]["details"])


@smoke
def test_appdir_assembles(bundle: Path, tmp_path: Path) -> None:
    appdir = tmp_path / "HAT_Studio.AppDir"
    done = subprocess.run(
        ["bash", str(PACKAGING / "appimage" / "build-appimage.sh"), "--appdir-only"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HAT_DIST": str(bundle.parent), "HAT_APPDIR": str(appdir)},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert os.access(appdir / "AppRun", os.X_OK)
    assert (appdir / "hat-studio.desktop").is_file() and (appdir / "hat-studio.svg").is_file()
    assert (appdir / "usr" / "lib" / "hat-studio" / "hat-studio").is_file()
    version = subprocess.run(
        [str(appdir / "AppRun"), "hat", "doctor", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert version.returncode == 0, version.stderr
    assert "--migrate" in version.stdout
