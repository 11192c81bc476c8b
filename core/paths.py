"""Where HAT Studio keeps its state: one home folder (platformdirs; HAT_HOME overrides)."""

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


def database_path() -> Path:
    return home() / "hat.db"


def models_dir() -> Path:
    return home() / "models"


def runs_dir() -> Path:
    return home() / "runs"


def datasets_dir() -> Path:
    return home() / "datasets"
