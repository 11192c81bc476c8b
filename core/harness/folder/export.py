"""Export into a folder without ever losing a user's file: export writes into an empty folder
or an earlier export, deletes only what its own last export wrote (the `.hat-export.json`
manifest) and left unchanged, and refuses, before writing anything, when anything else is in
the way."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from core.harness.errors import HarnessError, Problem
from core.harness.folder.canonical import (
    HARNESS_FILE,
    MCP_FILE,
    executable_paths,
    folder_blobs,
)
from core.harness.folder.safe_read import (
    MAX_FOLDER_FILE_BYTES,
    FileRefused,
    entry_kind,
    link_note,
    read_regular,
)
from core.harness.folder.safe_write import make_dirs, stage_file, write_new
from core.harness.models import Harness

_EXPORT_SHAPES = (
    re.compile(r"prompt/[^/]+\.md"),
    re.compile(r"skills/[^/]+/.+"),
    re.compile(r"tools/[^/]+\.json"),
    re.compile(r"hooks/[^/]+\.(?:yaml|py)"),
)
_COMPONENT_DIRS = ("prompt", "skills", "tools", "hooks")


def _exported_shape(rel: str) -> bool:
    """Whether `rel` is a path export writes (and so may delete when it is stale)."""
    return rel in (HARNESS_FILE, MCP_FILE) or any(p.fullmatch(rel) for p in _EXPORT_SHAPES)


EXPORT_MANIFEST = ".hat-export.json"
"""What the last export wrote into a folder ({"files": {path: sha256}}): the only files a
later export may delete. Hidden, so import never reads it."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_export_manifest(path: Path) -> dict[str, str]:
    """{relative path: sha256} of the files the last export wrote into `path`; {} when there
    is no manifest (or it is not one: then nothing may be deleted)."""
    target = path / EXPORT_MANIFEST
    try:
        if not stat.S_ISREG(os.lstat(target).st_mode):
            return {}
        data = json.loads(read_regular(str(target), limit=16 * 1024 * 1024) or b"{}")
    except (OSError, ValueError, FileRefused):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {str(k): str(v) for k, v in files.items() if isinstance(v, str)}


def _stale_or_problem(
    root: Path, rel: str, written: dict[str, str], stale: list[str], problems: list[Problem]
) -> None:
    """A file of an earlier export that the new one does not write: stale (deleted) only when
    the last export wrote it and it is unchanged since; else a problem, and nothing happens."""
    full = root / rel
    if rel not in written:
        problems.append(
            Problem(
                str(full),
                "",
                "the harness has no such file and the folder's last export did not write it: "
                "export will not delete it (move it away, or export into a new folder)",
            )
        )
        return
    try:
        data = read_regular(str(full), limit=MAX_FOLDER_FILE_BYTES)
    except (OSError, FileRefused) as exc:
        problems.append(Problem(str(full), "", f"cannot read: {exc}"))
        return
    if data is None or _sha(data) != written[rel]:
        problems.append(
            Problem(
                str(full),
                "",
                "changed since the last export wrote it, and the harness no longer has it: "
                "export will not delete your edit (move it away first)",
            )
        )
        return
    stale.append(rel)


