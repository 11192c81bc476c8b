"""The harness folder format: harness.yaml, prompt/*.md, skills/<name>/SKILL.md, tools/*.json,
hooks/*.yaml (+ .py for Python hooks).

Export writes one canonical text for each component, so export -> import -> export is
byte-identical and a folder under version control diffs cleanly. Import collects every problem
it finds (file + field) before failing, so a user fixes a broken folder in one pass.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from core.harness.errors import HarnessError, Problem, problems_from_validation
from core.harness.models import (
    Harness,
    Hook,
    HookKind,
    PromptPipeline,
    PromptSection,
    SectionKind,
    Settings,
    Skill,
    Tool,
)

HARNESS_FILE = "harness.yaml"
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


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000_000
    )


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def skill_text(skill: Skill) -> str:
    meta: dict[str, str] = {"kind": skill.kind.value}
    if not skill.enabled:
        meta["enabled"] = "false"
    meta.update(skill.metadata)
    front = {"name": skill.name, "description": skill.description, "metadata": meta}
    return f"---\n{dump_yaml(front)}---\n{skill.body}"


def tool_text(tool: Tool) -> str:
    ext: dict[str, Any] = {"binding": tool.binding}
    if tool.annotations:
        ext["annotations"] = tool.annotations
    if not tool.enabled:
        ext["enabled"] = False
    return dump_json({**tool.to_openai(), "x-hat": ext})


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
    return {
        "name": harness.name,
        "description": harness.description,
        "settings": harness.settings.model_dump(mode="json"),
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


def folder_files(harness: Harness) -> dict[str, str]:
    """Relative path -> canonical text of every file in the harness's folder."""
    files = {HARNESS_FILE: dump_yaml(manifest_data(harness))}
    for section in harness.prompt.sections:
        if section.kind is SectionKind.TEXT or section.template:
            files[f"prompt/{section.id}.md"] = section.template
    for skill in harness.skills:
        files[f"skills/{skill.name}/SKILL.md"] = skill_text(skill)
    for tool in harness.tools:
        files[f"tools/{tool.name}.json"] = tool_text(tool)
    for hook in harness.hooks:
        files[f"hooks/{hook.name}.yaml"] = hook_text(hook.model_copy(update={"source": None}))
        if hook.kind is HookKind.PYTHON and hook.source is not None:
            files[f"hooks/{hook.name}.py"] = hook.source
    return files


def export_folder(harness: Harness, path: Path) -> None:
    """Write the canonical folder; stale component files from an earlier export are removed."""
    path.mkdir(parents=True, exist_ok=True)
    files = folder_files(harness)
    for sub in ("prompt", "skills", "tools", "hooks"):
        root = path / sub
        if root.exists():
            for old in sorted(root.rglob("*"), reverse=True):
                rel = old.relative_to(path).as_posix()
                if old.is_file() and rel not in files:
                    old.unlink()
                elif old.is_dir() and not any(old.iterdir()):
                    old.rmdir()
    for rel, text in files.items():
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))


# ----------------------------------------------------------------------------- import


