"""The harness folder format: harness.yaml, prompt/*.md, skills/<name>/SKILL.md (and any other
files of the skill folder: scripts/, references/, assets/, LICENSE.txt, ... kept byte for byte),
tools/*.json, hooks/*.yaml (+ .py for Python hooks), and mcp.json when the harness declares MCP
servers (the Claude Code / Claude Desktop `mcpServers` format).

Export writes one canonical text for each component, so export -> import -> export is
byte-identical and a folder under version control diffs cleanly. Import collects every problem
it finds (file + field) before failing, so a user fixes a broken folder in one pass.

Import is strict on purpose: unknown fields, duplicate YAML/JSON keys and files the format has
no place for (they would silently vanish on the next export) are problems, not warnings. For any
file contents, import either returns a Harness or raises HarnessError; no other exception
escapes (tests/test_harness_properties.py fuzzes this).
"""

from __future__ import annotations

import ast
import base64
import binascii
import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from yaml.constructor import ConstructorError

from core.harness.errors import HarnessError, Problem, problems_from_validation
from core.harness.models import (
    MAX_SKILL_FILE_BYTES,
    MCP_SERVER_NAME_RE,
    Harness,
    Hook,
    HookKind,
    McpServer,
    PromptPipeline,
    PromptSection,
    SectionKind,
    Settings,
    Skill,
    Tool,
    binding_needs_trust,
    skill_file_problem,
)
from core.yamlfile import yaml_problem

HARNESS_FILE = "harness.yaml"
MCP_FILE = "mcp.json"
"""The harness's MCP servers, in the Claude Code / Claude Desktop format:
{"mcpServers": {"<name>": {"command": ..., "args": [...], "env": {...}, "cwd": ...}}}."""
MCP_SERVER_KEYS = ("command", "args", "env", "cwd", "type")
MANIFEST_KEYS = ("name", "description", "settings", "prompt", "order")
PROMPT_KEYS = ("style", "variables", "sections")
ORDER_KEYS = ("skills", "tools", "hooks")
SKILL_FRONT_KEYS = ("name", "description", "license", "compatibility", "allowed-tools", "metadata")
TOOL_KEYS = ("type", "function", "x-hat")
TOOL_FUNCTION_KEYS = ("name", "description", "parameters", "strict")
TOOL_EXT_KEYS = (
    "binding",
    "annotations",
    "enabled",
    "binding_args",
    "title",
    "output_schema",
    "mcp",
)
BINARY_DIR = ".binary"
EXECUTABLE_FILE = ".executable"
"""The store's listing of a skill's files that carry the executable bit (one path a line):
hidden, so a folder on disk never holds it (its mode bits say the same)."""
"""Where the store form of a skill keeps a file that is not UTF-8 text: as base64 under
skills/<name>/.binary/<path>. A folder on disk never holds it (import skips hidden entries);
export writes the file's own bytes at skills/<name>/<path>."""
HOOK_KEYS = (
    "event",
    "kind",
    "matcher",
    "params",
    "reminder",
    "timeout",
    "enabled",
    "task_critical",
)
_PY_HOOK_FIELDS = {
    "EVENT": "event",
    "MATCHER": "matcher",
    "PARAMS": "params",
    "REMINDER": "reminder",
    "TIMEOUT": "timeout",
    "ENABLED": "enabled",
    "TASK_CRITICAL": "task_critical",
}
M = TypeVar("M", bound=BaseModel)


# ----------------------------------------------------------------------------- canonical text


# libyaml's C parser and emitter when present (the Python ones are ~5x slower on a large
# harness); the representers and constructors below are Python either way.
_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Safe dumper whose output loads back to the same strings.

    PyYAML writes a string holding NEL, LS, PS or CR in single-quoted style, where the loader
    folds those characters (NEL followed by "x" comes back as " x"); the double-quoted style
    escapes them, so such strings are written double-quoted.
    """


_FOLDED_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if any(c in data for c in _FOLDED_BREAKS):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_str(data)


_Dumper.add_representer(str, _represent_str)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that rejects duplicate keys (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue  # unhashable: the base class reports it
            if duplicate:
                raise ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def dump_yaml(data: Any) -> str:
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def skill_text(skill: Skill) -> str:
    meta: dict[str, str] = {"kind": skill.kind.value}
    if not skill.enabled:
        meta["enabled"] = "false"
    meta.update(skill.metadata)
    front: dict[str, Any] = {"name": skill.name, "description": skill.description}
    if skill.license is not None:
        front["license"] = skill.license
    if skill.compatibility is not None:
        front["compatibility"] = skill.compatibility
    if skill.allowed_tools is not None:
        value = skill.allowed_tools
        front["allowed-tools"] = value.split() if skill.allowed_tools_list else value
    front["metadata"] = meta
    return f"---\n{dump_yaml(front)}---\n{skill.body}"


def tool_text(tool: Tool) -> str:
    ext: dict[str, Any] = {"binding": tool.binding}
    if tool.annotations:
        ext["annotations"] = tool.annotations
    if not tool.enabled:
        ext["enabled"] = False
    if tool.binding_args:
        ext["binding_args"] = tool.binding_args
    if tool.title is not None:
        ext["title"] = tool.title
    if tool.output_schema is not None:
        ext["output_schema"] = tool.output_schema
    if tool.mcp:
        ext["mcp"] = tool.mcp
    spec = tool.to_openai()
    if tool.strict is not None:
        spec["function"]["strict"] = tool.strict
    return dump_json({**spec, "x-hat": ext})


def _skill_file_text(data: bytes) -> str | None:
    """The file as text when it is UTF-8 (stored as is), None when it must go as base64."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def skill_file_entries(skill: Skill) -> list[tuple[str, str, bytes]]:
    """(store path, store text, exact bytes) of each extra file of `skill`; the folder on disk
    holds the bytes at skills/<name>/<path>."""
    out = []
    for rel, data in skill.files.items():
        text = _skill_file_text(data)
        if text is not None:
            out.append((f"skills/{skill.name}/{rel}", text, data))
        else:
            encoded = base64.encodebytes(data).decode("ascii")
            out.append((f"skills/{skill.name}/{BINARY_DIR}/{rel}", encoded, data))
    return out


def hook_text(hook: Hook) -> str:
    data: dict[str, Any] = {
        "event": hook.event.value,
        "kind": hook.kind.value,
        "matcher": hook.matcher,
        "params": hook.params,
        "reminder": hook.reminder,
        "timeout": hook.timeout,
        "enabled": hook.enabled,
        "task_critical": hook.task_critical,
    }
    return dump_yaml(data)


