"""What the transforms share: a skill's role and a parameter's binding name (the surface the
gold trajectory is remapped through), renames and assembly turned into `Skip` when they
cannot preserve the task, and seeded choices (a fresh name, a shuffle that changes the
order)."""

import random
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from core.harness.errors import FieldValueError
from core.harness.models import (
    Harness,
    Skill,
    Tool,
)
from core.hsa.build import assemble
from core.hsa.references import DISTRACTOR_KEY, ROLE_KEY, UsedNames
from core.hsa.renames import RenameError, Renames, apply_renames
from core.hsa.transform import Skip


def skill_role(skill: Skill) -> str | None:
    """A skill's original identity: `metadata.role`, else its name; None for distractors."""
    if DISTRACTOR_KEY in skill.metadata:
        return None
    return skill.metadata.get(ROLE_KEY, skill.name)


def canonical_param(tool: Tool, name: str) -> str:
    """The binding's name of a tool parameter (what `binding_args` maps it to)."""
    return tool.binding_args.get(name, name)


def current_param(tool: Tool, canonical: str) -> str | None:
    """The tool's parameter whose binding name is `canonical`, or None."""
    for name in tool.parameters.get("properties", {}):
        if canonical_param(tool, name) == canonical:
            return str(name)
    return None


def rename_or_skip(harness: Harness, renames: Renames) -> Harness:
    """`apply_renames`, with every reason it cannot be done turned into `Skip`."""
    try:
        return apply_renames(harness, renames)
    except (RenameError, ValidationError, FieldValueError) as exc:
        raise Skip(f"rename not applicable: {exc}") from None


def assemble_or_skip(base: Harness, **parts: Any) -> Harness:
    """`core.hsa.build.assemble(base, **parts)`, a failure turned into `Skip`."""
    try:
        return assemble(base, **parts)
    except (ValidationError, FieldValueError) as exc:
        raise Skip(f"the transformed harness does not validate: {exc}") from None


def pick_fresh(
    rng: random.Random, options: Sequence[str], used: UsedNames, exclude: str = ""
) -> str | None:
    """A random option not in `used` and not `exclude`; records it as used."""
    for choice in rng.sample(list(options), len(options)):
        if choice != exclude and choice not in used:
            used.add(choice)
            return choice
    return None


def shuffled(rng: random.Random, items: Sequence[Any]) -> list[Any]:
    """A permutation of `items` that differs from the input whenever it can (two or more
    distinct items): a shuffle that gives back the input gets two distinct items swapped."""
    out = list(items)
    rng.shuffle(out)
    if out == list(items):
        first = rng.randrange(len(out)) if out else 0
        others = [j for j in range(len(out)) if out[j] != out[first]]
        if others:
            second = rng.choice(others)
            out[first], out[second] = out[second], out[first]
    return out
