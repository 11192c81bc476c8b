"""Issue 19, item 12: a home folder on a read-only file system.

A real read-only mount: the test runs in a private mount namespace (`unshare -m`, needs root,
as CI and the dev machines here are), mounts a tmpfs, fills it, remounts it read-only and runs
the CLI there; the mount vanishes with the namespace. Skipped where that is not possible.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.harness.demo import demo_harness_path

HAT = f"{sys.executable} -c 'from core.cli.main import app; app()'"


def _can_mount() -> bool:
    if os.name != "posix" or shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt && umount /mnt"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _can_mount(), reason="needs root and mount namespaces")


def test_commands_read_and_doctor_keeps_an_intact_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    script = textwrap.dedent(
        f"""
        set -u
        export HAT_HOME={home}
        mount -t tmpfs tmpfs {home} || exit 90
        {HAT} harness import {demo_harness_path()} -m first > /dev/null || exit 91
        mount -o remount,ro {home} || exit 92
        echo "== log"; {HAT} harness log; echo "rc=$?"
        echo "== import"; {HAT} harness import {demo_harness_path()} -m second 2>&1; echo "rc=$?"
        echo "== doctor"; {HAT} doctor 2>&1; echo "rc=$?"
        """
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    run = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    log, rest = out.split("== import", 1)
    imp, doctor = rest.split("== doctor", 1)
    assert "live-host  first" in log and "rc=0" in log, out
    assert "rc=1" in imp and "read-only file system" in imp and "Traceback" not in imp, out
    assert "Traceback" not in doctor
    assert ".broken" not in doctor and "mv " not in doctor, doctor
    assert "read-only" in doctor, doctor
