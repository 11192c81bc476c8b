"""What an export cannot carry is said, trust is reported as stored, and a preview plays only
tasks that belong to the harness (#34 A8, A9). Real folders, a real store, the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli.main import app

ROOT = Path(__file__).parents[1]
DESK = ROOT / "tests/fixtures/support_desk"
TASKS = ROOT / "tests/fixtures/support_desk_tasks.jsonl"
runner = CliRunner()


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    return tmp_path


def _desk_with_mcp_fields(tmp_path: Path) -> Path:
    folder = tmp_path / "desk"
    shutil.copytree(DESK, folder)
    path = folder / "tools" / "lookup_order.json"
    data = json.loads(path.read_text())
    data["x-hat"].update(
        {
            "title": "Order lookup",
            "annotations": {"readOnlyHint": True, "idempotentHint": True},
            "output_schema": {"type": "object"},
        }
    )
    path.write_text(json.dumps(data))
    return folder


def test_an_openai_export_names_what_it_leaves_out_per_tool(home: Path) -> None:
    folder = _desk_with_mcp_fields(home)
    out = home / "tools.json"
    result = runner.invoke(
        app, ["harness", "export-tools", str(folder), "-f", "openai", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "left out" in result.output
    line = next(ln for ln in result.output.splitlines() if "lookup_order" in ln)
    assert "title" in line and "annotations (idempotentHint, readOnlyHint)" in line
    assert "outputSchema" in line
    # only the tool that loses something is named
    assert "issue_refund" not in result.output
    written = json.loads(out.read_text())
    assert all("title" not in t["function"] for t in written)
    # the MCP format holds all of it and says nothing
    mcp = runner.invoke(app, ["harness", "export-tools", str(folder), "-f", "mcp"])
    assert mcp.exit_code == 0 and "left out" not in mcp.output
    assert '"readOnlyHint": true' in mcp.output


def test_a_folder_trusted_at_an_earlier_import_is_not_called_untrusted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = runner.invoke(app, ["harness", "import", str(DESK), "--trust", "-m", "one"])
    assert first.exit_code == 0, first.output
    assert "not trusted" not in first.output
    again = runner.invoke(app, ["harness", "import", str(DESK), "-m", "two"])
    assert again.exit_code == 0, again.output
    assert "not trusted" not in again.output  # the stored trust carries over
    monkeypatch.setenv("HAT_HOME", str(home / "fresh"))  # a store that never trusted it
    fresh = runner.invoke(app, ["harness", "import", str(DESK), "-m", "x"])
    assert fresh.exit_code == 0, fresh.output
    assert "not trusted" in fresh.output


def test_a_preview_without_tasks_refuses_a_harness_without_live_room_tools(home: Path) -> None:
    result = runner.invoke(app, ["hsa", "preview", "--harness", str(DESK)])
    assert result.exit_code == 1
    assert "--tasks" in result.output and "live-room" in result.output
    assert "Traceback" not in result.output
    with_tasks = runner.invoke(
        app, ["hsa", "preview", "--harness", str(DESK), "--trust", "--tasks", str(TASKS),
              "--no-prompt"],
    )  # fmt: skip
    assert with_tasks.exit_code == 0, with_tasks.output
    assert "gold trajectory" in with_tasks.output
