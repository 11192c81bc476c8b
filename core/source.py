"""Which code a result came from, so that a replication report can name its commit.

A report that says "run on main" must say which main: results move when the code does (the
order desk's edit verdict flipped between two commits). A run started from a checkout asks
git; a run started from a tree `git archive` exported (no .git, the way a clean copy of main
is made beside a working checkout) reads the commit git wrote into `ARCHIVED_COMMIT` below
(.gitattributes marks this file `export-subst`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

# git archive replaces this placeholder with the exported commit (export-subst).
ARCHIVED_COMMIT = "$Format:%H$"
ROOT = Path(__file__).resolve().parent.parent


def code_source(root: Path = ROOT, archived: str = ARCHIVED_COMMIT) -> dict[str, Any]:
    """`{"commit", "from": "archive"}` for an exported tree; `{"commit", "from": "checkout",
    "uncommitted_changes"}` for a git checkout (tracked files only: a run folder or a venv
    inside the tree is not a change to the code); `{}` when neither can tell (an installed
    package, git missing). Only `root` itself counts as a checkout, so a venv inside some
    other repository does not report that repository's commit."""
    if not archived.startswith("$Format"):
        return {"commit": archived, "from": "archive"}
    if not (root / ".git").exists():
        return {}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.strip()  # fmt: skip

    try:
        commit = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "from": "checkout", "uncommitted_changes": bool(changed)}


def source_line(source: dict[str, Any]) -> str:
    """The report's one line on the code: the commit and how it was taken."""
    commit = source.get("commit")
    if not commit:
        return "Code: not recorded (neither a git checkout nor a git archive)."
    if source.get("from") == "archive":
        return f"Code: commit {commit} (a `git archive` of it)."
    dirty = source.get("uncommitted_changes")
    state = " **with uncommitted changes**" if dirty else ", no uncommitted changes"
    return f"Code: commit {commit} (a git checkout{state})."
