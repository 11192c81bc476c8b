"""What a harness variant changed, as data a CLI or the studio can show.

`component_diffs(original, variant)` compares the two harnesses file by file in the canonical
folder format (`harness.yaml`, prompt templates, each skill, tool and hook) plus the rendered
system prompt, so a change is shown where an author would make it. `trajectory_lines` writes a
trajectory as one line per model output (tool calls as JSON), so the gold before and after the
remap diff line by line. Both diffs come as unified-diff lines or as side-by-side rows
(`side_by_side`); rendering (colour, columns) is the caller's.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from core.harness.folder import folder_files
from core.harness.models import Harness
from core.harness.render import render_system_prompt
from core.hsa.mapping import MappingChain
from core.runtime.trajectory import Trajectory
from core.textdiff import Row, align, elide

SYSTEM_PROMPT = "(rendered system prompt)"


class Change(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    MODIFIED = "modified"
    RENAMED = "renamed"


@dataclass
class ComponentDiff:
    path: str
    change: Change
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    old_path: str | None = None
    """For a renamed component: its path in the original."""

    @property
    def kind(self) -> str:
        """The component kind: prompt, skill, tool, hook, manifest or system prompt."""
        if self.path == SYSTEM_PROMPT:
            return "system prompt"
        head = self.path.split("/", 1)[0]
        return {"skills": "skill", "tools": "tool", "hooks": "hook", "prompt": "prompt"}.get(
            head, "manifest"
        )

    def unified(self, context: int = 2) -> list[str]:
        return unified(self.before, self.after, self.path, context=context)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def renamed_paths(original: Harness, chain: MappingChain) -> dict[str, str]:
    """Original path -> variant path of every skill and tool file the chain renamed."""
    out: dict[str, str] = {}
    for skill in original.skills:
        new = chain.skill(skill.name)
        if new != skill.name:
            out[f"skills/{skill.name}/SKILL.md"] = f"skills/{new}/SKILL.md"
    for tool in original.tools:
        new = chain.tool(tool.name)
        if new != tool.name:
            out[f"tools/{tool.name}.json"] = f"tools/{new}.json"
    return out


def component_diffs(
    original: Harness,
    variant: Harness,
    *,
    renames: Mapping[str, str] | None = None,
    system_prompt: bool = True,
) -> list[ComponentDiff]:
    """Changed components (canonical files), in path order, then the rendered prompt.
    `renames` (original path -> variant path, see `renamed_paths`) pairs a renamed skill or
    tool with its old file, so it shows as one renamed component rather than a removal and
    an addition."""
    before, after = folder_files(original), folder_files(variant)
    pairs = {old: new for old, new in (renames or {}).items() if old in before and new in after}
    out: list[ComponentDiff] = []
    for old, new in pairs.items():
        out.append(ComponentDiff(new, Change.RENAMED, _lines(before[old]), _lines(after[new]), old))
    paired_old, paired_new = set(pairs), set(pairs.values())
    for path in sorted((set(before) - paired_old) | (set(after) - paired_new)):
        a = before.get(path) if path not in paired_old else None
        b = after.get(path) if path not in paired_new else None
        if a == b:
            continue
        if a is None:
            out.append(ComponentDiff(path, Change.ADDED, [], _lines(b or "")))
        elif b is None:
            out.append(ComponentDiff(path, Change.REMOVED, _lines(a), []))
        else:
            out.append(ComponentDiff(path, Change.MODIFIED, _lines(a), _lines(b)))
    out.sort(key=lambda d: d.path)
    if system_prompt:
        a_text, b_text = render_system_prompt(original), render_system_prompt(variant)
        if a_text != b_text:
            out.append(
                ComponentDiff(SYSTEM_PROMPT, Change.MODIFIED, _lines(a_text), _lines(b_text))
            )
    return out


def trajectory_lines(trajectory: Trajectory) -> list[str]:
    """One line per model output: `[n] call name {arguments}` per tool call, or the reply."""
    lines = [f"viewer: {trajectory.viewer_message}"]
    for n, turn in enumerate(trajectory.turns, start=1):
        for call in turn.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
            lines.append(f"[{n}] call {call.name} {args}")
        if turn.parse_errors:
            lines.append(f"[{n}] unparseable: {turn.content}")
        elif turn.content or not turn.tool_calls:
            lines.append(f"[{n}] reply: {turn.content}")
    return lines


def unified(before: list[str], after: list[str], name: str, *, context: int = 2) -> list[str]:
    return list(
        difflib.unified_diff(before, after, f"a/{name}", f"b/{name}", n=context, lineterm="")
    )


def side_by_side(before: list[str], after: list[str], *, context: int = 2) -> list[Row]:
    """Aligned rows of the two texts (`core.textdiff`); runs of unchanged lines beyond
    `context` are elided into one `skip` row."""
    return elide(align(before, after), context)
