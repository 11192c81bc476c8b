"""HSA transforms, dimension 2: skill content.

None of these renames anything, so every mapping is the identity: the skill a task needs is the
same skill with other words. Identifiers, numbers and code stay as they are: phrase banks only
touch prose (`core.hsa.phrases.split_code` keeps backtick spans, `{...}` JSON examples and
`${variables}` out of reach) and their keys and alternatives carry no identifiers. Bank texts
may name things through placeholders resolved against the harness being transformed:
`{skill:<role>}` (the current name of the skill with that role) and `{tool:<binding>}` (the
current name of the tool with that binding), so a paraphrase after a rename stays correct.

Bank section `skills` (resources/hsa/<bank>/skills.yaml):
- `descriptions`: role -> whole-description paraphrases (same scope, other words);
- `phrases`: original phrase -> alternatives, applied to descriptions and bodies;
- `prose`: {ordered: [[first, next..., last], ...], lead_ins: [...]} connectors for turning a
  numbered list into prose;
- `distractors`: [{name, description, body}] strategy skills no task needs.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from core.harness.models import Harness, SkillKind
from core.hsa.build import changed, unchanged
from core.hsa.domain import LIVE_ROOM, harness_domain
from core.hsa.mapping import SurfaceMapping
from core.hsa.markdown_lists import ListBlock, render_list, replace_blocks
from core.hsa.phrases import fill_placeholders, replace_phrases
from core.hsa.references import DISTRACTOR_KEY, used_names
from core.hsa.transform import Bank, Dimension, Skip, transform
from core.hsa.transforms.common import assemble_or_skip, shuffled, skill_role

PHRASE_PROBABILITY = 0.75
"""Chance that one occurrence of a bank phrase is paraphrased."""
DESCRIPTION_PROBABILITY = 0.7
"""Chance that a skill with bank descriptions for its role gets a whole new description."""
MAX_DESCRIPTION = 1024


def resolver(harness: Harness) -> Callable[[str, str], str | None]:
    """Resolves `{skill:<role>}` and `{tool:<binding>}` placeholders against `harness`."""
    skills = {skill_role(s): s.name for s in harness.active_skills}
    tools: dict[str, str] = {}
    for tool in harness.active_tools:
        tools.setdefault(tool.binding, tool.name)

    def resolve(kind: str, key: str) -> str | None:
        if kind == "skill":
            return skills.get(key)
        if kind == "tool":
            return tools.get(key)
        if kind == "loader":
            return harness.settings.load_skill_tool
        return None

    return resolve


def _with_bodies(harness: Harness, rewrite: Callable[[str], str], why: str) -> Harness:
    """`harness` with every skill body rewritten by `rewrite` (in skill order); Skip(`why`)
    when no body changes."""
    skills = [changed(s, body=rewrite(s.body)) for s in harness.skills]
    if unchanged(harness.skills, skills):
        raise Skip(why)
    return assemble_or_skip(harness, skills=skills)


@transform("skill_paraphrase_descriptions", Dimension.SKILL_CONTENT)
def skill_paraphrase_descriptions(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Reword the skill descriptions the skill index shows: a skill whose role has bank
    descriptions usually gets a whole new one (same scope and examples of use); the others,
    and the rest of the time, get phrase-level paraphrases."""
    section = bank.section("skills")
    table = section.get("descriptions", {})
    phrases = section.get("phrases", {})
    resolve = resolver(harness)
    skills: list[Any] = []
    for source in harness.skills:
        options = table.get(skill_role(source) or "", [])
        text: str | None = None
        if options and rng.random() < DESCRIPTION_PROBABILITY:
            candidates = [fill_placeholders(o, resolve) for o in options]
            usable = [c for c in candidates if c and len(c) <= MAX_DESCRIPTION]
            text = rng.choice(usable) if usable else None
        if text is None:
            text = replace_phrases(source.description, phrases, rng, PHRASE_PROBABILITY)
        skills.append(changed(source, description=text) if len(text) <= MAX_DESCRIPTION else source)
    if unchanged(harness.skills, skills):
        raise Skip("no skill description has a bank paraphrase")
    return assemble_or_skip(harness, skills=skills), SurfaceMapping()


