"""Names and text the code did not expect (#34 B15): each ends in a clear message and an exit
code that says failure, with nothing stored half-way.

Real files, a real store under a temporary HAT_HOME, the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.main import app
from core.jsonl import jsonl_lines
from core.taskfile.models import TaskFileError, load_task_file

ROOT = Path(__file__).parents[1]
DESK = ROOT / "tests/fixtures/support_desk"
TASKS = ROOT / "tests/fixtures/support_desk_tasks.jsonl"
runner = CliRunner()

SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0c", "\x1c", "\x1d", "\x1e", "\x0b"]
"""What str.splitlines() breaks at besides \\n and \\r; JSON allows the first three raw in a
string, and a JSON encoder writing ensure_ascii=False leaves them raw."""


@settings(max_examples=50, deadline=None)
@given(
    before=st.text(max_size=20),
    after=st.text(max_size=20),
    separator=st.sampled_from(SEPARATORS[:3]),
)
def test_a_separator_inside_a_task_line_keeps_the_line_whole(
    tmp_path_factory: pytest.TempPathFactory, before: str, after: str, separator: str
) -> None:
    message = f"{before}{separator}{after}".strip() or "x"
    line = {"id": "t1", "message": message, "facts": ["ok"]}
    path = tmp_path_factory.mktemp("tasks") / "tasks.jsonl"
    path.write_text(json.dumps(line, ensure_ascii=False) + "\n", encoding="utf-8")
    tasks = load_task_file(path)
    assert [t.message for t in tasks] == [message]


def test_jsonl_lines_split_at_newlines_only() -> None:
    text = "a\u2028b\r\nc\u0085d\n\ne\x0cf"
    assert jsonl_lines(text) == ["a\u2028b", "c\u0085d", "", "e\x0cf"]
    assert jsonl_lines("") == []
    assert jsonl_lines("x\n") == ["x"]


@pytest.mark.parametrize("depth", [65, 5_000, 100_000])
def test_a_task_nested_too_deep_is_named_not_a_recursion_error(tmp_path: Path, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        '{"id": "deep", "message": "hi", "facts": ["x"], "context": {"a": ' + nested + "}}\n"
    )
    with pytest.raises(TaskFileError) as caught:
        load_task_file(path)
    message = str(caught.value)
    assert f"{path}:1" in message
    assert "nested" in message and "deep" in message


def test_rich_emoji_codes_in_user_text_stay_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    result = runner.invoke(app, ["harness", "import", str(DESK), "-m", "ship it :rocket: :smile:"])
    assert result.exit_code == 0, result.output
    log = runner.invoke(app, ["harness", "log"])
    assert ":rocket: :smile:" in log.output
    assert "\U0001f680" not in log.output and "\U0001f604" not in log.output


@pytest.mark.parametrize("label", ["bad/tag", "head", "-x", "a" * 65, "tag with space"])
def test_a_bad_tag_on_import_stores_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label: str
) -> None:
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    result = runner.invoke(app, ["harness", "import", str(DESK), "--tag", label])
    assert result.exit_code == 1, result.output
    assert "label" in result.output or "reserved" in result.output
    assert "Traceback" not in result.output
    log = runner.invoke(app, ["harness", "log"])
    assert "support-desk" not in log.output  # the version was not stored either
    good = runner.invoke(app, ["harness", "import", str(DESK), "--tag", "staging"])
    assert good.exit_code == 0, good.output
    assert "staging" in runner.invoke(app, ["harness", "log"]).output


def test_eval_out_on_a_run_that_failed_before_any_item_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    # imported without trust: its python: tools cannot run, so the run fails at once
    assert runner.invoke(app, ["harness", "import", str(DESK), "-m", "x"]).exit_code == 0
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "\n".join(ln for ln in TASKS.read_text().splitlines() if '"test"' in ln) + "\n"
    )
    out = tmp_path / "report"
    result = runner.invoke(app, [
        "eval", "run", "--oracle", "--suite", "tasks", "--tasks", str(tasks),
        "--harness", "support-desk", "--out", str(out),
    ])  # fmt: skip
    assert result.exit_code == 1
    assert "no report written" in result.output and "not trusted" in result.output
    assert "Traceback" not in result.output
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("raw", [b"caf\xe9.md", b"\xff\xfe", b"ok-\x80.txt"])
def test_a_file_name_that_is_not_utf8_is_a_problem_at_validate_and_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raw: bytes
) -> None:
    import os
    import shutil

    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    folder = tmp_path / "desk"
    shutil.copytree(DESK, folder)
    skill = next((folder / "skills").iterdir())
    (skill / "references").mkdir()
    with open(os.path.join(os.fsencode(skill / "references"), raw), "wb") as handle:
        handle.write(b"notes")
    for command in (["harness", "validate", str(folder)], ["harness", "import", str(folder)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1, result.output
        assert "not UTF-8" in result.output
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "support-desk" not in runner.invoke(app, ["harness", "log"]).output


@settings(max_examples=40, deadline=None)
@given(
    depth=st.integers(65, 120_000),
    opener=st.sampled_from(["[", '{"k": ']),
    field=st.sampled_from(["context", "facts", "history", "gold_calls"]),
    line=st.integers(1, 3),
)
def test_any_nesting_past_the_limit_is_named_by_file_and_line(
    tmp_path_factory: pytest.TempPathFactory, depth: int, opener: str, field: str, line: int
) -> None:
    """Whatever is nested (lists or objects), however deep and in whichever field or line,
    the reader names file:line and never lets a RecursionError through."""
    closer = "]" if opener == "[" else "}"
    nested = opener * depth + "1" + closer * depth
    good = json.dumps({"id": "ok", "message": "hi", "facts": ["x"]})
    bad = '{"id": "deep", "message": "hi", "facts": ["x"], "' + field + '": ' + nested + "}"
    lines = [json.dumps({"id": f"ok{i}", "message": "hi", "facts": ["x"]}) for i in range(1, line)]
    path = tmp_path_factory.mktemp("deep") / "tasks.jsonl"
    path.write_text("\n".join([*lines, bad, good]) + "\n")
    with pytest.raises(TaskFileError) as caught:
        load_task_file(path)
    assert str(caught.value).startswith(f"{path}:{line}:")


@settings(max_examples=15, deadline=None)
@given(
    raw=st.binary(min_size=1, max_size=12)
    .filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b".."))
    .filter(lambda b: not _utf8(b))
)
def test_any_file_name_that_is_not_utf8_is_a_problem_at_validate(
    tmp_path_factory: pytest.TempPathFactory, raw: bytes
) -> None:
    import os
    import shutil

    folder = tmp_path_factory.mktemp("names") / "desk"
    shutil.copytree(DESK, folder)
    skill = next((folder / "skills").iterdir())
    with open(os.path.join(os.fsencode(skill), raw), "wb") as handle:
        handle.write(b"notes")
    result = runner.invoke(app, ["harness", "validate", str(folder)])
    assert result.exit_code == 1 and "not UTF-8" in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_every_console_the_cli_prints_with_keeps_emoji_codes_as_text() -> None:
    """Every Rich console in core/ is made with emoji=False (one test of one command's output
    would not cover the next command that prints user text)."""
    import ast

    made = 0
    for path in (ROOT / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in (
                "Console",
                "SafeConsole",
            ):
                made += 1
                emoji = [k for k in node.keywords if k.arg == "emoji"]
                assert emoji and isinstance(emoji[0].value, ast.Constant), f"{path}:{node.lineno}"
                assert emoji[0].value.value is False, f"{path}:{node.lineno}"
    assert made >= 3
    from core.cli.common import console, err_console

    with console.capture() as captured:
        console.print(":smile: :thumbs_up:")
    assert ":smile:" in captured.get() and err_console._emoji is False
