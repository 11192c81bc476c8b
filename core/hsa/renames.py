"""Renames applied to a whole harness: tool, parameter, skill and loader names.

`apply_renames` renames names, `binding_args`, role stamps, every text field
(`core.hsa.references.Renamer`), hook matchers and hook schemas, and raises `RenameError`
where it cannot do so safely (a hook matcher whose meaning would change, a Python hook whose
source names a renamed thing): a transform turns that into `Skip`, never a silently wrong
harness."""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from core.harness.models import (
    Harness,
    Hook,
    HookKind,
    PromptPipeline,
    PromptSection,
    Settings,
    Skill,
    Tool,
    matcher_matches,
)
from core.hsa.build import Edit, assemble, harness_memo, memo
from core.hsa.names import name_words
from core.hsa.references import (
    DISTRACTOR_KEY,
    ROLE_KEY,
    Renamer,
    _collect,
    _harness_parts,
    harness_values,
)
from core.hsa.schema_text import map_schema_text, map_strings, rename_properties


class RenameError(ValueError):
    """A rename that cannot be applied without changing what the harness means."""


@dataclass
class Renames:
    """What `apply_renames` renames, keyed by the input harness's names."""

    tools: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict[str, str]] = field(default_factory=dict)
    """tool (input name) -> {parameter -> new parameter}."""
    skills: dict[str, str] = field(default_factory=dict)
    loader: str | None = None
    """New name of the skill loader (settings.load_skill_tool)."""

    def text_names(self, harness: Harness) -> dict[str, str]:
        """One old -> new table for the text, or RenameError when a name would need two
        different rewrites (a parameter renamed in one tool but kept or renamed otherwise in
        another: prose cannot say which tool it means)."""
        names: dict[str, str] = {}

        def add(old: str, new: str, what: str) -> None:
            if old in names and names[old] != new:
                raise RenameError(
                    f"{what} {old!r} would be renamed to both {names[old]!r} and {new!r}"
                )
            names[old] = new

        for old, new in self.tools.items():
            add(old, new, "tool")
        for old, new in self.skills.items():
            add(old, new, "skill")
        if self.loader is not None:
            add(harness.settings.load_skill_tool, self.loader, "skill loader")
        params: dict[str, str] = {}
        for renames in self.params.values():
            for old, new in renames.items():
                if params.setdefault(old, new) != new:
                    raise RenameError(f"parameter {old!r} renamed differently in two tools")
        for tool in harness.tools:
            props = tool.parameters.get("properties", {})
            renames = self.params.get(tool.name, {})
            for old, new in params.items():
                if old in props and renames.get(old) != new:
                    raise RenameError(
                        f"parameter {old!r} is renamed in some tools but not in {tool.name!r}"
                    )
        for old, new in params.items():
            add(old, new, "parameter")
        return {o: n for o, n in names.items() if o != n}


def apply_renames(harness: Harness, renames: Renames) -> Harness:
    """`harness` with the renames applied everywhere (see the module doc). Renamed skills get
    `metadata.role` = their original name unless they have a role (or are distractors), and
    renamed parameters keep their binding's name through `binding_args`. Raises RenameError
    (or a pydantic ValidationError / FieldValueError, e.g. a name clash) when the result would
    not hold.

    Only components that mention an old name (a substring test on the component's memoised
    text, see `_blob`) are copied and rewritten; the others are shared with the input. The
    result is memoised on the input harness (the same renames of the same harness, e.g. a
    naming style applied to the original, give the same variant object: harnesses are
    values); a failure is not."""
    key = (
        "renamed",
        tuple(sorted(renames.tools.items())),
        tuple(sorted((t, tuple(sorted(p.items()))) for t, p in renames.params.items())),
        tuple(sorted(renames.skills.items())),
        renames.loader,
    )
    parts = _harness_parts(harness)
    return harness_memo(key, harness, parts, lambda: _apply_renames(harness, renames))


def _apply_renames(harness: Harness, renames: Renames) -> Harness:
    names = renames.text_names(harness)
    renamer = Renamer(names, harness_values(harness))
    for hook in harness.hooks:
        if hook.source and renamer.find(hook.source):
            raise RenameError(f"python hook {hook.name!r} names {renamer.find(hook.source)[0]!r}")
    text = renamer.text
    settings = harness.settings
    setting_changes: dict[str, Any] = {}
    if renames.loader is not None:
        setting_changes["load_skill_tool"] = renames.loader
    reminder_format = text(settings.reminder_format)
    if reminder_format != settings.reminder_format:
        setting_changes["reminder_format"] = reminder_format
    if setting_changes:
        settings = Settings.model_validate({**_model_fields(settings), **setting_changes})
    return assemble(
        harness,
        settings=settings,
        prompt=_renamed_prompt(harness.prompt, text),
        skills=[_renamed_skill(s, renames, names, renamer) for s in harness.skills],
        tools=[_renamed_tool(t, renames, renamer) for t in harness.tools],  # schema edits
        hooks=_renamed_hooks(harness, names, renamer),
    )


