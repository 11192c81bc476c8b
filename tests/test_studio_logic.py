"""The studio's Qt-free logic: edit document, component parsing, hook tests, diffs, variants."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.harness import HarnessError, import_folder
from core.harness.demo import load_demo_harness
from studio.logic import components as comp
from studio.logic.document import HarnessDocument
from studio.logic.hooktest import HookSample, default_sample, run_sample
from studio.logic.servers import ServerStatus, server_status_line
from studio.logic.textdiff import side_by_side, stats, wrap_pieces, wrap_rows
from studio.logic.variants import VariantRequest, compute_variant, export_variant, task_choices


def test_logic_package_imports_no_qt() -> None:
    """At run time too (import-linter checks the static imports): importing every module of
    studio.logic loads no Qt and no torch."""
    code = (
        "import importlib, pkgutil, sys, studio.logic as pkg; "
        "[importlib.import_module(m.name) for m in pkgutil.iter_modules(pkg.__path__, "
        "'studio.logic.')]; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'qasync', 'pyqtgraph', "
        "'torch')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_document_apply_validates_whole_harness_and_keeps_uids() -> None:
    doc = HarnessDocument(load_demo_harness(), "v1")
    uid = doc.uid("skills", 2)
    first = doc.item("skills", 0)
    dup = comp.skill_from_fields(
        name=first.name, description="x", body="", kind="reply", enabled=True
    )
    with pytest.raises(HarnessError) as err:
        doc.apply(doc.replaced("skills", 2, dup))
    assert "duplicate skill name" in str(err.value)
    assert doc.item("skills", 2).name != first.name  # nothing changed
    doc.apply(doc.moved("skills", 2, 0))
    assert doc.index_of("skills", uid) == 0
    new = doc.new_skill()
    doc.apply(doc.inserted("skills", 1, new))
    assert doc.item("skills", 1).name == "new-skill"
    assert doc.unique_name("skills", "new-skill") == "new-skill-2"
    assert doc.save_blockers() == []


def test_skill_fields_and_raw_text() -> None:
    harness = load_demo_harness()
    skill = harness.skills[0]
    with pytest.raises(HarnessError) as err:
        comp.skill_from_fields(name="Bad Name", description="", body="", kind="reply", enabled=True)
    fields = {p.field for p in err.value.problems}
    assert {"name", "description"} <= fields
    text = comp.skill_file_text(skill)
    assert comp.parse_skill_text(text, harness) == skill
    broken = text.replace(f"name: {skill.name}", f"name: [{skill.name}", 1)
    with pytest.raises(HarnessError) as err:
        comp.parse_skill_text(broken, harness, f"skills/{skill.name}/SKILL.md")
    problem = err.value.problems[0]
    assert problem.file == f"skills/{skill.name}/SKILL.md"
    assert problem.field.startswith("front matter, line")
    with pytest.raises(HarnessError) as err:
        comp.parse_skill_text("no front matter here", harness)
    assert err.value.problems[0].field == "front matter"


def test_schema_rows_round_trip_and_errors_per_row() -> None:
    harness = load_demo_harness()
    for tool in harness.tools:
        rows = comp.rows_from_schema(tool.parameters)
        result = comp.schema_from_rows(rows, tool.parameters)
        assert result.ok, (tool.name, result)
        assert result.schema == tool.parameters
    rows = comp.rows_from_schema(harness.tools[2].parameters)
    rows[0].default = "abc"
    rows[1].type = "integer"
    rows[1].enum = "S, M"
    rows.append(comp.ParamRow(name="link_no"))
    rows.append(comp.ParamRow(name="9bad"))
    result = comp.schema_from_rows(rows)
    assert "not an integer" in result.row_errors[0][0]
    assert result.row_errors[1][0].startswith("enum:")
    assert "duplicate parameter" in result.row_errors[3][0]
    assert result.row_errors[4][0].startswith("name:")
    ok = comp.schema_from_rows(
        [comp.ParamRow(name="mode", enum="fast, slow", default="fast", required=True)]
    )
    assert ok.ok
    assert ok.schema["properties"]["mode"] == {
        "type": "string",
        "enum": ["fast", "slow"],
        "default": "fast",
    }
    assert ok.schema["required"] == ["mode"]
    bad_default = comp.schema_from_rows([comp.ParamRow(name="mode", enum="a, b", default="c")])
    assert "default" in bad_default.row_errors[0][0]


def test_tool_raw_text_invalid_schema_names_the_property() -> None:
    harness = load_demo_harness()
    tool = harness.tools[2]
    text = comp.tool_file_text(tool)
    assert comp.parse_tool_text(text, harness) == tool
    data = json.loads(text)
    data["function"]["parameters"]["properties"]["size"]["type"] = "strin"
    with pytest.raises(HarnessError) as err:
        comp.parse_tool_text(json.dumps(data), harness)
    problem = err.value.problems[0]
    assert problem.file == f"tools/{tool.name}.json"
    assert "properties/size" in problem.message
    with pytest.raises(HarnessError) as err:
        comp.parse_tool_text('{"type": "function",\n "function": {', harness)
    assert err.value.problems[0].field.startswith("line 2")


def test_hook_samples_decide_like_the_loop() -> None:
    harness = load_demo_harness()
    decisions = {
        h.name: run_sample(h, harness, default_sample(h, harness)).decision for h in harness.hooks
    }
    assert set(decisions.values()) == {"block"}, decisions
    hook = next(h for h in harness.hooks if h.name == "no-false-promises")
    calm = HookSample(reply="Link 3 is 9.99 USD right now.")
    assert run_sample(hook, harness, calm).decision == "allow"
    out = run_sample(hook, harness, HookSample(reply="Cheapest price ever!"))
    assert out.decision == "block"
    assert "cheapest price ever" in out.reminder.lower()
    broken = HookSample(tool="check_stock", arguments="{oops")
    link = next(h for h in harness.hooks if h.name == "link-number-range")
    result = run_sample(link, harness, broken)
    assert result.decision == "error" and "not valid JSON" in result.reason


def test_side_by_side_marks_changed_words() -> None:
    rows = side_by_side("a\nthe quick fox\nc\n", "a\nthe slow fox\nc\nd\n")
    assert [r.tag for r in rows] == ["equal", "replace", "equal", "insert"]
    replace = rows[1]
    assert replace.left is not None and replace.right is not None
    ((start, end),) = replace.left_spans
    assert replace.left[start:end] == "quick"
    ((start, end),) = replace.right_spans
    assert replace.right[start:end] == "slow"
    s = stats(rows)
    assert (s.added, s.removed, s.changed) == (1, 0, 1)
    (renamed,) = side_by_side('"product-qa",', '"listing-lookup",')
    ((start, end),) = renamed.left_spans  # a hyphenated name is one word, marked whole
    assert renamed.left[start:end] == "product-qa"
    assert [r.tag for r in side_by_side(None, "x")] == ["insert"]


def test_wrapped_diff_marks_only_the_inserted_words() -> None:
    """An insertion early in a long line pushes words onto the next visual lines; those words
    are unchanged and must not be highlighted (the diff is made on whole lines)."""
    old = "4. Offer it once: amount, minimum spend and expiry exactly as the tool states them."
    new = old.replace("Offer it once", "Offer it once, warmly")
    rows = wrap_rows(side_by_side(old, new), 30)
    marked_left = [r.left[a:b] for r in rows if r.left for a, b in r.left_spans]
    marked_right = [r.right[a:b] for r in rows if r.right for a, b in r.right_spans]
    assert marked_left == [] and "".join(marked_right) == ", warmly"
    assert all(len(r.right or "") <= 30 for r in rows)
    assert " ".join(r.left for r in rows if r.left) == old
    assert [r.left_no for r in rows] == [1, None, None, None]  # numbered once, on its first row


_LINE = st.text(alphabet=" ab-.", max_size=60)


@given(_LINE, st.integers(min_value=4, max_value=30))
def test_wrap_pieces_keep_every_word_within_the_width(line: str, width: int) -> None:
    pieces = wrap_pieces(line, width)
    indent = len(line) - len(line.lstrip(" "))
    shown = indent if indent < width // 2 else 0
    for k, (start, end) in enumerate(pieces):
        assert end - start + (shown if k else 0) <= width
    kept = "".join(line[a:b] for a, b in pieces)
    assert kept.replace(" ", "") == line.replace(" ", "")  # only spaces at breaks are dropped
    assert all(b <= c for (_, b), (c, _) in itertools.pairwise(pieces))


@given(st.lists(_LINE, max_size=6), st.lists(_LINE, max_size=6), st.integers(4, 30))
def test_wrap_rows_keep_both_sides_aligned_and_spans_on_their_words(
    old: list[str], new: list[str], width: int
) -> None:
    lines = side_by_side("\n".join(old), "\n".join(new))
    rows = wrap_rows(lines, width)
    assert sum(r.left_no is not None for r in rows) == sum(r.left is not None for r in lines)
    assert sum(r.right_no is not None for r in rows) == sum(r.right is not None for r in lines)
    # every highlighted character is still highlighted after wrapping, and nothing else
    marked = "".join((r.left or "")[a:b] for r in rows for a, b in r.left_spans) + "".join(
        (r.right or "")[a:b] for r in rows for a, b in r.right_spans
    )
    original = "".join((r.left or "")[a:b] for r in lines for a, b in r.left_spans) + "".join(
        (r.right or "")[a:b] for r in lines for a, b in r.right_spans
    )
    assert marked.replace(" ", "") == original.replace(" ", "")


def test_server_status_line_says_what_is_served_and_what_needs_the_user() -> None:
    assert server_status_line({}).text == "No model server"
    off = {"A": ServerStatus("stopped"), "B": ServerStatus("failed")}
    assert server_status_line(off).tone == "off"  # a start that failed says so on its card
    one = {"A": ServerStatus("running", "smollm2", "http://127.0.0.1:9/v1", managed=True)}
    line = server_status_line({**off, **one})
    assert (line.text, line.tone) == ("smollm2", "ok")
    assert "smollm2 at http://127.0.0.1:9/v1 (started here)" in line.tooltip
    both = {**one, "B": ServerStatus("starting")}
    assert server_status_line(both).text == "smollm2 · 1 starting"
    assert server_status_line({"B": ServerStatus("starting")}).tone == "busy"
    two = {**one, "B": ServerStatus("running", "other", "http://x/v1")}
    assert server_status_line(two).text == "2 model servers"
    assert "other at http://x/v1 (attached)" in server_status_line(two).tooltip
    died = server_status_line({**one, "B": ServerStatus("died")})
    assert died.tone == "error" and died.text == "Model server stopped unexpectedly"


def test_variant_preview_is_seeded_and_exports(tmp_path) -> None:
    harness = load_demo_harness()
    task = task_choices()[0]
    a = compute_variant(harness, VariantRequest(task.id, seed=3))
    b = compute_variant(harness, VariantRequest(task.id, seed=3))
    c = compute_variant(harness, VariantRequest(task.id, seed=4, strength="heavy"))
    assert a.applied == b.applied and a.after == b.after
    assert a.gold_before and a.gold_after and not a.gold_problem
    assert c.after != a.after
    assert any(a.before[v] != a.after[v] for v in a.before)
    only_prompt = compute_variant(harness, VariantRequest(task.id, dimensions=("prompt",), seed=5))
    assert all(name.startswith("prompt.") for name in only_prompt.applied)
    folder = tmp_path / "variant"
    sidecar = export_variant(c, folder)
    assert import_folder(folder) == c.variant
    record = json.loads(sidecar.read_text())
    assert record["seed"] == 4 and record["task"] == task.id and "gold" in record


def test_editing_a_skill_keeps_its_other_files() -> None:
    """A published skill folder's scripts/ and references/ are part of the skill (issue 20);
    the editor's form and raw SKILL.md text hold neither, so an edit must carry them over."""
    from studio.logic.components import parse_skill_text, skill_file_text, skill_from_fields

    harness = load_demo_harness()
    skill = harness.skills[0].model_copy(
        update={"files": {"scripts/run.sh": b"#!/bin/sh\necho hi\n", "assets/x.bin": b"\x00\xff"}}
    )
    edited = skill_from_fields(
        name=skill.name, description="new words", body=skill.body, kind=skill.kind.value,
        enabled=skill.enabled, base=skill,
    )  # fmt: skip
    assert edited.files == skill.files and edited.description == "new words"
    # the raw text alone parses to a skill without them: the editor copies them over
    assert parse_skill_text(skill_file_text(skill), harness).files == {}


