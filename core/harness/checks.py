"""Checks that span components (a hook naming a tool, a template naming a variable)."""

from __future__ import annotations

from string import Template

from core.harness.errors import Problem
from core.harness.models import (
    Harness,
    HookEvent,
    HookKind,
    SectionKind,
    SkillKind,
    matcher_matches,
)
from core.harness.patterns import PatternTimeout


def template_variables(template: str) -> set[str]:
    """Names a `${var}` template refers to (string.Template syntax).

    Raise ValueError naming the line of a `$` that starts no placeholder (write `$$` for a
    literal dollar sign).
    """
    names = set()
    for match in Template.pattern.finditer(template):
        name = match.group("named") or match.group("braced")
        if name:
            names.add(name)
        elif match.group("invalid") is not None:
            offset = match.start("invalid")
            line = template.count("\n", 0, offset) + 1
            snippet = template[offset : offset + 12].split("\n", 1)[0]
            raise ValueError(
                f"line {line}: {snippet!r} is not a ${{variable}}; write $$ for a literal '$'"
            )
    return names


def hook_file(hook_name: str) -> str:
    """The file a problem with a hook points at (the .yaml that export writes for every hook)."""
    return f"hooks/{hook_name}.yaml"


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
        harness.active_tools
        and harness.settings.tool_protocol.value == "prompt"
        and (SectionKind.TOOL_BLOCK not in kinds)
    ):
        problems.append(
            Problem(
                "harness.yaml",
                "prompt.sections",
                "the prompt tool protocol needs an enabled section of kind tool_block",
            )
        )
    if harness.active_skills and SectionKind.SKILL_INDEX not in kinds:
        problems.append(
            Problem(
                "harness.yaml",
                "prompt.sections",
                "skills need an enabled section of kind skill_index",
            )
        )
    reply_skill_hooks = [
        h for h in harness.hooks if h.kind is HookKind.REQUIRE_REPLY_SKILL and h.enabled
    ]
    if reply_skill_hooks and not any(
        s.kind is SkillKind.REPLY and s.enabled for s in harness.skills
    ):
        problems.append(
            Problem(
                hook_file(reply_skill_hooks[0].name),
                "kind",
                "require_reply_skill needs at least one enabled reply skill, and there is none",
            )
        )
    tool_names = [t.name for t in harness.tools]
    for hook in harness.hooks:
        if hook.matcher != "*":
            try:
                matched = [n for n in tool_names if matcher_matches(hook.matcher, n)]
            except PatternTimeout as exc:
                problems.append(Problem(hook_file(hook.name), "matcher", str(exc)))
                continue
        tool_event = hook.event in (HookEvent.BEFORE_TOOL, HookEvent.AFTER_TOOL)
        if tool_event and hook.matcher != "*" and not matched:
            problems.append(
                Problem(
                    hook_file(hook.name),
                    "matcher",
                    f"{hook.matcher!r} matches no tool of this harness",
                )
            )
    return problems


def spec_warnings(harness: Harness) -> list[Problem]:
    """Limits of a published spec that the harness passes but the product can live with
    (a warning with the value, never a refusal): a skill description past the agentskills.io
    spec's 1024 characters, which some clients cut."""
    from core.harness.models import SKILL_DESCRIPTION_SPEC

    return [
        Problem(
            f"skills/{skill.name}/SKILL.md",
            "description",
            f"{len(skill.description):,} characters, past the agentskills.io spec's "
            f"{SKILL_DESCRIPTION_SPEC}: clients that follow the spec may cut it",
        )
        for skill in harness.skills
        if len(skill.description) > SKILL_DESCRIPTION_SPEC
    ]
