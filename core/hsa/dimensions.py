"""HSA's five dimensions and what the studio and the reports call them.

Apart from the transforms (core/hsa/transform.py) and free of their imports, so a page can
label its dimension buttons without loading the harness models at start.
"""

from __future__ import annotations

from enum import StrEnum


class Dimension(StrEnum):
    SKILL_IDS = "skill_ids"
    SKILL_CONTENT = "skill_content"
    TOOL_SCHEMAS = "tool_schemas"
    PROMPT = "prompt"
    HOOKS = "hooks"


ALL = "all"
"""An HV-QA variant that changed every dimension at once (the `all` policy)."""

DIMENSION_LABELS: dict[str, str] = {
    Dimension.SKILL_IDS: "Skill names",
    Dimension.SKILL_CONTENT: "Skill content",
    Dimension.TOOL_SCHEMAS: "Tool schemas",
    Dimension.PROMPT: "Prompt structure",
    Dimension.HOOKS: "Hook behaviour",
    ALL: "All dimensions",
}
"""One label per dimension (and for `all`), by the dimension's name."""
