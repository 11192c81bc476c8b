"""Planning a run: which items a request has, in run order (nothing is played here).

**Suites** (items are (suite, task, variant, sample); `limit` keeps the first N tasks of a
suite, taken round-robin over task categories so a small run still covers every category):

- `ls-qa`: the test split (core/sim/tasks.py, 540 tasks at seed 0) under the run's harness.
- `hv-qa`: the same tasks, each under K variants of the harness drawn from the **heldout**
  HSA bank (medium strength). Variant k of a task gets the seed `variant_seed(seed, task, k)`
  (core/datagen/variants.py) and one HSA dimension: the five dimension-only policies and the
  full policy (`all`) in rotation, starting at an offset fixed by the task id, so K = 6
  covers every dimension once per task and any K spreads them evenly over tasks. A variant is
  built by `core.hsa.augment` from the task's gold trajectory (the oracle's run under the
  harness), so only transforms that preserve this task are kept; the graders read the
  variant through its own surface (tools by binding, skills by role), so renamed tools and
  skills grade like the originals.
- `robustness`: the robustness suite (test tasks with injected faults and distractor tools).
- `hv-tasks`: Harness-Variant QA of the task file: its test tasks, each under K heldout
  variants as `hv-qa` draws them, built from the task's gold run through the harness's own
  tools (a task whose gold does not get full marks, or cannot survive a variant, is a failed
  item whose reason says why, never silently graded); graded by binding and role.
- `tasks`: the operator's task file (`request.task_file`, core/taskfile), its test split,
  under the run's harness with the harness's own tool bindings (one `ToolRuntime` for the
  run: MCP servers started once, shared by the items in flight); graded by facts, gold calls,
  skills and grounded numbers, and by the LLM judge (`judge_url`) for reference-only tasks.
- `ifeval`: IFEval prompts asked plainly (one user message, no harness, no tools) through the
  same client, scored by `core.eval.ifeval.score_response`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from core.eval.ifeval import load_prompts
from core.eval.results import Suite
from core.eval.types import EvalError, EvalItem, EvalRequest
from core.taskfile.models import TaskFileError, TaskSplit, load_task_file, task_split
from core.taskfile.sources import suite_tasks

if TYPE_CHECKING:
    from core.taskfile.models import OwnTask

T = TypeVar("T")

HV_DIMENSIONS: tuple[str, ...] = (
    "skill_ids",
    "skill_content",
    "tool_schemas",
    "prompt",
    "hooks",
    "all",
)
"""HV-QA variant dimensions in rotation ("all": a full heldout policy)."""


def stratified(
    tasks: Sequence[T], limit: int | None, category: Callable[[T], str] | None = None
) -> list[T]:
    """The first `limit` tasks taken round-robin over categories (all when None), in the
    suite's order within each category; the result is ordered like the suite. `category`:
    a task's category (default: a live-room task's)."""
    if limit is None or limit >= len(tasks):
        return list(tasks)
    key = category or (lambda task: str(task.category.value))  # type: ignore[attr-defined]
    by_category: dict[str, list[T]] = {}
    for task in tasks:
        by_category.setdefault(key(task), []).append(task)
    picked: list[T] = []
    for group in zip_longest(*by_category.values()):
        for task in group:
            if task is not None and len(picked) < limit:
                picked.append(task)
    chosen = {id(t) for t in picked}
    return [t for t in tasks if id(t) in chosen]


def hv_dimension(seed: int, task_id: str, index: int) -> str:
    """The HSA dimension of variant `index` (1-based) of a task (module doc)."""
    digest = hashlib.sha256(f"hv-dim:{seed}:{task_id}".encode()).digest()
    offset = int.from_bytes(digest[:2], "big")
    return HV_DIMENSIONS[(offset + index - 1) % len(HV_DIMENSIONS)]


def _prompt_field(record: Any, name: str) -> Any:
    if isinstance(record, dict):
        return record.get(name)
    return getattr(record, name, None)


def _prompt_dict(record: Any) -> dict[str, Any]:
    if isinstance(record, dict):
        return dict(record)
    dump = getattr(record, "model_dump", None)
    if callable(dump):
        data = dump()
        if isinstance(data, dict):
            return data
    if hasattr(record, "__dict__"):
        return dict(vars(record))
    return {"prompt": str(record)}


def ifeval_prompts(path: str | None) -> list[Any]:
    """The IFEval prompt records (`core.eval.ifeval.load_prompts`)."""

    try:
        records = load_prompts(path)
    except (OSError, ValueError) as exc:
        raise EvalError(f"cannot load the IFEval prompts: {exc}") from None
    return list(records)


def own_tasks(request: EvalRequest) -> list[OwnTask]:
    """The `tasks` suite's tasks: the test split of the request's task file, `limit` first
    ones taken round-robin over categories like the other suites."""

    if request.task_file is None:
        raise EvalError("the tasks suite needs a task file (--tasks FILE)")
    try:
        tasks = task_split(load_task_file(Path(request.task_file)), TaskSplit.TEST)
    except TaskFileError as exc:
        raise EvalError(str(exc)) from None
    if not tasks:
        raise EvalError(f"{request.task_file}: no task has split test")
    return stratified(tasks, request.limit, lambda t: t.category)


def plan_items(
    request: EvalRequest, *, ifeval_records: Sequence[Any] | None = None
) -> list[EvalItem]:
    """Every item of a request, in run order: suite, task, variant, sample."""
    items: list[EvalItem] = []
    samples = range(request.samples)
    for suite in request.suites:
        if suite is Suite.IFEVAL:
            records = list(ifeval_records) if ifeval_records is not None else []
            if request.limit is not None:
                records = records[: request.limit]
            for record in records:
                key = _prompt_field(record, "key")
                task_id = str(key if key is not None else _prompt_field(record, "prompt"))
                for sample in samples:
                    items.append(EvalItem(suite, task_id, sample, prompt=_prompt_dict(record)))
            continue
        if suite is Suite.TASKS:
            for own in own_tasks(request):
                for sample in samples:
                    items.append(EvalItem(suite, own.id, sample, category=own.category, task=own))
            continue
        if suite is Suite.HV_TASKS:
            for own in own_tasks(request):
                items.extend(_hv_items(request, suite, own.id, own.category, own))
            continue
        name = "robustness" if suite is Suite.ROBUSTNESS else "ls-qa"
        tasks = suite_tasks(name, request.seed)
        if request.categories is not None:
            wanted = set(request.categories)
            tasks = [t for t in tasks if t.category.value in wanted]
        tasks = stratified(tasks, request.limit)
        for task in tasks:
            category = task.category.value
            if suite is Suite.HV_QA:
                items.extend(_hv_items(request, suite, task.id, category, task))
            else:
                for sample in samples:
                    items.append(EvalItem(suite, task.id, sample, category=category, task=task))
    return items


def _hv_items(
    request: EvalRequest, suite: Suite, task_id: str, category: str, task: Any
) -> list[EvalItem]:
    """A task's Harness-Variant items: K heldout variants (dimensions in rotation) x samples."""
    from core.datagen.variants import variant_seed  # heavy: openai, sqlalchemy, alembic

    items: list[EvalItem] = []
    for k in range(1, request.variants + 1):
        vseed = variant_seed(request.seed, task_id, k)
        dim = hv_dimension(request.seed, task_id, k)
        for sample in range(request.samples):
            items.append(EvalItem(suite, task_id, sample, vseed, dim, category, task=task))
    return items
