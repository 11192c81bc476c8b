"""Logged production conversations become task drafts (core/taskfile/drafts.py, `hat data
drafts`): the log is the order desk's customers talking to an agent that called the desk's real
tools (tools.py functions, not stand-ins), written as an OpenAI chat JSONL log with tool calls.
50 conversations import as 50 drafts; 5 accepted into a task file evaluate through the real
`hat eval run` with the desk's harness and the gold replayed through its tools."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli.main import app
from core.taskfile.drafts import drafts_path, load_drafts, mask_text, read_chat_log
from core.taskfile.models import load_task_file
from resources.examples.order_desk import tools

ROOT = Path(__file__).resolve().parents[1]
DESK = ROOT / "resources/examples/order_desk"
runner = CliRunner()


def _conversation(task: Any, n: int) -> dict[str, Any]:
    """One logged conversation of a desk task whose gold needs no policy server: the user's
    message (with a contact line, as customers write), the agent's calls answered by the real
    tool functions, and a reply stating the task's facts."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are Sam, the bookshop's agent."},
        {"role": "user", "content": f"{task.message} (reach me at reader{n}@example.com)"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "s",
                    "type": "function",
                    "function": {
                        "name": "load_skill",
                        "arguments": json.dumps({"name": "order-help"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "s", "content": "Order help: look the order up."},
    ]
    for i, call in enumerate(task.gold_calls):
        result = getattr(tools, call.tool)(**call.arguments)
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": call.tool, "arguments": json.dumps(call.arguments)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps(result)})
    facts = [f if isinstance(f, str) else f[0] for f in task.facts]
    messages.append({"role": "assistant", "content": "Here you go: " + "; ".join(facts) + "."})
    return {"messages": messages}


def _log(tmp_path: Path, n: int = 50) -> tuple[Path, list[Any]]:
    tasks = [
        t
        for t in load_task_file(DESK / "tasks.jsonl")
        if t.gold_calls
        and t.facts
        and all(c.tool in ("lookup_order", "track_parcel", "search_catalog") for c in t.gold_calls)
        and not any(c.expect_error for c in t.gold_calls)
    ][:n]
    assert len(tasks) == n
    log = tmp_path / "chats.jsonl"
    log.write_text("".join(json.dumps(_conversation(t, i)) + "\n" for i, t in enumerate(tasks)))
    return log, tasks


def test_fifty_conversations_are_fifty_drafts_and_five_accepted_evaluate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAT_HOME", str(tmp_path / "home"))
    log, tasks = _log(tmp_path)
    mine = tmp_path / "my-tasks.jsonl"
    result = runner.invoke(app, ["data", "drafts", "import", str(log), str(mine)])
    assert result.exit_code == 0, result.output
    assert "50 draft(s) added" in result.output and "50 email" in result.output
    drafts = load_drafts(mine)
    assert len(drafts) == 50 and not mine.exists()  # nothing is a task before review
    first, task = drafts[0], tasks[0]
    assert first["draft"]["status"] == "unreviewed" and first["draft"]["source"].endswith(":1")
    assert "[email]" in first["message"] and "example.com" not in json.dumps(first)
    assert [c["tool"] for c in first["gold_calls"]] == [c.tool for c in task.gold_calls]
    assert first["skills"] == ["order-help"]  # the loader's calls are skills, not gold calls
    assert first["facts"], "values a tool returned that the reply states are suggested"
    # importing the same log again adds nothing
    again = runner.invoke(app, ["data", "drafts", "import", str(log), str(mine)])
    assert again.exit_code == 0 and "0 draft(s) added" in again.output

    ids = [d["id"] for d in drafts[:5]]
    result = runner.invoke(app, ["data", "drafts", "accept", str(mine), *ids, "--split", "test"])
    assert result.exit_code == 0, result.output
    assert len(load_task_file(mine)) == 5 and len(load_drafts(mine)) == 45
    result = runner.invoke(app, ["data", "drafts", "drop", str(mine), drafts[5]["id"]])
    assert result.exit_code == 0 and len(load_drafts(mine)) == 44

    imported = runner.invoke(
        app, ["harness", "import", str(DESK / "harness"), "--trust", "-m", "desk"]
    )
    assert imported.exit_code == 0, imported.output
    run = runner.invoke(
        app,
        ["eval", "run", "--oracle", "-s", "tasks", "--tasks", str(mine), "--harness", "order-desk"],
    )
    assert run.exit_code == 0, run.output
    from core.eval.api import list_eval_runs, load_results
    from core.store import Store

    with Store.open() as store:
        rows = load_results(store, list_eval_runs(store)[0].id)
    assert len(rows) == 5 and all(r.passed for r in rows), [r.reason for r in rows]


def test_a_bad_line_is_named_and_the_rest_imported(tmp_path: Path) -> None:
    log, _ = _log(tmp_path, 3)
    lines = log.read_text().splitlines()
    lines.insert(1, "{not json")
    lines.insert(2, json.dumps({"messages": [{"role": "user", "content": "hello?"}]}))
    log.write_text("\n".join(lines) + "\n")
    mine = tmp_path / "t.jsonl"
    result = runner.invoke(app, ["data", "drafts", "import", str(log), str(mine)])
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert f"{log}:2: not JSON" in text and f"{log}:3: the last user message has no reply" in text
    assert len(load_drafts(mine)) == 3 and drafts_path(mine).name == "t.drafts.jsonl"


def test_masking_off_keeps_what_was_logged(tmp_path: Path) -> None:
    log, _ = _log(tmp_path, 2)
    report = read_chat_log(log, mask=False)
    assert "reader0@example.com" in report.drafts[0]["message"] and not report.masked


def test_accept_refuses_an_unknown_split_or_draft(tmp_path: Path) -> None:
    log, _ = _log(tmp_path, 1)
    mine = tmp_path / "t.jsonl"
    runner.invoke(app, ["data", "drafts", "import", str(log), str(mine)])
    draft = load_drafts(mine)[0]
    result = runner.invoke(
        app, ["data", "drafts", "accept", str(mine), draft["id"], "--split", "sometimes"]
    )
    assert result.exit_code == 1 and "not train or test" in result.output
    result = runner.invoke(app, ["data", "drafts", "accept", str(mine), "draft-nope"])
    assert result.exit_code == 1 and "no draft 'draft-nope'" in " ".join(result.output.split())


def _luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        n = int(ch)
        if i % 2 == 0:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return str((10 - total % 10) % 10)


@given(
    user=st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,5})?", fullmatch=True),
    domain=st.from_regex(r"[a-z]{2,8}\.(com|org|co\.uk)", fullmatch=True),
    card=st.from_regex(r"4[0-9]{14}", fullmatch=True),
    phone=st.from_regex(r"\+44 7[0-9]{3} [0-9]{6}", fullmatch=True),
)
def test_personal_data_is_masked_and_shop_numbers_are_not(
    user: str, domain: str, card: str, phone: str
) -> None:
    card += _luhn_digit(card)
    spaced = f"{card[:4]} {card[4:8]} {card[8:12]} {card[12:]}"
    text = (
        f"Mail {user}@{domain}, card {spaced}, "
        f"call {phone}. Order PT-1042, ISBN 9780139309557, shipped 2026-10-06, total 47.50."
    )
    counts: Counter[str] = Counter()
    masked = mask_text(text, counts)
    assert counts == {"email": 1, "card": 1, "phone": 1}, masked
    assert f"{user}@" not in masked and spaced not in masked and phone not in masked
    assert "card [card]," in masked
    for kept in ("PT-1042", "9780139309557", "2026-10-06", "47.50"):
        assert kept in masked