class _Reader:
    """Reads a folder given as {relative path: bytes}, collecting problems instead of raising."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.problems: list[Problem] = []

    def text(self, rel: str) -> str | None:
        try:
            return self.files[rel].decode("utf-8")
        except KeyError:
            self.problems.append(Problem(rel, "", "missing"))
        except UnicodeDecodeError as exc:
            self.problems.append(Problem(rel, "", f"not UTF-8 text ({exc.reason})"))
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

    def yaml_mapping(self, rel: str, text: str) -> dict[str, Any] | None:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            self.problems.append(Problem(rel, where, f"malformed YAML: {problem}"))
            return None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            self.problems.append(Problem(rel, "", f"expected a mapping, got {type(data).__name__}"))
            return None
        return data

    def build(self, model: type[M], data: dict[str, Any], rel: str, prefix: str = "") -> M | None:
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            self.problems.extend(problems_from_validation(exc, rel, prefix))
            return None


def _split_front_matter(text: str) -> tuple[str, str] | None:
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 3)
    if end < 0:
        if text.endswith("\n---"):
            return text[4:-3], ""
        return None
    return text[4 : end + 1], text[end + 5 :]


def _read_skill(reader: _Reader, folder: str) -> Skill | None:
    rel = f"skills/{folder}/SKILL.md"
    if not reader.exists(rel):
        reader.problems.append(Problem(f"skills/{folder}", "", "skill folder has no SKILL.md"))
        return None
    text = reader.text(rel)
    if text is None:
        return None
    parts = _split_front_matter(text)
    if parts is None:
        reader.problems.append(
            Problem(rel, "front matter", "must start with '---' and close with '---'")
        )
        return None
    front = reader.yaml_mapping(rel, parts[0])
    if front is None:
        return None
    meta = front.get("metadata") or {}
    if not isinstance(meta, dict):
        reader.problems.append(Problem(rel, "metadata", "must be a mapping"))
        return None
    meta = {str(k): str(v) if not isinstance(v, bool) else str(v).lower() for k, v in meta.items()}
    unknown = set(front) - {"name", "description", "metadata", "license", "allowed-tools"}
    if unknown:
        reader.problems.append(
            Problem(rel, ", ".join(sorted(unknown)), "unknown front-matter field")
        )
        return None
    data = {
        "name": front.get("name"),
        "description": front.get("description"),
        "body": parts[1],
        "kind": meta.pop("kind", "reply"),
        "enabled": meta.pop("enabled", "true") != "false",
        "metadata": meta,
    }
    skill = reader.build(Skill, data, rel)
    if skill is not None and skill.name != folder:
        reader.problems.append(
            Problem(
                rel, "name", f"front matter says {skill.name!r} but the folder is named {folder!r}"
            )
        )
        return None
    return skill


def _read_tool(reader: _Reader, rel: str) -> Tool | None:
    text = reader.text(rel)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        reader.problems.append(Problem(rel, f"line {exc.lineno}, column {exc.colno}", exc.msg))
        return None
    if not isinstance(data, dict):
        reader.problems.append(Problem(rel, "", "expected a JSON object"))
        return None
    fn = data.get("function", data)
    if not isinstance(fn, dict):
        reader.problems.append(Problem(rel, "function", "must be an object"))
        return None
    ext = data.get("x-hat") or {}
    if not isinstance(ext, dict):
        reader.problems.append(Problem(rel, "x-hat", "must be an object"))
        return None
    fields = {
        "name": fn.get("name"),
        "description": fn.get("description", ""),
        "parameters": fn.get("parameters", {"type": "object", "properties": {}}),
        "binding": ext.get("binding", fn.get("name")),
        "annotations": ext.get("annotations", {}),
        "enabled": ext.get("enabled", True),
    }
    tool = reader.build(Tool, fields, rel, prefix="function")
    stem = rel.rsplit("/", 1)[-1].removesuffix(".json")
    if tool is not None and tool.name != stem:
        reader.problems.append(
            Problem(rel, "function.name", f"is {tool.name!r} but the file is named {stem}.json")
        )
        return None
    return tool


def _python_hook_fields(reader: _Reader, rel: str, source: str) -> dict[str, Any] | None:
    try:
        module = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        reader.problems.append(Problem(rel, f"line {exc.lineno}", f"syntax error: {exc.msg}"))
        return None
    fields: dict[str, Any] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id in _PY_HOOK_FIELDS:
                try:
                    fields[_PY_HOOK_FIELDS[target.id]] = ast.literal_eval(node.value)
                except ValueError:
                    reader.problems.append(Problem(rel, target.id, "must be a literal value"))
                    return None
    if not any(isinstance(n, ast.FunctionDef) and n.name == "check" for n in module.body):
        reader.problems.append(Problem(rel, "check", "a python hook must define check(event)"))
        return None
    return fields


def _read_hooks(reader: _Reader, trust: bool) -> dict[str, Hook]:
    hooks: dict[str, Hook] = {}
    files = [n for n in reader.children("hooks") if n.endswith((".yaml", ".yml", ".py"))]
    for name in sorted({f.rsplit(".", 1)[0] for f in files}):
        yaml_rel = next(
            (r for r in (f"hooks/{name}.yaml", f"hooks/{name}.yml") if reader.exists(r)), None
        )
        py_rel = f"hooks/{name}.py"
        rel = yaml_rel or py_rel
        data: dict[str, Any] = {}
        if yaml_rel is not None:
            text = reader.text(yaml_rel)
            parsed = reader.yaml_mapping(yaml_rel, text) if text is not None else None
            if parsed is None:
                continue
            data = parsed
        if reader.exists(py_rel):
            source = reader.text(py_rel)
            if source is None:
                continue
            if yaml_rel is None:
                fields = _python_hook_fields(reader, py_rel, source)
                if fields is None:
                    continue
                data = {"kind": "python", **fields}
            data["source"] = source
        elif data.get("kind") == "python":
            reader.problems.append(Problem(rel, "kind", f"python hook needs hooks/{name}.py"))
            continue
        if data.get("kind") == "python":
            data["trusted"] = trust
        hook = reader.build(Hook, {"name": name, **data}, rel)
        if hook is not None:
            hooks[name] = hook
    return hooks


def _ordered(reader: _Reader, items: dict[str, Any], order: Any, kind: str) -> list[Any]:
    """Apply harness.yaml's order list; names not listed follow alphabetically."""
    if order is None:
        return [items[k] for k in sorted(items)]
    if not isinstance(order, list) or not all(isinstance(x, str) for x in order):
        reader.problems.append(Problem(HARNESS_FILE, f"order.{kind}", "must be a list of names"))
        return [items[k] for k in sorted(items)]
    out = []
    seen = set()
    for name in order:
        if name in seen:
            reader.problems.append(Problem(HARNESS_FILE, f"order.{kind}", f"{name!r} listed twice"))
            continue
        seen.add(name)
        if name not in items:
            if not reader.failed(f"{kind}/{name}"):  # its own file error already says why
                problem = Problem(HARNESS_FILE, f"order.{kind}", f"{name!r} has no file")
                reader.problems.append(problem)
            continue
        out.append(items[name])
    out.extend(items[k] for k in sorted(items) if k not in seen)
    return out


