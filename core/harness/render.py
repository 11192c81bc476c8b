"""Rendering a harness into what the model sees: the system prompt, its tool block and the
tool specs. What the model writes back is read by core/harness/tool_calls.py, whose
`<tool_call>{json}</tool_call>` is the syntax the tool block here asks for. Chat, evaluation,
data generation and training all go through these functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from string import Template
from typing import Any

from core.harness.errors import HarnessError, Problem
from core.harness.models import (
    Harness,
    PromptSection,
    PromptStyle,
    SectionKind,
    ToolProtocol,
)

BUILTIN_VARIABLES = ("load_skill_tool",)


def variables(harness: Harness) -> dict[str, str]:
    values = {"load_skill_tool": harness.settings.load_skill_tool}
    values.update(harness.prompt.variables)
    return values


SKILL_FILE_ARGUMENT = "file"
"""The loader's argument that reads one of a skill's own files (references/, scripts/, ...),
offered only when an enabled skill has files: the agentskills.io spec's progressive
disclosure (SKILL.md first, its files when the instructions point at them)."""


LOADER_DESCRIPTION = "Load the full instructions of a skill from the skill index."
"""How the built-in loader's spec starts; a tool list names its loader by this (`skill_loader`)."""

TOOL_CALL_SYNTAX = (
    '<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>'
)
"""The call syntax both prompts ask for; core/harness/tool_calls.py reads it back."""


def load_skill_spec(harness: Harness) -> dict[str, Any]:
    """The built-in skill loader, shaped like any other function tool."""
    names = [s.name for s in harness.active_skills]
    properties: dict[str, Any] = {"name": {"type": "string", "enum": names}}
    description = LOADER_DESCRIPTION
    if any(s.files for s in harness.active_skills):
        properties[SKILL_FILE_ARGUMENT] = {
            "type": "string",
            "description": "One of the skill's files to read (a path from its file list); "
            "leave out to load the instructions.",
        }
        description += " With file, read one of the skill's own files."
    return {
        "type": "function",
        "function": {
            "name": harness.settings.load_skill_tool,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": ["name"]},
        },
    }


def tool_specs(harness: Harness) -> list[dict[str, Any]]:
    """OpenAI tool list: the skill loader first (when there are skills), then the harness tools."""
    specs = [load_skill_spec(harness)] if harness.active_skills else []
    specs.extend(t.to_openai() for t in harness.active_tools)
    return specs


def skill_index(harness: Harness) -> str:
    return "\n".join(f"- {s.name} ({s.kind.value}): {s.description}" for s in harness.active_skills)


AUDIENCE_VARIABLE = "audience"
"""The prompt variable naming who the final reply is for ("viewer" in the live room); without
it the tool block says "user". The product renders no domain word a harness did not give it,
so a support desk's training rows never speak of viewers."""


def tool_block(harness: Harness) -> str:
    lines = [json.dumps(spec["function"], ensure_ascii=False) for spec in tool_specs(harness)]
    audience = harness.prompt.variables.get(AUDIENCE_VARIABLE, "").strip() or "user"
    return (
        "\n".join(lines)
        + "\n\nTo call a tool, write exactly:\n"
        + TOOL_CALL_SYNTAX
        + "\n"
        + "You may write several tool calls in one message. "
        + f"Write the final reply to the {audience} as plain text with no tool call."
    )


def _section_body(harness: Harness, section: PromptSection, values: dict[str, str]) -> str:
    try:
        intro = Template(section.template).substitute(values).strip()
    except KeyError as exc:
        message = f"undefined variable ${{{exc.args[0]}}}"
        raise HarnessError([Problem(f"prompt/{section.id}.md", "template", message)]) from None
    except ValueError as exc:
        raise HarnessError([Problem(f"prompt/{section.id}.md", "template", str(exc))]) from None
    if section.kind is SectionKind.SKILL_INDEX:
        generated = skill_index(harness)
    elif section.kind is SectionKind.TOOL_BLOCK:
        native = harness.settings.tool_protocol is ToolProtocol.NATIVE
        generated = "" if native else tool_block(harness)
    else:
        generated = ""
    return "\n\n".join(part for part in (intro, generated) if part)


