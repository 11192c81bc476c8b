"""Checks that span components (a hook naming a tool, a template naming a variable)."""

from __future__ import annotations

from string import Template

from core.harness.errors import Problem
from core.harness.models import (
    LITERAL_ALTERNATION,
    SKILL_DESCRIPTION_SPEC,
    Harness,
    HookEvent,
    HookKind,
    SectionKind,
    SkillKind,
    matcher_matches,
)
from core.harness.patterns import PatternTimeout
from core.harness.render import BUILTIN_VARIABLES
from core.harness.strict_schema import strict_schema_problems
from core.harness.trust import trust_warnings


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


def harness_warnings(harness: Harness) -> list[Problem]:
    """What the harness loads and runs with but an operator must hear about, shown beside the
    problems in the studio's Problems panel and printed by `hat harness validate`: published
    specs' limits (`spec_warnings`), references a rename or a removal left behind
    (`stale_references`), strict tools OpenAI would refuse (`strict_warnings`) and what is
    switched off until trusted: a task-critical hook that does not run, a tool whose calls
    all fail (`core.harness.trust.trust_warnings`)."""

    return (
        spec_warnings(harness)
        + stale_references(harness)
        + strict_warnings(harness)
        + trust_warnings(harness)
    )


def stale_references(harness: Harness) -> list[Problem]:
    """Names that point at nothing: what renaming or removing a tool or parameter leaves
    behind when the places naming it were not updated. A matcher that lists names (`a|b`)
    with one that is no tool still matches the others, so the hook silently stops covering
    the renamed tool; a `validate_tool_args` schema naming a parameter that no tool it matches
    has checks nothing (a property) or blocks every call (a required one); a skill's
    `allowed-tools` that names this harness's tools and one that is none."""

    problems: list[Problem] = []
    tools = {t.name: t for t in harness.tools}
    known = set(tools) | {harness.settings.load_skill_tool}
    for hook in harness.hooks:
        tool_event = hook.event in (HookEvent.BEFORE_TOOL, HookEvent.AFTER_TOOL)
        if not tool_event or hook.matcher == "*":
            continue
        if LITERAL_ALTERNATION.fullmatch(hook.matcher):
            gone = [n for n in hook.matcher.split("|") if n not in known]
            if gone and len(gone) < len(hook.matcher.split("|")):  # none matched: cross_check
                problems.append(
                    Problem(
                        hook_file(hook.name),
                        "matcher",
                        f"names {', '.join(repr(n) for n in gone)}, which is no tool of this "
                        "harness (renamed or removed?): the hook no longer covers it",
                    )
                )
        if hook.kind is not HookKind.VALIDATE_TOOL_ARGS:
            continue
        schema = hook.params.get("schema")
        if not isinstance(schema, dict):
            continue
        try:
            matched = [t for n, t in tools.items() if matcher_matches(hook.matcher, n)]
        except PatternTimeout:
            continue  # cross_check reports the matcher
        if not matched:
            continue
        have = {p for t in matched for p in t.parameters.get("properties", {})}
        props = schema.get("properties")
        named = list(props) if isinstance(props, dict) else []
        required = schema.get("required")
        named += [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
        stale = sorted({n for n in named if n not in have})
        if stale:
            problems.append(
                Problem(
                    hook_file(hook.name),
                    "params.schema",
                    f"names parameter(s) {', '.join(repr(n) for n in stale)} that no tool it "
                    f"matches ({', '.join(t.name for t in matched)}) has (renamed or removed?)",
                )
            )
    for skill in harness.skills:
        listed = (skill.allowed_tools or "").split()
        gone = [n for n in listed if n not in known]
        # a list naming none of this harness's tools is another client's ("Bash(git:*) Read")
        if gone and len(gone) < len(listed):
            problems.append(
                Problem(
                    f"skills/{skill.name}/SKILL.md",
                    "allowed-tools",
                    f"names {', '.join(repr(n) for n in gone)}, which is no tool of this "
                    "harness (renamed or removed?)",
                )
            )
    return problems


def strict_warnings(harness: Harness) -> list[Problem]:
    """Tools declared `strict: true` whose schema OpenAI's structured outputs would refuse
    (core/harness/strict_schema.py): one problem per cause, naming where in the schema."""

    return [
        Problem(f"tools/{tool.name}.json", "parameters", f"strict: {line}")
        for tool in harness.tools
        if tool.strict
        for line in strict_schema_problems(tool.parameters)
    ]


def spec_warnings(harness: Harness) -> list[Problem]:
    """Limits of a published spec that the harness passes but the product can live with
    (a warning with the value, never a refusal): a skill description past the agentskills.io
    spec's 1024 characters, which some clients cut."""

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
