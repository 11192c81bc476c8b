"""Property tests of the folder format.

1. Any valid harness (random names from the allowed alphabets, arbitrary Unicode text,
   YAML-special strings, random tool schemas) survives export -> import unchanged, and
   export -> import -> export is byte-identical.
2. Fuzz: whatever is written into any file of a valid folder, import returns a harness or raises
   HarnessError, never another exception.
"""

from __future__ import annotations

import random
import re
import string
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from core.harness import HarnessError, export_folder, folder_files, import_folder
from core.harness.folder import dump_json, dump_yaml, harness_from_files, read_files
from core.harness.models import (
    Harness,
    Hook,
    PromptPipeline,
    PromptSection,
    Settings,
    Skill,
    SkillKind,
    Tool,
    display_name_problem,
)

# ----------------------------------------------------------------------------- text strategies

YAML_SPECIAL = [
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "true",
    "False",
    "null",
    "Null",
    "~",
    "1e3",
    "1.0",
    "1_000",
    "0x1F",
    "0o17",
    "012",
    "+1",
    "-1",
    ".inf",
    "-.nan",
    "2024-01-01",
    "12:30:00",
    "---",
    "...",
    "--- x",
    "- x",
    "? x",
    ": x",
    "#x",
    "x #y",
    "a: b",
    "!tag",
    "!!str x",
    "&anchor",
    "*alias",
    "|",
    ">-",
    "'",
    '"',
    "%YAML",
    "@x",
    "`x",
    "{a: 1}",
    "[1]",
    "<<",
    " lead",
    "trail ",
    "  ",
    "",
    "\n",
    "\n\n",
    "a\n",
    "\na",
    "a\n---\nb",
    "---\nname: x\n---\n",
    "x\r\ny",
    "x\ry",
    "\t",
    "a\tb",
    "\x85",
    "a\x85b",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\x00",
    "\x7f",
    "\\",
    "\\n",
    "=",
    "${x}",
    "$$",
    "</tool_call>",
    "\U0001f600",
    "é",
    "日本語",
]

free_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
special = st.sampled_from(YAML_SPECIAL)
multi_line = st.lists(st.one_of(free_text, special), min_size=2, max_size=5).map("\n".join)
texts = st.one_of(special, free_text, multi_line)
# harness names are one line of text (core.harness.models.display_name_problem)
harness_names = texts.filter(lambda t: display_name_problem(t) is None)
nonblank = texts.filter(lambda t: bool(t.strip()) and len(t) <= 1024)

LOWER = string.ascii_lowercase + string.digits
skill_names = st.lists(st.text(LOWER, min_size=1, max_size=6), min_size=1, max_size=3).map("-".join)
tool_names = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=20)
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,15}", fullmatch=True)
variable_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)


def template(variables: list[str]) -> st.SearchStrategy[str]:
    literal = texts.map(lambda t: t.replace("$", "$$"))
    pieces = (
        st.one_of(literal, st.sampled_from(variables).map(lambda v: "${" + v + "}"))
        if variables
        else literal
    )
    return st.lists(pieces, max_size=4).map("".join)


# ----------------------------------------------------------------------------- model strategies

property_schemas = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "boolean"])},
        optional={"description": texts},
    ),
    st.fixed_dictionaries(
        {"type": st.just("string"), "enum": st.lists(texts, min_size=1, max_size=3, unique=True)}
    ),
    st.fixed_dictionaries(
        {"type": st.just("array"), "items": st.just({"type": "integer", "minimum": 1})},
        optional={"maxItems": st.integers(0, 9)},
    ),
)


@st.composite
def parameter_schemas(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.one_of(identifiers, texts), unique=True, max_size=4))
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: draw(property_schemas) for name in names},
    }
    required = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    if required or draw(st.booleans()):
        schema["required"] = required
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return schema


@st.composite
def skills(draw: st.DrawFn, name: str) -> Skill:
    metadata_keys = texts.filter(lambda k: k not in ("kind", "enabled"))
    return Skill(
        name=name,
        description=draw(nonblank),
        body=draw(st.one_of(texts, st.just("---\nname: fake\n---\n"), st.just(""))),
        kind=draw(st.sampled_from(["reply", "strategy"])),
        enabled=draw(st.booleans()),
        metadata=draw(st.dictionaries(metadata_keys, texts, max_size=3)),
        license=draw(st.none() | texts),
        compatibility=draw(st.none() | texts.filter(lambda t: len(t) <= 500)),
        allowed_tools=draw(st.none() | texts),
    )


@st.composite
def tools(draw: st.DrawFn, name: str) -> Tool:
    return Tool(
        name=name,
        description=draw(texts),
        parameters=draw(parameter_schemas()),
        binding=draw(texts),
        annotations=draw(st.dictionaries(texts, json_values, max_size=3)),
        enabled=draw(st.booleans()),
    )


PY_SOURCE = "def check(event):\n    return {'decision': 'allow'}\n"


