"""Export writes only where it should (#34 B16): it deletes only what its own last export
wrote (the folder's manifest) and left unchanged, and an interrupted export leaves the folder
as it was, never a mix of two harnesses. Real folders on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core.harness import HarnessError, export_folder, import_folder
from core.harness.demo import load_demo_harness
from core.harness.folder import EXPORT_MANIFEST, read_export_manifest


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_file_that_merely_looks_exported_is_never_deleted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    harness = load_demo_harness()
    export_folder(harness, out)
    assert set(read_export_manifest(out)) == {p for p in _files(out) if not p.startswith(".")}
    mine = out / "tools" / "my_notes.json"  # the shape export writes, but the user's file
    mine.write_text("{}")
    with pytest.raises(HarnessError) as info:
        export_folder(harness.model_copy(update={"tools": harness.tools[:-1]}), out)
    assert str(mine) in str(info.value) and "did not write it" in str(info.value)
    assert mine.read_text() == "{}"
    assert (out / "tools" / f"{harness.tools[-1].name}.json").exists()


def test_an_exported_file_the_user_edited_is_not_deleted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    harness = load_demo_harness()
    export_folder(harness, out)
    edited = out / "tools" / f"{harness.tools[-1].name}.json"
    edited.write_text(edited.read_text().replace("{", "{ ", 1))
    with pytest.raises(HarnessError) as info:
        export_folder(harness.model_copy(update={"tools": harness.tools[:-1]}), out)
    assert "changed since the last export" in str(info.value)
    assert edited.exists()


@pytest.mark.parametrize("fail_at", [1, 7, 30])
def test_an_interrupted_export_leaves_the_folder_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    """A write that fails part-way (a full disk, a kill) while staging: every file is as the
    last export left it; the hidden staged copies are gone."""
    import core.harness.folder.export as export

    out = tmp_path / "out"
    harness = load_demo_harness()
    export_folder(harness, out)
    before = _files(out)
    changed = harness.model_copy(
        update={
            "description": "changed",
            "skills": [s.model_copy(update={"body": s.body + "\\nMore."}) for s in harness.skills],
        }
    )
    real = export.stage_file
    calls = {"n": 0}

    def failing_stage(target: Path, data: bytes) -> Path:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise OSError(28, "No space left on device")
        return real(target, data)

    monkeypatch.setattr(export, "stage_file", failing_stage)
    with pytest.raises(HarnessError) as info:
        export_folder(changed, out)
    assert "No space left on device" in str(info.value)
    monkeypatch.undo()
    assert _files(out) == before
    export_folder(changed, out)  # and the next export goes through
    assert import_folder(out) == changed


def test_an_interrupted_export_into_a_new_folder_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.harness.folder.export as export

    out = tmp_path / "new"
    real = export.write_new
    calls = {"n": 0}

    def failing(target: Path, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError(28, "No space left on device")
        real(target, data)

    monkeypatch.setattr(export, "write_new", failing)
    with pytest.raises(HarnessError) as info:
        export_folder(load_demo_harness(), out)
    assert "No space left on device" in str(info.value)
    assert not out.exists()
    assert os.listdir(tmp_path) == []  # no hidden build folder left either


def test_the_manifest_is_hidden_from_import_and_lists_what_was_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    harness = load_demo_harness()
    export_folder(harness, out)
    data = json.loads((out / EXPORT_MANIFEST).read_text())
    assert "harness.yaml" in data["files"]
    assert import_folder(out) == harness
