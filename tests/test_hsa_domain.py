"""HSA that respects the domain (issue 20, item 4), on a harness from another domain.

tests/fixtures/support_desk is a retail customer-service agent: six tools bound `python:...`
(one disabled), three skills (one named `xlsx`, whose body names `file.xlsx` and
`npm install -g xlsx`) and a disabled one. On it:

- no variant carries a string of the shipped banks' live-room tables (`Bank.domain_strings`);
- distractors come from a user bank or the harness's own disabled tools and skills, bound to
  `hsa.distractor.*`, implemented by `core.hsa.distractors.register_distractors`, and counted
  as distractors by `core.sim.distractors.is_distractor`; with neither, `Skip` names the bank;
- a renamed parameter named in quotes in its tool's description follows the rename (case a);
- a skill rename leaves file names, extensions, package names, paths, URLs and command lines
  alone (case b);
- JSON-Schema titles derived from a renamed name follow it, and renaming back restores them;
- changed defaults stay sensible (no negative `context_lines`, counts >= 1, the schema's
  bounds and types hold);
- the harness's own description is kept as written;
- bank files are validated with errors naming the file and the table.
"""

from __future__ import annotations

import asyncio
import random
import re
import shutil
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.harness.demo import load_demo_harness
from core.harness.folder import folder_files, import_folder
from core.harness.models import Harness
from core.harness.render import render_system_prompt
from core.hsa.banks import BankError, layer_bank, read_bank_file
from core.hsa.distractors import BINDING_PREFIX, RESULT_KEY, register_distractors
from core.hsa.domain import LIVE_ROOM, OWN, harness_domain
from core.hsa.policy import Policy, Strength, sample_variant, transform_rng
from core.hsa.references import stale_references
from core.hsa.renames import Renames, apply_renames, follow_title
from core.hsa.transform import BankName, Skip, load_bank, transforms
from core.runtime.bindings import Bindings, ToolContext
from core.sim.distractors import is_distractor

FIXTURES = Path(__file__).parent / "fixtures"
DESK = FIXTURES / "support_desk"
LITERALS = (
    'with format "xlsx"',
    "`report.xlsx`",
    "`npm install -g xlsx`",
    "`xlsx report.xlsx --sheet Summary`",
    "npm install -g xlsx\npython scripts/recalc.py file.xlsx",
    "https://docs.sheetjs.com/xlsx/",
    "scripts/xlsx/README.md",
)
"""Text of the `xlsx` skill that names files, packages, paths, URLs and commands."""


@cache
def desk() -> Harness:
    return import_folder(DESK)


def _transform(name: str):  # type: ignore[no-untyped-def]
    return {t.name: t for t in transforms()}[name]


def _tool(harness: Harness, binding_tail: str):  # type: ignore[no-untyped-def]
    return next(t for t in harness.tools if t.binding.endswith(":" + binding_tail))


def _skill(harness: Harness, role: str):  # type: ignore[no-untyped-def]
    return next(s for s in harness.skills if s.metadata.get("role", s.name) == role)


# ----------------------------------------------------------------------------- the domain


def test_the_domain_is_decided_by_the_bindings() -> None:
    assert harness_domain(load_demo_harness()) == LIVE_ROOM
    assert harness_domain(desk()) == OWN
    variant = sample_variant(load_demo_harness(), Policy("train", "heavy"), 3)
    assert harness_domain(variant.harness) == LIVE_ROOM


def test_the_shipped_banks_scope_live_room_tables() -> None:
    for name in BankName:
        bank = load_bank(name)
        assert bank.domains() == {LIVE_ROOM}
        own = bank.scoped(OWN)
        for dimension, tables in (
            ("tools", ("names", "params", "descriptions", "distractors", "optional_params")),
            ("skills", ("names", "descriptions", "phrases", "distractors")),
            ("prompt", ("variables",)),
        ):
            for table in tables:
                assert table not in own.section(dimension), (name, dimension, table)
                assert table in bank.section(dimension), (name, dimension, table)
        assert "by_hook" not in own.section("hooks").get("reminders", {})
        assert own.section("tools")["random_prefixes"]  # neutral tables stay
        live = bank.domain_strings(LIVE_ROOM)
        assert "Host profile" in live or "Host persona" in live
        assert not live & bank.scoped(OWN).strings() - live  # sanity: disjoint by definition


