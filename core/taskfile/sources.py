"""Where a command's tasks come from: one resolver for "a split, a suite or a file".

    tasks = load_source("train", seed=0, per_category=4)        # generated live-room split
    tasks = load_source("robustness")                           # a bundled suite
    tasks = load_source("my-tasks.jsonl")                        # a task file's train split
    problem = source_problem(config.tasks)                       # a form's check, no loading

Data generation, the studio's task browser, RL and the stage configs all resolve `--tasks`
here, so the words mean the same everywhere: `train | dev | test` are the live room's
generated splits, `ls-qa | robustness` its suites (`suite_tasks`: the bundled copy at seed 0,
generated with the seed otherwise, for evaluation, training stages and the latency bench
alike), and a path is either a task file
(JSONL lines with `message`, core/taskfile) or live-room tasks saved as JSONL (lines with
`viewer_message`). A task file gives its `train` split (all of it when it has none): the
`test` split is evaluation's (core/eval/planning.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.sim.models import Split, Task
from core.taskfile.models import OwnTask, TaskFileError, TaskSplit, is_task_file, load_task_file

if TYPE_CHECKING:
    from core.sim.models import Task

SPLITS: tuple[str, ...] = ("train", "dev", "test")


class TaskSourceError(ValueError):
    """A task source that names nothing, or a file that cannot be read; the message says why."""


def suites() -> tuple[str, ...]:
    from core.sim.tasks import SUITES  # heavy: jsonschema, regex

    return tuple(SUITES)


def suite_tasks(name: str, seed: int = 0) -> list[Task]:
    """A suite's tasks: the bundled copy at seed 0 (what every report has scored), generated
    with `seed` otherwise. The one rule: a suite at seed 3 is the same tasks whichever
    command asks for it."""
    from core.sim.tasks import build_suite, load_suite  # heavy: jsonschema, regex

    if seed == 0:
        try:
            return list(load_suite(name))
        except (FileNotFoundError, ValueError):
            pass
    return list(build_suite(name, seed=seed))


def source_problem(source: str, *, task_files: bool = True) -> str | None:
    """Why `source` names no tasks (without loading them), or None."""
    if source in SPLITS or source in suites():
        return None
    path = Path(source).expanduser()
    if not path.is_file():
        return (
            f"{source!r} is not a split ({', '.join(SPLITS)}), a suite "
            f"({', '.join(suites())}) or a file"
        )
    if not task_files and is_task_file(path):
        return f"{source}: a task file cannot drive this stage yet; give live-room tasks"
    return None


def source_is_task_file(source: str) -> bool:
    """Whether `source` names a task file (it plays in the task-file world), not live-room
    tasks (a split, a suite, or live-room tasks saved as JSONL)."""
    if source in SPLITS or source in suites():
        return False
    path = Path(source).expanduser()
    return path.is_file() and is_task_file(path)


def load_source(
    source: str,
    *,
    seed: int = 0,
    per_category: int | None = None,
    task_files: bool = True,
) -> list[Task | OwnTask]:
    """The tasks `source` names (module doc); TaskSourceError on a bad source or file.
    `task_files=False`: a stage that plays live-room tasks only refuses a task file."""
    from core.sim.tasks import generate_tasks, read_tasks  # heavy: jsonschema, regex

    problem = source_problem(source, task_files=task_files)
    if problem is not None:
        raise TaskSourceError(problem)
    if source in SPLITS:
        return list(generate_tasks(Split(source), seed=seed, per_category=per_category))
    if source in suites():
        return list(suite_tasks(source, seed))
    path = Path(source).expanduser()
    try:
        if is_task_file(path):
            own = load_task_file(path)
            return list([t for t in own if t.split is TaskSplit.TRAIN] or own)
        return list(read_tasks(path))
    except (TaskFileError, OSError, ValueError) as exc:
        raise TaskSourceError(str(exc)) from None


def load_live_source(source: str, *, seed: int = 0, per_category: int | None = None) -> list[Task]:
    """`load_source` for stages that play live-room tasks only."""

    return [
        t
        for t in load_source(source, seed=seed, per_category=per_category, task_files=False)
        if isinstance(t, Task)
    ]