def manifest_data(harness: Harness) -> dict[str, Any]:
    sections = []
    for s in harness.prompt.sections:
        entry: dict[str, Any] = {"id": s.id, "title": s.title}
        if s.kind is not SectionKind.TEXT:
            entry["kind"] = s.kind.value
        if not s.enabled:
            entry["enabled"] = False
        sections.append(entry)
    settings = harness.settings.model_dump(mode="json")
    if not harness.settings.allow_private_http:  # an opt-in: written only when given
        settings.pop("allow_private_http")
    return {
        "name": harness.name,
        "description": harness.description,
        "settings": settings,
        "prompt": {
            "style": harness.prompt.style.value,
            "variables": dict(harness.prompt.variables),
            "sections": sections,
        },
        "order": {
            "skills": [s.name for s in harness.skills],
            "tools": [t.name for t in harness.tools],
            "hooks": [h.name for h in harness.hooks],
        },
    }


def mcp_server_data(server: McpServer) -> dict[str, Any]:
    """One `mcpServers` entry as Claude Code and Claude Desktop write it."""
    data: dict[str, Any] = {"command": server.command, "args": list(server.args)}
    if server.env:
        data["env"] = dict(server.env)
    if server.cwd is not None:
        data["cwd"] = server.cwd
    return data


def mcp_text(servers: dict[str, McpServer]) -> str:
    """The canonical mcp.json of a harness's MCP servers (sorted by name)."""
    return dump_json({"mcpServers": {n: mcp_server_data(s) for n, s in sorted(servers.items())}})


def folder_files(harness: Harness) -> dict[str, str]:
    """Relative path -> canonical text of every file in the harness's folder."""
    files = {HARNESS_FILE: dump_yaml(manifest_data(harness))}
    if harness.mcp_servers:
        files[MCP_FILE] = mcp_text(harness.mcp_servers)
    for section in harness.prompt.sections:
        if section.kind is SectionKind.TEXT or section.template:
            files[f"prompt/{section.id}.md"] = section.template
    for skill in harness.skills:
        files[f"skills/{skill.name}/SKILL.md"] = skill_text(skill)
        for store_rel, text, _data in skill_file_entries(skill):
            files[store_rel] = text
        if skill.executable:
            files[f"skills/{skill.name}/{EXECUTABLE_FILE}"] = "".join(
                f"{rel}\n" for rel in skill.executable
            )
    for tool in harness.tools:
        files[f"tools/{tool.name}.json"] = tool_text(tool)
    for hook in harness.hooks:
        files[f"hooks/{hook.name}.yaml"] = hook_text(hook.model_copy(update={"source": None}))
        if hook.kind is HookKind.PYTHON and hook.source is not None:
            files[f"hooks/{hook.name}.py"] = hook.source
    problems = []
    for rel, text in files.items():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = f"U+{ord(text[exc.start]):04X}"
            problems.append(Problem(rel, "", f"cannot be written as UTF-8 ({bad}: {exc.reason})"))
    if problems:
        raise HarnessError(problems)
    return files


def folder_blobs(harness: Harness) -> dict[str, bytes]:
    """Relative path -> bytes of every file export writes: the canonical texts of
    `folder_files`, with each skill's extra files as their own bytes at their own paths."""
    texts = folder_files(harness)
    blobs = {rel: text.encode("utf-8") for rel, text in texts.items()}
    for skill in harness.skills:
        for store_rel, _text, data in skill_file_entries(skill):
            del blobs[store_rel]
            blobs[store_rel.replace(f"/{BINARY_DIR}/", "/", 1)] = data
        blobs.pop(f"skills/{skill.name}/{EXECUTABLE_FILE}", None)  # on disk: the mode bits
    return blobs


def executable_paths(harness: Harness) -> set[str]:
    """Folder paths export gives the executable bit (each skill's `executable` files)."""
    return {f"skills/{s.name}/{rel}" for s in harness.skills for rel in s.executable}


def _with_modes(harness: Harness, folder: Path) -> Harness:
    """`harness` with each skill's `executable` read from the folder's mode bits (a folder
    on disk keeps them there, the store in a listing of its own)."""
    skills = []
    for skill in harness.skills:
        found = []
        for rel in skill.files:
            with contextlib.suppress(OSError):
                if os.lstat(folder / "skills" / skill.name / rel).st_mode & stat.S_IXUSR:
                    found.append(rel)
        skills.append(
            skill.model_copy(update={"executable": sorted(found)})
            if sorted(found) != skill.executable
            else skill
        )
    return harness.model_copy(update={"skills": skills})


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