@st.composite
def hooks(draw: st.DrawFn, name: str, tool_names: list[str], reply_skill: bool) -> Hook:
    kinds = ["validate_tool_args", "forbidden_claims", "fact_check", "reply_format", "python"]
    kind = draw(st.sampled_from([*kinds, "require_reply_skill"] if reply_skill else kinds))
    event = "before_reply"
    matcher = "*"
    params: dict[str, Any] = {}
    source = None
    if kind == "validate_tool_args":
        event = "before_tool"
        if tool_names and draw(st.booleans()):
            matcher = re.escape(draw(st.sampled_from(tool_names)))
        if draw(st.booleans()):
            params = {"schema": draw(parameter_schemas())}
    elif kind == "forbidden_claims":
        event = draw(st.sampled_from(["before_reply", "on_input"]))
        params = {"patterns": draw(st.lists(texts.map(re.escape), min_size=1, max_size=3))}
    elif kind == "fact_check":
        params = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "ignore_below": st.floats(0, 1e6),
                    "number_pattern": texts.map(re.escape),
                },
            )
        )
    elif kind == "reply_format":
        params = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "max_chars": st.integers(1, 10_000),
                    "forbid_markdown": st.booleans(),
                    "forbid_patterns": st.lists(texts.map(re.escape), max_size=2),
                },
            )
        )
    elif kind == "python":
        event = draw(st.sampled_from(["on_input", "before_tool", "after_tool", "before_reply"]))
        params = draw(st.dictionaries(texts, json_values, max_size=3))
        comment = draw(st.text(string.ascii_letters + string.digits + " ", max_size=20))
        source = f"# {comment}\n{PY_SOURCE}"
    return Hook(
        name=name,
        event=event,
        kind=kind,
        matcher=matcher,
        params=params,
        reminder=draw(texts),
        timeout=draw(st.floats(min_value=1e-3, max_value=300)),
        enabled=draw(st.booleans()),
        task_critical=draw(st.booleans()),
        source=source,
    )


@st.composite
def harnesses(draw: st.DrawFn) -> Harness:
    variables = draw(st.dictionaries(variable_names, texts, max_size=3))
    var_names = [*variables, "load_skill_tool"]
    tool_list = draw(st.lists(tool_names, max_size=4, unique_by=str.casefold))
    loader = draw(tool_names.filter(lambda n: n not in tool_list))
    skill_list = [draw(skills(n)) for n in draw(st.lists(skill_names, unique=True, max_size=4))]
    if skill_list:  # require_reply_skill hooks need an enabled reply skill
        skill_list[0] = skill_list[0].model_copy(update={"kind": SkillKind.REPLY, "enabled": True})
    hook_names = draw(st.lists(identifiers, max_size=4, unique_by=str.casefold))
    section_ids = draw(st.lists(identifiers, min_size=2, max_size=6, unique_by=str.casefold))
    sections = []
    for i, sid in enumerate(section_ids):
        kind = "skill_index" if i == 0 else "tool_block" if i == 1 else "text"
        sections.append(
            PromptSection(
                id=sid,
                title=draw(texts),
                kind=kind,
                template=draw(template(var_names)),
                enabled=True if i < 2 else draw(st.booleans()),
            )
        )
    sections = draw(st.permutations(sections))
    return Harness(
        name=draw(harness_names),
        description=draw(texts),
        settings=Settings(
            max_turns=draw(st.integers(1, 64)),
            retry_budget=draw(st.integers(0, 16)),
            tool_protocol=draw(st.sampled_from(["native", "prompt"])),
            load_skill_tool=loader,
            reminder_role=draw(st.sampled_from(["user", "system", "tool"])),
            reminder_format=draw(texts) + "${reminder}" + draw(texts),
        ),
        prompt=PromptPipeline(
            style=draw(st.sampled_from(["markdown", "xml", "plain", "json"])),
            variables=variables,
            sections=sections,
        ),
        skills=skill_list,
        tools=[draw(tools(n)) for n in tool_list],
        hooks=[draw(hooks(n, tool_list, bool(skill_list))) for n in hook_names],
    )


def encoded(files: dict[str, str]) -> dict[str, bytes]:
    return {rel: text.encode("utf-8") for rel, text in files.items()}


# ----------------------------------------------------------------------------- round trips


@given(harnesses())
def test_round_trip_in_memory(harness: Harness) -> None:
    files = folder_files(harness)
    back = harness_from_files(encoded(files), trust_python_hooks=True)
    assert back == harness
    assert folder_files(back) == files


