"""Checks that span components (a hook naming a tool, a template naming a variable)."""

from __future__ import annotations

import re
from string import Template

from core.harness.errors import Problem
from core.harness.models import Harness, HookEvent, SectionKind, SkillKind


def template_variables(template: str) -> set[str]:
    """Names a `${var}` template refers to (string.Template syntax)."""
    names = set()
    for match in Template.pattern.finditer(template):
        name = match.group("named") or match.group("braced")
        if name:
            names.add(name)
        elif match.group("invalid") is not None:
            raise ValueError(f"invalid placeholder at offset {match.start('invalid')}")
    return names


def cross_check(harness: Harness) -> list[Problem]:
    problems: list[Problem] = []
    from core.harness.render import BUILTIN_VARIABLES

    variables = set(harness.prompt.variables) | set(BUILTIN_VARIABLES)
    for section in harness.prompt.sections:
        file = f"prompt/{section.id}.md"
        try:
            missing = template_variables(section.template) - variables
        except ValueError as exc:
            problems.append(Problem(file, "template", str(exc)))
            continue
        for name in sorted(missing):
            problems.append(
                Problem(file, "template", f"uses ${{{name}}} but prompt.variables has no {name!r}")
            )
    kinds = {s.kind for s in harness.prompt.sections if s.enabled}
    if (
        harness.tools
        and harness.settings.tool_protocol.value == "prompt"
        and (SectionKind.TOOL_BLOCK not in kinds)
    ):
        problems.append(
            Problem(
                "harness.yaml",
                "prompt.sections",
                "the prompt tool protocol needs a section of kind tool_block",
            )
        )
    if harness.skills and SectionKind.SKILL_INDEX not in kinds:
        problems.append(
            Problem("harness.yaml", "prompt.sections", "skills need a section of kind skill_index")
        )
    needs_reply_skill = any(
        h.kind.value == "require_reply_skill" and h.enabled for h in harness.hooks
    )
    if needs_reply_skill and not any(
        s.kind is SkillKind.REPLY and s.enabled for s in harness.skills
    ):
        problems.append(
            Problem("hooks", "require_reply_skill", "the harness has no enabled reply skill")
        )
    tool_names = [t.name for t in harness.tools]
    for hook in harness.hooks:
        tool_event = hook.event in (HookEvent.BEFORE_TOOL, HookEvent.AFTER_TOOL)
        if (
            tool_event
            and hook.matcher != "*"
            and not any(re.fullmatch(hook.matcher, n) for n in tool_names)
        ):
            problems.append(
                Problem(
                    f"hooks/{hook.name}.yaml",
                    "matcher",
                    f"{hook.matcher!r} matches no tool of this harness",
                )
            )
    return problems
