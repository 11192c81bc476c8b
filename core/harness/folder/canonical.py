"""The canonical text of every file of a harness folder: one text per component, so
export -> import -> export is byte-identical, a folder under version control diffs cleanly,
and the store content-addresses exactly what a user would see on disk."""

from __future__ import annotations

import base64
import json
from typing import Any

import yaml

from core.harness.errors import HarnessError, Problem
from core.harness.models import Harness, Hook, HookKind, McpServer, SectionKind, Skill, Tool

HARNESS_FILE = "harness.yaml"
MCP_FILE = "mcp.json"
"""The harness's MCP servers, in the Claude Code / Claude Desktop format:
{"mcpServers": {"<name>": {"command": ..., "args": [...], "env": {...}, "cwd": ...}}}."""


BINARY_DIR = ".binary"
"""Where the store form of a skill keeps a file that is not UTF-8 text: as base64 under
skills/<name>/.binary/<path>. A folder on disk never holds it (import skips hidden entries);
export writes the file's own bytes at skills/<name>/<path>."""
EXECUTABLE_FILE = ".executable"
"""The store's listing of a skill's files that carry the executable bit (one path a line):
hidden, so a folder on disk never holds it (its mode bits say the same)."""


# libyaml's C emitter when present (the Python one is ~5x slower on a large harness); the
# representers below are Python either way.
_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


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
