"""agentskills.io skill folders: read by the harness folder's own skill reader and under a
harness folder's rules (regular files only, no links), so a published skill is accepted exactly
when it would be inside a harness."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core.harness.errors import HarnessError, Problem
from core.harness.folder.components import read_skill
from core.harness.folder.parse import FolderReader
from core.harness.folder.safe_read import scan_folder
from core.harness.models import Skill


def read_skill_folder(path: Path) -> Skill:
    """A skill folder as published on agentskills.io: SKILL.md (a UTF-8 BOM and CRLF line
    ends accepted) and every other file (scripts/, references/, assets/, LICENSE.txt, ...)
    kept byte for byte. The folder's rules are a harness folder's: regular files only, no
    links, hidden entries skipped; the folder is named like the skill. `path` may also be
    the SKILL.md itself."""
    path = Path(path)
    if path.name == "SKILL.md" and not path.is_dir():
        path = path.parent
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise HarnessError(
            [Problem(str(path), "", f"cannot read: {exc.strerror or exc}")]
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise HarnessError([Problem(str(path), "", "is a symbolic link; give the folder itself")])
    if not stat.S_ISDIR(st.st_mode):
        raise HarnessError(
            [Problem(str(path), "", "not a folder (a skill is a folder with SKILL.md)")]
        )
    files, problems = scan_folder(path)
    if problems:
        raise HarnessError([Problem(str(path / p.file), p.field, p.message) for p in problems])
    name = path.resolve().name
    prefix = f"skills/{name}/"
    reader = FolderReader({prefix + rel: data for rel, data in files.items()})
    skill = read_skill(reader, name)
    if reader.problems or skill is None:
        shown = [
            Problem(
                str(path / p.file[len(prefix) :]) if p.file.startswith(prefix) else str(path),
                p.field,
                p.message,
            )
            for p in reader.problems
        ]
        raise HarnessError(shown or [Problem(str(path), "", "not a skill folder")])
    executable = sorted(rel for rel in skill.files if os.lstat(path / rel).st_mode & stat.S_IXUSR)
    return skill.model_copy(update={"executable": executable}) if executable else skill