@settings(max_examples=max(10, settings.default.max_examples // 5))
@given(harnesses())
def test_round_trip_on_disk_is_byte_identical(harness: Harness) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        first, second = Path(tmp) / "first", Path(tmp) / "second"
        export_folder(harness, first)
        back = import_folder(first, trust_python_hooks=True)
        assert back == harness
        export_folder(back, second)
        assert read_files(first) == read_files(second)


@given(st.one_of(special, free_text, multi_line))
def test_yaml_strings_round_trip(text: str) -> None:
    data = {text: text, "nested": {"list": [text, {text: text}]}}
    assert yaml.safe_load(dump_yaml(data)) == data


# ----------------------------------------------------------------------------- fuzzing


def _base_files() -> dict[str, bytes]:
    """A small valid folder with every kind of file, python hook included."""
    harness = Harness(
        name="fuzz",
        prompt=PromptPipeline(
            variables={"brand": "Luma"},
            sections=[
                PromptSection(id="persona", title="Persona", template="You host ${brand}.\n"),
                PromptSection(id="skills", title="Skills", kind="skill_index", template="Load.\n"),
                PromptSection(id="tools", title="Tools", kind="tool_block"),
            ],
        ),
        skills=[
            Skill(name="product-qa", description="Answer product questions.", body="# Q&A\n"),
            Skill(name="coupon-push", description="Offer a coupon.", kind="strategy", body="x\n"),
        ],
        tools=[
            Tool(
                name="check_stock",
                description="Stock.",
                binding="sim.check_stock",
                parameters={
                    "type": "object",
                    "properties": {"link_no": {"type": "integer", "minimum": 1}},
                    "required": ["link_no"],
                },
                annotations={"readOnlyHint": True},
            )
        ],
        hooks=[
            Hook(
                name="skill", event="before_reply", kind="require_reply_skill", reminder="${reason}"
            ),
            Hook(
                name="args",
                event="before_tool",
                kind="validate_tool_args",
                matcher="check_stock",
                params={"schema": {"properties": {"link_no": {"maximum": 999}}}},
            ),
            Hook(
                name="claims",
                event="before_reply",
                kind="forbidden_claims",
                params={"patterns": ["cures?"]},
            ),
            Hook(name="facts", event="before_reply", kind="fact_check", params={"ignore_below": 2}),
            Hook(
                name="length",
                event="before_reply",
                kind="reply_format",
                params={"max_chars": 400},
                task_critical=False,
            ),
            Hook(name="custom", event="after_tool", kind="python", source=PY_SOURCE),
        ],
    )
    return encoded(folder_files(harness))


BASE = _base_files()
BASE_PATHS = sorted(BASE)


def _import_never_crashes(files: dict[str, bytes]) -> None:
    try:
        harness_from_files(files, trust_python_hooks=True)
    except HarnessError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert isinstance(problem.file, str) and problem.file
            assert isinstance(problem.field, str)
            assert isinstance(problem.message, str) and problem.message
        assert str(exc)


def _replace_somewhere(value: Any, rng: random.Random, new: Any) -> Any:
    """`value` with one randomly chosen node (possibly the root) replaced by `new`."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        return {**value, key: _replace_somewhere(value[key], rng, new)}
    if isinstance(value, list) and value and rng.random() < 0.8:
        i = rng.randrange(len(value))
        return [*value[:i], _replace_somewhere(value[i], rng, new), *value[i + 1 :]]
    return new


@given(
    path=st.sampled_from(BASE_PATHS),
    content=st.one_of(st.binary(max_size=200), texts.map(str.encode)),
)
def test_fuzz_random_content(path: str, content: bytes) -> None:
    _import_never_crashes({**BASE, path: content})


@given(
    path=st.sampled_from(BASE_PATHS),
    edits=st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 8), st.one_of(special, free_text)),
        min_size=1,
        max_size=4,
    ),
)
def test_fuzz_text_edits(path: str, edits: list[tuple[int, int, str]]) -> None:
    text = BASE[path].decode("utf-8")
    for position, cut, insert in edits:
        at = position % (len(text) + 1)
        text = text[:at] + insert + text[at + cut :]
    _import_never_crashes({**BASE, path: text.encode("utf-8")})


STRUCTURED = [p for p in BASE_PATHS if p.endswith((".yaml", ".json", "SKILL.md"))]


@given(
    path=st.sampled_from(STRUCTURED),
    new=json_values,
    seed=st.integers(0, 2**32),
)
def test_fuzz_structured_values(path: str, new: Any, seed: int) -> None:
    """Replace one value deep inside a YAML/JSON document with a value of any type."""
    rng = random.Random(seed)
    text = BASE[path].decode("utf-8")
    if path.endswith(".json"):
        changed = dump_json(_replace_somewhere(yaml.safe_load(text), rng, new))
    elif path.endswith(".yaml"):
        changed = dump_yaml(_replace_somewhere(yaml.safe_load(text), rng, new))
    else:
        front, body = text[4:].split("---\n", 1)
        changed = (
            f"---\n{dump_yaml(_replace_somewhere(yaml.safe_load(front), rng, new))}---\n{body}"
        )
    _import_never_crashes({**BASE, path: changed.encode("utf-8")})


@given(
    removed=st.sets(st.sampled_from(BASE_PATHS), max_size=3),
    added=st.dictionaries(
        st.lists(
            st.sampled_from(["prompt", "skills", "tools", "hooks", "x", "a.md", "b.json"]),
            min_size=1,
            max_size=3,
        ).map("/".join),
        st.binary(max_size=50),
        max_size=3,
    ),
)
def test_fuzz_files_added_and_removed(removed: set[str], added: dict[str, bytes]) -> None:
    files = {rel: data for rel, data in BASE.items() if rel not in removed}
    files.update(added)
    _import_never_crashes(files)


def test_base_folder_is_valid() -> None:
    harness_from_files(BASE, trust_python_hooks=True)
