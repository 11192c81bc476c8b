"""A batch of published skill folders imports per item (#34 A7): the valid ones are added,
each bad one is named with its problem, `--strict` adds none; a description past the spec's
1024 characters is a warning with its length, not a wall. Real folders, the real CLI."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from core.cli.main import app
from core.harness.folder import import_folder
from core.harness.models import SKILL_DESCRIPTION_MAX

runner = CliRunner()


def _skill(root: Path, name: str, description: str, body: str = "Do the thing.") -> Path:
    folder = root / name
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n", encoding="utf-8"
    )
    (folder / "references" / "notes.md").write_text("See this first.\n")
    return folder


def test_a_batch_adds_the_valid_skills_names_the_bad_and_warns_on_spec_limits(
    tmp_path: Path,
) -> None:
    into = tmp_path / "harness"
    long = "Fill PDF forms. " * 67  # 1,072 characters: past the spec, a real published case
    good = [_skill(tmp_path, f"skill-{i}", f"Skill number {i}.") for i in range(3)]
    wordy = _skill(tmp_path, "pdf-forms", long.strip())
    broken = tmp_path / "no-skill-md"
    broken.mkdir()
    result = runner.invoke(
        app,
        ["harness", "import-skill", *map(str, [*good, wordy, broken]), "--into", str(into)],
    )
    assert result.exit_code == 1  # one folder was not added: the exit code says so
    assert "not added" in result.output and "no-skill-md" in result.output
    assert "warning" in result.output and f"{len(long.strip()):,} characters" in result.output
    harness = import_folder(into)
    assert sorted(s.name for s in harness.skills) == ["pdf-forms", "skill-0", "skill-1", "skill-2"]
    assert next(s for s in harness.skills if s.name == "pdf-forms").files  # references/ kept
    again = runner.invoke(app, ["harness", "validate", str(into)])
    assert again.exit_code == 0 and "warning" in again.output


def test_strict_adds_none_when_any_folder_is_bad(tmp_path: Path) -> None:
    into = tmp_path / "harness"
    good = _skill(tmp_path, "skill-a", "A skill.")
    bad = _skill(tmp_path, "Bad_Name", "A skill whose folder name is not a skill name.")
    result = runner.invoke(
        app, ["harness", "import-skill", str(good), str(bad), "--into", str(into), "--strict"]
    )
    assert result.exit_code == 1
    assert "nothing was added" in result.output
    assert not (into / "skills").exists()


def test_a_description_past_the_hard_cap_is_still_refused(tmp_path: Path) -> None:
    into = tmp_path / "harness"
    huge = _skill(tmp_path, "huge", "x" * (SKILL_DESCRIPTION_MAX + 1))
    result = runner.invoke(app, ["harness", "import-skill", str(huge), "--into", str(into)])
    assert result.exit_code == 1
    assert f"{SKILL_DESCRIPTION_MAX + 1:,} characters" in result.output
