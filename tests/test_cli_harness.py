"""`hat harness …` end to end: real CLI (typer runner), real store under a temporary HAT_HOME."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from core.cli.main import app
from core.harness.demo import demo_harness_path
from core.harness.folder import read_files

runner = CliRunner()


def hat(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_validate_demo_exits_zero() -> None:
    code, out = hat("harness", "validate", str(demo_harness_path()))
    assert code == 0
    assert "8 skills" in out and "9 tools" in out


def test_export_import_export_is_byte_identical(tmp_path: Path) -> None:
    code, _ = hat("harness", "import", str(demo_harness_path()), "-m", "demo", "--tag", "staging")
    assert code == 0
    first = tmp_path / "first"
    second = tmp_path / "second"
    assert hat("harness", "export", "staging", str(first))[0] == 0
    assert hat("harness", "import", str(first), "-m", "again")[0] == 0
    assert hat("harness", "export", "head", str(second))[0] == 0
    assert read_files(first) == read_files(second) == read_files(demo_harness_path())


def test_history_diff_label_and_rollback(tmp_path: Path) -> None:
    assert hat("harness", "import", str(demo_harness_path()), "-m", "v1", "--tag", "prod")[0] == 0
    edited = tmp_path / "edited"
    shutil.copytree(demo_harness_path(), edited)
    skill = edited / "skills" / "chit-chat" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nAlways greet returning viewers by name.\n")
    assert hat("harness", "import", str(edited), "-m", "greet by name")[0] == 0

    code, log = hat("harness", "log")
    assert code == 0
    assert log.index("greet by name") < log.index("v1")  # newest first
    assert "(prod)" in log

    code, diff = hat("harness", "diff", "prod", "head")
    assert code == 0
    assert "modified skill chit-chat" in diff
    assert "+Always greet returning viewers by name." in diff
    assert "tools/" not in diff  # only the changed component

    assert hat("harness", "tag", "prod", "head")[0] == 0
    code, diff = hat("harness", "diff", "prod", "head")
    assert "no differences" in diff

    code, out = hat("harness", "rollback", "head~1", "-m", "undo greeting")
    assert code == 0 and "new version" in out
    code, diff = hat("harness", "diff", "head~2", "head")
    assert code == 0 and "no differences" in diff


def test_render_prints_prompt_and_tool_block() -> None:
    code, out = hat("harness", "render", str(demo_harness_path()))
    assert code == 0
    assert "<tool_call>" in out and '"name": "get_product_by_link"' in out
    assert "${" not in out


def test_bad_input_gives_one_clear_message(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(demo_harness_path(), broken)
    (broken / "tools" / "check_stock.json").write_text("{not json")
    code, out = hat("harness", "validate", str(broken))
    assert code == 1
    assert "tools/check_stock.json" in out and "Traceback" not in out

    code, out = hat("harness", "diff", "nosuch", "other")
    assert code == 1 and "unknown version or label 'nosuch'" in out