@cache
def live_strings() -> tuple[str, ...]:
    """Live-room strings of both shipped banks that are not whole words of the desk already."""
    original = "\n".join([*folder_files(desk()).values(), render_system_prompt(desk())]).lower()
    out = set()
    for name in BankName:
        for s in load_bank(name).domain_strings(LIVE_ROOM):
            low = s.lower().strip()
            if len(low) >= 4 and not re.search(rf"(?<!\w){re.escape(low)}(?!\w)", original):
                out.add(low)
    return tuple(sorted(out))


def live_leaks(harness: Harness) -> list[str]:
    text = "\n".join([*folder_files(harness).values(), render_system_prompt(harness)]).lower()
    return [
        s for s in live_strings() if s in text and re.search(rf"(?<!\w){re.escape(s)}(?!\w)", text)
    ]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    bank=st.sampled_from(list(BankName)),
    strength=st.sampled_from(list(Strength)),
)
def test_variants_of_another_domain_carry_no_live_stream_text(
    seed: int, bank: BankName, strength: Strength
) -> None:
    variant = sample_variant(desk(), Policy(bank, strength), seed)
    assert not live_leaks(variant.harness), (variant.applied, live_leaks(variant.harness)[:5])
    for tool in variant.harness.tools:
        assert not tool.binding.startswith("sim."), tool.binding


def test_every_transform_on_another_domain_carries_no_live_stream_text() -> None:
    for t in transforms():
        for seed in range(3):
            for name in BankName:
                try:
                    out, _ = t(desk(), transform_rng(seed, t.name), load_bank(name))
                except Skip:
                    continue
                assert not live_leaks(out), (t.name, seed, live_leaks(out)[:5])


# ----------------------------------------------------------------------------- distractors


def test_without_a_user_bank_distractors_come_from_the_harness_itself() -> None:
    seen_tool = seen_skill = False
    for seed in range(12):
        out, _ = _transform("tool_distractors")(desk(), random.Random(seed), load_bank("train"))
        added = [t for t in out.tools if is_distractor(t.binding)]
        assert [t.name for t in added] == ["delete_customer"]
        assert added[0].enabled and added[0].binding == BINDING_PREFIX + "delete_customer"
        seen_tool = True
        out, _ = _transform("skill_distractors")(desk(), random.Random(seed), load_bank("train"))
        legacy = next(s for s in out.skills if s.name == "legacy-macros")
        assert legacy.enabled and legacy.metadata.get("distractor") == "true"
        assert {s.name for s in out.skills} == {s.name for s in desk().skills}
        seen_skill = True
    assert seen_tool and seen_skill


def test_with_no_material_the_distractor_transforms_skip_naming_the_bank() -> None:
    bare = desk().model_copy(
        update={
            "tools": [t for t in desk().tools if t.enabled],
            "skills": [s for s in desk().skills if s.enabled],
        }
    )
    with pytest.raises(Skip, match=r"distractor_tools.*tools\.yaml"):
        _transform("tool_distractors")(bare, random.Random(0), load_bank("train"))
    with pytest.raises(Skip, match=r"`distractors` table in skills\.yaml"):
        _transform("skill_distractors")(bare, random.Random(0), load_bank("heldout"))


USER_TOOLS = """\
distractor_tools:
  - name: loyalty_points_balance
    description: "Loyalty points of a customer account and when they expire."
    parameters:
      type: object
      properties:
        customer_id: {type: string, minLength: 1}
      required: [customer_id]
    result: {points: 120, expires: "2027-01-31"}
  - name: store_opening_hours
    description: "Opening hours of the physical stores."
"""
USER_SKILLS = """\
distractors:
  - name: seasonal-sale-banner
    description: "Wording of the seasonal sale banner for the web shop (marketing team only)."
    body: "# Sale banner\\n\\nUse only when marketing asks for banner copy."
"""


def _user_bank(tmp_path: Path) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "tools.yaml").write_text(USER_TOOLS, encoding="utf-8")
    (tmp_path / "skills.yaml").write_text(USER_SKILLS, encoding="utf-8")
    return tmp_path


def test_a_user_bank_adds_its_distractors_and_they_can_run(tmp_path: Path) -> None:
    bank = layer_bank(load_bank("train"), _user_bank(tmp_path))
    names: set[str] = set()
    for seed in range(20):
        out, _ = _transform("tool_distractors")(desk(), random.Random(seed), bank)
        names |= {t.name for t in out.tools if is_distractor(t.binding)}
        bindings = Bindings()
        register_distractors(bindings, out)
        for tool in out.tools:
            if not tool.binding.startswith(BINDING_PREFIX):
                assert tool.binding not in bindings
                continue
            binding = bindings.get(tool.binding)
            assert binding is not None and binding.inline
            ctx = ToolContext(tool.name, "c1", "r1")
            result = asyncio.run(bindings.call(tool.binding, {}, ctx, timeout_s=1.0))
            assert result == tool.annotations[RESULT_KEY]
            if tool.name == "loyalty_points_balance":
                assert result == {"points": 120, "expires": "2027-01-31"}
    assert {"loyalty_points_balance", "store_opening_hours"} <= names
    skills: set[str] = set()
    for seed in range(20):
        out, _ = _transform("skill_distractors")(desk(), random.Random(seed), bank)
        skills |= {s.name for s in out.skills if s.metadata.get("distractor")}
    assert "seasonal-sale-banner" in skills


