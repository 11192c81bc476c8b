"""The harness being edited: current state, stable component ids, drafts of broken input.

`HarnessDocument` holds a valid `Harness` at all times. Editors never mutate a component in
place: they build a new one (validated) and hand it to `apply`, which re-validates the harness
as a whole (unique names, loader clash) and swaps it in. Because components are treated as
immutable, an undo snapshot is just the old list (references), cheap even for 200 skills.

Input that does not validate never reaches the harness. The editor keeps it on screen and
records it here as a `Draft` (its raw widget state and the problems), keyed by the component's
stable uid, so switching away and back restores the broken text with its error, and saving is
refused, with the list of what to fix, while any draft is open.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from core.harness import Harness, HarnessError, Hook, Problem, Skill, Tool
from core.harness.checks import cross_check, harness_warnings
from core.harness.errors import problems_from_validation

LIST_ATTRS = ("skills", "tools", "hooks")
VALUE_ATTRS = ("prompt", "settings", "description")
FIELDS = ("name", "description", "settings", "prompt", "skills", "tools", "hooks")
_FIELDS = FIELDS

_uid = itertools.count(1)


def component_file(attr: str, item: Any) -> str:
    """The folder-format file a component lives in (what problems point at)."""
    if attr == "skills":
        return f"skills/{item.name}/SKILL.md"
    if attr == "tools":
        return f"tools/{item.name}.json"
    if attr == "hooks":
        return f"hooks/{item.name}.yaml"
    return "harness.yaml"


@dataclass
class Draft:
    """Input an editor holds that does not validate yet."""

    label: str
    raw: dict[str, Any]
    problems: list[Problem] = field(default_factory=list)


@dataclass(frozen=True)
class Snapshot:
    """A value of one harness attribute, with the component uids of a list attribute."""

    attr: str
    value: Any
    uids: tuple[int, ...] = ()


class HarnessDocument:
    def __init__(self, harness: Harness, version_id: str | None = None) -> None:
        self.harness = harness
        self.version_id = version_id
        self.uids: dict[str, list[int]] = {
            a: [next(_uid) for _ in getattr(harness, a)] for a in LIST_ATTRS
        }
        self.drafts: dict[str, Draft] = {}

    # ------------------------------------------------------------------ identity

    def uid(self, attr: str, index: int) -> int:
        return self.uids[attr][index]

    def index_of(self, attr: str, uid: int) -> int | None:
        try:
            return self.uids[attr].index(uid)
        except ValueError:
            return None

    def item(self, attr: str, index: int) -> Any:
        return getattr(self.harness, attr)[index]

    # ------------------------------------------------------------------ changes

    def snapshot(self, attr: str) -> Snapshot:
        value = getattr(self.harness, attr)
        if attr in LIST_ATTRS:
            return Snapshot(attr, list(value), tuple(self.uids[attr]))
        return Snapshot(attr, value)

    def validated(self, attr: str, value: Any) -> Harness:
        """The harness with `attr` set to `value`; HarnessError (file + field) if invalid."""
        data = {f: getattr(self.harness, f) for f in _FIELDS}
        data[attr] = value
        try:
            return Harness.model_validate(data)
        except ValidationError as exc:
            raise HarnessError(problems_from_validation(exc, "harness.yaml")) from None

    def apply(self, snap: Snapshot, *, trusted: bool = False) -> None:
        """Swap `snap` in (validated); raises HarnessError and changes nothing when invalid.

        `trusted`: the snapshot was validated against this same harness state before (undo
        and redo replay such snapshots), so it is swapped in without validating again.
        """
        if trusted:
            self.harness = self.harness.model_copy(update={snap.attr: snap.value})
        else:
            self.harness = self.validated(snap.attr, snap.value)
        if snap.attr in LIST_ATTRS:
            self.uids[snap.attr] = list(snap.uids)

    def replaced(self, attr: str, index: int, item: Any) -> Snapshot:
        items = list(getattr(self.harness, attr))
        items[index] = item
        return Snapshot(attr, items, tuple(self.uids[attr]))

    def inserted(self, attr: str, index: int, item: Any) -> Snapshot:
        items = list(getattr(self.harness, attr))
        uids = list(self.uids[attr])
        items.insert(index, item)
        uids.insert(index, next(_uid))
        return Snapshot(attr, items, tuple(uids))

    def removed(self, attr: str, index: int) -> Snapshot:
        items = list(getattr(self.harness, attr))
        uids = list(self.uids[attr])
        del items[index]
        del uids[index]
        return Snapshot(attr, items, tuple(uids))

    def moved(self, attr: str, src: int, dst: int) -> Snapshot:
        items = list(getattr(self.harness, attr))
        uids = list(self.uids[attr])
        items.insert(dst, items.pop(src))
        uids.insert(dst, uids.pop(src))
        return Snapshot(attr, items, tuple(uids))

    def whole(self, attr: str, items: list[Any]) -> Snapshot:
        """A snapshot replacing a whole list; components keep their uid when a component of
        the same name is there now (so their editors and drafts follow them)."""
        by_name = {
            item.name: uid
            for item, uid in zip(getattr(self.harness, attr), self.uids[attr], strict=True)
        }
        uids = tuple(by_name.get(item.name) or next(_uid) for item in items)
        return Snapshot(attr, list(items), uids)

    # ------------------------------------------------------------------ new components

    def unique_name(self, attr: str, base: str, sep: str = "-") -> str:
        taken = {i.name.casefold() for i in getattr(self.harness, attr)}
        taken.add(self.harness.settings.load_skill_tool.casefold())
        if base.casefold() not in taken:
            return base
        for n in itertools.count(2):
            name = f"{base}{sep}{n}"
            if name.casefold() not in taken:
                return name
        raise AssertionError  # pragma: no cover

    def new_skill(self) -> Skill:
        return Skill(
            name=self.unique_name("skills", "new-skill"),
            description="What this skill does, and when the model should load it.",
            body="# New skill\n\nSteps the model follows once it loads this skill.\n",
        )

    def new_tool(self) -> Tool:
        name = self.unique_name("tools", "new_tool", "_")
        return Tool(
            name=name,
            description="What the tool does and when to call it.",
            parameters={"type": "object", "properties": {}, "required": []},
            binding=f"user.{name}",
        )

    def new_hook(self) -> Hook:
        return Hook.model_validate(
            {
                "name": self.unique_name("hooks", "new-hook"),
                "event": "before_reply",
                "kind": "reply_format",
                "params": {"max_chars": 400},
                "reminder": "Rewrite the reply (${reason}).",
            }
        )

    # ------------------------------------------------------------------ drafts and problems

    def set_draft(self, key: str, draft: Draft | None) -> None:
        if draft is None:
            self.drafts.pop(key, None)
        else:
            self.drafts[key] = draft

    def clear_drafts(self) -> None:
        self.drafts.clear()

    def draft_problems(self) -> list[tuple[str, Problem]]:
        return [(d.label, p) for d in self.drafts.values() for p in d.problems]

    def problems(self) -> list[Problem]:
        """Cross-component problems of the current harness (what import would reject)."""
        return cross_check(self.harness)

    def warnings(self) -> list[Problem]:
        """What the harness saves and runs with but the operator must see (stale names after
        a rename, strict tools OpenAI would refuse, spec limits): `hat harness validate`
        prints the same list, plus tools whose binding cannot run (an unknown binding, an MCP
        server mcp.json does not declare or whose command is missing), which validate lists
        as binding problems."""
        from core.runtime.tool_runtime import binding_problems

        found = harness_warnings(self.harness)
        for problem in binding_problems(self.harness):
            if not problem.needs_trust:  # untrusted ones are in harness_warnings
                found.append(
                    Problem(
                        f"tools/{problem.tool}.json", "binding", f"cannot run: {problem.reason}"
                    )
                )
        return found

    def save_blockers(self) -> list[str]:
        """Why saving must wait: open drafts and cross-component problems, one line each."""
        lines = [
            f"{label}: {p.field + ': ' if p.field else ''}{p.message}"
            for label, p in self.draft_problems()
        ]
        lines += [str(p) for p in self.problems()]
        return lines


def names(items: Iterable[Any]) -> list[str]:
    return [i.name for i in items]
