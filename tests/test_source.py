"""A replication names the code it ran from (core/source.py): a checkout's commit and whether
its tracked files had changes, an exported tree's stamped commit, nothing when neither tells.
Real git on real repositories in tmp_path, and `git archive` of this project."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from core.source import ROOT, code_source, source_line

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "dev@example.org")
    _git(root, "config", "user.name", "dev")
    (root / "code.py").write_text("x = 1\n")
    _git(root, "add", "code.py")
    _git(root, "commit", "-qm", "first")
    return root


def test_a_checkout_names_its_commit_and_whether_tracked_files_changed(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    head = _git(root, "rev-parse", "HEAD")
    assert code_source(root) == {"commit": head, "from": "checkout", "uncommitted_changes": False}
    (root / "runs").mkdir()
    (root / "runs" / "state.json").write_text("{}")  # an untracked run folder: not the code
    assert code_source(root)["uncommitted_changes"] is False
    (root / "code.py").write_text("x = 2\n")
    found = code_source(root)
    assert found["commit"] == head and found["uncommitted_changes"] is True
    assert "**with uncommitted changes**" in source_line(found)
    _git(root, "commit", "-qam", "second")
    again = code_source(root)
    assert again["commit"] == _git(root, "rev-parse", "HEAD") != head
    assert again["uncommitted_changes"] is False


def test_a_folder_inside_another_repository_is_not_a_checkout(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    inner = root / "venv" / "site-packages"
    inner.mkdir(parents=True)
    assert code_source(inner) == {}  # git would answer for `root`: not this code's commit
    assert source_line({}).startswith("Code: not recorded")


def test_an_archive_of_this_project_carries_its_commit(tmp_path: Path) -> None:
    """`git archive` fills in core/source.py's stamp (.gitattributes export-subst), so a run
    from an exported copy of main names the commit it was exported from."""
    if not (ROOT / ".git").exists():
        pytest.skip("this tree is not a git checkout")
    probe = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True)
    if probe.returncode:  # say, a checkout owned by another user (git's safe.directory)
        pytest.skip(f"git cannot read this checkout: {probe.stderr.decode().strip()}")
    assert _git(ROOT, "check-attr", "export-subst", "core/source.py").endswith(": set")
    head = _git(ROOT, "rev-parse", "HEAD")
    raw = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "HEAD", "core/source.py"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        member = tar.extractfile("core/source.py")
        assert member is not None
        text = member.read().decode()
    namespace: dict[str, object] = {"__file__": str(tmp_path / "core" / "source.py")}
    exec(compile(text, "source.py", "exec"), namespace)  # the exported module as it would run
    stamped = namespace["ARCHIVED_COMMIT"]
    assert stamped == head
    found = namespace["code_source"](tmp_path)  # type: ignore[operator]
    assert found == {"commit": head, "from": "archive"}
    assert source_line(found) == f"Code: commit {head} (a `git archive` of it)."


def test_no_git_and_no_stamp_records_nothing(tmp_path: Path) -> None:
    assert code_source(tmp_path) == {}
    assert code_source(tmp_path, archived="0123abc") == {"commit": "0123abc", "from": "archive"}