def test_a_user_bank_in_policy_subfolders_and_replace_mode(tmp_path: Path) -> None:
    _user_bank(tmp_path / "heldout")
    bank = layer_bank(load_bank("heldout"), tmp_path, replace=True)
    assert set(bank.data) == {"tools", "skills"}
    assert "names" not in bank.section("tools")  # the shipped tables are gone
    with pytest.raises(BankError, match="no bank file"):
        layer_bank(load_bank("train"), tmp_path)  # no train/ and no file at the top


def test_the_live_room_keeps_its_own_distractors() -> None:
    demo = load_demo_harness()
    out, _ = _transform("tool_distractors")(demo, random.Random(1), load_bank("train"))
    added = [t for t in out.tools if is_distractor(t.binding)]
    assert added and all(t.binding.startswith("sim.distractor.") for t in added)


def test_is_distractor_counts_both_prefixes() -> None:
    assert is_distractor("sim.distractor.get_weather_forecast")
    assert is_distractor("hsa.distractor.store_opening_hours")
    assert not is_distractor("python:tests.fixtures.support_desk_tools:lookup_order")


# ----------------------------------------------------------------------------- case (a)


def test_case_a_a_renamed_parameter_in_quotes_follows_the_rename() -> None:
    """`'head'` stayed in the description after `head` -> `wkj_ba4` (seen on real material)."""
    renames = Renames(params={"read_ticket_log": {"head": "wkj_ba4", "context_lines": "pqz_3c1"}})
    out = apply_renames(desk(), renames)
    tool = _tool(out, "read_ticket_log")
    assert "'wkj_ba4'" in tool.description and "'head'" not in tool.description
    assert '"pqz_3c1"' in tool.description
    body = _skill(out, "order-status").body
    assert "'wkj_ba4' set to 20" in body
    assert "the first lines" in tool.description  # prose is untouched
    assert not stale_references(out, ["head", "context_lines"])


def test_case_a_through_the_masking_transform() -> None:
    rename = _transform("tool_param_rename_random")
    for seed in range(16):
        out, mapping = rename(desk(), random.Random(seed), load_bank("heldout"))
        new = mapping.params.get("read_ticket_log", {}).get("head")
        if new is None:
            continue
        description = _tool(out, "read_ticket_log").description
        assert f"'{new}'" in description and "'head'" not in description


# ----------------------------------------------------------------------------- case (b)


@pytest.mark.parametrize("new", ["xlsx-sop", "zqk-7f3a", "03-xlsx"])
def test_case_b_a_skill_rename_leaves_files_packages_and_commands(new: str) -> None:
    """`file.xlsx` became `file.xlsx-sop` and `npm install -g docx` became
    `npm install -g zqk-...` (seen on real material)."""
    out = apply_renames(desk(), Renames(skills={"xlsx": new}))
    skill = _skill(out, "xlsx")
    assert skill.name == new
    for literal in LITERALS:
        assert literal in skill.body, literal
    assert "open file.xlsx" in skill.description
    assert f'`load_skill("{new}")`' in skill.body  # a reference to the skill follows
    assert f"load `{new}`." in _skill(out, "refund-help").body
    assert not stale_references(out, ["xlsx"])


def test_case_b_through_the_skill_transforms() -> None:
    for name in ("skill_name_style", "skill_rename_opaque"):
        for seed in range(8):
            for bank in BankName:
                try:
                    out, mapping = _transform(name)(desk(), random.Random(seed), load_bank(bank))
                except Skip:
                    continue
                if "xlsx" not in mapping.skills:
                    continue
                body = _skill(out, "xlsx").body
                for literal in LITERALS:
                    assert literal in body, (name, seed, literal)


# ----------------------------------------------------------------------------- titles


