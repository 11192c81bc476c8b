"""Shared test setup: hypothesis profiles and an isolated HAT home folder for every test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# "dev" (default) explores more; "ci" (CI=true) keeps the whole suite fast. Override with
# HYPOTHESIS_PROFILE=<name>.
settings.register_profile(
    "dev", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if _ci else "dev"))


@pytest.fixture(autouse=True)
def hat_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HAT_HOME at a fresh folder so no test touches the user's real state."""
    home = tmp_path_factory.mktemp("hat-home")
    monkeypatch.setenv("HAT_HOME", str(home))
    return home
