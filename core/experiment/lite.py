"""A short-prompt copy of a harness for CPU-sized experiments (the `lite` harness mode).

The demo harness renders a ~2.8k-token system prompt (the tool block alone is ~1.5k tokens).
On a 2-core CPU one prefill of that prompt took 10-70 s under load, and SFT pays for it on
every row, so a replication that trains and evaluates on the full prompt cannot fit a CPU
budget. Training on the trainer's `compact` system prompt while serving the full one would
measure a train/serve mismatch instead of the method.

`lite_harness` keeps the harness's *structure* — every skill, tool (name, binding, parameter
names, types, enums, required), hook, setting, prompt section (ids, titles, order) — and cuts
its *text*: the first sentence of each prompt template, skill description and tool
description, a skill body reduced to its title and first paragraph, parameter schemas without
descriptions and constraints (types, enums and required kept). The rendered prompt is
~2.5x shorter (1.1k tokens instead of 2.8k with the demo model's tokenizer), and the same
transform applied to an edited harness keeps the edit (renamed tools, moved sections, a new
hook), so a harness-edit test still tests the edit. Data generation, training, serving and
evaluation all use the lite harness itself, so what is trained is what is served.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from core.harness.models import Harness, PromptSection, SectionKind, Skill, Tool
from core.sim.catalog import load_catalog
from core.sim.models import Split, TaskCategory
from core.sim.surface import HarnessSurface

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(])")
_KEEP_KEYS = frozenset({"type", "properties", "required", "enum", "items"})


def first_sentence(text: str, max_chars: int = 160) -> str:
    """The first sentence of the first line with words (list markers dropped), cut at a clause
    boundary (or a word) to at most `max_chars`."""
    line = next((ln.strip() for ln in text.strip().splitlines() if re.search(r"\w{2}", ln)), "")
    line = re.sub(r"^(?:[-*]|\d+[.)])\s+", "", line)
    sentence = _SENTENCE_END.split(line, maxsplit=1)[0]
    if len(sentence) > max_chars:
        head = sentence[:max_chars]
        cut = max(head.rfind(":"), head.rfind(";"), head.rfind(","), head.rfind(" ("))
        head = head[:cut] if cut > max_chars // 3 else head.rsplit(" ", 1)[0]
        sentence = head.rstrip(",;: ") + "."
    return sentence


def _lite_schema(schema: Any) -> Any:
    """A JSON Schema with only types, properties, required, enums and items."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key not in _KEEP_KEYS:
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: _lite_schema(sub) for name, sub in value.items()}
            else:
                out[key] = _lite_schema(value)
        return out
    if isinstance(schema, list):
        return [_lite_schema(item) for item in schema]
    return schema


def _lite_body(body: str) -> str:
    """A skill body's title line and its first paragraph of instructions."""
    paragraphs = [p.strip() for p in body.strip().split("\n\n") if p.strip()]
    if not paragraphs:
        return body
    head = paragraphs[0]
    if head.startswith("#") and len(paragraphs) > 1:
        return f"{head}\n\n{paragraphs[1]}"
    return head


def _lite_section(section: PromptSection) -> PromptSection:
    if section.kind in (SectionKind.SKILL_INDEX, SectionKind.TOOL_BLOCK):
        return section.model_copy(update={"template": ""})
    sentence = first_sentence(section.template, 160)
    # A sentence that only introduces a list ("...two things:") says nothing on its own.
    return section.model_copy(
        update={"template": sentence, "enabled": section.enabled and not sentence.endswith(":")}
    )


def _lite_skill(skill: Skill) -> Skill:
    return skill.model_copy(
        update={
            "description": first_sentence(skill.description, 70),
            "body": _lite_body(skill.body),
        }
    )


def _lite_tool(tool: Tool) -> Tool:
    return tool.model_copy(
        update={
            "description": first_sentence(tool.description, 60),
            "parameters": _lite_schema(tool.parameters),
        }
    )


def lite_harness(
    harness: Harness, *, max_turns: int | None = None, suffix: str = "-lite"
) -> Harness:
    """The short-text copy of `harness` (module doc); `max_turns` caps model calls per request."""
    settings = harness.settings
    if max_turns is not None:
        settings = settings.model_copy(update={"max_turns": min(settings.max_turns, max_turns)})
    prompt = harness.prompt.model_copy(
        update={"sections": [_lite_section(s) for s in harness.prompt.sections]}
    )
    return harness.model_copy(
        update={
            "name": harness.name + suffix,
            "settings": settings,
            "prompt": prompt,
            "skills": [_lite_skill(s) for s in harness.skills],
            "tools": [_lite_tool(t) for t in harness.tools],
        }
    )


def category_needs(categories: Sequence[TaskCategory]) -> tuple[set[str], set[str]]:
    """(skill roles, tool bindings) the correct behaviour of these task categories can use:
    required and optional calls and every acceptable reply / strategy role, over the train and
    test tasks of each category (core/sim/expect.py is the one definition of correct)."""
    from core.sim.expect import plan_task  # heavy: jsonschema, regex
    from core.sim.tasks import generate_tasks  # heavy: jsonschema, regex

    catalog = load_catalog()
    roles: set[str] = set()
    bindings: set[str] = set()
    for split in (Split.TRAIN, Split.TEST):
        for task in generate_tasks(split, seed=0, catalog=catalog, categories=list(categories)):
            plan = plan_task(task, catalog)
            roles |= plan.acceptable_roles()
            bindings |= {spec.binding for spec in (*plan.required(), *plan.optional())}
    return roles, bindings


def focus_harness(harness: Harness, categories: Sequence[TaskCategory]) -> Harness:
    """`harness` with only the skills and tools that `categories` can use (the `focus` mode).

    Why: on a 2-core CPU the tool block is most of every training row, and a replication that
    evaluates a few categories gains nothing from schemas no task of theirs calls. Tools are
    kept by *binding* and skills by *role* (core/sim/surface.py), so the same cut applied to
    an edited harness that renamed tools keeps the renamed ones. Hooks, settings and the
    prompt's sections are kept whole: a hook whose matcher names a dropped tool never fires.
    """

    roles, bindings = category_needs(categories)
    surface = HarnessSurface(harness, {}, {}, {})
    keep_skills = {name for role in roles if (name := surface.skill_name(role)) is not None}
    return harness.model_copy(
        update={
            "skills": [s for s in harness.skills if s.name in keep_skills],
            "tools": [t for t in harness.tools if t.binding in bindings],
        }
    )
