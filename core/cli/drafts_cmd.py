"""`hat data drafts`: production conversations as task drafts, reviewed into a task file
(core/taskfile/drafts.py says what a draft is). Imports here are inside the commands: the CLI
is a start-up path, and `hat --help` should not load what one command needs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.cli.common import console, err_console, esc, fail

app = typer.Typer(
    help="Task drafts from logged conversations: import, review, accept into a task file.",
    no_args_is_help=True,
)

TasksArg = Annotated[Path, typer.Argument(help="The task file the drafts are for (JSONL).")]


@app.command("import")
def import_cmd(
    log: Annotated[
        Path, typer.Argument(help="Chat log: OpenAI chat JSONL, one conversation a line.")
    ],
    tasks: TasksArg,
    no_mask: Annotated[
        bool,
        typer.Option("--no-mask", help="Keep e-mail addresses, phone and card numbers as logged."),
    ] = False,
    loader: Annotated[
        str,
        typer.Option("--loader", help="The harness's skill-loading tool (its calls are skills)."),
    ] = "load_skill",
) -> None:
    """Read every conversation of LOG as an unreviewed draft for TASKS (a bad line is named
    and skipped; exit 1 when any was)."""
    from core.taskfile.drafts import ChatLogError, add_drafts, drafts_path, read_chat_log
    from core.taskfile.models import TaskFileError

    try:
        report = read_chat_log(log, loader=loader, mask=not no_mask)
        added = add_drafts(tasks, report.drafts)
    except (ChatLogError, TaskFileError) as exc:
        fail(str(exc))
    for problem in report.problems:
        err_console.print(f"[yellow]skipped[/yellow] {esc(problem)}", soft_wrap=True)
    masked = ", ".join(f"{n} {kind}" for kind, n in sorted(report.masked.items())) or "nothing"
    console.print(
        f"{added} draft(s) added to {esc(str(drafts_path(tasks)))} "
        f"({len(report.drafts) - added} already there; masked: {masked})",
        soft_wrap=True,
    )
    if report.problems:
        fail(f"{len(report.problems)} line(s) of {log} skipped")


@app.command("list")
def list_cmd(tasks: TasksArg) -> None:
    """The drafts waiting for review: id, source line, the message, calls and suggested facts."""
    from core.taskfile.drafts import DRAFT_KEY, load_drafts
    from core.taskfile.models import TaskFileError

    try:
        drafts = load_drafts(tasks)
    except TaskFileError as exc:
        fail(str(exc))
    for d in drafts:
        calls = ", ".join(c.get("tool", "?") for c in d.get("gold_calls", [])) or "no calls"
        source = d.get(DRAFT_KEY, {}).get("source", "")
        console.print(
            f"{esc(d.get('id', '?'))}  {esc(str(d.get('message', ''))[:70])!r}  [{esc(calls)}]  "
            f"facts: {esc('; '.join(map(str, d.get('facts', []))) or '-')}  ({esc(source)})",
            soft_wrap=True,
        )
    console.print(f"{len(drafts)} draft(s)")


@app.command("accept")
def accept_cmd(
    tasks: TasksArg,
    draft_ids: Annotated[list[str], typer.Argument(help="Draft id(s).")],
    split: Annotated[str, typer.Option("--split", help="train | test")] = "train",
    fact: Annotated[
        list[str] | None,
        typer.Option("--fact", help="The facts a correct reply states (replace the suggested)."),
    ] = None,
    category: Annotated[str | None, typer.Option("--category")] = None,
) -> None:
    """Move drafts into TASKS' split, with the facts and category given (else the draft's)."""
    from core.taskfile.drafts import accept
    from core.taskfile.models import TaskFileError

    if split not in ("train", "test"):
        fail(f"--split: {split!r} is not train or test")
    for draft_id in draft_ids:
        try:
            task = accept(tasks, draft_id, split=split, facts=fact or None, category=category)
        except TaskFileError as exc:
            fail(str(exc))
        console.print(f"accepted {esc(task.id)} into {esc(str(tasks))} ({split})")


@app.command("drop")
def drop_cmd(
    tasks: TasksArg, draft_ids: Annotated[list[str], typer.Argument(help="Draft id(s).")]
) -> None:
    """Drop drafts (the log they came from is left as it is)."""
    from core.taskfile.drafts import drop
    from core.taskfile.models import TaskFileError

    for draft_id in draft_ids:
        try:
            drop(tasks, draft_id)
        except TaskFileError as exc:
            fail(str(exc))
        console.print(f"dropped {esc(draft_id)}")
