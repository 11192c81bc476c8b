"""A loaded skill can read its own files (#34 A6): published skills say "see
references/forms.md", so the loader lists a skill's files with its instructions and reads one
on request; a harness whose skills have no files (the demo) keeps its loader exactly as it was.
Real agent loop, real skill folder read from disk."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from core.harness.demo import load_demo_harness
from core.harness.interop import read_skill_folder
from core.harness.models import Harness
from core.harness.render import load_skill_spec
from core.runtime.bindings import Bindings
from core.runtime.client import ScriptedClient
from core.runtime.loop import SKILL_FILE_SHOWN, AgentLoop
from core.runtime.trace import SkillLoadStep
from core.runtime.trajectory import AssistantTurn, ToolCall


def _harness(tmp_path: Path) -> Harness:
    folder = tmp_path / "pdf-forms"
    (folder / "references").mkdir(parents=True)
    (folder / "scripts").mkdir()
    (folder / "SKILL.md").write_text(
        "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n\n"
        "Read references/forms.md before filling a form.\n"
    )
    (folder / "references" / "forms.md").write_text("Field 7 takes the date as DD/MM/YYYY.\n")
    (folder / "scripts" / "fill.bin").write_bytes(b"\x00\xff\x10binary")
    (folder / "references" / "big.md").write_text("x" * (SKILL_FILE_SHOWN + 50))
    skill = read_skill_folder(folder)
    base = load_demo_harness()
    return base.model_copy(update={"skills": [skill], "tools": [], "hooks": []})


def _run(harness: Harness, calls: list[dict[str, str]]) -> tuple[list[str], list[SkillLoadStep]]:
    turns = [
        AssistantTurn(tool_calls=[ToolCall(name="load_skill", arguments=a) for a in calls]),
        AssistantTurn(content="Done."),
    ]
    loop = AgentLoop(harness, ScriptedClient(turns), Bindings())
    trace = asyncio.run(loop.run("fill my form"))
    results = [m["content"] for m in trace.messages if "<tool_result" in str(m.get("content"))]
    return results, trace.steps_of(SkillLoadStep)


def test_the_loader_lists_a_skills_files_and_reads_one(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    spec = load_skill_spec(harness)["function"]["parameters"]["properties"]
    assert "file" in spec
    results, steps = _run(
        harness,
        [{"name": "pdf-forms"}, {"name": "pdf-forms", "file": "references/forms.md"}],
    )
    text = results[0]
    assert "Files of this skill" in text and "references/forms.md" in text
    assert "Field 7 takes the date as DD/MM/YYYY." in text
    assert all(s.ok for s in steps)


def test_unknown_binary_and_long_files_each_get_a_clear_answer(tmp_path: Path) -> None:
    harness = _harness(tmp_path)
    results, steps = _run(
        harness,
        [
            {"name": "pdf-forms", "file": "references/nope.md"},
            {"name": "pdf-forms", "file": "scripts/fill.bin"},
            {"name": "pdf-forms", "file": "references/big.md"},
        ],
    )
    text = results[0]
    assert "has no file 'references/nope.md'" in text and "references/forms.md" in text
    assert "binary file" in text
    assert "is cut here" in text
    assert [s.ok for s in steps] == [False, True, True]


def test_a_harness_whose_skills_have_no_files_keeps_its_loader() -> None:
    demo = load_demo_harness()
    spec = load_skill_spec(demo)["function"]
    assert list(spec["parameters"]["properties"]) == ["name"]
    assert spec["description"] == "Load the full instructions of a skill from the skill index."
    assert json.dumps(spec).count("file") == 0


def test_executable_bits_survive_import_store_and_export(tmp_path: Path) -> None:
    """#34 A6: a published skill's scripts/ keep their executable bit through import-skill,
    the store and export; other files stay non-executable."""
    import os
    import stat

    from typer.testing import CliRunner

    from core.cli.main import app
    from core.harness.folder import export_folder, import_folder
    from core.store import Store

    folder = tmp_path / "pdf-forms"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n\nRun scripts/fill.sh.\n"
    )
    script = folder / "scripts" / "fill.sh"
    script.write_text("#!/bin/sh\necho filled\n")
    os.chmod(script, 0o755)
    (folder / "scripts" / "notes.txt").write_text("not a program\n")
    assert read_skill_folder(folder).executable == ["scripts/fill.sh"]
    into = tmp_path / "harness"
    added = CliRunner().invoke(app, ["harness", "import-skill", str(folder), "--into", str(into)])
    assert added.exit_code == 0, added.output

    def mode(path: Path) -> bool:
        return bool(os.stat(path).st_mode & stat.S_IXUSR)

    assert mode(into / "skills" / "pdf-forms" / "scripts" / "fill.sh")
    assert not mode(into / "skills" / "pdf-forms" / "scripts" / "notes.txt")
    harness = import_folder(into)
    with Store.open(tmp_path / "hat.db") as store:
        loaded = store.load(store.commit(harness, "skills").id)
    assert loaded.skills[0].executable == ["scripts/fill.sh"]
    out = tmp_path / "out"
    export_folder(loaded, out)
    assert mode(out / "skills" / "pdf-forms" / "scripts" / "fill.sh")
    assert not mode(out / "skills" / "pdf-forms" / "scripts" / "notes.txt")
    assert not (out / "skills" / "pdf-forms" / ".executable").exists()
    assert import_folder(out) == harness
    # a later export over it keeps the bit (staged files are made executable before the rename)
    export_folder(loaded.model_copy(update={"description": "again"}), out)
    assert mode(out / "skills" / "pdf-forms" / "scripts" / "fill.sh")