def test_titles_derived_from_a_renamed_name_follow_it_and_come_back() -> None:
    renames = Renames(
        tools={"read_ticket_log": "zqv_1b2c"},
        params={"read_ticket_log": {"head": "wkj_ba4", "context_lines": "lines_around"}},
    )
    out = apply_renames(desk(), renames)
    tool = next(t for t in out.tools if t.name == "zqv_1b2c")
    props = tool.parameters["properties"]
    assert props["wkj_ba4"]["title"] == "Wkj Ba4"
    assert props["lines_around"]["title"] == "Lines Around"
    assert tool.parameters["title"] == "Zqv 1b2c"
    back = apply_renames(
        out,
        Renames(
            tools={"zqv_1b2c": "read_ticket_log"},
            params={"zqv_1b2c": {"wkj_ba4": "head", "lines_around": "context_lines"}},
        ),
    )
    original = _tool(desk(), "read_ticket_log")
    restored = _tool(back, "read_ticket_log")
    assert restored.parameters == original.parameters
    # a title that is not derived from the name stays as written
    assert follow_title("Lines of context", "context_lines", "x_1") is None
    refund = apply_renames(desk(), Renames(params={"issue_refund": {"amount": "sum_eur"}}))
    assert _tool(refund, "issue_refund").parameters["properties"]["sum_eur"]["title"] == "sum_eur"


# ----------------------------------------------------------------------------- defaults


def test_changed_defaults_make_sense() -> None:
    change = _transform("tool_change_defaults")
    for seed in range(60):
        out, mapping = change(desk(), random.Random(seed), load_bank("train"))
        props = {
            t.binding.rsplit(":", 1)[-1]: t.parameters["properties"] for t in out.tools if t.enabled
        }
        assert props["read_ticket_log"]["context_lines"]["default"] >= 1
        assert props["search_help"]["limit"]["default"] >= 1
        assert props["export_report"]["days"]["default"] >= 1
        assert props["export_report"]["format"]["default"] in ("xlsx", "csv")
        assert props["search_help"]["min_score"]["default"] > 0
        assert isinstance(props["read_ticket_log"]["context_lines"]["default"], int)
        assert mapping.explicit_defaults


def test_defaults_respect_the_schema_bounds() -> None:
    from core.hsa.transforms.tool_schemas import _new_default

    rng = random.Random(0)
    for _ in range(50):
        v = _new_default({"type": "integer", "default": 0, "minimum": -3}, rng, "offset")
        assert -3 <= v <= 10 and v != 0
        v = _new_default({"type": "integer", "default": 3, "exclusiveMinimum": 2}, rng, "x")
        assert v >= 3
        v = _new_default({"type": "integer", "default": 3, "exclusiveMaximum": 5}, rng, "x")
        assert 0 <= v <= 4
        v = _new_default({"type": "integer", "default": 2}, rng, "context_lines")
        assert v >= 1
        v = _new_default({"type": "integer", "default": 0}, rng, "offset")
        assert v >= 0
    assert _new_default({"type": "string", "default": "a"}, rng, "name") is None


# ----------------------------------------------------------------------------- description


def test_renames_leave_the_harness_description_as_written() -> None:
    for seed in range(6):
        variant = sample_variant(desk(), Policy("train", "heavy"), seed)
        assert variant.harness.description == desk().description
    out = apply_renames(desk(), Renames(skills={"xlsx": "zqk-7f3a"}))
    assert "xlsx reports" in out.description


# ----------------------------------------------------------------------------- bank files


@pytest.mark.parametrize(
    ("file", "text", "pattern"),
    [
        ("tools.yaml", "distractor_tools:\n  - name: bad name\n    description: x\n",
         r"tools\.yaml: distractor_tools\[0\]\.name: 'bad name' does not match"),
        ("tools.yaml", "nmaes: {}\n", r"tools\.yaml: \(the file\): .*'nmaes'.*tables of tools"),
        ("skills.yaml", "distractors:\n  - {name: x-y, description: d}\n",
         r"skills\.yaml: distractors\[0\]: 'body' is a required property"),
        ("hooks.yaml", "reminder_formats: [no placeholder]\n",
         r"hooks\.yaml: reminder_formats\[0\]: 'no placeholder' does not match"),
        ("prompt.yaml", "headings: [a, b]\n", r"prompt\.yaml: headings: \['a', 'b'\] is not"),
        ("prompt.yaml", "headings: {persona: [a}\n", r"prompt\.yaml: not valid YAML"),
        ("colors.yaml", "x: 1\n", r"colors\.yaml: not a bank file"),
        ("tools.yaml", "domains:\n  Live Room: {}\n", r"tools\.yaml: domains: 'Live Room'"),
    ],
)  # fmt: skip
def test_a_bad_bank_file_gives_a_clear_error(
    tmp_path: Path, file: str, text: str, pattern: str
) -> None:
    (tmp_path / file).write_text(text, encoding="utf-8")
    with pytest.raises(BankError, match=pattern):
        layer_bank(load_bank("train"), tmp_path)