@transform("skill_paraphrase_bodies", Dimension.SKILL_CONTENT)
def skill_paraphrase_bodies(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Reword skill bodies phrase by phrase from the bank (headings, rules, example labels);
    code, identifiers, JSON examples and numbers are never touched."""
    phrases = bank.section("skills").get("phrases", {})
    out = _with_bodies(
        harness,
        lambda body: replace_phrases(body, phrases, rng, PHRASE_PROBABILITY),
        "no skill body has a bank phrase",
    )
    return out, SurfaceMapping()


# ----------------------------------------------------------------------------- lists


def _item_endings(items: list[list[str]]) -> tuple[str, str] | None:
    """(inner, last) ending punctuation when the items read as one sentence ("a;", "b;", "c.")
    so a reordering can put the punctuation back in place; None otherwise."""
    if len(items) < 2:
        return None
    heads = [i[0].rstrip() for i in items]
    if all(h.endswith(";") for h in heads[:-1]) and heads[-1].endswith("."):
        return ";", "."
    return None


def _with_ending(line: str, ending: str) -> str:
    stripped = line.rstrip()
    return stripped[:-1] + ending if stripped[-1:] in (";", ".") else stripped


def _shuffle_nested(rng: random.Random, lines: list[str]) -> list[str]:
    if not lines:
        return lines
    return _shuffle_lists("\n".join(lines), rng).split("\n")


def _shuffle_lists(text: str, rng: random.Random) -> str:
    def rewrite(block: ListBlock) -> list[str] | None:
        items = [[item[0], *_shuffle_nested(rng, item[1:])] for item in block.items]
        if not block.ordered and len(items) >= 2:
            endings = _item_endings(items)
            items = shuffled(rng, items)
            if endings is not None:
                for n, item in enumerate(items):
                    last = n == len(items) - 1
                    item[0] = _with_ending(item[0], endings[1] if last else endings[0])
        bullet = _bullet(text, block)
        return render_list(ListBlock(block.start, block.end, block.ordered, items, block.indent),
                           block.ordered, bullet)  # fmt: skip

    return replace_blocks(text, rewrite)


def _bullet(text: str, block: ListBlock) -> str:
    line = text.split("\n")[block.start].lstrip()
    return line[:1] if line[:1] in "-*+" else "-"


@transform("skill_bullet_shuffle", Dimension.SKILL_CONTENT)
def skill_bullet_shuffle(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Reorder the items of bulleted (order-free) lists in skill bodies, nested ones too;
    numbered lists are steps and keep their order. Item punctuation ("a;" ... "c.") is put
    back in place."""
    out = _with_bodies(
        harness,
        lambda body: _shuffle_lists(body, rng),
        "no skill body has a bulleted list of two or more items",
    )
    return out, SurfaceMapping()


def _sentence(text: str, lower: bool = False) -> str:
    """A list item as a sentence: ends with . ! ? or : (";" becomes "."); with `lower` the
    first letter is lowercased unless the first word is an acronym, a size or code."""
    text = text.rstrip()
    if text.endswith(";"):
        text = text[:-1] + "."
    elif text[-1:] not in (".", "!", "?", ":"):
        text += "."
    if lower:
        first = text.split(" ", 1)[0]
        if first[:1].isupper() and first[1:].islower() and first.isalpha():
            text = text[:1].lower() + text[1:]
    return text


def _prose(block: ListBlock, rng: random.Random, connectors: Sequence[Sequence[str]]) -> str:
    heads = [item[0] for item in block.items]
    if block.ordered and connectors:
        words = list(rng.choice(connectors))
        parts = []
        for n, head in enumerate(heads):
            if n == 0:
                word = words[0]
            elif n == len(heads) - 1:
                word = words[-1]
            else:
                word = words[1 + (n - 1) % max(1, len(words) - 2)] if len(words) > 2 else words[0]
            parts.append(f"{word} {_sentence(head, lower=True)}")
        return block.indent + " ".join(parts)
    return block.indent + " ".join(_sentence(_capitalize(head)) for head in heads)


def _capitalize(text: str) -> str:
    """Upper-case the first letter when the first word is a plain lowercase word (never a
    name such as `product-qa` or `check_stock`, which are case-sensitive)."""
    first = text.split(" ", 1)[0]
    if first.isalpha() and first.islower():
        return text[:1].upper() + text[1:]
    return text


def _reformat(text: str, rng: random.Random, connectors: Sequence[Sequence[str]]) -> str:
    def rewrite(block: ListBlock) -> list[str] | None:
        # A numbered list is steps: it stays numbered (another numbering style) or becomes
        # ordered prose, never bullets, which a later skill_bullet_shuffle would reorder.
        options = ["numbering"] if block.ordered else ["numbered", "marker"]
        if (
            block.flat
            and len(block.items) >= 2
            and not any(h[0].rstrip().endswith(":") for h in block.items)
        ):
            options.append("prose")
        choice = rng.choice(options)
        if choice == "prose":
            return [_prose(block, rng, connectors)]
        if choice == "marker":
            current = _bullet(text, block)
            return render_list(block, False, "*" if current != "*" else "-")
        if choice == "numbering":
            paren = text.split("\n")[block.start].lstrip().split(" ", 1)[0].endswith(")")
            return render_list(block, True, number_end="." if paren else ")")
        return render_list(block, True)

    return replace_blocks(text, rewrite)


@transform("skill_list_format", Dimension.SKILL_CONTENT)
def skill_list_format(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Change how skill bodies lay out lists: bullets -> numbered, another bullet marker or
    numbering style (`1.` <-> `1)`), or a one-line list as prose. Numbered lists are steps and
    keep their order: they never become bullets (which skill_bullet_shuffle reorders), and as
    prose they keep it through bank connectors such as "To start, ... Next, ... Last, ..."."""
    connectors = bank.section("skills").get("prose", {}).get("ordered", [])
    out = _with_bodies(
        harness, lambda body: _reformat(body, rng, connectors), "no skill body has a list"
    )
    return out, SurfaceMapping()


# ----------------------------------------------------------------------------- distractors

_NAME_OK = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@transform("skill_distractors", Dimension.SKILL_CONTENT)
def skill_distractors(
    harness: Harness, rng: random.Random, bank: Bank
) -> tuple[Harness, SurfaceMapping]:
    """Add one to three strategy skills from the bank that no task needs (a giveaway draw, a
    guest introduction...), at random places in the index. They carry no role (metadata
    `distractor: "true"`), so graders count loading one as irrelevant."""
    if not harness.active_skills:
        raise Skip("the harness has no skills, so no skill index to add distractors to")
    pool = bank.section("skills").get("distractors", [])
    used = used_names(harness)
    resolve = resolver(harness)
    fresh = []
    for entry in pool:
        name = str(entry.get("name", ""))
        if not _NAME_OK.match(name) or name.casefold() in used:
            continue
        description = fill_placeholders(str(entry.get("description", "")), resolve)
        body = fill_placeholders(str(entry.get("body", "")), resolve)
        if description and body is not None and len(description) <= MAX_DESCRIPTION:
            fresh.append((name, description, body))
    own = harness_domain(harness) != LIVE_ROOM
    disabled = [i for i, s in enumerate(harness.skills) if not s.enabled] if own else []
    if not fresh and not disabled:
        if own:
            raise Skip(
                f"no distractor skills for a harness outside the live room: the {bank.label()} "
                "bank has no `distractors` table in skills.yaml (write one in a user bank, "
                "docs/hsa-banks.md) and the harness has no disabled skill"
            )
        raise Skip("no distractor skill in the bank is free to add")
    options: list[tuple[str, str, str] | int] = [*fresh, *disabled]
    chosen = rng.sample(options, min(len(options), rng.randint(1, 3)))
    skills: list[Any] = list(harness.skills)
    for pick in chosen:
        if isinstance(pick, int):
            source = harness.skills[pick]
            meta = {**source.metadata, DISTRACTOR_KEY: "true"}
            skills[pick] = source.model_copy(update={"enabled": True, "metadata": meta})
    for pick in chosen:
        if isinstance(pick, int):
            continue
        name, description, body = pick
        skill = {
            "name": name,
            "description": description,
            "body": body,
            "kind": SkillKind.STRATEGY,
            "metadata": {DISTRACTOR_KEY: "true"},
        }
        skills.insert(rng.randint(0, len(skills)), skill)
    return assemble_or_skip(harness, skills=skills), SurfaceMapping()
