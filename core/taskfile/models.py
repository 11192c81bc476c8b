"""One task of a task file, and reading a whole file with errors that name the line.

A task is what an operator knows about a request their agent should handle: the user's
message (and optionally earlier turns), what a correct answer states (`facts`) or a reference
answer (`reference`, graded by a judge), the tool calls a good run makes (`gold_calls`) and
the skills it loads (`skills`). Names in `gold_calls` and `skills` are the harness's names as
the file was written; graders match calls by the tool's *binding*, so a task file keeps
grading correctly under HSA variants that rename tools, parameters and skills.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.harness.folder import data_shape_problem
from core.jsonl import jsonl_lines, loads_line

TASK_FILE_MARKER = "message"
"""The key every task-file line has and no live-room task has (those carry `viewer_message`)."""


class TaskSplit(StrEnum):
    TRAIN = "train"
    TEST = "test"


class GoldCall(BaseModel):
    """A tool call a good run makes: the tool's name in the task file's harness and the
    arguments that matter (a played call may pass more; these must match)."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    expect_error: bool = Field(
        default=False,
        exclude_if=lambda value: not value,  # a file without refusals reads back as written
        description="The tool's refusal is the answer (an order that does not exist, a return "
        "outside its window): the gold run must meet a tool error here. Otherwise a gold call "
        "whose tool raises or returns an error makes the task's gold broken.",
    )


class HistoryTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str
    content: str

    @field_validator("role")
    @classmethod
    def _check_role(cls, value: str) -> str:
        if value not in ("user", "assistant"):
            raise ValueError("a history turn's role is user or assistant")
        return value


class OwnTask(BaseModel):
    """One line of a task file (module doc)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=200)
    message: str = Field(min_length=1, description="The user's message this request answers.")
    history: list[HistoryTurn] = Field(
        default_factory=list, description="Earlier turns of the conversation, oldest first."
    )
    context: dict[str, Any] = Field(
        default_factory=dict,
        description="Session data the tools receive (ToolContext.context['task']), e.g. the "
        "signed-in customer; not shown to the model.",
    )
    facts: list[str | list[str]] = Field(
        default_factory=list,
        description="What a correct reply states; a list is alternatives (any one counts).",
    )
    reference: str | None = Field(
        default=None, description="A reference answer, graded by an LLM judge."
    )
    gold_calls: list[GoldCall] = Field(default_factory=list)
    skills: list[str] = Field(default_factory=list, description="Skills a good run loads.")
    category: str = Field(default="default", min_length=1, max_length=64)
    split: TaskSplit = TaskSplit.TEST

    @field_validator("facts")
    @classmethod
    def _check_facts(cls, value: list[str | list[str]]) -> list[str | list[str]]:
        for i, fact in enumerate(value):
            options = [fact] if isinstance(fact, str) else fact
            if not options or any(not o.strip() for o in options):
                raise ValueError(f"facts[{i}] is empty (a fact is a phrase or a list of them)")
        return value

    @model_validator(mode="after")
    def _check_gradable(self) -> OwnTask:
        if not self.facts and not (self.reference and self.reference.strip()):
            raise ValueError("a task needs facts, a reference answer, or both, to be graded")
        return self

    @property
    def fact_options(self) -> list[list[str]]:
        return [[f] if isinstance(f, str) else list(f) for f in self.facts]

    @property
    def needs_judge(self) -> bool:
        """No facts: only a judge can grade the reply against the reference."""
        return not self.facts


class TaskFileError(ValueError):
    """A task file that cannot be read; the message names the file and the line."""


def _field_path(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def parse_task_line(text: str, *, where: str) -> OwnTask:
    """One JSON line as a task; TaskFileError naming `where` (file:line) and the field."""
    try:
        data = loads_line(text)
    except ValueError as exc:
        raise TaskFileError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TaskFileError(f"{where}: a task is a JSON object, not {type(data).__name__}")
    shape = data_shape_problem(data)
    if shape is not None:
        raise TaskFileError(f"{where}: {shape[0] or 'task'}: {shape[1]}")
    try:
        return OwnTask.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = _field_path(first["loc"]) or "task"
        message = str(first["msg"]).removeprefix("Value error, ")
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise TaskFileError(f"{where}: {path}: {message}{more}") from None


def load_task_file(path: Path) -> list[OwnTask]:
    """Every task of a JSONL task file, in file order. Blank lines and lines starting with
    `//` are skipped; a bad line, a duplicate id or an empty file is a TaskFileError."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"{path}: cannot read the task file ({exc})") from None
    tasks: list[OwnTask] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        task = parse_task_line(line, where=f"{path}:{number}")
        if task.id in seen:
            raise TaskFileError(
                f"{path}:{number}: task id {task.id!r} is already used on line {seen[task.id]}"
            )
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{path}: the task file has no tasks")
    return tasks


def is_task_file(path: Path) -> bool:
    """Whether `path` holds task-file tasks rather than live-room tasks: its first task line
    has a `message` key. Unreadable files say False (the caller's reader names the problem)."""
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for line in handle:
                if line.strip() and not line.lstrip().startswith("//"):
                    data = loads_line(line)
                    return isinstance(data, dict) and TASK_FILE_MARKER in data
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return False


def task_split(tasks: Iterable[OwnTask], split: TaskSplit | str | None) -> list[OwnTask]:
    """The tasks of one split (all of them for None)."""
    if split is None:
        return list(tasks)
    wanted = TaskSplit(split)
    return [t for t in tasks if t.split is wanted]


def check_against_harness(
    tasks: Iterable[OwnTask], tool_names: set[str], skill_names: set[str]
) -> list[str]:
    """Problems of tasks whose gold names a tool or skill the harness does not have."""
    problems: list[str] = []
    for task in tasks:
        for i, call in enumerate(task.gold_calls):
            if call.tool not in tool_names:
                problems.append(
                    f"task {task.id}: gold_calls[{i}] names tool {call.tool!r}, which the "
                    "harness does not have"
                )
        for name in task.skills:
            if name not in skill_names:
                problems.append(
                    f"task {task.id}: skills names {name!r}, which the harness does not have"
                )
    return problems