def test_evaluate_size_and_pace_lines() -> None:
    """Issue 23, item 4: the run's size before it starts and the time left while it runs,
    from the job's own pace (a resumed run's earlier items do not count)."""
    from studio.logic.eval_view import pace_line, size_line

    assert size_line(160) == "160 items · the time shows once the first items are done"
    assert size_line(160, pace_per_min=40.0) == "160 items · about 4 min at the last run's pace"
    assert size_line(1, 60.0) == "1 item · about 5 s at the last run's pace"
    assert size_line(0) == "no items to run"
    assert size_line(12, complete=False).startswith("12 items + IFEval's · ")
    assert pace_line(0, 40, 30.0) == "0 / 40 items"
    assert pace_line(10, 40, 60.0) == "10 / 40 items · about 3 min left"
    assert pace_line(30, 40, 60.0, first_done=20) == "30 / 40 items · about 60 s left"
    assert pace_line(40, 40, 60.0) == "40 / 40 items"


def test_planned_items_match_the_plan_without_loading_ifeval(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The size line follows every edit of the Evaluate form, so it must not load IFEval's
    checkers (seconds of imports); its count must still equal what the run will plan."""
    import json

    from core.eval.api import EvalRequest, plan_eval
    from core.eval.results import Suite
    from studio.logic.eval_view import planned_items

    agent = EvalRequest(model="m", suites=[Suite.LS_QA, Suite.HV_QA], limit=3, variants=2)
    assert planned_items(agent) == (len(plan_eval(agent)), True)

    prompts = tmp_path / "input_data.jsonl"
    rows = [{"key": i, "prompt": f"Write {i} words.", "instruction_id_list": [], "kwargs": []}
            for i in range(7)]  # fmt: skip
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n", encoding="utf-8")
    with_ifeval = agent.model_copy(
        update={"suites": [Suite.LS_QA, Suite.IFEVAL], "ifeval_path": str(prompts), "limit": 5}
    )

    def no_checkers(*_a: object, **_k: object) -> None:
        raise AssertionError("the size line loaded the IFEval prompts")

    monkeypatch.setattr("core.eval.planning.load_prompts", no_checkers)
    ls = len(plan_eval(with_ifeval.model_copy(update={"suites": [Suite.LS_QA]})))
    assert planned_items(with_ifeval) == (ls + 5, True)
    missing = with_ifeval.model_copy(update={"ifeval_path": str(tmp_path / "none.jsonl")})
    assert planned_items(missing) == (ls, False)


def test_evaluate_form_runs_a_task_file() -> None:
    """The Evaluate form's 'Your tasks' suite: the file is required and must exist (named at
    its field), the request carries it, the command line matches, and the size line plans the
    file's test split."""
    from pathlib import Path

    import pytest

    from core.eval.results import Suite
    from core.taskfile.models import load_task_file
    from studio.logic.eval_view import LaunchRequest, planned_items
    from studio.logic.requests import RequestError

    desk = Path(__file__).parents[1] / "resources/examples/order_desk/tasks.jsonl"
    with pytest.raises(RequestError) as missing:
        LaunchRequest(model="demo", suites=("tasks",)).validate()
    assert missing.value.field == "task_file"
    with pytest.raises(RequestError, match="no such file"):
        LaunchRequest(model="demo", suites=("tasks",), task_file="/nope.jsonl").validate()
    launch = LaunchRequest(model="demo", suites=("tasks",), task_file=str(desk), limit=None)
    request = launch.eval_request()
    assert request.suites == [Suite.TASKS] and request.task_file == str(desk.resolve())
    assert f"--tasks {desk}" in launch.command()
    tests = [t for t in load_task_file(desk) if t.split.value == "test"]
    assert planned_items(request) == (len(tests), True)


@pytest.mark.parametrize(
    ("binding", "ok"),
    [
        ("python:shop.tools:get_order", True),
        ("mcp:shop/get_order", True),
        ("https://api.example.com/orders", True),
        ("get_order", True),  # an imported tool's own name: not bound yet, still editable
        ("python:shop tools:get", False),
        ("python:shop.tools", False),
        ("mcp:shop", False),
        ("https://", False),
    ],
)
def test_the_tool_editor_binds_a_tool_and_refuses_a_malformed_binding(
    binding: str, ok: bool
) -> None:
    """#34 A5's studio side: binding an imported tool is typing its binding in the tool
    editor, checked by the same rules as `hat harness bind`."""
    base = load_demo_harness().tools[0]
    fields = dict(
        name=base.name, description=base.description, enabled=True, parameters=base.parameters,
        base=base,
    )  # fmt: skip
    if ok:
        assert comp.tool_from_fields(binding=binding, **fields).binding == binding
    else:
        with pytest.raises(HarnessError) as info:
            comp.tool_from_fields(binding=binding, **fields)
        assert info.value.problems[0].field == "x-hat.binding"
