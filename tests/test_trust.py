"""Trust in the studio and in core (#35 item 6): what a harness runs only once trusted is
listed with what it would run; an untrusted task-critical hook or tool is a warning (the
Problems panel and `hat harness validate` say so instead of "ready"); trust is granted and
withdrawn per hook or tool in the store, recorded by the code, so changed code asks again.
Real store, real harness, a real studio window for the panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.harness.checks import harness_warnings
from core.harness.models import Tool
from core.harness.trust import trust_items, trust_warnings
from core.store import Store
from tests.test_store import PY_HOOK, make_harness


def _untrusted_harness(name: str = "shop") -> Any:
    harness = make_harness(name, python_hook=PY_HOOK, trusted=False)
    harness.tools.append(
        Tool(
            name="lookup_order",
            description="The order behind an order number.",
            parameters={"type": "object", "properties": {"order_id": {"type": "string"}}},
            binding="python:shop.tools:lookup_order",
            trusted=False,
        )
    )
    return harness


def test_untrusted_code_is_listed_and_warned_about() -> None:
    harness = _untrusted_harness()
    items = {(i.kind, i.name): i for i in trust_items(harness)}
    assert set(items) == {("hook", "custom"), ("tool", "lookup_order")}
    hook, tool = items[("hook", "custom")], items[("tool", "lookup_order")]
    assert not hook.trusted and hook.task_critical and hook.detail == PY_HOOK
    assert "Python code (2 lines)" in hook.runs
    assert tool.runs == "the Python function lookup_order of module shop.tools"
    warned = {p.file: p.message for p in harness_warnings(harness)}
    assert "task-critical check is skipped" in warned["hooks/custom.py"]
    assert "every call to it fails" in warned["tools/lookup_order.json"]
    # a hook HSA may switch off is listed but not warned about; trusted ones are neither
    harness.hooks[-1].task_critical = False
    harness.tools[-1].trusted = True
    assert trust_warnings(harness) == []
    assert len(trust_items(harness)) == 2


@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(grants=st.lists(st.tuples(st.sampled_from(["hook", "tool"]), st.booleans()), max_size=6))
def test_trust_follows_the_last_grant_and_survives_a_reload(
    hat_home: Path, grants: list[tuple[str, bool]]
) -> None:
    """Each example opens its own store file (hat_home is shared across examples)."""
    import uuid

    names = {"hook": "custom", "tool": "lookup_order"}
    with Store.open(hat_home / f"trust-{uuid.uuid4().hex}.db") as store:
        harness = _untrusted_harness()
        version = store.commit(harness, "imported untrusted").id
        expected = {"hook": False, "tool": False}
        for kind, grant in grants:
            assert store.set_trust(harness, kind, names[kind], grant)
            expected[kind] = grant
        loaded = store.load(version)
        got = {(i.kind): i.trusted for i in trust_items(loaded)}
        assert got == expected
        assert {(i.kind): i.trusted for i in trust_items(harness)} == expected


def test_changed_code_asks_again_and_unknown_names_are_refused(hat_home: Path) -> None:
    with Store.open(hat_home / "hat.db") as store:
        harness = _untrusted_harness()
        store.commit(harness, "v1")
        assert store.set_trust(harness, "hook", "custom", True)
        assert not store.set_trust(harness, "hook", "need-skill", True)  # declarative: no code
        assert not store.set_trust(harness, "tool", "tool_0", True)  # sim binding: no trust
        assert not store.set_trust(harness, "tool", "nothing", True)
        # the same folder imported again without --trust: the grant holds for the same code
        same = _untrusted_harness()
        v2 = store.commit(same, "v2: imported again").id
        assert next(h for h in store.load(v2).hooks if h.name == "custom").trusted
        # ... and not for code that changed since it was trusted: it asks again
        changed = _untrusted_harness()
        changed.hooks[-1].source = PY_HOOK + "# changed since it was trusted\n"
        v3 = store.commit(changed, "v3: the hook's code changed").id
        again = store.load(v3)
        assert not next(h for h in again.hooks if h.name == "custom").trusted
        assert any(p.file == "hooks/custom.py" for p in trust_warnings(again))
