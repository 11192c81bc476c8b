"""Harness domain: models, folder format, validation and rendering."""

from core.harness.errors import HarnessError, Problem
from core.harness.folder import export_folder, folder_files, import_folder
from core.harness.models import (
    Harness,
    Hook,
    HookEvent,
    HookKind,
    McpServer,
    PromptPipeline,
    PromptSection,
    PromptStyle,
    SectionKind,
    Settings,
    Skill,
    SkillKind,
    Tool,
    ToolProtocol,
)
from core.harness.render import render_system_prompt, tool_specs
from core.harness.tool_calls import parse_tool_calls

__all__ = [
    "Harness",
    "HarnessError",
    "Hook",
    "HookEvent",
    "HookKind",
    "McpServer",
    "Problem",
    "PromptPipeline",
    "PromptSection",
    "PromptStyle",
    "SectionKind",
    "Settings",
    "Skill",
    "SkillKind",
    "Tool",
    "ToolProtocol",
    "export_folder",
    "folder_files",
    "import_folder",
    "parse_tool_calls",
    "render_system_prompt",
    "tool_specs",
]
