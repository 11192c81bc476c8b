"""`hat hsa …` end to end through the typer runner."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from core.cli.main import app
from core.harness.demo import demo_harness_path, load_demo_harness
from core.harness.folder import import_folder
from core.hsa.policy import Policy, sample_variant

runner = CliRunner()


def hat(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_preview_side_by_side() -> None:
    code, out = hat(
        "hsa", "preview", "--seed", "4", "--policy", "heldout", "--strength", "heavy",
        "--task", "test.price.0001",
    )  # fmt: skip
    assert code == 0, out
    assert "policy heldout/heavy" in out and "seed 4" in out
    assert "applied" in out and "component(s) changed" in out
    assert "original" in out and "variant" in out
    assert "gold trajectory: test.price.0001 (ok)" in out
    assert "(rendered system prompt)" in out


def test_preview_unified_prompt_only() -> None:
    code, out = hat(
        "hsa", "preview", "--seed", "1", "--strength", "light", "-d", "prompt", "-u",
        "--harness", str(demo_harness_path()),
    )  # fmt: skip
    assert code == 0, out
    assert "policy train/light:prompt" in out
    assert "--- a/" in out and "+++ b/" in out
    assert "(unchanged: the variant renames nothing the trajectory names)" in out


def test_preview_errors_are_one_line() -> None:
    code, out = hat("hsa", "preview", "--policy", "eval")
    assert code == 1 and "use train or heldout" in out
    code, out = hat("hsa", "preview", "--strength", "max")
    assert code == 1 and "light, medium, heavy" in out
    code, out = hat("hsa", "preview", "--task", "test.price.9999")
    assert code == 1 and "no task 'test.price.9999'" in out
    code, out = hat("hsa", "preview", "-d", "colour")
    assert code == 1 and "--dimension 'colour'" in out


def test_sample_writes_folders_and_manifest(tmp_path: Path) -> None:
    out = tmp_path / "variants"
    code, text = hat(
        "hsa", "sample", "-n", "3", "--out", str(out), "--seed", "10",
        "--policy", "heldout", "--strength", "medium",
    )  # fmt: skip
    assert code == 0, text
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seeds"] == [10, 11, 12]
    assert manifest["policy"]["bank"] == "heldout"
    demo = load_demo_harness()
    for i, entry in enumerate(manifest["variants"]):
        variant = sample_variant(demo, Policy("heldout", "medium"), 10 + i)
        assert entry["applied"] == variant.applied and entry["seed"] == 10 + i
        assert import_folder(out / entry["folder"]) == variant.harness
    code, text = hat("hsa", "sample", "-n", "1", "--out", str(out))
    assert code == 1 and "is not empty" in " ".join(text.split())


def test_transforms_lists_the_registry() -> None:
    code, out = hat("hsa", "transforms")
    assert code == 0
    assert "prompt.section_order" in out and "hooks.retry_budget" in out


def test_an_output_path_the_system_refuses_is_one_error_line(tmp_path: Path) -> None:
    """Any command that meets an OSError on a path the user gave (here: a folder under a
    file) ends with exit 1 and a line naming the path, not a traceback (`hat`'s top group)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, out = hat("hsa", "sample", "-n", "1", "--out", str(blocker / "variants"))
    assert code == 1
    assert "error:" in out and str(blocker) in " ".join(out.split())
    assert "Traceback" not in out
    assert blocker.read_text() == "x"