def _model_fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in type(obj).model_fields}


def _renamed_prompt(prompt: PromptPipeline, text: Callable[[str], str]) -> PromptPipeline:
    variables = {k: text(v) for k, v in prompt.variables.items()}
    sections: list[PromptSection] = []
    for section in prompt.sections:
        title, template = text(section.title), text(section.template)
        if title == section.title and template == section.template:
            sections.append(section)
        else:
            sections.append(section.model_copy(update={"title": title, "template": template}))
    if variables == prompt.variables and all(
        a is b for a, b in zip(sections, prompt.sections, strict=True)
    ):
        return prompt
    return prompt.model_copy(update={"variables": variables, "sections": sections})


def _mentions(blob: str, renamer: Renamer) -> bool:
    """Whether the component whose `_blob` is `blob` may need rewriting. A name with a
    character that JSON escapes could hide in the blob's JSON part, so it always counts."""
    return renamer.unplain or any(name in blob for name in renamer.names)


def _blob(component: Skill | Tool | Hook) -> str:
    """Every string of a component that `apply_renames` may rewrite or that names it, in one
    text (JSON for schemas and params: keys and values), memoised on the component."""
    if isinstance(component, Skill):
        skill = component
        keys: tuple[object, ...] = (
            skill.name,
            skill.description,
            skill.body,
            skill.allowed_tools,
        )
        texts = (skill.name, skill.description, skill.body, skill.allowed_tools or "")
        return memo("blob", skill, keys, lambda: "\n".join(texts))
    if isinstance(component, Tool):
        tool = component

        def of_tool() -> str:
            return "\n".join(
                (
                    tool.name,
                    tool.description,
                    json.dumps(tool.parameters, ensure_ascii=False, default=str),
                    json.dumps(tool.annotations, ensure_ascii=False, default=str),
                )
            )

        keys = (tool.name, tool.description, tool.parameters, tool.annotations)
        return memo("blob", tool, keys, of_tool)
    hook = component

    def of_hook() -> str:
        params = json.dumps(hook.params, ensure_ascii=False, default=str)
        return "\n".join((hook.matcher, hook.reminder, params, hook.source or ""))

    return memo("blob", hook, (hook.matcher, hook.reminder, hook.params, hook.source), of_hook)


def _renamed_skill(
    skill: Skill, renames: Renames, names: Mapping[str, str], renamer: Renamer
) -> Skill | Edit:
    new_name = renames.skills.get(skill.name)
    if new_name is None and not _mentions(_blob(skill), renamer):
        return skill
    out: dict[str, Any] = {}
    if new_name is not None:
        out["name"] = new_name
        meta = dict(skill.metadata)
        if ROLE_KEY not in meta and DISTRACTOR_KEY not in meta:
            meta[ROLE_KEY] = skill.name
        out["metadata"] = meta
    out["description"] = renamer.text(skill.description)
    out["body"] = renamer.text(skill.body)
    if skill.allowed_tools:
        out["allowed_tools"] = " ".join(names.get(t, t) for t in skill.allowed_tools.split())
    out = {k: v for k, v in out.items() if v != getattr(skill, k)}
    return Edit(skill, out) if out else skill


def _renamed_tool(tool: Tool, renames: Renames, renamer: Renamer) -> Tool | Edit:
    params = renames.params.get(tool.name, {})
    new_name = renames.tools.get(tool.name, tool.name)
    if new_name == tool.name and not params and not _mentions(_blob(tool), renamer):
        return tool
    text = renamer.text
    schema = tool.parameters
    if any(text(t) != t for t in _schema_texts(tool)):
        schema = map_schema_text(schema, text)
    if params:
        schema = rename_properties(schema, params)
        schema = _retitled_params(schema, tool.parameters, params)
    changes: dict[str, Any] = {}
    if new_name != tool.name:
        changes["name"] = new_name
        title = schema.get("title")
        followed = follow_title(title, tool.name, new_name) if isinstance(title, str) else None
        if followed is not None:
            schema = {**schema, "title": followed}
        if tool.title is not None:
            followed = follow_title(tool.title, tool.name, new_name)
            if followed is not None and followed != tool.title:
                changes["title"] = followed
    description = text(tool.description)
    if description != tool.description:
        changes["description"] = description
    if schema is not tool.parameters:
        changes["parameters"] = schema
    if tool.annotations:
        annotations = map_strings(tool.annotations, text)
        if not _same(annotations, tool.annotations):
            changes["annotations"] = annotations
    binding_args: dict[str, str] = {}
    for prop in tool.parameters.get("properties", {}):
        target = tool.binding_args.get(prop, prop)
        new = params.get(prop, prop)
        if new != target:
            binding_args[new] = target
    if binding_args != tool.binding_args:
        changes["binding_args"] = binding_args
    return Edit(tool, changes) if changes else tool


