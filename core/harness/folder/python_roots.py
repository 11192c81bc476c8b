"""Where a `python:` binding's module is looked for besides sys.path: the folders harnesses
were imported from (and their parents), so a user need not set PYTHONPATH; a path hint, never
harness content."""

from __future__ import annotations

import json
from pathlib import Path

from core.harness.folder.safe_write import write_new
from core.paths import home

PYTHON_ROOTS: list[str] = []
"""Folders a `python:` binding's module is also looked for in: each harness folder read in
this process, and its parent (where a package beside the harness lives). Without them a user
had to set PYTHONPATH before an imported folder's tools could be found."""


def add_python_roots(folder: Path) -> None:
    """Put `folder` and its parent on the list `python:` bindings are imported from (it does
    not run anything; the tools still run only once trusted)."""
    resolved = Path(folder).resolve()
    for root in (str(resolved), str(resolved.parent)):
        if root not in PYTHON_ROOTS:
            PYTHON_ROOTS.append(root)


PYTHON_ROOTS_FILE = "python_roots.json"
"""Under the user's home: {harness name: [folder, parent]} of each folder imported with
`python:` bindings, so a stored version run later (an evaluation, RL) still finds the package
beside the folder it came from. A path hint, not harness content: it never changes a version."""


def remember_python_roots(harness_name: str, folder: Path) -> None:

    path = home() / PYTHON_ROOTS_FILE
    known = _remembered(path)
    resolved = Path(folder).resolve()
    known[harness_name] = [str(resolved), str(resolved.parent)]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_new(path, (json.dumps(known, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def remembered_python_roots(harness_name: str) -> list[str]:
    """The folders `remember_python_roots` recorded for a harness name ([] when none)."""

    return list(_remembered(home() / PYTHON_ROOTS_FILE).get(harness_name, []))


def _remembered(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): [str(x) for x in v if isinstance(x, str)]
        for k, v in data.items()
        if isinstance(v, list)
    }