def _tag(title: str) -> str:
    """An XML element name for a section title (ASCII letters, digits, underscores)."""
    tag = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_") or "section"
    return f"section_{tag}" if tag[0].isdigit() else tag


def render_system_prompt(harness: Harness) -> str:
    """The system prompt: every enabled section, in order, in the pipeline's style.

    Raise HarnessError when a template names an undefined variable (import checks this, but a
    harness built in code may skip import).
    """
    values = variables(harness)
    # A section with nothing to say (e.g. the tool block under the native protocol, where the
    # API carries the tools) is left out rather than rendered as an empty heading.
    bodies = [
        (s.title, _section_body(harness, s, values)) for s in harness.prompt.sections if s.enabled
    ]
    parts = [(title, body) for title, body in bodies if body]
    style = harness.prompt.style
    if style is PromptStyle.MARKDOWN:
        return "\n\n".join(f"## {title}\n\n{body}" for title, body in parts)
    if style is PromptStyle.XML:
        return "\n\n".join(f"<{_tag(t)}>\n{body}\n</{_tag(t)}>" for t, body in parts)
    if style is PromptStyle.PLAIN:
        return "\n\n".join(f"{title.upper()}:\n{body}" for title, body in parts)
    # JSON: an object keyed by title; repeated titles get " (2)", " (3)"... so none is lost
    data: dict[str, str] = {}
    for title, body in parts:
        key, n = title, 1
        while key in data:
            n += 1
            key = f"{title} ({n})"
        data[key] = body
    return json.dumps(data, indent=2, ensure_ascii=False)


# ----------------------------------------------------------------------------- compact prompt

PERSONA = re.compile(r"\bYou are\b[^.!?\n]*[.!?]")


def persona_line(system_prompt: str) -> str | None:
    """The prompt's first "You are ..." sentence: the compact prompt says who the agent is in
    the harness's own words, never in a domain's the harness did not write."""
    found = PERSONA.search(system_prompt)
    return found.group(0) if found else None


def skill_loader(specs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The built-in loader's function in a rendered tool list (`tool_specs`), known by the
    description `load_skill_spec` gives it: a row carries its tools, not its harness."""
    for spec in specs:
        fn = spec.get("function", spec) if isinstance(spec, dict) else {}
        if isinstance(fn, dict) and str(fn.get("description", "")).startswith(LOADER_DESCRIPTION):
            return fn
    return None


def compact_prompt(specs: Sequence[dict[str, Any]], *, persona: str | None) -> str:
    """A short system prompt (module doc of core/train/data.py: CPU experiments only): who the
    agent is, the skills, each tool with its parameters, and the call syntax of `tool_block`."""
    lines = [persona] if persona else []
    loader = skill_loader(specs)
    calls = []
    for spec in specs:
        fn = spec.get("function", spec) if isinstance(spec, dict) else {}
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str):
            continue
        params = fn.get("parameters", {}).get("properties", {})
        calls.append(f"{name}({', '.join(params)})")
    if loader is not None:
        enum = (loader.get("parameters", {}).get("properties", {}).get("name") or {}).get("enum")
        skills = [str(s) for s in enum] if isinstance(enum, list) else []
        if skills:
            lines.append(
                f"Skills (load with {loader['name']} before replying): {', '.join(skills)}."
            )
    if calls:
        lines.append("Tools: " + "; ".join(calls) + ".")
    lines.append(f"Call tools as {TOOL_CALL_SYNTAX}; reply in plain text.")
    return "\n".join(lines)


def render_compact_system_prompt(harness: Harness) -> str:
    """`compact_prompt` of a harness: what a compact SFT row of it trains on."""
    return compact_prompt(tool_specs(harness), persona=persona_line(render_system_prompt(harness)))
