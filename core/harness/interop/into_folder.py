"""Adding imported components to a harness folder: the whole resulting harness is validated
(the checks `hat harness validate` and the store make) before a file is written, then only the
added components' files and harness.yaml are written, each whole."""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.harness.checks import cross_check
from core.harness.errors import HarnessError, Problem, problems_from_validation
from core.harness.folder.canonical import executable_paths, folder_blobs
from core.harness.folder.export import export_folder, update_export_manifest
from core.harness.folder.load import import_folder, round_trip_problems
from core.harness.folder.safe_read import scan_folder
from core.harness.folder.safe_write import make_dirs, write_new
from core.harness.models import (
    Harness,
    Hook,
    McpServer,
    PromptPipeline,
    PromptSection,
    SectionKind,
    Skill,
    Tool,
)


@dataclass
class Added:
    harness: Harness
    written: list[str]
    removed: list[str]


def _new_harness(name: str) -> Harness:
    sections = [
        PromptSection(id="skills", title="Skills", kind=SectionKind.SKILL_INDEX),
        PromptSection(id="tools", title="Tools", kind=SectionKind.TOOL_BLOCK),
    ]
    return Harness(name=name, prompt=PromptPipeline(sections=sections))


def _folder_state(folder: Path) -> str:
    """'missing', 'empty' or 'harness' (anything else raises HarnessError)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        raise HarnessError(
            [Problem(str(folder), "", f"cannot read: {exc.strerror or exc}")]
        ) from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise HarnessError([Problem(str(folder), "", "is not a real folder")])
    if not [e for e in os.listdir(folder) if not e.startswith(".")]:
        return "empty"
    return "harness"


def _component_paths(harness: Harness, kind: str, name: str) -> set[str]:
    blobs = folder_blobs(harness)
    if kind == "skill":
        return {p for p in blobs if p.startswith(f"skills/{name}/")}
    if kind == "tool":
        return {f"tools/{name}.json"}
    return {p for p in (f"hooks/{name}.yaml", f"hooks/{name}.py") if p in blobs}


def _on_disk(folder: Path, kind: str, name: str) -> list[str]:
    """Files the folder holds now for one component (what a replacement must remove)."""
    if kind == "skill":
        files, _ = (
            scan_folder(folder / "skills" / name)
            if (folder / "skills" / name).is_dir()
            else ({}, [])
        )
        return [f"skills/{name}/{rel}" for rel in files]
    if kind == "tool":
        candidates = [f"tools/{name}.json"]
    else:
        candidates = [f"hooks/{name}.yaml", f"hooks/{name}.yml", f"hooks/{name}.py"]
    return [c for c in candidates if os.path.lexists(folder / c)]


def _check_target(folder: Path, rel: str) -> Problem | None:
    """A problem when writing `rel` would go through a link or over a non-file."""
    current = folder
    parts = rel.split("/")
    for i, part in enumerate(parts):
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return None
        last = i == len(parts) - 1
        if stat.S_ISLNK(st.st_mode):
            return Problem(str(current), "", "is a symbolic link; nothing is written through one")
        if not last and not stat.S_ISDIR(st.st_mode):
            return Problem(str(current), "", "is not a folder, and a file goes inside it")
        if last and not stat.S_ISREG(st.st_mode):
            return Problem(str(current), "", "is not a regular file; it will not be replaced")
    return None


def add_to_folder(
    folder: Path,
    *,
    tools: list[Tool] | None = None,
    skills: list[Skill] | None = None,
    hooks: list[Hook] | None = None,
    mcp_servers: dict[str, McpServer] | None = None,
    replace: bool = False,
) -> Added:
    """Add components to the harness folder `folder` (created when missing or empty).

    The whole resulting harness is validated first (the checks of `hat harness validate` and
    the store); on any problem HarnessError is raised and nothing is written. Then only the
    added components' files and harness.yaml (its order lists now naming the new components
    after the others, in the order given) are written, each through a temporary file; for a
    replaced component, its old files that the new one lacks are removed.
    """
    folder = Path(folder)
    tools, skills, hooks = list(tools or []), list(skills or []), list(hooks or [])
    state = _folder_state(folder)
    base = (
        _new_harness(folder.name)
        if state != "harness"
        else import_folder(folder, trust_python_hooks=True)
    )
    problems: list[Problem] = []
    replaced: list[tuple[str, str]] = []
    servers = dict(base.mcp_servers)
    for server_name, server in (mcp_servers or {}).items():
        old_server = servers.get(server_name)
        if old_server is not None and old_server != server and not replace:
            problems.append(
                Problem(
                    "mcp.json",
                    f"mcpServers.{server_name}",
                    f"the harness already has an MCP server named {server_name!r} with another "
                    "command (--replace to replace it)",
                )
            )
        servers[server_name] = server

    def merge(kind: str, old: list[Any], new: list[Any]) -> list[Any]:
        """`old` with same-named items replaced in place (or a problem), then the rest."""
        by_name = {x.name: x for x in new}
        out = []
        for item in old:
            if item.name not in by_name:
                out.append(item)
            elif replace:
                replaced.append((kind, item.name))
                out.append(by_name.pop(item.name))
            else:
                problems.append(
                    Problem(
                        f"{kind}s/{item.name}",
                        "",
                        f"the harness already has a {kind} named {item.name!r} "
                        "(--replace to replace it)",
                    )
                )
                out.append(item)
        return out + list(by_name.values())

    merged_skills = merge("skill", base.skills, skills)
    merged_tools = merge("tool", base.tools, tools)
    merged_hooks = merge("hook", base.hooks, hooks)
    if problems:
        raise HarnessError(problems)
    try:
        harness = Harness(
            name=base.name,
            description=base.description,
            settings=base.settings,
            prompt=base.prompt,
            skills=merged_skills,
            tools=merged_tools,
            hooks=merged_hooks,
            mcp_servers=servers,
        )
    except ValidationError as exc:
        raise HarnessError(problems_from_validation(exc, "harness.yaml")) from None
    problems = cross_check(harness) + round_trip_problems(harness)
    if problems:
        raise HarnessError(problems)
    if state != "harness":
        export_folder(harness, folder)
        return Added(harness, sorted(folder_blobs(harness)), [])
    blobs = folder_blobs(harness)
    wanted: set[str] = {"harness.yaml"}
    if mcp_servers:
        wanted.add("mcp.json")
    for kind, items in (("skill", skills), ("tool", tools), ("hook", hooks)):
        for item in items:
            wanted |= _component_paths(harness, kind, item.name)
    stale = sorted({p for kind, name in replaced for p in _on_disk(folder, kind, name)} - wanted)
    for rel in sorted(wanted) + stale:
        found = _check_target(folder, rel)
        if found is not None:
            problems.append(found)
    for rel in sorted(wanted):
        if (
            not replace
            and rel not in ("harness.yaml", "mcp.json")
            and os.path.lexists(folder / rel)
        ):
            problems.append(
                Problem(str(folder / rel), "", "exists already (--replace to replace it)")
            )
    if problems:
        raise HarnessError(problems)
    executable = executable_paths(harness)
    try:
        for rel in sorted(wanted):
            if "/" in rel:
                make_dirs(folder, rel.rsplit("/", 1)[0])
            write_new(folder / rel, blobs[rel])
            if rel in executable:
                os.chmod(folder / rel, 0o755)
        for rel in stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / rel)
        update_export_manifest(folder, {rel: blobs[rel] for rel in wanted}, stale)
    except OSError as exc:
        where = str(exc.filename) if exc.filename else str(folder)
        raise HarnessError([Problem(where, "", f"cannot write: {exc.strerror or exc}")]) from None
    return Added(harness, sorted(wanted), stale)
