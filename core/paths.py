"""Where HAT Studio keeps its state: one home folder (platformdirs; HAT_HOME overrides).

A long-lived front end (the studio) may hold a workspace that is not `$HAT_HOME`: it passes
that folder as `root` (a store knows its own, `Store.home`), and the process environment is
never changed for it.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "hat-studio"


def home() -> Path:
    override = os.environ.get("HAT_HOME")
    root = Path(override).expanduser() if override else Path(platformdirs.user_data_dir(APP_NAME))
    root.mkdir(parents=True, exist_ok=True)
    return root


def database_path(root: Path | None = None) -> Path:
    """The database of the home `root` (default: `home()`); likewise the folders below."""
    return (root or home()) / "hat.db"


def models_dir(root: Path | None = None) -> Path:
    return (root or home()) / "models"


def runs_dir(root: Path | None = None) -> Path:
    return (root or home()) / "runs"


def datasets_dir(root: Path | None = None) -> Path:
    return (root or home()) / "datasets"


def server_logs_dir(root: Path | None = None) -> Path:
    """Managed model servers' logs (`<engine>-<port>.log`): in the user's own home, never in
    the shared temporary folder, where anyone could plant a link at the name."""
    return (root or home()) / "logs" / "servers"
