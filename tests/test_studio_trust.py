"""The studio's Trust panel in a real window (#35 item 6): what an imported harness runs only
once trusted is listed with what it would run, Trust shows the code before it records the grant,
Withdraw takes it back, and the Problems panel follows. Real store, real window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.store import Store
from tests.test_store import PY_HOOK
from tests.test_trust import _untrusted_harness


@pytest.mark.timeout(300)
def test_trust_panel_grants_and_withdraws(qapp: Any, hat_home: Path, monkeypatch: Any) -> None:
    from studio import dialogs
    from tests.studio_helpers import idle, open_studio, shut, wait_until

    with Store.open() as store:
        store.commit(_untrusted_harness(), "imported without trust")
    win = open_studio(hat_home, timeout=120)
    try:
        page = win.harness_page
        page.load_ref("head", "shop")
        wait_until(
            lambda: win.ctx.session.doc is not None and win.ctx.session.harness.name == "shop"
        )
        # The start-up load may already hold "shop": wait for this load too, or its store
        # read (before the grant below) lands after the grant and puts the untrusted copy back.
        idle()
        page._select("overview", None)
        overview = page.overview
        wait_until(overview.isVisible)
        overview.refresh_problems()
        overview.refresh_trust()
        problems = [overview.problems.item(i).text() for i in range(overview.problems.count())]
        assert any("hooks/custom.py" in t and "not trusted" in t for t in problems), problems
        assert not any("can be saved and served" in t for t in problems)
        rows = [overview.trust_list.item(i).text() for i in range(overview.trust_list.count())]
        assert rows[0].startswith("hook custom · not trusted · task-critical"), rows
        assert rows[1].startswith("tool lookup_order · not trusted"), rows
        assert overview.trust_count.text() == "2 not trusted"

        asked: list[str] = []

        def confirm(_parent: Any, title: str, text: str, **kw: Any) -> bool:
            asked.append(f"{title}\n{text}\n{kw.get('detail', '')}")
            return True

        monkeypatch.setattr(dialogs, "confirm", confirm)
        overview.trust_list.setCurrentRow(0)
        assert overview.trust_button.isEnabled() and not overview.untrust_button.isEnabled()
        overview.trust_button.click()
        idle()
        assert asked and "Trust hook custom?" in asked[0] and PY_HOOK.strip() in asked[0]
        wait_until(lambda: overview.trust_count.text() == "1 not trusted")
        problems = [overview.problems.item(i).text() for i in range(overview.problems.count())]
        assert not any("hooks/custom.py" in t for t in problems), problems
        with Store.open() as store:
            loaded = store.load("head", "shop")
        assert next(h for h in loaded.hooks if h.name == "custom").trusted
        assert not win.ctx.session.dirty  # trust is not an edit to save

        overview.trust_list.setCurrentRow(0)
        assert overview.untrust_button.isEnabled()
        overview.untrust_button.click()
        idle()
        wait_until(lambda: overview.trust_count.text() == "2 not trusted")
        with Store.open() as store:
            loaded = store.load("head", "shop")
        assert not next(h for h in loaded.hooks if h.name == "custom").trusted

        # A grant recorded elsewhere (the CLI's `--trust`) shows once the harness is loaded
        # again: the Trust panel follows the load, as the Problems panel does.
        with Store.open() as store:
            store.set_trust(store.load("head", "shop"), "hook", "custom", True)
        page.load_ref("head", "shop")
        idle()
        wait_until(lambda: overview.trust_count.text() == "1 not trusted")
        problems = [overview.problems.item(i).text() for i in range(overview.problems.count())]
        assert not any("hooks/custom.py" in t for t in problems), problems
    finally:
        shut(win)
