"""Renaming a tool, a parameter or a skill as a refactoring: every place that names it follows.

An operator who renames a tool in the editor expects what a code editor does for a function:
the hook matchers, the `validate_tool_args` schemas, the skills' text and `allowed-tools`, the
prompt sections and the other tools' descriptions that name it follow, and a tool bound to
Python keeps running (a renamed parameter keeps its binding's name through `binding_args`).
Without that, a task-critical hook silently stops covering the renamed tool.

`plan_rename` does the rename with the same machinery HSA's renames use (core/hsa/renames.py,
which refuses what it cannot rename safely: a Python hook whose source names the old name, a
hook matcher whose meaning would change) and lists every place that changes (`Place`), old
and new text side by side, so the editor can preview them and the operator can leave the
prose ones (`Place.optional`: a skill's body, a prompt section, a reminder) as written.
`RenamePlan.apply` gives the harness to save as one change. The CLI's `hat harness validate`
and the Problems panel report what a rename done by hand left behind
(core/harness/checks.py `stale_references`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from core.harness.errors import FieldValueError
from core.harness.models import Harness
from core.hsa.references import ROLE_KEY
from core.hsa.renames import RenameError, Renames, apply_renames

RenameKind = Literal["tool", "parameter", "skill"]

_PROSE = frozenset(
    {
        ("skills", "description"),
        ("skills", "body"),
        ("tools", "description"),
        ("tools", "title"),
        ("hooks", "reminder"),
        ("prompt", "title"),
        ("prompt", "template"),
        ("variables", "value"),
        ("settings", "reminder_format"),
    }
)
"""Places whose text only *mentions* the name: the operator may keep them as written."""

_FIELDS = {
    "skills": ("name", "description", "body", "allowed_tools"),
    "tools": ("name", "title", "description", "parameters", "annotations", "binding_args"),
    "hooks": ("matcher", "reminder", "params"),
}


class RenameRefused(ValueError):
    """A rename the harness cannot take, with the reason an operator can act on."""


@dataclass(frozen=True)
class Place:
    """One field of one component that the rename changes."""

    part: str
    """skills | tools | hooks | prompt | variables | settings"""
    index: int
    """Position in `part` (the same before and after: a rename reorders nothing)."""
    component: str
    """The component's name before the rename (a prompt section's id, a variable's name)."""
    field: str
    before: str
    after: str

    @property
    def optional(self) -> bool:
        """Prose that mentions the name (kept as written when the operator says so); names,
        matchers, schemas and bindings always follow, or the harness would break."""
        return (self.part, self.field) in _PROSE

    @property
    def where(self) -> str:
        """The file the place lives in, as the Problems panel and validate name files."""
        return {
            "skills": f"skills/{self.component}/SKILL.md",
            "tools": f"tools/{self.component}.json",
            "hooks": f"hooks/{self.component}.yaml",
            "prompt": f"prompt/{self.component}.md",
        }.get(self.part, "harness.yaml")

    def __str__(self) -> str:
        return f"{self.where}: {self.field}"


@dataclass(frozen=True)
class RenamePlan:
    kind: RenameKind
    old: str
    new: str
    tool: str | None
    """The tool a renamed parameter belongs to (None: every tool that has it)."""
    before: Harness
    after: Harness
    places: tuple[Place, ...]

    @property
    def title(self) -> str:
        """The undo step's text: "Rename tool lookup_order → find_order"."""
        of = f" of {self.tool}" if self.kind == "parameter" else ""
        return f"Rename {self.kind} {self.old} → {self.new}{of}"

    def apply(self, keep: Iterable[Place] = ()) -> Harness:
        """The renamed harness, with the optional places in `keep` left as written. Raises
        RenameRefused for a kept place that must follow (a matcher, a schema, a name)."""
        kept = list(keep)
        if not kept:
            return self.after
        for place in kept:
            if place not in self.places:
                raise RenameRefused(f"{place} is not a place this rename changes")
            if not place.optional:
                raise RenameRefused(f"{place} must follow the rename: the harness would break")
        return _restore(self.before, self.after, kept)


