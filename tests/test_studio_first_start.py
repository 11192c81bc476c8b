"""The first start of the studio on a fresh home (#35 item 4): the demo model is registered once,
in the background, and every page that picks a model offers it — Train included, which used to
see an empty registry until Chat's "Add the demo model" was pressed. Real parts: the real window,
the real GGUF import of the installed demo package (~30 s), the real store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.models import DEMO_MODEL_NAME, add_folder, demo_to_offer, list_models, remove
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


def _offered(win: Any) -> dict[str, str]:
    """What each page's model picker offers (Train's SFT form, Evaluate's run form, Chat's
    server A), as one text per page."""

    def items(combo: Any) -> str:
        return " ".join(f"{combo.itemText(i)} {combo.itemData(i)}" for i in range(combo.count()))

    return {
        "train": str(win.page("train").forms["sft"].value("model")),
        "evaluate": items(win.page("evaluate").run.picker.model),
        "chat": items(win.page("chat").servers["A"].model),
    }


@pytest.mark.timeout(900)
def test_first_start_registers_the_demo_for_every_page_once(
    qapp: Any, hat_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.main_window import DEMO_IMPORT_ENV
    from tests.studio_helpers import idle, open_studio, shut, wait_until

    monkeypatch.setenv(DEMO_IMPORT_ENV, "1")
    win = open_studio(hat_home, timeout=120, settle=600)  # the import job, ~30 s here
    try:
        with Store.open() as store:
            names = [r.name for r in list_models(store)]
        assert names == [DEMO_MODEL_NAME]
        for key in ("train", "evaluate", "chat"):
            win.show_page(key)
        idle()
        wait_until(lambda: all(DEMO_MODEL_NAME in v for v in _offered(win).values()))
    finally:
        shut(win)

    # The operator removes the demo: the next start does not bring it back.
    with Store.open() as store:
        remove(store, DEMO_MODEL_NAME)
    win = open_studio(hat_home, timeout=120)
    try:
        idle(timeout=120)
        with Store.open() as store:
            assert list_models(store) == []
    finally:
        shut(win)