def _export_plan(path: Path, files: dict[str, bytes]) -> tuple[list[str], list[Problem]]:
    """(stale files export may delete, problems that forbid writing into `path`).

    Export writes into an empty (or missing) folder, or into one that holds an exported
    harness: harness.yaml and, under prompt/, skills/, tools/ and hooks/, only files of the
    shapes export writes (any file in a skill folder is part of its skill). It never follows
    a link and never deletes a file of another shape, so anything else there is a problem
    naming the path, and nothing is written.
    """
    where = str(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [Problem(where, "", f"cannot read: {exc.strerror or exc}")]
    if stat.S_ISLNK(st.st_mode):
        msg = f"is a symbolic link{link_note(path)}; export writes only into a real folder"
        return [], [Problem(where, "", msg)]
    if not stat.S_ISDIR(st.st_mode):
        return [], [Problem(where, "", f"exists and is {entry_kind(st.st_mode)}, not a folder")]
    try:
        entries = [e for e in os.listdir(path) if not e.startswith(".")]
    except OSError as exc:
        return [], [Problem(where, "", f"cannot read: {exc.strerror or exc}")]
    if not entries:
        return [], []
    problems: list[Problem] = []
    manifest = path / HARNESS_FILE
    try:
        mst = os.lstat(manifest)
    except FileNotFoundError:
        msg = (
            f"is not empty and holds no {HARNESS_FILE}: export writes only into an empty folder "
            "or one holding an exported harness (nothing was written)"
        )
        return [], [Problem(where, "", msg)]
    if not stat.S_ISREG(mst.st_mode):
        note = link_note(manifest) if stat.S_ISLNK(mst.st_mode) else ""
        problems.append(
            Problem(
                str(manifest), "", f"is {entry_kind(mst.st_mode)}{note}; export will not replace it"
            )
        )
    stale: list[str] = []
    written = read_export_manifest(path)
    try:  # an earlier export's mcp.json goes when the harness no longer has MCP servers
        mcp_st = os.lstat(path / MCP_FILE)
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.append(Problem(str(path / MCP_FILE), "", f"cannot read: {exc.strerror or exc}"))
    else:
        if not stat.S_ISREG(mcp_st.st_mode):
            problems.append(
                Problem(
                    str(path / MCP_FILE),
                    "",
                    f"is {entry_kind(mcp_st.st_mode)}; export will not replace or delete it",
                )
            )
        elif MCP_FILE not in files:
            _stale_or_problem(path, MCP_FILE, written, stale, problems)
    for top in _COMPONENT_DIRS:
        stack = [top]
        while stack:
            rel = stack.pop()
            full = path / rel
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue
            except OSError as exc:
                problems.append(Problem(str(full), "", f"cannot read: {exc.strerror or exc}"))
                continue
            if stat.S_ISDIR(st.st_mode):
                try:
                    names = sorted(os.listdir(full))
                except OSError as exc:
                    problems.append(Problem(str(full), "", f"cannot read: {exc.strerror or exc}"))
                    continue
                stack.extend(f"{rel}/{n}" for n in names if not n.startswith("."))
                continue
            if not stat.S_ISREG(st.st_mode):
                note = link_note(full) if stat.S_ISLNK(st.st_mode) else ""
                problems.append(
                    Problem(
                        str(full),
                        "",
                        f"is {entry_kind(st.st_mode)}{note}; export never writes through or "
                        "deletes it: move it away first",
                    )
                )
            elif not _exported_shape(rel):
                problems.append(
                    Problem(
                        str(full),
                        "",
                        "export did not write this file and will not delete it: move it out of "
                        f"{top}/ first",
                    )
                )
            elif rel not in files:
                _stale_or_problem(path, rel, written, stale, problems)
    for rel in files:  # a folder where a file goes (tools/x.json/) cannot be replaced safely
        full = path / rel
        if full.is_dir() and not full.is_symlink():
            problems.append(Problem(str(full), "", "is a folder where export writes a file"))
    return stale, problems


def _manifest_bytes(files: dict[str, bytes]) -> bytes:
    listed = {rel: _sha(data) for rel, data in sorted(files.items())}
    return (json.dumps({"files": listed}, indent=1) + "\n").encode("utf-8")


def update_export_manifest(path: Path, written: dict[str, bytes], removed: list[str]) -> None:
    """Record files written into (or removed from) a folder by something other than a whole
    export (adding a component), so a later export may still replace or delete them."""
    listed = read_export_manifest(path)
    listed.update({rel: _sha(data) for rel, data in written.items()})
    for rel in removed:
        listed.pop(rel, None)
    text = json.dumps({"files": dict(sorted(listed.items()))}, indent=1) + "\n"
    write_new(path / EXPORT_MANIFEST, text.encode("utf-8"))


def _export_fresh(path: Path, files: dict[str, bytes], executable: set[str]) -> None:
    """A new folder, built whole in a hidden sibling and renamed into place: an interrupted
    export leaves no folder at `path`, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.hat-export-", dir=path.parent))
    try:
        for rel, data in files.items():
            parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
            if parent:
                make_dirs(tmp, parent)
            write_new(tmp / rel, data)
            if rel in executable:
                os.chmod(tmp / rel, 0o755)
        write_new(tmp / EXPORT_MANIFEST, _manifest_bytes(files))
        os.chmod(tmp, 0o755)
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(path)  # an empty folder the user made for it
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def export_folder(harness: Harness, path: Path) -> None:
    """Write the canonical folder into `path` (missing, empty, or an earlier export).

    A new folder is built whole beside `path` and renamed into place. Into an earlier export,
    every file is first staged as a hidden temporary sibling (an interruption there leaves the
    folder as it was, plus hidden files import skips), then renamed over its target. Only
    files the folder's last export wrote (its `.hat-export.json` manifest) and that are
    unchanged since are deleted when the harness no longer has them. Anything else export
    did not write (other files under the component folders, links, FIFOs, a stale file
    without a manifest entry) makes it refuse with a HarnessError naming the path, before
    anything is written or deleted.
    """
    path = Path(path)
    files = folder_blobs(harness)
    stale, problems = _export_plan(path, files)
    if problems:
        raise HarnessError(problems)
    try:
        executable = executable_paths(harness)
        if not os.path.lexists(path) or not os.listdir(path):
            _export_fresh(path, files, executable)
            return
        staged: list[tuple[Path, Path]] = []
        try:
            for rel, data in files.items():
                parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
                if parent:
                    make_dirs(path, parent)
                staged_file = stage_file(path / rel, data)
                if rel in executable:
                    os.chmod(staged_file, 0o755)
                staged.append((staged_file, path / rel))
        except BaseException:
            for tmp, _ in staged:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise
        for tmp, target in staged:
            os.replace(tmp, target)  # replaces a name, never what a link points at
        for rel in stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path / rel)
        write_new(path / EXPORT_MANIFEST, _manifest_bytes(files))
        for top in _COMPONENT_DIRS:
            root = path / top
            if root.is_dir() and not root.is_symlink():
                for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
                    if not folder.is_symlink() and not any(folder.iterdir()):
                        folder.rmdir()
    except OSError as exc:
        where = str(exc.filename) if exc.filename else str(path)
        raise HarnessError([Problem(where, "", f"cannot write: {exc.strerror or exc}")]) from None
