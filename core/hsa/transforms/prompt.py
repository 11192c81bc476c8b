"""HSA transforms, dimension 4: the structure of the system prompt.

None of these rename anything a trajectory names (tools, parameters, skills, the loader), so
each returns the identity SurfaceMapping: the gold trajectory stays the same while the model
reads a differently laid-out prompt. What they change:

- `prompt.section_order`: every section in a new order (the task does not depend on it);
- `prompt.style`: a (style, heading wrapper) combination from the bank's `styles` table —
  the banks split the combinations, so held-out styles are new to a trained model;
- `prompt.headings`: section titles reworded from the bank's `headings` table, by section role;
- `prompt.placement`: the skill index and the tool block moved, the other sections keeping
  their relative order;
- `prompt.variables`: host and room names from the bank's `variables` table (never the
  currency: prices are quoted as the tools return them). Literal mentions of the old value
  elsewhere in the harness (a skill's example greeting "hi Mia!") are rewritten too, so the
  variant stays self-consistent.

Speed: a transform copies only what it changes (`model_copy(update=...)` of the pipeline, a
section, a skill) and shares every other component with its input, which it never mutates;
values it writes are checked here (titles are plain strings, styles come from the enum,
variable rewrites keep skill descriptions within their limit), so the shallow copies stay
valid harnesses. Treat harnesses as values: copy before editing one in place.

Bank file `prompt.yaml`:

    styles:    {<style>: [<heading wrapper with {title}> | null, ...]}   # null: title as is
    headings:  {<section role>: [<title>, ...]}
    variables: {<variable>: [<value>, ...]}
"""

from __future__ import annotations

import random
import re
from typing import Any

from core.harness.models import Harness, PromptSection, PromptStyle, SectionKind
from core.hsa.mapping import SurfaceMapping
from core.hsa.transform import Bank, Dimension, Skip, transform

IDENTITY = SurfaceMapping()

ROLE_ALIASES: dict[str, str] = {
    "persona": "persona",
    "identity": "persona",
    "role": "persona",
    "who": "persona",
    "about": "persona",
    "rules": "rules",
    "guidelines": "rules",
    "policy": "rules",
    "policies": "rules",
    "constraints": "rules",
    "style": "style",
    "tone": "style",
    "voice": "style",
    "output": "output",
    "format": "output",
    "answer": "output",
    "context": "context",
    "room": "context",
    "live": "context",
    "stream": "context",
    "session": "context",
    "skills": "skills",
    "skill": "skills",
    "tools": "tools",
    "tool": "tools",
    "functions": "tools",
}
"""Words of a section id -> the heading role the bank's `headings` table is keyed by."""

VARIABLE_KEYS = ("host_name", "room_name")
"""The live room's prompt variables (the shipped banks' `variables` table, live-room only).
A user bank may name any other variable of its harness (`agent_name: [...]`)."""
NEVER_VARIABLES = frozenset({"currency"})
"""Never changed, whatever a bank says: prices are quoted as the tools return them."""


def _with_sections(harness: Harness, sections: list[PromptSection], **more: Any) -> Harness:
    prompt = harness.prompt.model_copy(update={"sections": sections, **more})
    return harness.model_copy(update={"prompt": prompt})


def section_role(section: PromptSection) -> str | None:
    """The heading role of a section: generated sections by kind, text sections by id words."""
    if section.kind is SectionKind.SKILL_INDEX:
        return "skills"
    if section.kind is SectionKind.TOOL_BLOCK:
        return "tools"
    for word in re.split(r"[-_\s]+", section.id.lower()):
        if word in ROLE_ALIASES:
            return ROLE_ALIASES[word]
    return None


def _permutation(rng: random.Random, n: int) -> list[int]:
    """A permutation of range(n) that is not the identity (n >= 2)."""
    order = list(range(n))
    while order == sorted(order):
        rng.shuffle(order)
    return order


