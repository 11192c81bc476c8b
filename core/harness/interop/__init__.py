"""Formats in and out: MCP tool lists, OpenAI tools, agentskills.io skill folders and Claude
Code hook settings, read into harness components and written back.

Every reader here either returns components or raises HarnessError naming the file, the field
(a dotted path such as ``tools.3.inputSchema``) and the cause; nothing is half-read. Adding the
components to a harness folder (`add_to_folder`) validates the whole resulting harness, with
the checks `hat harness validate` and the store make, before it writes a file.

This package is the public entry; one module a format: `mcp` (tools/list entries), `openai`
(function tools), `tools` (reading a tool list of either, or both, and the tool-name rule),
`agentskills` (skill folders), `claude_code` (hooks in settings.json); `common` reads the
JSON files and pasted text they come in, `into_folder` adds what was read to a harness folder.
"""

from core.harness.interop.agentskills import read_skill_folder
from core.harness.interop.claude_code import (
    CLAUDE_DEFAULT_TIMEOUT,
    CLAUDE_EVENTS,
    CLAUDE_TOOL_EVENTS,
    CLAUDE_UNMAPPED,
    MAX_HOOK_TIMEOUT,
    HookImport,
    Skipped,
    claude_origin,
    claude_settings,
    hooks_from_claude_settings,
    read_claude_hooks,
)
from core.harness.interop.common import MAX_INPUT_BYTES, json_from_text, read_json_file
from core.harness.interop.into_folder import Added, add_to_folder
from core.harness.interop.mcp import (
    MCP_LIST_KEYS,
    MCP_NAME_RE,
    MCP_TOOL_KEYS,
    mcp_tool,
    mcp_tool_list,
)
from core.harness.interop.openai import (
    OPENAI_FLAT_KEYS,
    OPENAI_FUNCTION_KEYS,
    OPENAI_TOOL_KEYS,
    openai_losses,
    openai_tool,
    openai_tools,
)
from core.harness.interop.tools import (
    MODEL_NAME_RULE,
    read_tools,
    tool_entries,
    tool_name_problem,
    tools_from_data,
)

__all__ = [
    "CLAUDE_DEFAULT_TIMEOUT",
    "CLAUDE_EVENTS",
    "CLAUDE_TOOL_EVENTS",
    "CLAUDE_UNMAPPED",
    "MAX_HOOK_TIMEOUT",
    "MAX_INPUT_BYTES",
    "MCP_LIST_KEYS",
    "MCP_NAME_RE",
    "MCP_TOOL_KEYS",
    "MODEL_NAME_RULE",
    "OPENAI_FLAT_KEYS",
    "OPENAI_FUNCTION_KEYS",
    "OPENAI_TOOL_KEYS",
    "Added",
    "HookImport",
    "Skipped",
    "add_to_folder",
    "claude_origin",
    "claude_settings",
    "hooks_from_claude_settings",
    "json_from_text",
    "mcp_tool",
    "mcp_tool_list",
    "openai_losses",
    "openai_tool",
    "openai_tools",
    "read_claude_hooks",
    "read_json_file",
    "read_skill_folder",
    "read_tools",
    "tool_entries",
    "tool_name_problem",
    "tools_from_data",
]
