"""Each component of a harness folder read from its files (a skill folder, a tool's JSON, a
hook's YAML and Python, mcp.json, the prompt's sections), strictly: unknown fields are problems,
not warnings, since export would silently drop them."""

from __future__ import annotations

import ast
import base64
import binascii
import re
from typing import Any

from core.harness.folder.canonical import BINARY_DIR, EXECUTABLE_FILE, HARNESS_FILE, MCP_FILE
from core.harness.folder.parse import PARSE_FAILED, FolderReader, unknown_field
from core.harness.models import (
    MAX_SKILL_FILE_BYTES,
    MCP_SERVER_NAME_RE,
    Hook,
    McpServer,
    PromptPipeline,
    PromptSection,
    Skill,
    Tool,
    skill_file_problem,
)

PROMPT_KEYS = ("style", "variables", "sections")
MCP_SERVER_KEYS = ("command", "args", "env", "cwd", "type")
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


_FRONT_OPEN_RE = re.compile(r"---[ \t]*\r?\n")
_FRONT_CLOSE_RE = re.compile(r"^---[ \t]*(?:\r?\n|\Z)", re.MULTILINE)


def split_front_matter(text: str) -> tuple[str, str] | None:
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


def _skill_files(reader: FolderReader, folder: str) -> dict[str, bytes] | None:
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


def read_skill(reader: FolderReader, folder: str) -> Skill | None:
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
    parts = split_front_matter(text)
    if parts is None:
        reader.add(rel, "front matter", _front_matter_problem(text))
        return None
    front = reader.yaml_mapping(rel, parts[0], where="front matter", line_offset=1)
    if front is None:
        return None
    ok = True
    for key in front:
        if key not in SKILL_FRONT_KEYS:
            reader.add(rel, key, unknown_field(SKILL_FRONT_KEYS))
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


def read_tool(reader: FolderReader, rel: str) -> Tool | None:
    text = reader.text(rel)
    if text is None:
        return None
    data = reader.json_value(rel, text)
    if data is PARSE_FAILED:
        return None
    if not isinstance(data, dict):
        reader.add(rel, "", 'expected a JSON object {"type": "function", "function": {...}}')
        return None
    ok = True
    if "function" in data:
        for key in data:
            if key not in TOOL_KEYS:
                reader.add(rel, key, unknown_field(TOOL_KEYS))
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
            reader.add(rel, f"{prefix}{key}", unknown_field(TOOL_FUNCTION_KEYS))
            ok = False
    ext = data.get("x-hat", {})
    if not isinstance(ext, dict):
        reader.add(rel, "x-hat", "must be an object with binding (and optional annotations)")
        return None
    for key in ext:
        if key not in TOOL_EXT_KEYS:
            reader.add(rel, f"x-hat.{key}", unknown_field(TOOL_EXT_KEYS))
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


def _python_hook_fields(reader: FolderReader, rel: str, source: str) -> dict[str, Any] | None:
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


def read_hooks(reader: FolderReader, trust: bool) -> dict[str, Hook]:
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
                    reader.add(yaml_rel, key, unknown_field(HOOK_KEYS))
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


def read_mcp_servers(reader: FolderReader) -> dict[str, McpServer]:
    """The servers of mcp.json (none when the folder has no mcp.json). Claude Code's
    `"type": "stdio"` is accepted (and not written back: stdio is the only kind); other
    transports are a problem, since the runtime starts servers over stdio only."""
    if not reader.exists(MCP_FILE):
        return {}
    text = reader.text(MCP_FILE)
    if text is None:
        return {}
    data = reader.json_value(MCP_FILE, text)
    if data is PARSE_FAILED:
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        reader.add(MCP_FILE, "mcpServers", 'expected {"mcpServers": {"<name>": {"command": ...}}}')
        return {}
    for key in data:
        if key != "mcpServers":
            reader.add(MCP_FILE, key, unknown_field(("mcpServers",)))
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
                reader.add(MCP_FILE, f"{where}.{key}", unknown_field(MCP_SERVER_KEYS))
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


def read_prompt(reader: FolderReader, data: Any) -> tuple[PromptPipeline | None, set[str]]:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        reader.add(HARNESS_FILE, "prompt", "must be a mapping (style, variables, sections)")
        return None, set()
    for key in data:
        if key not in PROMPT_KEYS:
            reader.add(HARNESS_FILE, f"prompt.{key}", unknown_field(PROMPT_KEYS))
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
