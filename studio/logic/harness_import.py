"""The studio's import and export boxes, without a window: text or a folder in, a preview of
what would be added (with each item's problems), then one undoable step on the document.

Every format is read by `core.harness.interop`, the code behind `hat harness import-tools`,
`import-skill`, `import-hooks` and `export-tools`; nothing here parses a format itself. A
preview never changes the document; `*_snapshot` builds the step that adds everything, and only
when the preview has no problem at all (all or nothing).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.harness import Harness, HarnessError, Hook, Problem, Skill, Tool
from core.harness.checks import cross_check
from core.harness.interop import (
    MAX_INPUT_BYTES,
    Skipped,
    claude_origin,
    hooks_from_claude_settings,
    json_from_text,
    mcp_tool_list,
    openai_tools,
    read_skill_folder,
    tool_entries,
    tools_from_data,
)
from studio.logic.document import HarnessDocument, Snapshot

PASTED = "pasted text"
_LINE_COL = re.compile(r"line (\d+), column (\d+)")


_CLI_RENAME = re.compile(r"rename it on import \(--rename (\S+)=NEW_NAME\)")


def studio_wording(message: str) -> str:
    """Core's message with its command-line hint said the way the dialog can act on it."""
    return _CLI_RENAME.sub(
        r"rename it in the pasted text, or import it with hat harness import-tools --rename "
        r"\1=NEW_NAME (which keeps the original name as its binding)",
        message,
    )


def problem_text(p: Problem, file: str = "") -> str:
    """One problem as a line: the field first, the file only when it is not `file`."""
    where = p.field if p.file in (file, "") else f"{p.file}: {p.field}" if p.field else p.file
    message = studio_wording(p.message)
    return f"{where}: {message}" if where else message


@dataclass
class ParseError:
    """Input that could not be read at all (bad JSON, no tools in it, an unreadable file)."""

    message: str
    line: int | None = None
    column: int | None = None


def parse_error(exc: HarnessError, file: str) -> ParseError:
    """The first problem of `exc`, its JSON line and column picked out when it has them."""
    first = exc.problems[0] if exc.problems else Problem(file, "", str(exc))
    found = _LINE_COL.fullmatch(first.field or "")
    lines = [problem_text(p, file) for p in exc.problems]
    if found:
        line, col = int(found.group(1)), int(found.group(2))
        return ParseError(
            f"Not valid JSON at line {line}, column {col}: {first.message}", line, col
        )
    return ParseError("; ".join(lines))


def read_text_file(path: Path) -> str:
    """A file's text for a paste box (UTF-8, size-limited); HarnessError naming the file."""
    try:
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise HarnessError(
                [Problem(str(path), "", f"is {size:,} bytes; the limit is {MAX_INPUT_BYTES:,}")]
            )
        data = path.read_bytes()
    except OSError as exc:
        raise HarnessError(
            [Problem(str(path), "", f"cannot read: {exc.strerror or exc}")]
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HarnessError(
            [Problem(str(path), "", f"is not UTF-8 text (byte {exc.start}): a JSON file is")]
        ) from None


def _taken(harness: Harness, attr: str) -> dict[str, str]:
    names = {i.name.casefold(): i.name for i in getattr(harness, attr)}
    if attr in ("tools", "skills"):
        skill_tool = harness.settings.load_skill_tool
        names.setdefault(skill_tool.casefold(), skill_tool)
    return names


def _whole_problems(harness: Harness, attr: str, items: list[Any]) -> list[Problem]:
    """What the whole harness with `items` added would be refused for (model and cross
    checks, as the store and `hat harness validate` check)."""
    doc = HarnessDocument(harness)
    try:
        merged = doc.validated(attr, list(getattr(harness, attr)) + items)
    except HarnessError as exc:
        return exc.problems
    return cross_check(merged)


# ----------------------------------------------------------------------------- tools


@dataclass
class ToolRow:
    name: str
    kind: str
    """"MCP" or "OpenAI"."""
    where: str
    """The entry's dotted place in the input (``tools.3``)."""
    description: str = ""
    tool: Tool | None = None
    problems: list[str] = field(default_factory=list)


@dataclass
class ToolPreview:
    rows: list[ToolRow] = field(default_factory=list)
    error: ParseError | None = None
    problems: list[str] = field(default_factory=list)
    """Problems of the harness as a whole once the tools are added (not of one row)."""

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and bool(self.rows)
            and not self.problems
            and all(r.tool is not None and not r.problems for r in self.rows)
        )

    @property
    def tools(self) -> list[Tool]:
        return [r.tool for r in self.rows if r.tool is not None]

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.rows]