def test_the_shipped_bank_files_validate() -> None:
    from core.hsa.transform import banks_root

    for file in sorted(banks_root().glob("*/*.yaml")):
        read_bank_file(file)


def test_cli_sample_with_a_user_bank(tmp_path: Path) -> None:
    from core.cli.main import app

    bank = _user_bank(tmp_path / "bank")
    harness = tmp_path / "desk"
    shutil.copytree(DESK, harness)
    runner = CliRunner()
    args = ["hsa", "sample", "-n", "3", "--harness", str(harness), "-d", "tool_schemas"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "v"), "--bank-dir", str(bank)])
    assert result.exit_code == 0, result.output
    (bank / "tools.yaml").write_text("distractor_tools: {}\n", encoding="utf-8")
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "w"), "--bank-dir", str(bank)])
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert "tools.yaml: distractor_tools: {} is not of type 'array'" in output
    assert "Traceback" not in result.output


def test_the_documented_example_bank_validates_and_applies(tmp_path: Path) -> None:
    doc = (Path(__file__).parents[1] / "docs/hsa-banks.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n# my-banks/(\w+\.yaml)\n(.*?)```", doc, re.S)
    assert {name for name, _ in blocks} == {"tools.yaml", "skills.yaml", "prompt.yaml"}
    for name, text in blocks:
        (tmp_path / name).write_text(text, encoding="utf-8")
    bank = layer_bank(load_bank("train"), tmp_path)
    out, _ = _transform("prompt.variables")(desk(), random.Random(0), bank)
    assert out.prompt.variables["agent_name"] in {"Alex", "Sam", "Jordan"}
    assert out.prompt.variables["shop"] == desk().prompt.variables["shop"]
    with pytest.raises(Skip, match="variables"):
        _transform("prompt.variables")(desk(), random.Random(0), load_bank("train"))


# ----------------------------------------------------------------------------- invariants


def _gold():  # type: ignore[no-untyped-def]
    from core.runtime.trajectory import AssistantTurn, ToolCall, Trajectory

    def call(tool: str, i: int, **arguments: object) -> ToolCall:
        return ToolCall(name=tool, arguments=dict(arguments), id=f"c{i}")

    return Trajectory(
        viewer_message="Where is order NW-10422? Ticket T-7 says it is late. Also the report.",
        turns=[
            AssistantTurn(tool_calls=[call("load_skill", 1, name="order-status")]),
            AssistantTurn(
                tool_calls=[
                    call("lookup_order", 2, order_id="NW-10422"),
                    call("read_ticket_log", 3, ticket_id="T-7", head=20),
                    call("search_help", 4, query="late delivery"),
                ]
            ),
            AssistantTurn(tool_calls=[call("load_skill", 5, name="xlsx")]),
            AssistantTurn(tool_calls=[call("export_report", 6)]),
            AssistantTurn(content="Your order NW-10422 arrives on Friday; the report is ready."),
        ],
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    bank=st.sampled_from(list(BankName)),
    strength=st.sampled_from(list(Strength)),
)
def test_invariants_1_and_3_hold_on_another_domain(
    seed: int, bank: BankName, strength: Strength
) -> None:
    from core.hsa.verify import schema_problems

    gold = _gold()
    assert not schema_problems(desk(), gold)
    variant = sample_variant(desk(), Policy(bank, strength), seed)
    remapped, fills = variant.chain.remap(gold)
    assert not schema_problems(variant.harness, remapped), variant.applied
    back = variant.chain.inverse(remapped, fills) if variant.chain.steps else remapped
    assert [t.model_dump() for t in back.turns] == [t.model_dump() for t in gold.turns]


def test_distractors_survive_export_and_import(tmp_path: Path) -> None:
    from core.harness import export_folder

    bank = layer_bank(load_bank("train"), _user_bank(tmp_path / "bank"))
    for seed in range(6):
        out, _ = _transform("tool_distractors")(desk(), random.Random(seed), bank)
        export_folder(out, tmp_path / f"v{seed}")
        back = import_folder(tmp_path / f"v{seed}")
        want = {t.binding: t.annotations[RESULT_KEY] for t in out.tools if is_distractor(t.binding)}
        got = {t.binding: t.annotations[RESULT_KEY] for t in back.tools if is_distractor(t.binding)}
        assert want and got == want
        bindings = Bindings()
        register_distractors(bindings, back)
        assert set(bindings.names) == set(want)
