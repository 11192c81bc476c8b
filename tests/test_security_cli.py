"""Issue 19, items 6 and 11: names, messages and model replies through every CLI printer.

Text from a harness, the store or a model must reach the terminal as text: no Rich markup
crash (`[/]`), no escape sequence driving the terminal, no newline forging a line of
`hat harness log`. Each example test failed before the fix; the hypothesis tests cover the
class (any printable or control string).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.common import esc, printable
from core.cli.main import app
from core.harness.demo import demo_harness_path
from core.runtime.client import Message, ModelReply

runner = CliRunner()
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
any_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
nasty = st.sampled_from(
    ["live[/]host", "[bold]x", "a\x1b[2J\x1b[Hb", "a\nforged 000000000000 line", "\u202eabc",
     "x\r\ny", "[link=http://e]z[/link]", "\\[/]", "\x00\x07\x9b", "[/", "]"]
)  # fmt: skip
texts = st.one_of(nasty, any_text)


def _demo(tmp_path: Path, name: str | None = None) -> Path:
    folder = tmp_path / "live-host"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(demo_harness_path(), folder)
    if name is not None:
        manifest = folder / "harness.yaml"
        text = manifest.read_text()
        import json

        lines = text.splitlines(keepends=True)
        lines = [f"name: {json.dumps(name)}\n" if ln.startswith("name:") else ln for ln in lines]
        manifest.write_text("".join(lines))
    return folder


def _clean(output: str) -> None:
    assert "Traceback" not in output
    assert not RAW_CONTROL.search(output), repr(output)


# ----------------------------------------------------------------------------- examples


def test_markup_in_a_harness_name_prints_literally(tmp_path: Path) -> None:
    folder = _demo(tmp_path, "live[/]host")
    result = runner.invoke(app, ["harness", "validate", str(folder)])
    assert result.exit_code == 0, result.output
    assert "ok live[/]host:" in result.output
    result = runner.invoke(app, ["harness", "import", str(folder), "-m", "first [/] import"])
    assert result.exit_code == 0, result.output
    assert "stored live[/]host version" in result.output
    result = runner.invoke(app, ["harness", "log"])
    assert result.exit_code == 0, result.output
    assert "live[/]host  first [/] import" in result.output


def test_control_characters_in_a_name_are_an_import_problem(tmp_path: Path) -> None:
    folder = _demo(tmp_path, "live\x1b[31mhost\nforged")
    result = runner.invoke(app, ["harness", "import", str(folder)])
    assert result.exit_code == 1
    flat = " ".join(result.output.split())
    assert "harness.yaml: name" in flat and "control character" in flat
    _clean(result.output)


def test_a_message_cannot_forge_log_lines(tmp_path: Path) -> None:
    folder = _demo(tmp_path)
    message = "ok\n0123456789ab 2020-01-01 00:00:00 live-host  forged\x1b[2K"
    assert runner.invoke(app, ["harness", "import", str(folder), "-m", message]).exit_code == 0
    result = runner.invoke(app, ["harness", "log"])
    assert result.exit_code == 0
    assert len(result.output.strip().splitlines()) == 1
    assert "ok\\n0123456789ab" in result.output and "\\x1b[2K" in result.output
    _clean(result.output)


def test_markup_in_a_commit_message_does_not_break_rollback_and_tag(tmp_path: Path) -> None:
    folder = _demo(tmp_path)
    assert runner.invoke(app, ["harness", "import", str(folder), "-m", "[/]"]).exit_code == 0
    result = runner.invoke(app, ["harness", "rollback", "head", "-m", "[red]back[/"])
    assert result.exit_code == 0 and "[red]back[/" in result.output
    result = runner.invoke(app, ["harness", "tag", "[/]prod", "head"])  # refused, not a crash
    assert result.exit_code == 1 and "label '[/]prod' must be" in result.output
    result = runner.invoke(app, ["harness", "tag", "x", "head", "--name", "[/]x\x1b"])
    assert result.exit_code == 1 and "harness '[/]x\\x1b'" in result.output


class Replies:
    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)

    async def complete(
        self, messages: Sequence[Message], *, tools: Any = None, on_delta: Any = None
    ) -> ModelReply:
        text = self.replies.pop(0)
        if on_delta is not None:
            on_delta(text)
        return ModelReply(content=text)


def _chat(reply: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.cli import chat_cmd
    from core.serving.chat import ChatSession
    from tests.runtime_harness import build_bindings, build_harness, without_hooks

    session = ChatSession(without_hooks(build_harness()), Replies(reply), build_bindings())
    lines = iter(["hello", "/history", "/quit"])
    monkeypatch.setattr("builtins.input", lambda _prompt: next(lines))
    asyncio.run(chat_cmd._repl(session, None))
    assert len(session.history) == 2  # the conversation is kept


def test_a_model_reply_with_markup_does_not_crash_chat(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _chat("Price is [/] 5 [bold]now\x1b[31m red", monkeypatch)
    out = capsys.readouterr().out
    assert "host> Price is [/] 5 [bold]now\\x1b[31m red" in out
    _clean(out)


# ----------------------------------------------------------------------------- 11. diff


def test_diff_of_a_huge_skill_is_capped(tmp_path: Path) -> None:
    folder = _demo(tmp_path)
    assert runner.invoke(app, ["harness", "import", str(folder), "-m", "a"]).exit_code == 0
    skill = folder / "skills" / "chit-chat" / "SKILL.md"
    skill.write_text(skill.read_text() + "".join(f"line {i}\n" for i in range(100_000)))
    assert runner.invoke(app, ["harness", "import", str(folder), "-m", "b"]).exit_code == 0
    new, old = (
        line.split()[0] for line in runner.invoke(app, ["harness", "log"]).output.splitlines()
    )
    start = time.monotonic()
    result = runner.invoke(app, ["harness", "diff", old, new])
    assert time.monotonic() - start < 20
    assert result.exit_code == 0
    assert "diff cut: showing 2,000 of 100,0" in result.output
    assert len(result.output.splitlines()) < 2_100


# ----------------------------------------------------------------------------- properties


@given(texts)
@settings(max_examples=300, deadline=None)
def test_esc_prints_any_text_literally_on_one_line(text: str) -> None:
    from rich.console import Console

    console = Console(width=10_000, color_system=None, force_terminal=False, record=True)
    with console.capture() as cap:
        console.print(f"[bold]{esc(text)}[/bold]")
    shown = cap.get()
    assert (
        shown.rstrip("\n") == printable(text).rstrip(" ")
        or shown.strip() == printable(text).strip()
    )
    assert "\n" not in shown.rstrip("\n")
    _clean(shown)


@given(name=texts)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_harness_name_through_validate_import_log(tmp_path: Path, name: str) -> None:
    folder = _demo(tmp_path, name)
    for args in (
        ["harness", "validate", str(folder)],
        ["harness", "import", str(folder), "-m", name],
        ["harness", "log"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code in (0, 1), result.output
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit
        ), result.exception
        _clean(result.output)


@given(name=texts, where=st.sampled_from(["skill", "tool", "hook"]))
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_skill_tool_or_hook_name_through_validate(
    tmp_path: Path, name: str, where: str
) -> None:
    import json

    folder = _demo(tmp_path)
    if where == "skill":
        skill = folder / "skills" / "chit-chat" / "SKILL.md"
        skill.write_text(skill.read_text().replace("name: chit-chat", f"name: {json.dumps(name)}"))
    elif where == "tool":
        tool = folder / "tools" / "check_stock.json"
        data = json.loads(tool.read_text())
        data["function"]["name"] = name
        tool.write_text(json.dumps(data))
    else:
        hook = folder / "hooks" / "reply-length.yaml"
        hook.write_text(hook.read_text() + f"name: {json.dumps(name)}\n")
    result = runner.invoke(app, ["harness", "validate", str(folder)])
    assert result.exit_code in (0, 1)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    _clean(result.output)


@given(reply=texts)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_model_reply_through_chat(
    reply: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from core.cli import chat_cmd
    from core.serving.chat import ChatSession
    from tests.runtime_harness import build_bindings, build_harness, without_hooks

    session = ChatSession(without_hooks(build_harness()), Replies(reply or "x"), build_bindings())
    lines = iter(["hello", "/quit"])
    monkeypatch.setattr("builtins.input", lambda _prompt: next(lines))
    asyncio.run(chat_cmd._repl(session, None))
    out = capsys.readouterr().out
    _clean(out)


@given(name=texts)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_model_name_through_add_list_remove(name: str) -> None:
    """Before, `hat models add 'live[/]host' …` registered the model, then crashed on its own
    confirmation line; a name with ESC sequences recoloured `hat models list`."""
    for args in (
        ["models", "add", name, "acme/tiny-model", "--no-verify"],
        ["models", "list"],
        ["models", "remove", name],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code in (0, 1), result.output
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit
        ), result.exception
        _clean(result.output)
        if args[1] == "add" and result.exit_code == 0:
            assert f"registered {printable(name)} (hub: acme/tiny-model)" in result.output


def test_a_path_with_markup_prints_literally(tmp_path: Path) -> None:
    out = tmp_path / "runs[/]a [bold]b" / "tasks.jsonl"
    result = runner.invoke(app, ["sim", "tasks", "--suite", "ls-qa", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.exists()
    assert str(out) in result.output.replace("\n", "")
