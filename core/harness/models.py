"""Pydantic models of a harness: skills, tools, hooks, prompt pipeline and loop settings.

The models are the single source of truth for every other layer: the folder format, the store,
the agent loop and the HSA transforms all read and write these objects, never raw dicts, so a
rule checked here holds everywhere.
"""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.harness.errors import FieldValueError
from core.harness.hook_params import HookKind as HookKind
from core.harness.hook_params import check_hook_params

SKILL_NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


MAX_HARNESS_NAME = 200
# bidirectional overrides and isolates reorder what a terminal shows ("Trojan Source")
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def display_name_problem(value: str) -> str | None:
    """Why `value` cannot be a name shown on one line (None when it can): names are printed
    by every command and listed in the studio, so they hold no control characters, line
    breaks or bidi overrides, are not blank and are at most MAX_HARNESS_NAME characters."""
    if not value.strip():
        return "must not be empty"
    if len(value) > MAX_HARNESS_NAME:
        return f"is {len(value)} characters long (at most {MAX_HARNESS_NAME})"
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp", "Cs") or ch in _BIDI_CONTROLS:
            return f"holds the control character U+{ord(ch):04X} (names are one line of text)"
    return None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, validate_assignment=True)


RESERVED_SKILL_METADATA = frozenset({"kind", "enabled"})


class SkillKind(StrEnum):
    """Reply skills must be loaded before a final reply; strategy skills are optional."""

    REPLY = "reply"
    STRATEGY = "strategy"


SKILL_DESCRIPTION_SPEC = 1024
"""The agentskills.io spec's limit on a skill's description. Published skills pass it (one of
17 tried was 1,068 characters), so past it is a warning (`spec_warnings`), not a wall."""
SKILL_DESCRIPTION_MAX = 8192
"""What a skill's description may hold at most: it is read into every prompt's skill index."""
MAX_SKILL_FILE_BYTES = 10 * 1024 * 1024
"""The largest extra file a skill folder may hold (a font, a template, a PDF)."""
MAX_SKILL_FILES_BYTES = 50 * 1024 * 1024
"""All extra files of one skill together."""
MAX_SKILL_FILES = 1000
MAX_SKILL_FILE_DEPTH = 8
"""How many folders deep inside the skill folder an extra file may sit."""
_SKILL_PATH_PART_RE = re.compile(r"^[^\x00-\x1f\x7f/\\:*?\"<>|]{1,255}$")


def skill_file_problem(rel: str) -> str | None:
    """Why `rel` cannot be an extra file of a skill folder (None when it can): a relative
    POSIX path without empty, `.`/`..` or hidden parts, characters Windows or a terminal
    cannot take, or more than MAX_SKILL_FILE_DEPTH folders; SKILL.md itself is the skill."""
    parts = rel.split("/")
    if rel == "SKILL.md":
        return "is the skill itself, not an extra file"
    if len(parts) > MAX_SKILL_FILE_DEPTH + 1:
        return f"is nested more than {MAX_SKILL_FILE_DEPTH} folders deep"
    for part in parts:
        if not part:
            return "has an empty path part (a leading, trailing or doubled '/')"
        if part.startswith("."):
            return "has a '.', '..' or hidden path part (hidden files are not imported)"
        if part != part.strip() or part.endswith("."):
            return f"part {part!r} starts or ends with a space or ends with '.'"
        if not _SKILL_PATH_PART_RE.match(part) or any(c in _BIDI_CONTROLS for c in part):
            return (
                f"part {part!r} holds a character file names cannot portably hold "
                '(control characters, \\ : * ? " < > |)'
            )
    return None


