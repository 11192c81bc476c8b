"""The harness folder format: harness.yaml, prompt/*.md, skills/<name>/SKILL.md (and any other
files of the skill folder: scripts/, references/, assets/, LICENSE.txt, ... kept byte for byte),
tools/*.json, hooks/*.yaml (+ .py for Python hooks), and mcp.json when the harness declares MCP
servers (the Claude Code / Claude Desktop `mcpServers` format).

Export writes one canonical text for each component, so export -> import -> export is
byte-identical and a folder under version control diffs cleanly. Import collects every problem
it finds (file + field) before failing, so a user fixes a broken folder in one pass.

Import is strict on purpose: unknown fields, duplicate YAML/JSON keys and files the format has
no place for (they would silently vanish on the next export) are problems, not warnings. For any
file contents, import either returns a Harness or raises HarnessError; no other exception
escapes (tests/test_harness_properties.py fuzzes this).

This package is the format's public entry; each job has a module of its own: `canonical`
(the text of every file), `safe_read` (reading a folder off disk without trusting it),
`safe_write` (one file written whole, never through a link), `export` (writing a folder),
`parse` (strict YAML/JSON with problems collected), `components` (each component from its
files), `load` (a whole harness, import, the round-trip check) and `python_roots` (where
`python:` bindings are found).
"""

from core.harness.folder.canonical import (
    BINARY_DIR,
    EXECUTABLE_FILE,
    HARNESS_FILE,
    MCP_FILE,
    dump_json,
    dump_yaml,
    executable_paths,
    folder_blobs,
    folder_files,
    hook_text,
    manifest_data,
    mcp_server_data,
    mcp_text,
    skill_file_entries,
    skill_text,
    tool_text,
)
from core.harness.folder.export import (
    EXPORT_MANIFEST,
    export_folder,
    read_export_manifest,
    update_export_manifest,
)
from core.harness.folder.load import harness_from_files, import_folder, round_trip_problems
from core.harness.folder.parse import MAX_DEPTH, MAX_VALUES, data_shape_problem
from core.harness.folder.python_roots import (
    PYTHON_ROOTS,
    PYTHON_ROOTS_FILE,
    add_python_roots,
    remember_python_roots,
    remembered_python_roots,
)
from core.harness.folder.safe_read import (
    MAX_FOLDER_BYTES,
    MAX_FOLDER_FILE_BYTES,
    read_files,
    scan_folder,
)

__all__ = [
    "BINARY_DIR",
    "EXECUTABLE_FILE",
    "EXPORT_MANIFEST",
    "HARNESS_FILE",
    "MAX_DEPTH",
    "MAX_FOLDER_BYTES",
    "MAX_FOLDER_FILE_BYTES",
    "MAX_VALUES",
    "MCP_FILE",
    "PYTHON_ROOTS",
    "PYTHON_ROOTS_FILE",
    "add_python_roots",
    "data_shape_problem",
    "dump_json",
    "dump_yaml",
    "executable_paths",
    "export_folder",
    "folder_blobs",
    "folder_files",
    "harness_from_files",
    "hook_text",
    "import_folder",
    "manifest_data",
    "mcp_server_data",
    "mcp_text",
    "read_export_manifest",
    "read_files",
    "remember_python_roots",
    "remembered_python_roots",
    "round_trip_problems",
    "scan_folder",
    "skill_file_entries",
    "skill_text",
    "tool_text",
    "update_export_manifest",
]
