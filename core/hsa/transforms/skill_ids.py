"""HSA transforms, dimension 1: skill identifiers.

Every rename goes through `core.hsa.renames.apply_renames`: the skill is renamed in the skill
list, in every other skill's description and body, in prompt templates, hook texts and tool
descriptions, and gets `metadata.role` = its original name (metadata is never shown to the
model; the oracle and graders find skills by it). The mapping renames `load_skill` calls.

Skill names must match `^[a-z0-9]+(-[a-z0-9]+)*$` (agentskills.io), so "case and style" for
skills cannot mean snake or camel case: `skill_name_style` restyles within that alphabet with
affixes from the bank (`playbook-product-qa`, `product-qa-recipe`), a numbered form
(`03-product-qa`) or a kind tag. Tool names have no such limit; their case styles are in
tool_schemas.

Bank section `skills` (resources/hsa/<bank>/skills.yaml):
- `names`: role -> semantic synonyms (kebab-case skill names);
- `opaque_prefixes`: prefixes of opaque ids `<prefix>-<4 hex digits>`;
- `affixes`: {prefixes: [...], suffixes: [...]}; `kind_tags`: {reply: [...], strategy: [...]};
- `loader_names`: names for the built-in skill loader tool.
"""

from __future__ import annotations

import random
from functools import lru_cache

from core.harness.models import SKILL_NAME_RE, Harness
from core.hsa.mapping import SurfaceMapping
from core.hsa.names import tagged_name
from core.hsa.references import used_names
from core.hsa.renames import Renames
from core.hsa.transform import Bank, Dimension, Skip, transform
from core.hsa.transforms.common import pick_fresh, rename_or_skip, shuffled, skill_role

MAX_NAME = 64


def _subset(rng: random.Random, items: list[str]) -> list[str]:
    """At least half of `items` (at least one), in their original order."""
    k = rng.randint((len(items) + 1) // 2, len(items))
    chosen = set(rng.sample(items, k))
    return [i for i in items if i in chosen]


@lru_cache(maxsize=8192)
def _valid_skill_name(name: str) -> bool:
    """Cached: every call checks a whole bank list of candidates."""

    return bool(SKILL_NAME_RE.match(name)) and "--" not in name and len(name) <= MAX_NAME


def _rename(harness: Harness, renames: dict[str, str]) -> tuple[Harness, SurfaceMapping]:
    out = rename_or_skip(harness, Renames(skills=renames))
    return out, SurfaceMapping(skills=renames)


@transform("skill_rename_semantic", Dimension.SKILL_IDS)
def skill_rename_semantic(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Rename at least half of the skills whose role has bank synonyms to one of them
    (`product-qa` -> e.g. `item-facts-desk`)."""
    table = bank.section("skills").get("names", {})
    eligible = [s.name for s in harness.skills if table.get(skill_role(s) or "")]
    if not eligible:
        raise Skip("no skill has a role with synonyms in the bank")
    used = used_names(harness)
    roles = {s.name: skill_role(s) or "" for s in harness.skills}
    renames: dict[str, str] = {}
    for name in _subset(rng, eligible):
        options = [n for n in table[roles[name]] if _valid_skill_name(n)]
        new = pick_fresh(rng, options, used, exclude=name)
        if new is not None:
            renames[name] = new
    if not renames:
        raise Skip("every bank synonym is already in use")
    return _rename(harness, renames)


@transform("skill_rename_opaque", Dimension.SKILL_IDS)
def skill_rename_opaque(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Rename at least half of the skills to opaque ids `<prefix>-<4 hex>` (`zqk-7f3a`): the
    name says nothing, so the model must read the descriptions."""
    if not harness.skills:
        raise Skip("the harness has no skills")
    prefixes = bank.section("skills").get("opaque_prefixes", [])
    if not prefixes:
        raise Skip("the bank has no opaque prefixes")
    prefix = rng.choice(prefixes)
    used = used_names(harness)
    renames: dict[str, str] = {}
    for name in _subset(rng, [s.name for s in harness.skills]):
        new = tagged_name(rng, prefix, "-", used, valid=_valid_skill_name)
        if new is not None:
            renames[name] = new
    if not renames:
        raise Skip("no fresh opaque id found")
    return _rename(harness, renames)


STYLE_FORMS = ("prefix", "suffix", "numbered", "kind")


@transform("skill_name_style", Dimension.SKILL_IDS)
def skill_name_style(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Restyle every skill name with one naming convention, as an operator might: a bank
    prefix (`kit-product-qa`), a bank suffix (`product-qa-recipe`), a two-digit position
    (`01-product-qa`) or a bank tag of the skill's kind (`tactic-coupon-push`)."""
    if not harness.skills:
        raise Skip("the harness has no skills")
    section = bank.section("skills")
    affixes = section.get("affixes", {})
    tags = section.get("kind_tags", {})
    forms = [
        f
        for f in STYLE_FORMS
        if (f == "prefix" and affixes.get("prefixes"))
        or (f == "suffix" and affixes.get("suffixes"))
        or f == "numbered"
        or (f == "kind" and tags.get("reply") and tags.get("strategy"))
    ]
    form = rng.choice(forms)
    word = ""
    if form == "prefix":
        word = rng.choice(affixes["prefixes"])
    elif form == "suffix":
        word = rng.choice(affixes["suffixes"])
    kind_words = {k: rng.choice(tags[k]) for k in ("reply", "strategy")} if form == "kind" else {}
    used = used_names(harness)
    renames: dict[str, str] = {}
    for position, skill in enumerate(harness.skills, start=1):
        if form == "prefix":
            new = f"{word}-{skill.name}"
        elif form == "suffix":
            new = f"{skill.name}-{word}"
        elif form == "numbered":
            new = f"{position:02d}-{skill.name}"
        else:
            new = f"{kind_words[skill.kind.value]}-{skill.name}"
        if _valid_skill_name(new) and new.casefold() not in used:
            used.add(new.casefold())
            renames[skill.name] = new
    if not renames:
        raise Skip(f"no skill name can take the {form} form")
    return _rename(harness, renames)


@transform("skill_index_order", Dimension.SKILL_IDS)
def skill_index_order(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Shuffle the skill list, i.e. the order of the skill index in the prompt. No name
    changes, so the mapping is the identity."""
    if len({s.name for s in harness.skills}) < 2:
        raise Skip("fewer than two skills to reorder")
    skills = shuffled(rng, harness.skills)
    return harness.model_copy(update={"skills": skills}), SurfaceMapping()


@transform("skill_loader_rename", Dimension.SKILL_IDS)
def skill_loader_rename(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Rename the built-in skill loader (`load_skill` -> e.g. `open_playbook`); templates that
    use `${load_skill_tool}` follow by themselves, literal mentions are rewritten."""
    if not harness.skills:
        raise Skip("the harness has no skills, so the loader is never shown")
    options = bank.section("skills").get("loader_names", [])
    old = harness.settings.load_skill_tool
    new = pick_fresh(rng, options, used_names(harness), exclude=old)
    if new is None:
        raise Skip("no fresh loader name in the bank")
    out = rename_or_skip(harness, Renames(loader=new))
    return out, SurfaceMapping(load_skill_tool=(old, new))