def _kind_of(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _link_note(path: Path) -> str:
    try:
        return f" (to {os.readlink(path)})"
    except OSError:
        return ""


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
        data = json.loads(_read_regular(str(target), limit=16 * 1024 * 1024) or b"{}")
    except (OSError, ValueError, _Refused):
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
        data = _read_regular(str(full), limit=MAX_FOLDER_FILE_BYTES)
    except (OSError, _Refused) as exc:
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
        msg = f"is a symbolic link{_link_note(path)}; export writes only into a real folder"
        return [], [Problem(where, "", msg)]
    if not stat.S_ISDIR(st.st_mode):
        return [], [Problem(where, "", f"exists and is {_kind_of(st.st_mode)}, not a folder")]
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
        note = _link_note(manifest) if stat.S_ISLNK(mst.st_mode) else ""
        problems.append(
            Problem(
                str(manifest), "", f"is {_kind_of(mst.st_mode)}{note}; export will not replace it"
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
                    f"is {_kind_of(mcp_st.st_mode)}; export will not replace or delete it",
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
                note = _link_note(full) if stat.S_ISLNK(st.st_mode) else ""
                problems.append(
                    Problem(
                        str(full),
                        "",
                        f"is {_kind_of(st.st_mode)}{note}; export never writes through or "
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


def _write_new(target: Path, data: bytes) -> None:
    """Write `data` to `target` through a temporary sibling: never through a link, never half."""
    os.replace(_stage(target, data), target)  # replaces a name, never what a link points at


def _make_dirs(root: Path, rel_dir: str) -> None:
    current = root
    for part in rel_dir.split("/"):
        current = current / part
        try:
            os.mkdir(current)
        except FileExistsError:
            if current.is_symlink() or not current.is_dir():
                raise HarnessError(
                    [Problem(str(current), "", "is not a real folder; export will not use it")]
                ) from None


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
    _write_new(path / EXPORT_MANIFEST, text.encode("utf-8"))


def _export_fresh(path: Path, files: dict[str, bytes], executable: set[str]) -> None:
    """A new folder, built whole in a hidden sibling and renamed into place: an interrupted
    export leaves no folder at `path`, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.hat-export-", dir=path.parent))
    try:
        for rel, data in files.items():
            parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
            if parent:
                _make_dirs(tmp, parent)
            _write_new(tmp / rel, data)
            if rel in executable:
                os.chmod(tmp / rel, 0o755)
        _write_new(tmp / EXPORT_MANIFEST, _manifest_bytes(files))
        os.chmod(tmp, 0o755)
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(path)  # an empty folder the user made for it
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _stage(target: Path, data: bytes) -> Path:
    """`data` in a hidden temporary sibling of `target` (opened O_NOFOLLOW), to be renamed
    over it once every file of the export is staged."""
    tmp = target.with_name(f".{target.name}.hat-export")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


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
                    _make_dirs(path, parent)
                staged_file = _stage(path / rel, data)
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
        _write_new(path / EXPORT_MANIFEST, _manifest_bytes(files))
        for top in _COMPONENT_DIRS:
            root = path / top
            if root.is_dir() and not root.is_symlink():
                for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
                    if not folder.is_symlink() and not any(folder.iterdir()):
                        folder.rmdir()
    except OSError as exc:
        where = str(exc.filename) if exc.filename else str(path)
        raise HarnessError([Problem(where, "", f"cannot write: {exc.strerror or exc}")]) from None


# ----------------------------------------------------------------------------- import

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_FRONT_OPEN_RE = re.compile(r"---[ \t]*\r?\n")
_FRONT_CLOSE_RE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_FAILED = object()
MAX_DEPTH = 64
"""How deep the data of one harness file may nest (mappings and lists)."""
MAX_VALUES = 200_000
"""How many values one harness file may hold once YAML aliases are expanded."""


def _allowed(keys: tuple[str, ...]) -> str:
    return f"unknown field (allowed: {', '.join(keys)})"


def _non_text_path(data: Any) -> str | None:
    """Dotted path of the first string (key or value) holding a lone surrogate, if any.

    JSON and YAML escapes such as "\\ud800" decode to code points that are not Unicode text: the
    harness could never be written back to a file, so they are refused on import.
    """
    stack: list[tuple[str, Any]] = [("", data)]
    seen: set[int] = set()
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE_RE.search(value):
                return path
        elif isinstance(value, dict | list):
            if id(value) in seen:  # YAML aliases share objects; visit each once
                continue
            seen.add(id(value))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                sub = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and _SURROGATE_RE.search(key):
                    return sub
                stack.append((sub, item))
    return None


def data_shape_problem(data: Any) -> tuple[str, str] | None:
    """(dotted field, message) of the first place where `data` is nested deeper than
    MAX_DEPTH, expands (through YAML aliases) past MAX_VALUES values, or holds a float that is
    not finite; None when it is fine. Shared sub-trees are visited once per depth, so an alias
    bomb is measured without being expanded."""
    memo: dict[tuple[int, int], int] = {}

    def walk(value: Any, path: str, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise _ShapeError(path, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, float) and not math.isfinite(value):
            raise _ShapeError(path, f"{value} is not a finite number")
        if not isinstance(value, dict | list):
            return 1
        key = (id(value), depth)
        if key in memo:
            return memo[key]
        total = 1
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for name, item in items:
            total += walk(item, f"{path}.{name}" if path else str(name), depth + 1)
            if total > MAX_VALUES:
                raise _ShapeError(
                    path,
                    f"expands to more than {MAX_VALUES:,} values (YAML aliases that repeat data?)",
                )
        memo[key] = total
        return total

    try:
        walk(data, "", 0)
    except _ShapeError as exc:
        return exc.field, exc.message
    return None


class _ShapeError(Exception):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(message)


class _Reader:
    """Reads a folder given as {relative path: bytes}, collecting problems instead of raising."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.problems: list[Problem] = []

    def add(self, file: str, field: str, message: str) -> None:
        self.problems.append(Problem(file, field, message))

    def text(self, rel: str) -> str | None:
        try:
            return self.files[rel].decode("utf-8")
        except KeyError:
            self.add(rel, "", "missing")
        except UnicodeDecodeError as exc:
            self.add(rel, f"byte {exc.start}", f"not UTF-8 text ({exc.reason})")
        return None

    def exists(self, rel: str) -> bool:
        return rel in self.files

    def children(self, folder: str) -> list[str]:
        """Names directly inside `folder` (files and sub-folders), sorted."""
        prefix = folder.rstrip("/") + "/"
        names = {
            rel[len(prefix) :].split("/", 1)[0] for rel in self.files if rel.startswith(prefix)
        }
        return sorted(names)

    def failed(self, prefix: str) -> bool:
        return any(p.file.startswith(prefix) for p in self.problems)

    def checked_text(self, rel: str, data: Any) -> bool:
        path = _non_text_path(data)
        if path is None:
            return True
        self.add(rel, path, "holds a lone surrogate code point (\\ud800-\\udfff), not Unicode text")
        return False

    def yaml_mapping(
        self, rel: str, text: str, *, where: str = "", line_offset: int = 0
    ) -> dict[str, Any] | None:
        """Parse YAML that must be a mapping; `where`/`line_offset` place it inside its file."""
        try:
            data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
        except yaml.YAMLError as exc:
            pos, problem = yaml_problem(exc, line_offset)
            self.add(rel, ", ".join(p for p in (where, pos) if p), f"malformed YAML: {problem}")
            return None
        except RecursionError:
            self.add(rel, where, f"malformed YAML: nested too deeply (the limit is {MAX_DEPTH})")
            return None
        except (ValueError, OverflowError, MemoryError) as exc:
            # int("9" * 5000) escapes PyYAML's own error types
            self.add(rel, where, f"malformed YAML: {type(exc).__name__}: {exc}"[:300])
            return None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            self.add(rel, where, f"expected a YAML mapping of fields, got {type(data).__name__}")
            return None
        for key in data:
            if not isinstance(key, str):
                self.add(rel, where, f"field names must be strings, got {key!r}")
                return None
        if not self.checked_text(rel, data) or not self.checked_shape(rel, data, where):
            return None
        return data

    def checked_shape(self, rel: str, data: Any, where: str = "") -> bool:
        """Record a problem for data nested too deep, expanding too far (YAML aliases) or
        holding a number that is not finite; such data cannot be stored, rendered or sent."""
        found = data_shape_problem(data)
        if found is None:
            return True
        field, message = found
        self.add(rel, ".".join(p for p in (where, field) if p), message)
        return False

    def json_value(self, rel: str, text: str) -> Any:
        """Parse strict JSON (no duplicate keys, no NaN); _FAILED after recording a problem."""

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for key, value in items:
                if key in out:
                    raise _DuplicateKeyError(key)
                out[key] = value
            return out

        def constant(name: str) -> Any:
            raise ValueError(f"{name} is not valid JSON")

        def number(literal: str) -> float:
            value = float(literal)
            if not math.isfinite(value):
                raise ValueError(f"the number {literal[:40]} is out of range (not a finite float)")
            return value

        try:
            data = json.loads(
                text, object_pairs_hook=pairs, parse_constant=constant, parse_float=number
            )
        except json.JSONDecodeError as exc:
            self.add(rel, f"line {exc.lineno}, column {exc.colno}", f"malformed JSON: {exc.msg}")
            return _FAILED
        except _DuplicateKeyError as exc:
            self.add(rel, exc.key, "duplicate key in a JSON object")
            return _FAILED
        except RecursionError:
            self.add(rel, "", f"malformed JSON: nested too deeply (the limit is {MAX_DEPTH})")
            return _FAILED
        except (ValueError, MemoryError) as exc:
            self.add(rel, "", f"malformed JSON: {type(exc).__name__}: {exc}"[:300])
            return _FAILED
        if not self.checked_text(rel, data) or not self.checked_shape(rel, data):
            return _FAILED
        return data

    def build(
        self,
        model: type[M],
        data: Any,
        rel: str,
        prefix: str = "",
        rename: dict[str, str] | None = None,
    ) -> M | None:
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            self.problems.extend(problems_from_validation(exc, rel, prefix, rename))
            return None


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(key)


def _split_front_matter(text: str) -> tuple[str, str] | None:
    """(front-matter YAML, body) of a SKILL.md: the YAML sits between two `---` lines."""
    opening = _FRONT_OPEN_RE.match(text)
    if opening is None:
        return None
    closing = _FRONT_CLOSE_RE.search(text, opening.end())
    if closing is None:
        return None
    return text[opening.end() : closing.start()], text[closing.end() :]


_SKILL_RENAME = {
    "kind": "metadata.kind",
    "enabled": "metadata.enabled",
    "allowed_tools": "allowed-tools",
}


_UTF16_BOMS = {b"\xff\xfe": "FF FE", b"\xfe\xff": "FE FF"}


def _front_matter_problem(text: str) -> str:
    """What is wrong with a SKILL.md whose front matter was not found, said exactly."""
    first = text.split("\n", 1)[0].rstrip("\r")
    if not text.strip():
        return "missing: SKILL.md is empty; it opens with a '---' line, then YAML, then '---'"
    if not _FRONT_OPEN_RE.match(text):
        return (
            f"missing: SKILL.md must open with a '---' line, but its first line is {first[:60]!r}"
            " (then YAML: name, description, metadata; then a closing '---' line)"
        )
    return (
        "missing its closing line: after the opening '---' no line holds only '---' (the "
        "front matter ends with one, before the body)"
    )


def _skill_files(reader: _Reader, folder: str) -> dict[str, bytes] | None:
    """The extra files of skills/<folder>/ (all but SKILL.md): their own bytes, or for the
    store's `.binary/` entries the bytes their base64 holds. None after recording a problem."""
    prefix = f"skills/{folder}/"
    binary_prefix = f"{prefix}{BINARY_DIR}/"
    out: dict[str, bytes] = {}
    where: dict[str, str] = {}
    ok = True
    for rel in sorted(r for r in reader.files if r.startswith(prefix)):
        if rel in (f"{prefix}SKILL.md", f"{prefix}{EXECUTABLE_FILE}"):
            continue
        data = reader.files[rel]
        if rel.startswith(binary_prefix):
            inner = rel[len(binary_prefix) :]
            try:
                data = base64.b64decode(data, validate=False)
            except (binascii.Error, ValueError) as exc:
                reader.add(rel, "", f"not base64 (the store form of a binary file): {exc}")
                ok = False
                continue
        else:
            inner = rel[len(prefix) :]
        problem = skill_file_problem(inner)
        if problem is not None:
            reader.add(rel, "", f"cannot be a file of a skill: its path {problem}")
            ok = False
            continue
        if len(data) > MAX_SKILL_FILE_BYTES:
            reader.add(
                rel, "", f"is {len(data):,} bytes; a skill file may hold {MAX_SKILL_FILE_BYTES:,}"
            )
            ok = False
            continue
        if inner in out:
            reader.add(rel, "", f"{where[inner]} holds the same file")
            ok = False
            continue
        out[inner] = data
        where[inner] = rel
    return out if ok else None


def _read_skill(reader: _Reader, folder: str) -> Skill | None:
    rel = f"skills/{folder}/SKILL.md"
    if not reader.exists(rel):
        reader.add(f"skills/{folder}", "", "skill folder has no SKILL.md")
        return None
    raw = reader.files[rel]
    for bom, shown in _UTF16_BOMS.items():
        if raw.startswith(bom):
            reader.add(rel, "", f"is UTF-16 text (byte order mark {shown}); save it as UTF-8")
            return None
    text = reader.text(rel)
    if text is None:
        return None
    text = text.removeprefix("\ufeff")  # a UTF-8 byte order mark (Windows editors write one)
    parts = _split_front_matter(text)
    if parts is None:
        reader.add(rel, "front matter", _front_matter_problem(text))
        return None
    front = reader.yaml_mapping(rel, parts[0], where="front matter", line_offset=1)
    if front is None:
        return None
    ok = True
    for key in front:
        if key not in SKILL_FRONT_KEYS:
            reader.add(rel, key, _allowed(SKILL_FRONT_KEYS))
            ok = False
    raw_meta = front.get("metadata")
    if raw_meta is None:
        raw_meta = {}
    if not isinstance(raw_meta, dict):
        reader.add(rel, "metadata", "must be a mapping of names to strings")
        return None
    meta: dict[str, Any] = {}
    for key, value in raw_meta.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, int | float):
            value = str(value)
        elif not isinstance(value, str):
            reader.add(rel, f"metadata.{key}", f"must be a string, got {type(value).__name__}")
            ok = False
            continue
        meta[key] = value
    enabled = meta.pop("enabled", "true")
    if enabled not in ("true", "false"):
        reader.add(rel, "metadata.enabled", f"must be true or false, got {enabled!r}")
        ok = False
    data: dict[str, Any] = {
        key.replace("-", "_"): front[key] for key in SKILL_FRONT_KEYS[:-1] if key in front
    }
    listed = front.get("allowed-tools")
    if isinstance(listed, list):  # agentskills.io: a space-separated string or a list
        for i, entry in enumerate(listed):
            if not isinstance(entry, str) or not entry or entry != "".join(entry.split()):
                reader.add(
                    rel,
                    f"allowed-tools.{i}",
                    f"{entry!r}: each entry of the list is one tool name without spaces (the "
                    "harness keeps allowed-tools as space-separated names; write it as a string "
                    "to keep other text)",
                )
                ok = False
        data["allowed_tools"] = " ".join(e for e in listed if isinstance(e, str))
        data["allowed_tools_list"] = True
    extra = _skill_files(reader, folder)
    if extra is None:
        return None
    listing = reader.files.get(f"skills/{folder}/{EXECUTABLE_FILE}")
    executable = (
        [line for line in listing.decode("utf-8", "replace").split("\n") if line]
        if listing is not None
        else []
    )
    data.update(
        body=parts[1],
        kind=meta.pop("kind", "reply"),
        enabled=enabled == "true",
        metadata=meta,
        files=extra,
        executable=executable,
    )
    skill = reader.build(Skill, data, rel, rename=_SKILL_RENAME)
    if skill is not None and skill.name != folder:
        reader.add(rel, "name", f"is {skill.name!r} but the skill's folder is named {folder!r}")
    return skill if ok else None


_TOOL_RENAME = {
    "binding": "x-hat.binding",
    "annotations": "x-hat.annotations",
    "enabled": "x-hat.enabled",
    "binding_args": "x-hat.binding_args",
    "title": "x-hat.title",
    "output_schema": "x-hat.output_schema",
    "mcp": "x-hat.mcp",
}


def _read_tool(reader: _Reader, rel: str) -> Tool | None:
    text = reader.text(rel)
    if text is None:
        return None
    data = reader.json_value(rel, text)
    if data is _FAILED:
        return None
    if not isinstance(data, dict):
        reader.add(rel, "", 'expected a JSON object {"type": "function", "function": {...}}')
        return None
    ok = True
    if "function" in data:
        for key in data:
            if key not in TOOL_KEYS:
                reader.add(rel, key, _allowed(TOOL_KEYS))
                ok = False
        if data.get("type", "function") != "function":
            reader.add(rel, "type", f'must be "function", got {data.get("type")!r}')
            ok = False
        fn, prefix = data["function"], "function."
    else:  # a bare function object {"name", "description", "parameters"} (Responses API shape)
        if data.get("type", "function") != "function":
            reader.add(rel, "type", f'must be "function", got {data.get("type")!r}')
            ok = False
        fn, prefix = {k: v for k, v in data.items() if k not in ("x-hat", "type")}, ""
    if not isinstance(fn, dict):
        reader.add(rel, "function", "must be an object with name, description and parameters")
        return None
    for key in fn:
        if key not in TOOL_FUNCTION_KEYS:
            reader.add(rel, f"{prefix}{key}", _allowed(TOOL_FUNCTION_KEYS))
            ok = False
    ext = data.get("x-hat", {})
    if not isinstance(ext, dict):
        reader.add(rel, "x-hat", "must be an object with binding (and optional annotations)")
        return None
    for key in ext:
        if key not in TOOL_EXT_KEYS:
            reader.add(rel, f"x-hat.{key}", _allowed(TOOL_EXT_KEYS))
            ok = False
    fields = {
        "name": fn.get("name"),
        "description": fn.get("description", ""),
        "parameters": fn.get("parameters", {"type": "object", "properties": {}}),
        "binding": ext.get("binding", fn.get("name")),
        "annotations": ext.get("annotations", {}),
        "enabled": ext.get("enabled", True),
        "binding_args": ext.get("binding_args", {}),
        "title": ext.get("title"),
        "output_schema": ext.get("output_schema"),
        "strict": fn.get("strict"),
        "mcp": ext.get("mcp", {}),
    }
    rename = {**_TOOL_RENAME, **{k: f"{prefix}{k}" for k in TOOL_FUNCTION_KEYS}}
    tool = reader.build(Tool, fields, rel, rename=rename)
    stem = rel.rsplit("/", 1)[-1].removesuffix(".json")
    if tool is not None and tool.name != stem:
        reader.add(rel, f"{prefix}name", f"is {tool.name!r} but the file is named {stem}.json")
    return tool if ok else None


def _python_hook_fields(reader: _Reader, rel: str, source: str) -> dict[str, Any] | None:
    """Settings a python hook declares as module constants (EVENT = "before_reply", ...)."""
    try:
        module = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else ""
        reader.add(rel, where, f"syntax error: {exc.msg}")
        return None
    except (ValueError, RecursionError, MemoryError) as exc:  # e.g. NUL bytes in the source
        reader.add(rel, "", f"not Python source: {exc}")
        return None
    fields: dict[str, Any] = {}
    ok = True
    for node in module.body:
        target: ast.expr | None = None
        value_node: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value_node = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value_node = node.target, node.value
        if isinstance(target, ast.Name) and target.id in _PY_HOOK_FIELDS and value_node:
            try:
                value = ast.literal_eval(value_node)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                reader.add(rel, target.id, "must be a literal value (string, number, dict, ...)")
                ok = False
                continue
            fields[_PY_HOOK_FIELDS[target.id]] = value
    check = next(
        (n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check is None:
        reader.add(rel, "check", "a python hook must define a function check(event)")
        return None
    arity = len(check.args.posonlyargs) + len(check.args.args)
    if arity != 1 and check.args.vararg is None:
        reader.add(rel, "check", f"check must take one argument (the event), not {arity}")
        return None
    return fields if ok else None


def _read_hooks(reader: _Reader, trust: bool) -> dict[str, Hook]:
    hooks: dict[str, Hook] = {}
    stems = {
        f.rsplit(".", 1)[0]
        for f in reader.children("hooks")
        if f.endswith((".yaml", ".yml", ".py")) and "/" not in f
    }
    for name in sorted(stems):
        yaml_rels = [r for r in (f"hooks/{name}.yaml", f"hooks/{name}.yml") if reader.exists(r)]
        if len(yaml_rels) > 1:
            reader.add(yaml_rels[1], "", f"{yaml_rels[0]} describes the same hook; keep one")
            continue
        yaml_rel = yaml_rels[0] if yaml_rels else None
        py_rel = f"hooks/{name}.py"
        rel = yaml_rel or py_rel
        data: dict[str, Any] = {}
        if yaml_rel is not None:
            text = reader.text(yaml_rel)
            parsed = reader.yaml_mapping(yaml_rel, text) if text is not None else None
            if parsed is None:
                continue
            ok = True
            for key, value in parsed.items():
                if key == "name":
                    if value != name:
                        reader.add(
                            yaml_rel, "name", f"is {value!r} but a hook is named by its file"
                        )
                        ok = False
                elif key not in HOOK_KEYS:
                    reader.add(yaml_rel, key, _allowed(HOOK_KEYS))
                    ok = False
            if not ok:
                continue
            data = {k: v for k, v in parsed.items() if k != "name"}
        if reader.exists(py_rel):
            source = reader.text(py_rel)
            if source is None:
                continue
            fields = _python_hook_fields(reader, py_rel, source)
            if fields is None:
                continue
            if yaml_rel is None:
                data = {"kind": "python", **fields}
            elif data.get("kind") != "python":
                reader.add(
                    py_rel,
                    "",
                    f"only python hooks have a .py file, and {yaml_rel} says kind "
                    f"{data.get('kind')!r}",
                )
                continue
            data["source"] = source
        elif data.get("kind") == "python":
            reader.add(rel, "kind", f"a python hook needs its code in hooks/{name}.py")
            continue
        if data.get("kind") == "python":
            data["trusted"] = trust
        hook = reader.build(Hook, {"name": name, **data}, rel)
        if hook is not None:
            hooks[name] = hook
    return hooks


def _read_mcp_servers(reader: _Reader) -> dict[str, McpServer]:
    """The servers of mcp.json (none when the folder has no mcp.json). Claude Code's
    `"type": "stdio"` is accepted (and not written back: stdio is the only kind); other
    transports are a problem, since the runtime starts servers over stdio only."""
    if not reader.exists(MCP_FILE):
        return {}
    text = reader.text(MCP_FILE)
    if text is None:
        return {}
    data = reader.json_value(MCP_FILE, text)
    if data is _FAILED:
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        reader.add(MCP_FILE, "mcpServers", 'expected {"mcpServers": {"<name>": {"command": ...}}}')
        return {}
    for key in data:
        if key != "mcpServers":
            reader.add(MCP_FILE, key, _allowed(("mcpServers",)))
    servers: dict[str, McpServer] = {}
    for name, raw in data["mcpServers"].items():
        where = f"mcpServers.{name}"
        if not MCP_SERVER_NAME_RE.match(name):
            reader.add(
                MCP_FILE,
                where,
                "a server name is 1-64 characters of letters, digits, '_', '.' and '-' "
                "(it is the <server> of mcp:<server>/<tool> bindings)",
            )
            continue
        if not isinstance(raw, dict):
            reader.add(MCP_FILE, where, "must be an object with command, args, env, cwd")
            continue
        ok = True
        for key in raw:
            if key not in MCP_SERVER_KEYS:
                reader.add(MCP_FILE, f"{where}.{key}", _allowed(MCP_SERVER_KEYS))
                ok = False
        kind = raw.get("type", "stdio")
        if kind != "stdio":
            reader.add(
                MCP_FILE,
                f"{where}.type",
                f"{kind!r}: only stdio servers (a command to start) are supported",
            )
            ok = False
        fields = {k: v for k, v in raw.items() if k != "type"}
        server = reader.build(McpServer, fields, MCP_FILE, where)
        if server is not None and ok:
            servers[name] = server
    return servers


def _ordered(reader: _Reader, items: dict[str, Any], order: Any, kind: str) -> list[Any]:
    """Apply harness.yaml's order list; names not listed follow alphabetically."""
    if order is None:
        return [items[k] for k in sorted(items)]
    if not isinstance(order, list) or not all(isinstance(x, str) for x in order):
        reader.add(HARNESS_FILE, f"order.{kind}", "must be a list of names")
        return [items[k] for k in sorted(items)]
    out = []
    seen = set()
    for name in order:
        if name in seen:
            reader.add(HARNESS_FILE, f"order.{kind}", f"{name!r} listed twice")
            continue
        seen.add(name)
        if name not in items:
            if not reader.failed(f"{kind}/{name}"):  # its own file error already says why
                reader.add(HARNESS_FILE, f"order.{kind}", f"{name!r} has no file")
            continue
        out.append(items[name])
    out.extend(items[k] for k in sorted(items) if k not in seen)
    return out


def _unexpected_files(reader: _Reader, section_ids: set[str]) -> None:
    """Report files in the component folders that the format has no place for.

    Export rewrites those folders, so such a file would silently vanish on the next export.
    """
    for rel in sorted(reader.files):
        parts = rel.split("/")
        top = parts[0]
        if len(parts) == 1:
            continue  # top-level files (README, notes) are left alone by export
        if top == "prompt":
            if len(parts) == 2 and rel.endswith(".md"):
                if rel[len("prompt/") : -len(".md")] in section_ids:
                    continue
                msg = "no prompt section uses this template: list its id in harness.yaml"
            else:
                msg = "prompt/ holds only <section id>.md templates"
        elif top == "skills":
            continue  # every file of a skill folder belongs to its skill (_read_skill)
        elif top == "tools":
            if len(parts) == 2 and rel.endswith(".json"):
                continue
            msg = "tools/ holds only <tool name>.json files"
        elif top == "hooks":
            if len(parts) == 2 and rel.endswith((".yaml", ".yml", ".py")):
                continue
            msg = "hooks/ holds only <hook name>.yaml (and <hook name>.py for python hooks)"
        else:
            continue
        reader.add(rel, "", f"unexpected file: {msg}")


def _utf8_name(name: str) -> bool:
    """A file name the store can hold: no undecodable bytes (surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def scan_folder(path: Path) -> tuple[dict[str, bytes], list[Problem]]:
    """Every regular file of a harness folder as {relative posix path: bytes}, and a problem
    for every entry that is not a regular file or folder (symbolic links, dangling or not,
    FIFOs, sockets, device files) or cannot be read. Hidden entries (".git", ".DS_Store") are
    neither read nor entered. No link is ever followed, so nothing outside the folder is read;
    a regular file with more than one hard link is a problem too (it may be any file of the
    system under a name inside the folder), as is one larger than MAX_FOLDER_FILE_BYTES (found
    by its size, before it is read) or past MAX_FOLDER_BYTES for the whole folder.
    """
    files: dict[str, bytes] = {}
    problems: list[Problem] = []
    total = 0
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        folder = path / rel_dir if rel_dir else path
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(rel_dir or str(path), "", f"cannot read: {exc.strerror}"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if not _utf8_name(entry.name):
                shown = entry.name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                where = f"{rel_dir}/{shown}" if rel_dir else shown
                problems.append(
                    Problem(
                        where,
                        "",
                        "its name is not UTF-8 text (bytes "
                        f"{os.fsencode(entry.name)!r}); rename it: a stored harness names "
                        "its files in UTF-8",
                    )
                )
                continue
            try:
                if entry.is_symlink():
                    note = _link_note(Path(entry.path))
                    problems.append(
                        Problem(
                            rel,
                            "",
                            f"is a symbolic link{note}: a harness folder holds only regular "
                            "files and folders (copy the file in instead)",
                        )
                    )
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(rel)
                elif entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size
                    if size <= MAX_FOLDER_FILE_BYTES and total + size > MAX_FOLDER_BYTES:
                        problems.append(
                            Problem(
                                rel,
                                "",
                                f"not read: the folder's files together pass {MAX_FOLDER_BYTES:,}"
                                " bytes",
                            )
                        )
                        continue
                    data = _read_regular(entry.path, limit=MAX_FOLDER_FILE_BYTES)
                    if data is None:
                        problems.append(Problem(rel, "", "changed into a non-regular file"))
                    else:
                        files[rel] = data
                        total += len(data)
                else:
                    kind = _kind_of(entry.stat(follow_symlinks=False).st_mode)
                    problems.append(
                        Problem(rel, "", f"is {kind}: a harness folder holds only regular files")
                    )
            except _Refused as exc:
                problems.append(Problem(rel, "", str(exc)))
            except OSError as exc:
                problems.append(Problem(rel, "", f"cannot read: {exc.strerror or exc}"))
    return dict(sorted(files.items())), sorted(problems, key=lambda p: p.file)


MAX_FOLDER_FILE_BYTES = MAX_SKILL_FILE_BYTES
"""The largest file a harness folder may hold (a skill's extra files are the largest there
are); a larger one is a problem found by its size, before any of it is read."""
MAX_FOLDER_BYTES = 256 * 1024 * 1024
"""All files of a harness folder together; files past it are not read."""


class _Refused(Exception):
    """A file of a harness folder that is not read (too large, or hard-linked)."""


def _read_regular(file: str, *, limit: int | None = None) -> bytes | None:
    """The bytes of a regular file, opened without following a link or blocking on a FIFO.

    With `limit` (a harness folder's files), a file larger than `limit` bytes, or one with
    more than one hard link (it may be a file from anywhere else, /etc/passwd, under a name
    inside the folder), raises _Refused naming the cause; nothing of it is read then."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(file, flags)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        if limit is None:
            return fh.read()
        if st.st_nlink > 1:
            raise _Refused(
                f"has {st.st_nlink} hard links: it may be a file from outside the folder under "
                "a name inside it, so it is not read (copy the file in instead of linking it)"
            )
        if st.st_size > limit:
            raise _Refused(f"is {st.st_size:,} bytes; a harness file may hold at most {limit:,}")
        data = fh.read(limit + 1)
        if len(data) > limit:
            raise _Refused(f"grew past {limit:,} bytes while it was read")
        return data


def read_files(path: Path) -> dict[str, bytes]:
    """Every file of a harness folder as {relative posix path: bytes} (hidden files skipped).

    Raise HarnessError naming every link, FIFO, device file or unreadable entry.
    """
    files, problems = scan_folder(Path(path))
    if problems:
        raise HarnessError(problems)
    return files


def import_folder(path: Path, *, trust_python_hooks: bool = False) -> Harness:
    """Read and validate a harness folder; raise HarnessError listing every problem.

    The checks are exactly those `Store.commit` applies: the harness must also load back
    equal from its own canonical files, so `hat harness validate` and `import` agree.
    """
    path = Path(path)
    if not path.is_dir():
        raise HarnessError([Problem(str(path), "", "not a folder")])
    files = read_files(path)
    harness = harness_from_files(files, trust_python_hooks=trust_python_hooks, name=path.name)
    if any(s.files for s in harness.skills):
        harness = _with_modes(harness, path)
    problems = round_trip_problems(harness)
    if problems:
        raise HarnessError(problems)
    if any(t.binding.startswith("python:") for t in harness.tools):
        add_python_roots(path)
    return harness


PYTHON_ROOTS: list[str] = []
"""Folders a `python:` binding's module is also looked for in: each harness folder read in
this process, and its parent (where a package beside the harness lives). Without them a user
had to set PYTHONPATH before an imported folder's tools could be found."""


def add_python_roots(folder: Path) -> None:
    """Put `folder` and its parent on the list `python:` bindings are imported from (it does
    not run anything; the tools still run only once trusted)."""
    resolved = Path(folder).resolve()
    for root in (str(resolved), str(resolved.parent)):
        if root not in PYTHON_ROOTS:
            PYTHON_ROOTS.append(root)


PYTHON_ROOTS_FILE = "python_roots.json"
"""Under the user's home: {harness name: [folder, parent]} of each folder imported with
`python:` bindings, so a stored version run later (an evaluation, RL) still finds the package
beside the folder it came from. A path hint, not harness content: it never changes a version."""


def remember_python_roots(harness_name: str, folder: Path) -> None:
    from core.paths import home

    path = home() / PYTHON_ROOTS_FILE
    known = _remembered(path)
    resolved = Path(folder).resolve()
    known[harness_name] = [str(resolved), str(resolved.parent)]
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_new(path, (json.dumps(known, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def remembered_python_roots(harness_name: str) -> list[str]:
    """The folders `remember_python_roots` recorded for a harness name ([] when none)."""
    from core.paths import home

    return list(_remembered(home() / PYTHON_ROOTS_FILE).get(harness_name, []))


def _remembered(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): [str(x) for x in v if isinstance(x, str)]
        for k, v in data.items()
        if isinstance(v, list)
    }


def _comparable(harness: Harness) -> dict[str, Any]:
    data = harness.model_dump(mode="json")
    for item in [*data["hooks"], *data["tools"]]:
        item.pop("trusted", None)
    return data


def round_trip_problems(harness: Harness) -> list[Problem]:
    """Problems that would stop the store from keeping `harness` exactly: its canonical files
    must load back into an equal harness (the check `Store.commit` makes before storing)."""
    try:
        texts = folder_files(harness)
    except HarnessError as exc:
        return exc.problems
    try:
        rebuilt = harness_from_files(
            {p: t.encode("utf-8") for p, t in texts.items()},
            trust_python_hooks=True,
            name=harness.name,
        )
    except HarnessError as exc:
        return [Problem(p.file, p.field, f"{p.message} (after export)") for p in exc.problems]
    except (ValueError, TypeError, RecursionError) as exc:  # pragma: no cover - defensive
        return [Problem(HARNESS_FILE, "", f"does not load back after export: {exc}"[:300])]
    if _comparable(rebuilt) != _comparable(harness):
        return [
            Problem(
                HARNESS_FILE,
                "",
                "the folder format cannot hold this harness exactly (it changes "
                "on export and import)",
            )
        ]
    return []


def _read_prompt(reader: _Reader, data: Any) -> tuple[PromptPipeline | None, set[str]]:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        reader.add(HARNESS_FILE, "prompt", "must be a mapping (style, variables, sections)")
        return None, set()
    for key in data:
        if key not in PROMPT_KEYS:
            reader.add(HARNESS_FILE, f"prompt.{key}", _allowed(PROMPT_KEYS))
    raw_sections = data.get("sections")
    if raw_sections is None:
        raw_sections = []
    if not isinstance(raw_sections, list):
        reader.add(HARNESS_FILE, "prompt.sections", "must be a list of sections")
        raw_sections = []
    sections: list[dict[str, Any]] = []
    ids: set[str] = set()
    for i, raw in enumerate(raw_sections):
        where = f"prompt.sections.{i}"
        if not isinstance(raw, dict):
            reader.add(HARNESS_FILE, where, "must be a mapping (id, title, kind, enabled)")
            continue
        if "template" in raw:
            reader.add(
                HARNESS_FILE, f"{where}.template", "a section's template lives in prompt/<id>.md"
            )
            continue
        sid = raw.get("id")
        if not isinstance(sid, str):
            reader.add(HARNESS_FILE, f"{where}.id", "required: the section's id, a string")
            continue
        ids.add(sid)
        md = f"prompt/{sid}.md"
        template = ""
        if reader.exists(md):
            text = reader.text(md)
            if text is None:
                continue
            template = text
        elif raw.get("kind", "text") == "text" and "/" not in sid:
            reader.add(md, "", f"missing: {HARNESS_FILE} {where} ({sid!r}) needs this template")
            continue
        section = reader.build(PromptSection, {**raw, "template": template}, HARNESS_FILE, where)
        if section is not None:
            sections.append(section.model_dump())
    pipeline = reader.build(
        PromptPipeline,
        {
            "style": data.get("style", "markdown"),
            "variables": {} if data.get("variables") is None else data["variables"],
            "sections": sections,
        },
        HARNESS_FILE,
        "prompt",
    )
    return pipeline, ids


def harness_from_files(
    files: dict[str, bytes], *, trust_python_hooks: bool = False, name: str = "harness"
) -> Harness:
    """Build a harness from folder contents held in memory (the store keeps them this way).

    Every problem found is collected (file + field) and raised together as one HarnessError;
    no other exception escapes for any file contents.
    """
    reader = _Reader(files)
    if HARNESS_FILE not in files:
        raise HarnessError([Problem(HARNESS_FILE, "", "missing: every harness folder needs one")])
    text = reader.text(HARNESS_FILE)
    manifest = reader.yaml_mapping(HARNESS_FILE, text) if text is not None else None
    if manifest is None:
        raise HarnessError(reader.problems)
    for key in manifest:
        if key not in MANIFEST_KEYS:
            reader.add(HARNESS_FILE, key, _allowed(MANIFEST_KEYS))

    raw_settings = manifest.get("settings")
    settings = reader.build(
        Settings, {} if raw_settings is None else raw_settings, HARNESS_FILE, "settings"
    )
    pipeline, section_ids = _read_prompt(reader, manifest.get("prompt"))

    skills: dict[str, Skill] = {}
    skill_files: dict[str, str] = {}
    for folder in reader.children("skills"):
        if any(rel.startswith(f"skills/{folder}/") for rel in files):
            skill = _read_skill(reader, folder)
            if skill is None:
                continue
            rel = f"skills/{folder}/SKILL.md"
            if skill.name in skills:
                other = skill_files[skill.name]
                reader.add(rel, "name", f"duplicate skill name {skill.name!r}: {other} has it too")
                continue
            skills[skill.name] = skill
            skill_files[skill.name] = rel
        else:
            reader.add(f"skills/{folder}", "", "expected a skill folder holding SKILL.md")
    tools: dict[str, Tool] = {}
    tool_files: dict[str, str] = {}
    loader = settings.load_skill_tool if settings is not None else None
    for file in reader.children("tools"):
        rel = f"tools/{file}"
        if not (file.endswith(".json") and rel in files):
            continue
        tool = _read_tool(reader, rel)
        if tool is None:
            continue
        if tool.name in tools:
            other = tool_files[tool.name]
            msg = f"duplicate tool name {tool.name!r}: {other} has it too"
            reader.add(rel, "function.name", msg)
            continue
        if tool.name == loader:
            reader.add(
                rel,
                "function.name",
                f"{tool.name!r} is the built-in skill loader's name (settings.load_skill_tool)",
            )
            continue
        tools[tool.name] = tool
        tool_files[tool.name] = rel
    hooks = _read_hooks(reader, trust_python_hooks)
    for tool in tools.values():
        if binding_needs_trust(tool.binding):
            tool.trusted = trust_python_hooks
    servers = _read_mcp_servers(reader)

    order = manifest.get("order")
    if order is None:
        order = {}
    if not isinstance(order, dict):
        reader.add(HARNESS_FILE, "order", "must be a mapping (skills, tools, hooks)")
        order = {}
    for key in order:
        if key not in ORDER_KEYS:
            reader.add(HARNESS_FILE, f"order.{key}", _allowed(ORDER_KEYS))
    ordered_skills = _ordered(reader, skills, order.get("skills"), "skills")
    ordered_tools = _ordered(reader, tools, order.get("tools"), "tools")
    ordered_hooks = _ordered(reader, hooks, order.get("hooks"), "hooks")
    _unexpected_files(reader, section_ids)
    if reader.problems or settings is None or pipeline is None:
        raise HarnessError(reader.problems)
    harness_name = manifest.get("name")
    description = manifest.get("description")
    try:
        harness = Harness(
            name=name if harness_name is None else harness_name,
            description="" if description is None else description,
            settings=settings,
            prompt=pipeline,
            skills=ordered_skills,
            tools=ordered_tools,
            hooks=ordered_hooks,
            mcp_servers=servers,
        )
    except ValidationError as exc:
        raise HarnessError(problems_from_validation(exc, HARNESS_FILE)) from None
    from core.harness.checks import cross_check

    problems = cross_check(harness)
    if problems:
        raise HarnessError(problems)
    return harness
