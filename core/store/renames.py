"""Renames in a version diff, found as git finds them: a component gone from the old version
and one new in the new version, of the same kind, are one rename when they share an identity
(a tool's binding, a skill's role) or, failing that, when their words are alike enough.

Without this a renamed tool reads as "removed" + "added" in the Versions view, `hat harness
diff` and the impact gate, which then cannot say that a flip came from the rename.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.harness.folder import folder_files
from core.store.harness_versions import ComponentDiff, component_of, unified_diff

if TYPE_CHECKING:
    from core.harness.models import Harness
    from core.store.harness_versions import ComponentDiff

RENAME_SIMILARITY = 0.6
"""A removed and an added component of one kind whose words (names and boilerplate aside) are
at least this alike are one rename. git's default is 50 % of lines; on the demo harness no two
different tools reach it by this measure, and a renamed tool with a reworded description does
(tests/test_eval_impact.py, `test_no_two_demo_tools_are_alike_enough_to_pass_for_a_rename`)."""

RENAMABLE = ("tool", "skill", "hook", "prompt")

Key = tuple[str, str]
"""(component kind, component name)."""


def with_renames(
    diffs: list[ComponentDiff], old: Harness | None, new: Harness
) -> list[ComponentDiff]:
    """`diffs` with each renamed component's files as `renamed` diffs (old path, old name,
    and the unified diff of its content from the old file to the new one); a file only one
    side of a renamed skill has stays added or removed. Order: by path, as the store's."""

    if old is None:
        return diffs
    by_key: dict[Key, list[ComponentDiff]] = {}
    for d in diffs:
        by_key.setdefault((d.component, d.name), []).append(d)
    gone = {
        k: v
        for k, v in by_key.items()
        if k[0] in RENAMABLE and all(d.change == "removed" for d in v)
    }
    came = {
        k: v for k, v in by_key.items() if k[0] in RENAMABLE and all(d.change == "added" for d in v)
    }
    if not gone or not came:
        return diffs
    renamed = _pairs(gone, came, old, new)  # new key -> old key
    old_of = {v: k for k, v in renamed.items()}
    out: list[ComponentDiff] = []
    for d in diffs:
        key = (d.component, d.name)
        if key in old_of:  # a file of a component renamed away: shown with its counterpart
            if _shape(d.path) in {_shape(f.path) for f in by_key[old_of[key]]}:
                continue
        elif key in renamed:
            old_key = renamed[key]
            twin = {_shape(f.path): f for f in by_key[old_key]}.get(_shape(d.path))
            if twin is not None:
                d = ComponentDiff(
                    d.path,
                    d.component,
                    d.name,
                    "renamed",
                    twin.old_text,
                    d.new_text,
                    unified_diff(d.path, twin.old_text, d.new_text, old_path=twin.path),
                    old_name=old_key[1],
                    old_path=twin.path,
                )
        out.append(d)
    return out


def _shape(path: str) -> str:
    """A component file's path without the component's name: `SKILL.md` for
    `skills/<name>/SKILL.md`, the extension for `tools/<name>.json` (matches the files of a
    renamed component with their counterparts)."""
    parts = path.split("/")
    if parts[0] == "skills":
        return "/".join(parts[2:])
    return parts[-1].rsplit(".", 1)[-1]


def _pairs(
    gone: dict[Key, list[ComponentDiff]],
    came: dict[Key, list[ComponentDiff]],
    old: Harness,
    new: Harness,
) -> dict[Key, Key]:
    """{new key: old key} of the renames: identity first, then similarity, best first."""
    pairs: dict[Key, Key] = {}
    used: set[Key] = set()
    for key_new in sorted(came):
        ident = _identity(key_new, new)
        if ident is None:
            continue
        for key_old in sorted(gone):
            if (
                key_old[0] == key_new[0]
                and key_old not in used
                and _identity(key_old, old) == ident
            ):
                pairs[key_new] = key_old
                used.add(key_old)
                break
    boilerplate = _boilerplate((old, new))
    scored = sorted(
        (
            -_similarity(key_old[1], gone[key_old], key_new[1], came[key_new],
                         boilerplate.get(key_old[0], set())),
            key_old,
            key_new,
        )
        for key_old in gone
        if key_old not in used
        for key_new in came
        if key_new not in pairs and key_new[0] == key_old[0]
    )  # fmt: skip
    for neg, key_old, key_new in scored:
        if -neg < RENAME_SIMILARITY:
            break
        if key_old in used or key_new in pairs:
            continue
        pairs[key_new] = key_old
        used.add(key_old)
    return pairs


def _identity(key: Key, harness: Harness) -> str | None:
    """What survives a rename: a tool's binding, a skill's role."""
    component, name = key
    if component == "tool":
        tool = harness.tool(name)
        return f"binding:{tool.binding}" if tool is not None else None
    if component == "skill":
        skill = harness.skill(name)
        role = (skill.metadata or {}).get("role") if skill is not None else None
        return f"role:{role}" if role else None
    return None


def _boilerplate(harnesses: Iterable[Harness]) -> dict[str, set[str]]:
    """Per component kind, the lines more than half of its files carry (a tool file's
    `"type": "object",`): left out of the similarity, or every two tools would look alike."""

    files: dict[str, list[set[str]]] = {}
    for harness in harnesses:
        for path, text in folder_files(harness).items():
            files.setdefault(component_of(path)[0], []).append(set(_lines(text)))
    out: dict[str, set[str]] = {}
    for kind, sets in files.items():
        if len(sets) < 4:  # too few to tell boilerplate from content
            continue
        counts = Counter(line for lines in sets for line in lines)
        out[kind] = {line for line, n in counts.items() if 2 * n > len(sets)}
    return out


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def _similarity(
    old_name: str,
    old: list[ComponentDiff],
    new_name: str,
    new: list[ComponentDiff],
    boilerplate: set[str],
) -> float:
    """How alike two components' files are, 0..1: the words of their lines, boilerplate
    left out, with the old name written as the new one (a rename that also rewrites the name
    inside the file is still a rename)."""

    def words(diffs: list[ComponentDiff], new_side: bool) -> list[str]:
        out: list[str] = []
        for d in sorted(diffs, key=lambda d: d.path):
            text = (d.new_text if new_side else d.old_text) or ""
            for line in _lines(text.replace(old_name, new_name)):
                if line not in boilerplate:
                    out.extend(re.findall(r"\w+", line))
        return out

    a, b = words(old, False), words(new, True)
    if not a and not b:
        return 1.0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.real_quick_ratio() < RENAME_SIMILARITY or matcher.quick_ratio() < RENAME_SIMILARITY:
        return matcher.quick_ratio()
    return matcher.ratio()
