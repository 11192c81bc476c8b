"""The first start of the studio (#35 item 4): the demo model is registered once per home, in
the background, only where the registry holds no full model. The real first-start import and
every page offering it are the first step of the operator's-day test
(tests/test_studio_golden_path.py); here, the rules around it, with the real window and store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.models import add_folder, demo_to_offer, list_models, remove
from core.store import Store


def test_demo_is_offered_only_to_a_registry_without_a_full_model(
    hat_home: Path, demo_model_folder: Path
) -> None:
    with Store.open() as store:
        assert demo_to_offer(store)  # empty registry, demo package installed here
        add_folder(store, "my-model", demo_model_folder)
        assert not demo_to_offer(store)  # the operator's own model: leave the registry alone
        remove(store, "my-model")
        assert demo_to_offer(store)


@pytest.mark.timeout(600)
def test_the_demo_is_offered_once_per_home(
    qapp: Any, hat_home: Path, demo_model_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first start on a home that already has the operator's own model imports nothing, and
    the offer is spent: once that model is removed, the next start does not bring the demo in
    (Chat's "Add the demo model" is there for that). The import itself, and every page
    offering the imported demo, is the operator's-day test's first step
    (tests/test_studio_golden_path.py)."""
    from studio.main_window import DEMO_IMPORT_ENV
    from tests.studio_helpers import idle, open_studio, shut

    monkeypatch.setenv(DEMO_IMPORT_ENV, "1")
    with Store.open() as store:
        add_folder(store, "my-model", demo_model_folder)
    win = open_studio(hat_home, timeout=120)
    try:
        idle(timeout=120)
        with Store.open() as store:
            assert [r.name for r in list_models(store)] == ["my-model"]
    finally:
        shut(win)
    with Store.open() as store:
        remove(store, "my-model")
    win = open_studio(hat_home, timeout=120)
    try:
        idle(timeout=120)
        with Store.open() as store:
            assert list_models(store) == []
    finally:
        shut(win)