class Skill(_Model):
    # extra files are bytes: JSON dumps (the store's comparisons) carry them as base64
    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, ser_json_bytes="base64", val_json_bytes="base64"
    )

    name: str = Field(description="Skill identifier (lowercase, digits, hyphens; 1-64 chars).")
    description: str = Field(description="What the skill does and when to load it.")
    body: str = Field(default="", description="Markdown loaded through the load_skill tool.")
    kind: SkillKind = SkillKind.REPLY
    enabled: bool = True
    metadata: dict[str, str] = Field(
        default_factory=dict,
        description="Free-form string pairs kept in the front matter's metadata (besides kind).",
    )
    license: str | None = Field(default=None, description="agentskills.io `license` field.")
    compatibility: str | None = Field(
        default=None, description="agentskills.io `compatibility` field (environment needs)."
    )
    allowed_tools: str | None = Field(
        default=None, description="agentskills.io `allowed-tools` field (space-separated)."
    )
    allowed_tools_list: bool = Field(
        default=False,
        description="The front matter wrote allowed-tools as a YAML list; it is written back so "
        "(one entry per space-separated name).",
    )
    files: dict[str, bytes] = Field(
        default_factory=dict,
        description=(
            "The skill folder's other files (scripts/, references/, assets/, LICENSE.txt, ...): "
            "path relative to the skill folder -> exact bytes. Stored with the version, "
            "exported byte for byte."
        ),
    )
    executable: list[str] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,
        description="Files of `files` that carry the executable bit (a published skill's "
        "scripts/): kept through the store and set again on export.",
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not SKILL_NAME_RE.match(value) or "--" in value:
            raise ValueError(
                f"skill name {value!r} must be 1-64 characters of lowercase letters, digits and "
                "single hyphens, not starting or ending with a hyphen"
            )
        return value

    @field_validator("description")
    @classmethod
    def _check_description(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("skill description must not be empty")
        if len(value) > SKILL_DESCRIPTION_MAX:
            raise ValueError(
                f"skill description is {len(value):,} characters; the most it may hold is "
                f"{SKILL_DESCRIPTION_MAX:,} (the agentskills.io spec says "
                f"{SKILL_DESCRIPTION_SPEC})"
            )
        return value

    @field_validator("executable")
    @classmethod
    def _sorted_executable(cls, value: list[str]) -> list[str]:
        return sorted(set(value))

    @model_validator(mode="after")
    def _check_executable(self) -> Skill:
        unknown = sorted(set(self.executable) - set(self.files))
        if unknown:
            raise ValueError(f"executable names files the skill does not have: {unknown}")
        return self

    @field_validator("metadata")
    @classmethod
    def _check_metadata(cls, value: dict[str, str]) -> dict[str, str]:
        reserved = sorted(set(value) & RESERVED_SKILL_METADATA)
        if reserved:
            raise ValueError(
                f"metadata key(s) {', '.join(reserved)} are reserved: use the skill's own "
                "kind/enabled fields"
            )
        return value

    @field_validator("files")
    @classmethod
    def _check_files(cls, value: dict[str, bytes]) -> dict[str, bytes]:
        if len(value) > MAX_SKILL_FILES:
            raise ValueError(f"{len(value)} extra files; a skill holds at most {MAX_SKILL_FILES}")
        seen: dict[str, str] = {}
        total = 0
        for rel, data in value.items():
            problem = skill_file_problem(rel)
            if problem is not None:
                raise ValueError(f"file {rel!r} {problem}")
            if len(data) > MAX_SKILL_FILE_BYTES:
                raise ValueError(
                    f"file {rel!r} is {len(data):,} bytes (at most {MAX_SKILL_FILE_BYTES:,})"
                )
            total += len(data)
            other = seen.get(rel.casefold())
            if other is not None:
                raise ValueError(
                    f"files {other!r} and {rel!r} differ only in case; they would collide on "
                    "case-insensitive file systems"
                )
            seen[rel.casefold()] = rel
        if total > MAX_SKILL_FILES_BYTES:
            raise ValueError(
                f"extra files total {total:,} bytes (at most {MAX_SKILL_FILES_BYTES:,} a skill)"
            )
        names = set(value)
        for rel in value:  # a file where another one needs a folder (a and a/b)
            parts = rel.split("/")
            for i in range(1, len(parts)):
                if "/".join(parts[:i]) in names:
                    raise ValueError(f"file {'/'.join(parts[:i])!r} is also a folder of {rel!r}")
        return dict(sorted(value.items()))

    @field_validator("compatibility")
    @classmethod
    def _check_compatibility(cls, value: str | None) -> str | None:
        if value is not None and len(value) > 500:
            raise ValueError(f"compatibility is {len(value)} characters; the limit is 500")
        return value

    @model_validator(mode="after")
    def _check_allowed_tools_list(self) -> Skill:
        value = self.allowed_tools
        if self.allowed_tools_list and value is not None and value != " ".join(value.split()):
            raise FieldValueError(
                "allowed_tools",
                "written as a list, allowed-tools holds names separated by single spaces",
            )
        return self


MCP_EXTRA_TOOL_KEYS = ("icons", "execution", "_meta")
"""MCP tool fields the loop does not use but keeps, so an MCP list exports back as it came."""


TRUSTED_BINDING_PREFIXES = ("python:", "mcp:", "http://", "https://")
"""Binding forms that run code on this machine (a module's function, an MCP server's
command) or send the model's arguments over the network from it (an HTTP endpoint): a
harness imported from elsewhere runs them only once trusted."""


def binding_needs_trust(binding: str) -> bool:
    """Whether a tool with this binding runs only when trusted (see Tool.trusted)."""
    return binding.startswith(TRUSTED_BINDING_PREFIXES)


class Tool(_Model):
    """An OpenAI-style function tool bound to an implementation by name."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    binding: str = Field(description="Name of the implementation the runtime calls.")
    annotations: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True
    binding_args: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Parameter name the model sees -> name the binding takes. Lets a harness rename a "
            "parameter (an operator's edit, or HSA) while the implementation keeps its own."
        ),
    )
    title: str | None = Field(default=None, description="MCP `title`: a display name.")
    output_schema: dict[str, Any] | None = Field(
        default=None, description="MCP `outputSchema`: JSON Schema of structured results."
    )
    strict: bool | None = Field(
        default=None,
        strict=True,  # "yes" is not true: a value that would change on export is refused
        description='OpenAI `"strict"` (structured outputs); kept and exported.',
    )
    mcp: dict[str, Any] = Field(
        default_factory=dict,
        description="Other MCP tool fields kept as they came (icons, _meta, execution).",
    )
    trusted: bool = Field(
        default=True,
        description=(
            "Whether a `python:`, `mcp:` or `http(s)://` binding may run: such a binding runs "
            "code on this machine or sends data from it, so a folder imported without trust "
            "marks them False (never written into the folder; set at import, like "
            "Hook.trusted)."
        ),
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not TOOL_NAME_RE.match(value):
            raise ValueError(f"tool name {value!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
        return value

    @model_validator(mode="after")
    def _check_binding_args(self) -> Tool:
        props = self.parameters.get("properties", {})
        for name in self.binding_args:
            if name not in props:
                raise ValueError(f"binding_args names {name!r}, which is not a parameter")
        targets = list(self.binding_args.values())
        if len(set(targets)) != len(targets):
            raise ValueError("binding_args maps two parameters to the same binding argument")
        return self

    def binding_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """What the binding receives: schema defaults filled in for omitted parameters (the
        schema's default is the tool's behaviour), then names translated by binding_args."""
        filled = dict(arguments)
        for name, schema in self.parameters.get("properties", {}).items():
            if name not in filled and isinstance(schema, dict) and "default" in schema:
                filled[name] = schema["default"]
        return {self.binding_args.get(k, k): v for k, v in filled.items()}

    @field_validator("parameters")
    @classmethod
    def _check_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        from core.harness.schema import check_parameters_schema  # heavy: jsonschema, regex

        check_parameters_schema(value)
        return value

    @field_validator("output_schema")
    @classmethod
    def _check_output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        from core.harness.schema import check_json_schema  # heavy: jsonschema, regex

        if value.get("type") != "object":
            raise ValueError('an output schema describes a JSON object: "type" must be "object"')
        check_json_schema(value)
        return value

    @field_validator("mcp")
    @classmethod
    def _check_mcp(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - set(MCP_EXTRA_TOOL_KEYS))
        if unknown:
            raise ValueError(
                f"unknown MCP field(s) {', '.join(unknown)} "
                f"(kept: {', '.join(MCP_EXTRA_TOOL_KEYS)})"
            )
        return value

    def to_openai(self) -> dict[str, Any]:
        """The function-calling shape sent to OpenAI-compatible servers."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class HookEvent(StrEnum):
    ON_INPUT = "on_input"
    BEFORE_TOOL = "before_tool"
    AFTER_TOOL = "after_tool"
    BEFORE_REPLY = "before_reply"


HOOK_EVENTS_BY_KIND: dict[HookKind, frozenset[HookEvent]] = {
    HookKind.REQUIRE_REPLY_SKILL: frozenset({HookEvent.BEFORE_REPLY}),
    HookKind.VALIDATE_TOOL_ARGS: frozenset({HookEvent.BEFORE_TOOL}),
    HookKind.FORBIDDEN_CLAIMS: frozenset({HookEvent.BEFORE_REPLY, HookEvent.ON_INPUT}),
    HookKind.FACT_CHECK: frozenset({HookEvent.BEFORE_REPLY}),
    HookKind.REPLY_FORMAT: frozenset({HookEvent.BEFORE_REPLY}),
    HookKind.PYTHON: frozenset(HookEvent),
}


LITERAL_ALTERNATION = re.compile(r"[A-Za-z0-9_-]+(?:\|[A-Za-z0-9_-]+)*")
"""A matcher that lists tool names (`check_stock|list_coupons`): it matches exactly those."""


@lru_cache(maxsize=4096)
def _compiled_matcher(pattern: str) -> frozenset[str] | None:
    if LITERAL_ALTERNATION.fullmatch(pattern):
        return frozenset(pattern.split("|"))
    return None


def matcher_matches(pattern: str, tool_name: str) -> bool:
    """Whether a hook matcher (a regex over tool names, fully matched) matches `tool_name`.
    A matcher that lists names is a set lookup: HSA renames tools at random, so nearly
    every variant's matcher is a new string, and compiling each as a regex would cost far
    more than the check (the `re` module's own cache holds only 512 patterns). Any other
    matcher runs with a time limit and raises `PatternTimeout` past it."""
    found = _compiled_matcher(pattern)
    if found is not None:
        return tool_name in found
    from core.harness.patterns import MATCHER_TIMEOUT_S, Deadline, TimedPattern  # heavy: regex

    timed = TimedPattern(pattern, Deadline(MATCHER_TIMEOUT_S))
    return timed.fullmatch(tool_name) is not None


class Hook(_Model):
    name: str
    event: HookEvent
    kind: HookKind
    matcher: str = Field(default="*", description="'*' or a regex over tool names (tool events).")
    params: dict[str, Any] = Field(default_factory=dict)
    reminder: str = Field(
        default="",
        description="Template shown to the model on block; ${reason} is the check's reason.",
    )
    timeout: float = Field(default=5.0, gt=0, le=300)
    enabled: bool = True
    task_critical: bool = Field(
        default=True, description="False for hooks HSA may switch off without changing the task."
    )
    source: str | None = Field(default=None, description="Python source for kind=python.")
    trusted: bool = Field(
        default=True, description="Python hooks imported from elsewhere run only once trusted."
    )

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not IDENT_RE.match(value):
            raise ValueError(f"hook name {value!r} must be an identifier (letters, digits, _ -)")
        return value

    @field_validator("matcher")
    @classmethod
    def _check_matcher(cls, value: str) -> str:
        if value != "*":
            from core.harness.patterns import check_pattern  # heavy: regex

            try:
                check_pattern(value)
            except ValueError as exc:
                raise ValueError(str(exc).replace("pattern", "matcher", 1)) from None
        return value

    @model_validator(mode="after")
    def _check_kind(self) -> Hook:
        allowed = HOOK_EVENTS_BY_KIND[self.kind]
        if self.event not in allowed:
            names = ", ".join(sorted(e.value for e in allowed))
            raise FieldValueError(
                "event",
                f"hook kind {self.kind.value} runs on {names}, not on {self.event.value}",
            )
        if self.kind is HookKind.PYTHON and not (self.source and self.source.strip()):
            raise FieldValueError("source", "a python hook needs its source code")
        if self.kind is not HookKind.PYTHON and self.source is not None:
            raise FieldValueError("source", f"hook kind {self.kind.value} takes no python source")
        check_hook_params(self.kind, self.params)
        return self

    def matches(self, tool_name: str | None) -> bool:
        """Whether this hook applies to `tool_name`; a matcher that runs past its time limit
        matches nothing (import reports it for the harness's own tool names)."""
        if self.matcher == "*" or tool_name is None:
            return True
        from core.harness.patterns import PatternTimeout  # heavy: regex

        try:
            return matcher_matches(self.matcher, tool_name)
        except PatternTimeout:
            return False


class PromptStyle(StrEnum):
    MARKDOWN = "markdown"
    XML = "xml"
    PLAIN = "plain"
    JSON = "json"


class SectionKind(StrEnum):
    """`text` sections come from templates; the other two are generated from the harness."""

    TEXT = "text"
    SKILL_INDEX = "skill_index"
    TOOL_BLOCK = "tool_block"


class PromptSection(_Model):
    id: str
    title: str
    kind: SectionKind = SectionKind.TEXT
    template: str = ""
    enabled: bool = True

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not IDENT_RE.match(value):
            raise ValueError(f"section id {value!r} must be an identifier (letters, digits, _ -)")
        return value


class PromptPipeline(_Model):
    style: PromptStyle = PromptStyle.MARKDOWN
    variables: dict[str, str] = Field(default_factory=dict)
    sections: list[PromptSection] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_sections(self) -> PromptPipeline:
        _unique("section", [s.id for s in self.sections], "id")
        return self


class ToolProtocol(StrEnum):
    """`native`: the chat template renders tools; `prompt`: the harness renders and parses them."""

    NATIVE = "native"
    PROMPT = "prompt"


class ReminderRole(StrEnum):
    USER = "user"
    SYSTEM = "system"
    TOOL = "tool"


class Settings(_Model):
    max_turns: int = Field(default=8, ge=1, le=64, description="Model calls per agent request.")
    retry_budget: int = Field(default=2, ge=0, le=16, description="Hook blocks allowed.")
    tool_protocol: ToolProtocol = ToolProtocol.PROMPT
    load_skill_tool: str = Field(default="load_skill", description="Built-in skill loader name.")
    reminder_role: ReminderRole = ReminderRole.USER
    reminder_format: str = Field(
        default="[Reminder] ${reminder}",
        description="Wrapper around hook reminders; ${reminder} is the hook's message.",
    )
    allow_private_http: bool = Field(
        default=False,
        strict=True,  # "yes" is not true: the opt-in is spelled out
        description="HTTP bindings may call private and loopback addresses (10.0.0.0/8, "
        "192.168.0.0/16, 127.0.0.1, ...), e.g. a service on this machine or the LAN. Link-local "
        "addresses (169.254.169.254, cloud metadata) stay refused. Written only when true.",
    )

    @field_validator("load_skill_tool")
    @classmethod
    def _check_loader(cls, value: str) -> str:
        if not TOOL_NAME_RE.match(value):
            raise ValueError(f"load_skill_tool {value!r} must be a valid tool name")
        return value

    @field_validator("reminder_format")
    @classmethod
    def _check_reminder_format(cls, value: str) -> str:
        if "${reminder}" not in value:
            raise ValueError("reminder_format must contain ${reminder}")
        return value


MCP_SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""An MCP server's name: one path part of a `mcp:<server>/<tool>` binding (no `/`)."""


class McpServer(_Model):
    """An MCP server the harness's `mcp:<server>/<tool>` bindings call, started over stdio.

    The fields are those of a Claude Code / Claude Desktop `mcpServers` entry, so a harness's
    mcp.json is the file those clients read."""

    command: str = Field(
        description="Executable that starts the server (a name on PATH or a path)."
    )
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Variables the server gets on top of the scrubbed environment hooks get.",
    )
    cwd: str | None = Field(default=None, description="Working folder of the server process.")

    @field_validator("command")
    @classmethod
    def _check_command(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an MCP server needs a command")
        if "\x00" in value:
            raise ValueError("the command holds a NUL character")
        return value


class Harness(_Model):
    name: str
    description: str = ""
    settings: Settings = Field(default_factory=Settings)
    prompt: PromptPipeline = Field(default_factory=PromptPipeline)
    skills: list[Skill] = Field(default_factory=list)
    tools: list[Tool] = Field(default_factory=list)
    hooks: list[Hook] = Field(default_factory=list)
    mcp_servers: dict[str, McpServer] = Field(
        default_factory=dict,
        description="MCP servers by name, for `mcp:<server>/<tool>` bindings (mcp.json).",
    )

    @field_validator("mcp_servers")
    @classmethod
    def _check_servers(cls, value: dict[str, McpServer]) -> dict[str, McpServer]:
        for name in value:
            if not MCP_SERVER_NAME_RE.match(name):
                raise ValueError(
                    f"MCP server name {name!r} must be 1-64 characters of letters, digits, "
                    "'_', '.' and '-'"
                )
        return dict(sorted(value.items()))

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        problem = display_name_problem(value)
        if problem is not None:
            raise ValueError(f"harness name {value!r} {problem}")
        return value

    @model_validator(mode="after")
    def _check_unique(self) -> Harness:
        _unique("skill", [s.name for s in self.skills])
        _unique("tool", [t.name for t in self.tools])
        _unique("hook", [h.name for h in self.hooks])
        loader = self.settings.load_skill_tool
        if any(t.name == loader for t in self.tools):
            raise FieldValueError(
                "settings.load_skill_tool",
                f"tool {loader!r} clashes with the built-in skill loader name",
            )
        return self

    # Lookups used by the runtime, graders and transforms.
    def skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name and s.enabled), None)

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name and t.enabled), None)

    @property
    def active_skills(self) -> list[Skill]:
        return [s for s in self.skills if s.enabled]

    @property
    def active_tools(self) -> list[Tool]:
        return [t for t in self.tools if t.enabled]

    @property
    def active_hooks(self) -> list[Hook]:
        return [h for h in self.hooks if h.enabled]


def _unique(kind: str, names: list[str], what: str = "name") -> None:
    """Names must be unique, also ignoring case: each one is a file name in the folder format,
    and macOS and Windows file systems do not tell `Search.json` from `search.json`."""
    seen: dict[str, str] = {}
    for name in names:
        other = seen.get(name.casefold())
        if other == name:
            raise FieldValueError(f"{kind}s", f"duplicate {kind} {what} {name!r}")
        if other is not None:
            raise FieldValueError(
                f"{kind}s",
                f"{kind} {what}s {other!r} and {name!r} differ only in case; their files would "
                "collide on case-insensitive file systems",
            )
        seen[name.casefold()] = name