def _entry_kind(entry: Any) -> str:
    return "MCP" if isinstance(entry, dict) and "inputSchema" in entry else "OpenAI"


def _entry_name(entry: Any) -> str:
    if not isinstance(entry, dict):
        return ""
    fn = entry.get("function")
    name = fn.get("name") if isinstance(fn, dict) else entry.get("name")
    return name if isinstance(name, str) else ""


def preview_tools(text: str, harness: Harness, file: str = PASTED) -> ToolPreview:
    """What `hat harness import-tools` would add from `text` to `harness`, tool by tool."""
    if not text.strip():
        return ToolPreview(error=ParseError("Paste an MCP tools/list result or OpenAI tools."))
    try:
        data = json_from_text(text, file)
        entries = tool_entries(data, file)
    except HarnessError as exc:
        return ToolPreview(error=parse_error(exc, file))
    if not entries:
        return ToolPreview(error=ParseError("The input holds no tools (an empty list)."))
    out = ToolPreview()
    taken = _taken(harness, "tools")
    seen: dict[str, str] = {}
    for where, entry in entries:
        row = ToolRow(_entry_name(entry), _entry_kind(entry), where)
        out.rows.append(row)
        if not isinstance(entry, dict):
            row.problems.append(f"{where}: a tool is a JSON object, got {type(entry).__name__}")
            continue
        try:
            (tool,) = tools_from_data(entry, file)
        except HarnessError as exc:
            for p in exc.problems:
                place = ".".join(x for x in (where, p.field) if x)
                message = studio_wording(p.message)
                row.problems.append(f"{place}: {message}" if place else message)
            continue
        row.tool, row.name, row.description = tool, tool.name, tool.description
        name_at = f"{where}.function.name" if "function" in entry else f"{where}.name"
        name_at = name_at.lstrip(".")
        key = tool.name.casefold()
        if key in taken:
            row.problems.append(
                f"{name_at}: the harness already has a tool named {taken[key]!r}"
                if taken[key] != harness.settings.load_skill_tool
                else f"{name_at}: {tool.name!r} is the harness's skill-loading tool"
            )
        elif key in seen:
            row.problems.append(f"{name_at}: {seen[key]} names the same tool")
        seen.setdefault(key, where or "the input")
    if all(r.tool is not None and not r.problems for r in out.rows):
        # the same reading as the command line, over the whole input (it must agree)
        try:
            tools_from_data(data, file)
        except HarnessError as exc:
            out.problems += [problem_text(p, file) for p in exc.problems]
        _place_problems(
            _whole_problems(harness, "tools", out.tools),
            {f"tools/{r.name}.json": r.problems for r in out.rows},
            out.problems,
        )
    return out


def _place_problems(
    problems: list[Problem], by_file: dict[str, list[str]], general: list[str]
) -> None:
    """Each whole-harness problem on the row of the file it names, else with the general
    ones (tools and hooks previews alike)."""
    for p in problems:
        row = by_file.get(p.file)
        if row is not None:
            row.append(problem_text(p, p.file))
        else:
            general.append(problem_text(p))


def tools_snapshot(doc: HarnessDocument, preview: ToolPreview) -> Snapshot:
    """The step adding every previewed tool after the harness's tools."""
    if not preview.ok:
        raise ValueError("the preview has problems; nothing is added")
    return doc.whole("tools", list(doc.harness.tools) + preview.tools)


# ----------------------------------------------------------------------------- skills