def read_files(path: Path) -> dict[str, bytes]:
    """Every file of a harness folder as {relative posix path: bytes} (hidden files skipped)."""
    out = {}
    for file in sorted(path.rglob("*")):
        rel = file.relative_to(path).as_posix()
        if file.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            out[rel] = file.read_bytes()
    return out


def import_folder(path: Path, *, trust_python_hooks: bool = False) -> Harness:
    """Read and validate a harness folder; raise HarnessError listing every problem."""
    path = Path(path)
    if not path.is_dir():
        raise HarnessError([Problem(str(path), "", "not a folder")])
    try:
        files = read_files(path)
    except OSError as exc:
        raise HarnessError(
            [Problem(str(exc.filename), "", f"cannot read: {exc.strerror}")]
        ) from None
    return harness_from_files(files, trust_python_hooks=trust_python_hooks, name=path.name)


def harness_from_files(
    files: dict[str, bytes], *, trust_python_hooks: bool = False, name: str = "harness"
) -> Harness:
    """Build a harness from folder contents held in memory (the store keeps them this way)."""
    reader = _Reader(files)
    if HARNESS_FILE not in files:
        raise HarnessError([Problem(HARNESS_FILE, "", "missing")])
    text = reader.text(HARNESS_FILE)
    manifest = reader.yaml_mapping(HARNESS_FILE, text) if text is not None else None
    if manifest is None:
        raise HarnessError(reader.problems)
    for key in sorted(set(manifest) - {"name", "description", "settings", "prompt", "order"}):
        reader.problems.append(Problem(HARNESS_FILE, key, "unknown field"))

    settings = reader.build(Settings, manifest.get("settings") or {}, HARNESS_FILE, "settings")
    prompt_data = manifest.get("prompt") or {}
    if not isinstance(prompt_data, dict):
        reader.problems.append(Problem(HARNESS_FILE, "prompt", "must be a mapping"))
        prompt_data = {}
    raw_sections = prompt_data.get("sections") or []
    if not isinstance(raw_sections, list):
        reader.problems.append(Problem(HARNESS_FILE, "prompt.sections", "must be a list"))
        raw_sections = []
    sections: list[dict[str, Any]] = []
    for i, raw in enumerate(raw_sections):
        where = f"prompt.sections.{i}"
        if not isinstance(raw, dict):
            reader.problems.append(Problem(HARNESS_FILE, where, "must be a mapping"))
            continue
        md = f"prompt/{raw.get('id')}.md"
        template = ""
        if reader.exists(md):
            template = reader.text(md) or ""
        elif raw.get("kind", "text") == "text":
            reader.problems.append(Problem(HARNESS_FILE, where, f"{md} is missing"))
            continue
        section = reader.build(PromptSection, {**raw, "template": template}, HARNESS_FILE, where)
        if section is not None:
            sections.append(section.model_dump())
    pipeline = reader.build(
        PromptPipeline,
        {
            "style": prompt_data.get("style", "markdown"),
            "variables": prompt_data.get("variables") or {},
            "sections": sections,
        },
        HARNESS_FILE,
        "prompt",
    )

    skills: dict[str, Skill] = {}
    for folder in reader.children("skills"):
        if any(rel.startswith(f"skills/{folder}/") for rel in files):
            skill = _read_skill(reader, folder)
            if skill is not None:
                skills[skill.name] = skill
        else:
            reader.problems.append(Problem(f"skills/{folder}", "", "expected a skill folder"))
    tools: dict[str, Tool] = {}
    for file in reader.children("tools"):
        if file.endswith(".json"):
            tool = _read_tool(reader, f"tools/{file}")
            if tool is not None:
                tools[tool.name] = tool
    hooks = _read_hooks(reader, trust_python_hooks)

    order = manifest.get("order") or {}
    if not isinstance(order, dict):
        reader.problems.append(Problem(HARNESS_FILE, "order", "must be a mapping"))
        order = {}
    ordered_skills = _ordered(reader, skills, order.get("skills"), "skills")
    ordered_tools = _ordered(reader, tools, order.get("tools"), "tools")
    ordered_hooks = _ordered(reader, hooks, order.get("hooks"), "hooks")
    if reader.problems or settings is None or pipeline is None:
        raise HarnessError(reader.problems)
    try:
        harness = Harness(
            name=manifest.get("name") or name,
            description=manifest.get("description") or "",
            settings=settings,
            prompt=pipeline,
            skills=ordered_skills,
            tools=ordered_tools,
            hooks=ordered_hooks,
        )
    except ValidationError as exc:
        raise HarnessError(problems_from_validation(exc, HARNESS_FILE)) from None
    from core.harness.checks import cross_check

    problems = cross_check(harness)
    if problems:
        raise HarnessError(problems)
    return harness