def _title_styles(name: str) -> list[str]:
    """The titles a schema generator or a person derives from a name, most literal first:
    `context_lines` -> `context_lines`, `Context Lines`, `Context lines`, `context lines`,
    `ContextLines`."""
    words = name_words(name) or [name]
    spaced = " ".join(words)
    return [
        name,
        " ".join(w[:1].upper() + w[1:] for w in words),
        spaced[:1].upper() + spaced[1:],
        spaced,
        "".join(w[:1].upper() + w[1:] for w in words),
    ]


def follow_title(title: str, old: str, new: str) -> str | None:
    """A JSON-Schema / MCP `title` that is derived from the name `old` (`Context Lines` for
    `context_lines`), derived the same way from `new` (`Wkj Ba4` for `wkj_ba4`); None when the
    title is not derived from `old` (a free title such as "Lines of context" stays as written).
    Renaming back derives the original title again, so a variant's inverse rename restores
    it."""
    for style, derived in enumerate(_title_styles(old)):
        if title == derived:
            return _title_styles(new)[style]
    return None


def _retitled_params(
    schema: dict[str, Any], original: dict[str, Any], params: Mapping[str, str]
) -> dict[str, Any]:
    """`schema` (properties already renamed) with each renamed property's `title` following
    its rename where the original title was derived from the old name (`follow_title`)."""
    props = schema.get("properties")
    before = original.get("properties")
    if not isinstance(props, dict) or not isinstance(before, dict):
        return schema
    out = dict(props)
    for old, new in params.items():
        source = before.get(old)
        if not isinstance(source, dict) or not isinstance(source.get("title"), str):
            continue
        followed = follow_title(source["title"], old, new)
        if followed is not None and isinstance(out.get(new), dict):
            out[new] = {**out[new], "title": followed}
    return {**schema, "properties": out}


def _schema_texts(tool: Tool) -> list[str]:
    """The description / title / $comment texts of a tool's schema (memoised)."""

    def collect() -> list[str]:
        texts: list[str] = []
        map_schema_text(tool.parameters, _collect(texts))
        return texts

    return memo("schema-texts", tool, (tool.parameters,), collect)


def _renamed_hooks(
    harness: Harness, names: Mapping[str, str], renamer: Renamer
) -> list[Hook | Edit]:
    old_tools = [t.name for t in harness.tools] + [harness.settings.load_skill_tool]
    tools_renamed = any(t in names for t in old_tools)
    params_table: dict[str, str] | None = None
    out: list[Hook | Edit] = []
    for hook in harness.hooks:
        if hook.matcher != "*" and tools_renamed:
            matcher = renamer.regex(hook.matcher)
            # an unchanged matcher can only change its verdict on the renamed tools
            pairs = tuple(
                (t, names.get(t, t)) for t in old_tools if matcher != hook.matcher or t in names
            )
            _check_matcher(hook.matcher, matcher, pairs)
        if not _mentions(_blob(hook), renamer):
            out.append(hook)
            continue
        new: dict[str, Any] = {"reminder": renamer.text(hook.reminder), "matcher": hook.matcher}
        if hook.matcher != "*":
            new["matcher"] = renamer.regex(hook.matcher)
        new["params"] = hook.params
        if hook.kind is HookKind.VALIDATE_TOOL_ARGS and "schema" in hook.params:
            if params_table is None:
                params_table = {o: n for o, n in names.items() if _is_param(harness, o)}
            schema = map_schema_text(hook.params["schema"], renamer.text)
            new["params"] = {**hook.params, "schema": rename_properties(schema, params_table)}
        if _same(new["params"], hook.params):
            new["params"] = hook.params
        unchanged = new["reminder"] == hook.reminder and new["matcher"] == hook.matcher
        out.append(hook if unchanged and new["params"] is hook.params else Edit(hook, new))
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal data *and* the same order of every dict's keys (a reordered schema is a change,
    though `==` says the dicts are equal), and the same types (`1` is not `True`)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _is_param(harness: Harness, name: str) -> bool:
    return any(name in t.parameters.get("properties", {}) for t in harness.tools)


@lru_cache(maxsize=4096)
def _check_matcher(old: str, new: str, tools: tuple[tuple[str, str], ...]) -> None:
    """RenameError unless the renamed matcher `new` matches the renamed tools exactly where
    `old` matched the old names (`tools`: (old name, new name)). A list of names is checked
    without compiling a regex."""
    for tool, renamed in tools:
        before = matcher_matches(old, tool)
        after = matcher_matches(new, renamed)
        if before != after:
            raise RenameError(f"hook matcher {old!r} would change meaning for tool {tool!r}")
