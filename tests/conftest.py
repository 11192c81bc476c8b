"""Shared test setup: hypothesis profiles and an isolated HAT home folder for every test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from core.serving import ManagedServer

# Every GUI test runs offscreen, whichever module creates the QApplication first.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Teacher keys may come from the OS keyring: no test may read (or prompt for) the real one.
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
# A studio window on a fresh home imports the demo model on first start (~30 s): only the test
# of that first start lets it (tests/test_studio_first_start.py).
os.environ["HAT_STUDIO_DEMO_IMPORT"] = "0"

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


@pytest.fixture(scope="session")
def demo_model_folder() -> Path:
    """The demo model imported once per test process (HAT_TEST_MODEL_CACHE reuses a folder)."""
    from tests.test_serving_support import demo_model

    return Path(demo_model().folder)


@pytest.fixture(scope="session")
def transformers_server(
    demo_model_folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ManagedServer]:
    """One real `transformers serve` with the demo model, shared by every module that only
    sends requests (eval, studio chat, replication). Tests must not stop or kill it; fault
    tests start their own server."""
    from core.serving import EngineConfig, ManagedServer

    server = ManagedServer(
        EngineConfig("transformers"),
        str(demo_model_folder),
        startup_timeout_s=300,
        log_dir=tmp_path_factory.mktemp("shared-tf-logs"),
    )
    server.start()
    yield server
    server.stop()
