"""A whole harness from its files, with every problem collected before failing, and the
round-trip check (`Store.commit` makes the same one) that a harness loads back equal from its
own canonical files, so `hat harness validate`, import and the store agree."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.harness.errors import HarnessError, Problem, problems_from_validation
from core.harness.folder.canonical import HARNESS_FILE, folder_files
from core.harness.folder.components import (
    read_hooks,
    read_mcp_servers,
    read_prompt,
    read_skill,
    read_tool,
)
from core.harness.folder.parse import FolderReader, unknown_field
from core.harness.folder.python_roots import add_python_roots
from core.harness.folder.safe_read import read_files
from core.harness.models import Harness, Settings, Skill, Tool, binding_needs_trust

MANIFEST_KEYS = ("name", "description", "settings", "prompt", "order")
ORDER_KEYS = ("skills", "tools", "hooks")


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


def _ordered(reader: FolderReader, items: dict[str, Any], order: Any, kind: str) -> list[Any]:
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


def _unexpected_files(reader: FolderReader, section_ids: set[str]) -> None:
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
            continue  # every file of a skill folder belongs to its skill (read_skill)
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


def harness_from_files(
    files: dict[str, bytes], *, trust_python_hooks: bool = False, name: str = "harness"
) -> Harness:
    """Build a harness from folder contents held in memory (the store keeps them this way).

    Every problem found is collected (file + field) and raised together as one HarnessError;
    no other exception escapes for any file contents.
    """
    reader = FolderReader(files)
    if HARNESS_FILE not in files:
        raise HarnessError([Problem(HARNESS_FILE, "", "missing: every harness folder needs one")])
    text = reader.text(HARNESS_FILE)
    manifest = reader.yaml_mapping(HARNESS_FILE, text) if text is not None else None
    if manifest is None:
        raise HarnessError(reader.problems)
    for key in manifest:
        if key not in MANIFEST_KEYS:
            reader.add(HARNESS_FILE, key, unknown_field(MANIFEST_KEYS))

    raw_settings = manifest.get("settings")
    settings = reader.build(
        Settings, {} if raw_settings is None else raw_settings, HARNESS_FILE, "settings"
    )
    pipeline, section_ids = read_prompt(reader, manifest.get("prompt"))

    skills: dict[str, Skill] = {}
    skill_files: dict[str, str] = {}
    for folder in reader.children("skills"):
        if any(rel.startswith(f"skills/{folder}/") for rel in files):
            skill = read_skill(reader, folder)
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
        tool = read_tool(reader, rel)
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
    hooks = read_hooks(reader, trust_python_hooks)
    for tool in tools.values():
        if binding_needs_trust(tool.binding):
            tool.trusted = trust_python_hooks
    servers = read_mcp_servers(reader)

    order = manifest.get("order")
    if order is None:
        order = {}
    if not isinstance(order, dict):
        reader.add(HARNESS_FILE, "order", "must be a mapping (skills, tools, hooks)")
        order = {}
    for key in order:
        if key not in ORDER_KEYS:
            reader.add(HARNESS_FILE, f"order.{key}", unknown_field(ORDER_KEYS))
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
    from core.harness.checks import cross_check  # heavy: regex

    problems = cross_check(harness)
    if problems:
        raise HarnessError(problems)
    return harness
