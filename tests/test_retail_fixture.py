"""A retail agent from outside, with the CLI alone and no hand edits (#34 done-when): its
tools' MCP list imported and bound to the Python package shipped beside the harness, its
published-style skills (one with references/) imported, then validated with every gold played
(17 tasks, 10 of them answered by a count, sum or difference of tool values: all full marks),
varied by HSA, turned into teacher rows under variants, stored and exported.

tests/fixtures/retail holds the material; everything runs for real in a copy of it, in a
process started without PYTHONPATH where it matters (the package must be found beside the
harness).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli.main import app

FIXTURE = Path(__file__).parent / "fixtures" / "retail"
runner = CliRunner()


def hat(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["HAT_HOME"] = str(home)
    return subprocess.run(
        [shutil.which("hat") or "hat", *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=600, check=False,
    )  # fmt: skip


@pytest.fixture()
def retail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "retail"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    return root


def test_a_retail_agent_goes_through_with_no_hand_edits(retail: Path, tmp_path: Path) -> None:
    harness = retail / "harness"
    home = tmp_path / "home"
    # 1. tools from their MCP list, skills from their folders
    assert (
        runner.invoke(
            app, ["harness", "import-tools", str(retail / "tools.json"), "--into", str(harness)]
        ).exit_code
        == 0
    )
    skills = runner.invoke(
        app, ["harness", "import-skill", *map(str, sorted((retail / "skills").iterdir())),
              "--into", str(harness)],
    )  # fmt: skip
    assert skills.exit_code == 0, skills.output
    # 2. bound to the package beside the harness: new processes, no PYTHONPATH
    for tool in ("get_order", "list_orders", "refund_quote"):
        bound = hat("harness", "bind", str(harness), tool, f"python:retail_shop.tools:{tool}",
                    "--trust", cwd=tmp_path, home=home)  # fmt: skip
        assert bound.returncode == 0, bound.stdout + bound.stderr
    tasks = retail / "tasks.jsonl"
    checked = hat("harness", "validate", str(harness), "--trust", "--tasks", str(tasks),
                  cwd=tmp_path, home=home)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "17 tasks" in checked.stdout and "every gold plays to full marks" in checked.stdout
    # 3. HSA varies it: a variant preview with a task of its own, remapped gold shown
    preview = hat("hsa", "preview", "--harness", str(harness), "--trust", "--tasks", str(tasks),
                  "--no-prompt", cwd=tmp_path, home=home)  # fmt: skip
    assert preview.returncode == 0, preview.stdout + preview.stderr
    assert "gold trajectory" in preview.stdout
    # 4. teacher rows under variants, every one full marks on replay
    rows = tmp_path / "rows.jsonl"
    made = hat(
        "data", "generate", "--teacher", "oracle", "--tasks", str(tasks), "--harness",
        str(harness), "--trust", "-k", "2", "--out", str(rows), cwd=tmp_path, home=home,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    written = [json.loads(line) for line in rows.read_text().splitlines() if line.strip()]
    assert len(written) >= 9 * 2  # 9 train tasks, original and variants
    assert all(
        r["grades"][g]["score"] == 1
        for r in written
        for g in ("accuracy", "effectiveness", "tool_rationality", "skill_selection")
    )
    # the derived numbers were graded as derived, not found verbatim
    reasons = " ".join(
        reason for r in written for reason in r["grades"]["accuracy"].get("reasons", [])
    )
    assert "the sum of every 'total'" in reasons
    # 5. stored and exported: the export reads back the same harness, skill files included
    stored = hat("harness", "import", str(harness), "--trust", "-m", "retail", cwd=tmp_path,
                 home=home)  # fmt: skip
    assert stored.returncode == 0, stored.stdout + stored.stderr
    # the stored version plays in a later process too: its package is found beside the
    # folder it was imported from, and every test task's gold gets full marks
    played = hat("eval", "run", "--oracle", "--suite", "tasks", "--tasks", str(tasks),
                 "--harness", "harness", cwd=tmp_path, home=home)  # fmt: skip
    assert played.returncode == 0, played.stdout + played.stderr
    summary = next(line for line in played.stdout.splitlines() if line.strip().startswith("tasks"))
    assert summary.split()[1:3] == ["8", "1.000"], played.stdout  # 8 items, every one full marks
    assert "not found" not in played.stdout + played.stderr
    out = tmp_path / "exported"
    exported = hat("harness", "export", "head", str(out), cwd=tmp_path, home=home)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert (out / "skills" / "returns" / "references" / "policy.md").read_bytes() == (
        retail / "skills" / "returns" / "references" / "policy.md"
    ).read_bytes()
    from core.harness.folder import import_folder

    assert import_folder(out) == import_folder(harness)