@dataclass
class SkillPreview:
    folder: str
    skill: Skill | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.skill is not None and not self.problems

    @property
    def file_count(self) -> int:
        """Files of the folder: SKILL.md and the others."""
        return 1 + len(self.skill.files) if self.skill is not None else 0


def preview_skill(folder: Path, harness: Harness) -> SkillPreview:
    """What `hat harness import-skill FOLDER` would add to `harness`."""
    out = SkillPreview(str(folder))
    try:
        out.skill = read_skill_folder(Path(folder))
    except HarnessError as exc:
        out.problems = [problem_text(p) for p in exc.problems]
        return out
    key = out.skill.name.casefold()
    taken = _taken(harness, "skills")
    if key in taken:
        out.problems.append(f"name: the harness already has a skill named {taken[key]!r}")
        return out
    out.problems += [problem_text(p) for p in _whole_problems(harness, "skills", [out.skill])]
    return out


def skill_snapshot(doc: HarnessDocument, preview: SkillPreview) -> Snapshot:
    if not preview.ok or preview.skill is None:
        raise ValueError("the preview has problems; nothing is added")
    return doc.whole("skills", [*doc.harness.skills, preview.skill])


# ----------------------------------------------------------------------------- hooks


@dataclass
class HookRow:
    name: str
    event: str
    """The Claude Code event (``PreToolUse``)."""
    matcher: str
    command: str
    hook: Hook
    problems: list[str] = field(default_factory=list)


@dataclass
class HookPreview:
    rows: list[HookRow] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: ParseError | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and bool(self.rows)
            and not self.problems
            and not any(r.problems for r in self.rows)
        )

    @property
    def hooks(self) -> list[Hook]:
        return [r.hook for r in self.rows]


def preview_hooks(text: str, harness: Harness, file: str = PASTED) -> HookPreview:
    """What `hat harness import-hooks` would add from a Claude Code settings.json."""
    if not text.strip():
        return HookPreview(error=ParseError("Paste a Claude Code settings.json (its hooks)."))
    try:
        data = json_from_text(text, file)
        found = hooks_from_claude_settings(data, file, tool_names=[t.name for t in harness.tools])
    except HarnessError as exc:
        return HookPreview(error=parse_error(exc, file))
    out = HookPreview(skipped=list(found.skipped), notes=list(found.notes))
    taken = _taken(harness, "hooks")
    for hook in found.hooks:
        origin = claude_origin(hook) or {}
        entry = origin.get("hook") or {}
        row = HookRow(
            hook.name,
            str(origin.get("event", "")),
            hook.matcher,
            str(entry.get("command", "")),
            hook,
        )
        if hook.name.casefold() in taken:
            row.problems.append(
                f"the harness already has a hook named {taken[hook.name.casefold()]!r} "
                "(imported before?)"
            )
        out.rows.append(row)
    if out.rows and not any(r.problems for r in out.rows):
        _place_problems(
            _whole_problems(harness, "hooks", out.hooks),
            {f"hooks/{r.name}.yaml": r.problems for r in out.rows},
            out.problems,
        )
    return out


def hooks_snapshot(doc: HarnessDocument, preview: HookPreview) -> Snapshot:
    if not preview.ok:
        raise ValueError("the preview has problems; nothing is added")
    return doc.whole("hooks", list(doc.harness.hooks) + preview.hooks)


# ----------------------------------------------------------------------------- export

EXPORT_FORMATS = {"mcp": "MCP tools/list", "openai": "OpenAI tools"}


def export_tools_text(harness: Harness, fmt: str) -> str:
    """The harness's enabled tools as `hat harness export-tools --format FMT` writes them."""
    if fmt == "mcp":
        data: Any = mcp_tool_list(harness)
    elif fmt == "openai":
        data = openai_tools(harness)
    else:
        raise ValueError(f"unknown export format {fmt!r} (mcp, openai)")
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def export_file_name(harness: Harness, fmt: str) -> str:
    return f"{harness.name}-tools-{fmt}.json"