def plan_rename(
    harness: Harness, kind: RenameKind, old: str, new: str, *, tool: str | None = None
) -> RenamePlan:
    """The rename of `old` (a tool, a skill, or a parameter of `tool`; of every tool that has
    it when `tool` is None) to `new` and every place it changes. Raises RenameRefused naming
    the cause: `old` unknown, `new` taken (the clash named), not a valid name, or a place that
    cannot follow safely."""
    new = new.strip()
    if not new:
        raise RenameRefused("the new name is empty")
    if new == old:
        raise RenameRefused(f"{old!r} is already the name")
    renames = Renames()
    tools = {t.name: t for t in harness.tools}
    if kind == "tool":
        if old not in tools:
            raise RenameRefused(f"the harness has no tool {old!r}")
        if new in tools:
            raise RenameRefused(f"a tool named {new!r} already exists")
        if new == harness.settings.load_skill_tool:
            raise RenameRefused(f"{new!r} is the skill loader's name")
        renames.tools[old] = new
    elif kind == "skill":
        skills = {s.name for s in harness.skills}
        if old not in skills:
            raise RenameRefused(f"the harness has no skill {old!r}")
        if new in skills:
            raise RenameRefused(f"a skill named {new!r} already exists")
        renames.skills[old] = new
    elif kind == "parameter":
        having = [n for n, t in tools.items() if old in t.parameters.get("properties", {})]
        if tool is not None and tool not in tools:
            raise RenameRefused(f"the harness has no tool {tool!r}")
        if tool is not None and tool not in having:
            raise RenameRefused(f"tool {tool!r} has no parameter {old!r}")
        if not having:
            raise RenameRefused(f"no tool has a parameter {old!r}")
        others = [n for n in having if n != tool]
        if tool is not None and others:
            raise RenameRefused(
                f"{', '.join(others)} also ha{'s' if len(others) == 1 else 've'} a parameter "
                f"{old!r}, and the text that names it cannot say which tool it means: rename "
                "it in every tool that has it"
            )
        for name in having:
            if new in tools[name].parameters.get("properties", {}):
                raise RenameRefused(f"tool {name!r} already has a parameter {new!r}")
            renames.params[name] = {old: new}
    else:
        raise RenameRefused(f"cannot rename a {kind!r}")
    try:
        after = apply_renames(harness, renames)
    except RenameError as exc:
        raise RenameRefused(str(exc)) from None
    except (ValidationError, FieldValueError, ValueError) as exc:
        raise RenameRefused(f"{new!r}: {_first_line(exc)}") from None
    after = _without_role_stamps(harness, after)
    return RenamePlan(kind, old, new, tool, harness, after, tuple(_places(harness, after)))


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        return str(errors[0]["msg"]) if errors else str(exc)
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _without_role_stamps(before: Harness, after: Harness) -> Harness:
    """HSA stamps a renamed skill with the name it had (`metadata.role`) so a variant's grader
    can map it back; an operator's rename is the skill's new name, not a disguise, so the
    stamp is dropped where the skill had none."""
    skills = []
    changed = False
    for old, new in zip(before.skills, after.skills, strict=True):
        if ROLE_KEY in new.metadata and ROLE_KEY not in old.metadata:
            meta = {k: v for k, v in new.metadata.items() if k != ROLE_KEY}
            new = new.model_copy(update={"metadata": meta})
            changed = True
        skills.append(new)
    return after.model_copy(update={"skills": skills}) if changed else after


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def _places(before: Harness, after: Harness) -> Iterable[Place]:
    for part, names in _FIELDS.items():
        for i, (a, b) in enumerate(zip(getattr(before, part), getattr(after, part), strict=True)):
            if a is b:
                continue
            for field in names:
                old, new = getattr(a, field), getattr(b, field)
                if old != new or _text(old) != _text(new):
                    yield Place(part, i, a.name, field, _text(old), _text(new))
    pairs = zip(before.prompt.sections, after.prompt.sections, strict=True)
    for i, (sa, sb) in enumerate(pairs):
        for field in ("title", "template"):
            if getattr(sa, field) != getattr(sb, field):
                yield Place("prompt", i, sa.id, field, getattr(sa, field), getattr(sb, field))
    for i, (key, value) in enumerate(before.prompt.variables.items()):
        if after.prompt.variables.get(key) != value:
            yield Place("variables", i, key, "value", value, after.prompt.variables[key])
    for field in ("load_skill_tool", "reminder_format"):
        old, new = getattr(before.settings, field), getattr(after.settings, field)
        if old != new:
            yield Place("settings", 0, "settings", field, str(old), str(new))


def _restore(before: Harness, after: Harness, kept: list[Place]) -> Harness:
    """`after` with each kept (prose) place set back to its text in `before`."""
    update: dict[str, Any] = {}
    for part in ("skills", "tools", "hooks"):
        items = list(getattr(after, part))
        for place in (p for p in kept if p.part == part):
            original = getattr(before, part)[place.index]
            items[place.index] = items[place.index].model_copy(
                update={place.field: getattr(original, place.field)}
            )
        update[part] = items
    sections = list(after.prompt.sections)
    variables = dict(after.prompt.variables)
    for place in kept:
        if place.part == "prompt":
            original = before.prompt.sections[place.index]
            sections[place.index] = sections[place.index].model_copy(
                update={place.field: getattr(original, place.field)}
            )
        elif place.part == "variables":
            variables[place.component] = before.prompt.variables[place.component]
    update["prompt"] = after.prompt.model_copy(
        update={"sections": sections, "variables": variables}
    )
    if any(p.part == "settings" for p in kept):
        update["settings"] = after.settings.model_copy(
            update={"reminder_format": before.settings.reminder_format}
        )
    return Harness.model_validate({**dict(after), **update})
