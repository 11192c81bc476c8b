"""Which harness a command means: one rule for a stored ref, a folder, or nothing given.

Nothing given means `live-host@production`, else `live-host@head`, else the bundled demo
harness (committed first where a stored version is needed, so a run always names one). A bare
stored harness name follows the same rule: `<name>@production`, else `<name>@head`.
Evaluation, RL and data generation resolve through here, so "the default harness" is one
thing whichever command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.harness.demo import DEMO_HARNESS, load_demo_harness
from core.harness.folder import import_folder
from core.harness.models import Harness
from core.store.errors import StoreError

if TYPE_CHECKING:
    from core.store.harness_versions import VersionInfo
    from core.store.store import Store

DEFAULT_HARNESS = DEMO_HARNESS
"""The harness a command without one runs under (module doc)."""

DEFAULT_RULE = f"{DEFAULT_HARNESS}@production, else @head, else the demo"
"""The default rule in words, for help texts."""


def default_ref(store: Store, name: str) -> str:
    """`name@production` where that label exists, else `name@head`."""
    try:
        store.info(f"{name}@production")
    except StoreError:
        return f"{name}@head"
    return f"{name}@production"


def default_stored(store: Store) -> VersionInfo | None:
    """The stored version nothing given means (`live-host@production`, else `@head`), or None
    when the store holds neither."""
    for candidate in (f"{DEFAULT_HARNESS}@production", f"{DEFAULT_HARNESS}@head"):
        try:
            return store.info(candidate)
        except StoreError:
            continue
    return None


def resolve_stored(store: Store, ref: str | None) -> tuple[Harness, str, str]:
    """(harness, its name, stored version id) for a stored ref or the default (module doc);
    StoreError for a ref that names nothing stored."""
    if ref is not None:
        try:
            info = store.info(ref)
        except StoreError:
            if "@" in ref or ref not in store.harness_names():
                raise
            info = store.info(default_ref(store, ref))
        return store.load(info.id), info.harness_name, info.id
    found = default_stored(store)
    if found is not None:
        return store.load(found.id), found.harness_name, found.id

    harness = load_demo_harness()
    info = store.commit(harness, "the bundled demo harness (stored for evaluation)")
    return store.load(info.id), info.harness_name, info.id


def resolve_harness(
    store: Store, ref: str | None, *, trust: bool = False
) -> tuple[Harness, str | None]:
    """(harness, stored version id or None) for a folder (read, its code trusted only with
    `trust`), a stored ref or the default rule (the bundled demo is not committed here: a
    folder or the demo has no version)."""
    if ref is not None and Path(ref).expanduser().is_dir():
        return import_folder(Path(ref).expanduser(), trust_python_hooks=trust), None
    if ref is None:
        info = default_stored(store)
        if info is not None:
            return store.load(info.id), info.id

        return load_demo_harness(), None
    harness, _name, version = resolve_stored(store, ref)
    return harness, version