@transform("prompt.section_order", Dimension.PROMPT)
def section_order(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Put every prompt section in a new order (any order keeps the task)."""
    sections = harness.prompt.sections
    if len(sections) < 2:
        raise Skip("the prompt has fewer than two sections to reorder")
    order = [sections[i] for i in _permutation(rng, len(sections))]
    return _with_sections(harness, order), IDENTITY


def _style_options(bank: Bank) -> list[tuple[PromptStyle, str | None]]:
    table = bank.section("prompt").get("styles") or {}
    options: list[tuple[PromptStyle, str | None]] = []
    for style, wrappers in sorted(table.items()):
        for wrapper in wrappers or [None]:
            if wrapper is not None and "{title}" not in wrapper:
                raise ValueError(f"prompt bank: heading wrapper {wrapper!r} lacks {{title}}")
            options.append((PromptStyle(style), wrapper))
    return options


@transform("prompt.style", Dimension.PROMPT)
def style(harness: Harness, rng: random.Random, bank: Bank) -> tuple[Harness, SurfaceMapping]:
    """Render the prompt in another style (markdown / xml / plain / json), with the bank's
    heading wrapper around every section title."""
    options = _style_options(bank)
    sections = harness.prompt.sections
    current = harness.prompt.style
    usable = [(s, w) for s, w in options if s is not current or w is not None]
    if not usable:
        raise Skip(f"the {bank.name.value} bank has no style other than {current.value}")
    if not sections:
        raise Skip("the prompt has no sections to restyle")
    chosen, wrapper = rng.choice(usable)
    if wrapper is not None:
        sections = [
            s.model_copy(update={"title": wrapper.replace("{title}", s.title)}) for s in sections
        ]
    return _with_sections(harness, list(sections), style=chosen), IDENTITY


@transform("prompt.headings", Dimension.PROMPT)
def headings(harness: Harness, rng: random.Random, bank: Bank) -> tuple[Harness, SurfaceMapping]:
    """Reword section titles from the bank, by section role (persona, rules, style, skills,
    tools, output, context); sections with no known role keep their title."""
    table: dict[str, list[str]] = bank.section("prompt").get("headings") or {}
    taken = {s.title for s in harness.prompt.sections}
    sections: list[PromptSection] = []
    changed = 0
    for section in harness.prompt.sections:
        role = section_role(section)
        options = [t for t in table.get(role or "", []) if t not in taken]
        if not options:
            sections.append(section)
            continue
        title = rng.choice(options)
        taken.discard(section.title)
        taken.add(title)
        sections.append(section.model_copy(update={"title": title}))
        changed += 1
    if not changed:
        raise Skip(f"no prompt section has a role the {bank.name.value} heading bank covers")
    return _with_sections(harness, sections), IDENTITY


@transform("prompt.placement", Dimension.PROMPT)
def placement(harness: Harness, rng: random.Random, bank: Bank) -> tuple[Harness, SurfaceMapping]:
    """Move the skill index and the tool block to new places; the other sections keep their
    relative order."""
    sections = harness.prompt.sections
    generated = (SectionKind.SKILL_INDEX, SectionKind.TOOL_BLOCK)
    movable = [s for s in sections if s.kind in generated]
    if not movable:
        raise Skip("the prompt has no skill index or tool block section")
    rest = [s for s in sections if s.kind not in generated]
    if not rest and len(movable) < 2:
        raise Skip("the skill index / tool block is the only section")
    original = [s.id for s in sections]
    for _ in range(64):
        order = list(rest)
        for section in rng.sample(movable, len(movable)):
            order.insert(rng.randint(0, len(order)), section)
        if [s.id for s in order] != original:
            return _with_sections(harness, order), IDENTITY
    raise Skip("no other placement of the skill index / tool block exists")


def _case_like(word: str, new: str) -> str:
    if word.islower():
        return new.lower()
    if word.isupper() and len(word) > 1:
        return new.upper()
    return new


def replace_mentions(text: str, old: str, new: str) -> str:
    """Whole-word replacement of `old` (not inside a longer word, nor joined to one by a
    hyphen). A one-word value (a host name) matches in any case and keeps the match's lower /
    upper case ("hi mia" -> "hi aria"); a longer one (a room name) matches as written."""
    if not old or old == new or old.lower() not in text.lower():
        return text
    single = re.fullmatch(r"\w+", old) is not None
    flags = re.IGNORECASE if single else 0
    pattern = re.compile(rf"(?<![\w-]){re.escape(old)}(?![\w-])", flags)
    return pattern.sub(lambda m: _case_like(m.group(0), new) if single else new, text)


def _rewrite_texts(harness: Harness, old: str, new: str) -> Harness:
    """Rewrite literal mentions of a changed variable value in every model-visible text (and
    the description), so the variant does not contradict itself. Only changed parts are
    copied; a skill description pushed over its limit makes the transform skip."""
    sections = [
        s.model_copy(update={"template": t})
        if (t := replace_mentions(s.template, old, new)) != s.template
        else s
        for s in harness.prompt.sections
    ]
    skills = []
    for skill in harness.skills:
        description = replace_mentions(skill.description, old, new)
        body = replace_mentions(skill.body, old, new)
        if description == skill.description and body == skill.body:
            skills.append(skill)
            continue
        if len(description) > 1024:
            raise Skip(f"renaming {old!r} would push skill {skill.name!r} over 1024 characters")
        skills.append(skill.model_copy(update={"description": description, "body": body}))
    hooks = [
        h.model_copy(update={"reminder": r})
        if (r := replace_mentions(h.reminder, old, new)) != h.reminder
        else h
        for h in harness.hooks
    ]
    values = {k: replace_mentions(v, old, new) for k, v in harness.prompt.variables.items()}
    prompt = harness.prompt.model_copy(update={"sections": sections, "variables": values})
    return harness.model_copy(
        update={
            "description": replace_mentions(harness.description, old, new),
            "prompt": prompt,
            "skills": skills,
            "hooks": hooks,
        }
    )


@transform("prompt.variables", Dimension.PROMPT)
def variables(harness: Harness, rng: random.Random, bank: Bank) -> tuple[Harness, SurfaceMapping]:
    """New host and room names from the bank (any variable a user bank's `variables` table
    names; never the currency); literal mentions of the old names in skills, templates and
    reminders follow."""
    table: dict[str, list[str]] = bank.section("prompt").get("variables") or {}
    current = harness.prompt.variables
    others = sorted(k for k in current if k not in VARIABLE_KEYS and k not in NEVER_VARIABLES)
    eligible = [*VARIABLE_KEYS, *others]
    keys = [k for k in eligible if k in current and table.get(k)]
    if not keys:
        covered = ", ".join(sorted(table)) or "none"
        raise Skip(
            f"the prompt uses no variable the {bank.label()} bank's `variables` table covers "
            f"(it covers: {covered})"
        )
    chosen = rng.sample(keys, rng.randint(1, len(keys)))
    in_use = set(current.values())
    changes: list[tuple[str, str, str]] = []
    for key in eligible:  # stable order
        if key not in chosen:
            continue
        options = [v for v in table[key] if v not in in_use]
        if not options:
            continue
        new = rng.choice(options)
        in_use.add(new)
        changes.append((key, current[key], new))
    if not changes:
        raise Skip("the bank has no unused value for the prompt variables")
    out = harness
    for _key, old, new in changes:
        out = _rewrite_texts(out, old, new)
    values = dict(out.prompt.variables)
    for key, _old, new in changes:
        values[key] = new
    prompt = out.prompt.model_copy(update={"variables": values})
    return out.model_copy(update={"prompt": prompt}), IDENTITY
