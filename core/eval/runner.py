"""The suite runner: plan a run's items, drive each through the one agent loop, store rows.

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
- `tasks`: the operator's task file (`request.task_file`, core/taskfile), its test split,
  under the run's harness with the harness's own tool bindings (one `ToolRuntime` for the
  run: MCP servers started once, shared by the items in flight); graded by facts, gold calls,
  skills and grounded numbers, and by the LLM judge (`judge_url`) for reference-only tasks.
- `ifeval`: IFEval prompts asked plainly (one user message, no harness, no tools) through the
  same client, scored by `core.eval.ifeval.score_response`.

**One item.** A fresh `LiveRoom` for the task (its faults), the harness with the task's
distractor tools, `AgentLoop.run(viewer message)`, `core.sim.graders.grade`. The row's score
is the mean of the four grades, `passed` is full marks. An item is **failed** (status failed,
score 0, grades kept when there is a trace) when it could not be completed: `model_error`
(the server was unreachable or answered with an error), `max_turns` (an endless tool loop),
`empty_output` (the model wrote nothing), `timeout` (longer than `item_timeout_s`), `crash` (a
bug; the reason names it) or `variant` (no HSA variant could be built). The reason starts with
that kind.

**A dead server.** After a `model_error` the runner checks the server (GET /models). A
managed server that is down is restarted once per run invocation and the items that hit it
are run again; when it is down again (or cannot restart, or an external `base_url` stops
answering) the item is stored as failed and the run ends with status `failed` and the reason.
`resume` continues: stored items are skipped, transport failures (`model_error`, `timeout`,
`crash`) are run again.

**Rows** are stored as they complete, one transaction each (row, compressed trace and the
request's latency row, source `eval`, session = the run id); the progress callback follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from filelock import FileLock, Timeout

from core.eval.api import (
    DEFAULT_HARNESS,
    ClientFactory,
    EvalError,
    EvalItem,
    EvalRequest,
    EvalRun,
    ProgressCallback,
    RunStatus,
    StopFlag,
)
from core.eval.results import EvalResult, ResultStatus, Suite
from core.eval.store import (
    ItemKey,
    add_result,
    create_run,
    done_items,
    get_run,
    update_run,
)
from core.runtime.client import ChatClient, Message
from core.runtime.trace import ModelCallStep, Trace, TraceStatus
from core.store.errors import StoreError
from core.store.types import utcnow

if TYPE_CHECKING:
    from core.harness.models import Harness
    from core.serving.server import ManagedServer
    from core.sim.graders import Grades
    from core.sim.models import Catalog, Task
    from core.sim.surface import HarnessSurface
    from core.store import Store
    from core.taskfile.models import OwnTask

log = logging.getLogger(__name__)
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

TRANSPORT_FAILURES = frozenset({"model_error", "timeout", "crash"})
"""Failure kinds that say nothing about the model: resume runs these items again."""


def failure_kind(reason: str | None) -> str:
    """The kind a failed row's reason starts with (`model_error: ...` -> model_error)."""
    return (reason or "").split(":", 1)[0].strip()


# ----------------------------------------------------------------------------- harness


def resolve_harness(store: Store, ref: str | None) -> tuple[Harness, str, str]:
    """(harness, its name, stored version id) for a request's `harness`.

    None: `live-host@production`, else `live-host@head`, else the bundled demo harness,
    committed to the store first so the run names a stored version. A bare harness name
    follows the same rule: `<name>@production`, else `<name>@head`."""
    if ref is not None:
        try:
            info = store.info(ref)
        except StoreError as exc:
            if "@" in ref or ref not in store.harness_names():
                raise EvalError(f"harness {ref!r}: {exc}") from None
            info = store.info(_default_ref(store, ref))
        return store.load(info.id), info.harness_name, info.id
    for candidate in (f"{DEFAULT_HARNESS}@production", f"{DEFAULT_HARNESS}@head"):
        try:
            info = store.info(candidate)
        except StoreError:
            continue
        return store.load(info.id), info.harness_name, info.id
    from core.harness.demo import load_demo_harness

    harness = load_demo_harness()
    info = store.commit(harness, "the bundled demo harness (stored for evaluation)")
    return store.load(info.id), info.harness_name, info.id


def _default_ref(store: Store, name: str) -> str:
    """`name@production` where that label exists, else `name@head`."""
    try:
        store.info(f"{name}@production")
    except StoreError:
        return f"{name}@head"
    return f"{name}@production"


# ----------------------------------------------------------------------------- planning


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


def suite_tasks(name: str, seed: int) -> list[Task]:
    """A suite's tasks: the bundled copy at seed 0, generated otherwise."""
    from core.sim.tasks import build_suite, load_suite

    if seed == 0:
        try:
            return load_suite(name)
        except (FileNotFoundError, ValueError):
            pass
    return build_suite(name, seed=seed)


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
    from core.eval.ifeval import load_prompts

    try:
        records = load_prompts(path)
    except (OSError, ValueError) as exc:
        raise EvalError(f"cannot load the IFEval prompts: {exc}") from None
    return list(records)


def own_tasks(request: EvalRequest) -> list[OwnTask]:
    """The `tasks` suite's tasks: the test split of the request's task file, `limit` first
    ones taken round-robin over categories like the other suites."""
    from core.taskfile.models import TaskFileError, TaskSplit, load_task_file, task_split

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
        name = "robustness" if suite is Suite.ROBUSTNESS else "ls-qa"
        tasks = suite_tasks(name, request.seed)
        if request.categories is not None:
            wanted = set(request.categories)
            tasks = [t for t in tasks if t.category.value in wanted]
        tasks = stratified(tasks, request.limit)
        for task in tasks:
            category = task.category.value
            if suite is Suite.HV_QA:
                from core.datagen.variants import variant_seed

                for k in range(1, request.variants + 1):
                    vseed = variant_seed(request.seed, task.id, k)
                    dim = hv_dimension(request.seed, task.id, k)
                    for sample in samples:
                        items.append(
                            EvalItem(suite, task.id, sample, vseed, dim, category, task=task)
                        )
            else:
                for sample in samples:
                    items.append(EvalItem(suite, task.id, sample, category=category, task=task))
    return items


# ----------------------------------------------------------------------------- clients


def oracle_clients(catalog: Catalog, *, memorised: Harness | None = None) -> ClientFactory:
    """A ClientFactory of oracle clients (core/sim/oracle.py): a perfect model, the ceiling
    of every agent suite and a deterministic stand-in for a served model in tests.

    `memorised`: the oracle reads and writes names through THIS harness's surface whatever
    harness the item runs under: a stand-in for a model fine-tuned on one fixed harness,
    which keeps calling tools and skills by their old names after an edit."""
    from core.sim.oracle import OracleClient
    from core.sim.surface import HarnessSurface

    fixed = HarnessSurface(memorised, {}, {}, {}) if memorised is not None else None

    def make(item: EvalItem, harness: Harness, surface: HarnessSurface) -> ChatClient:
        from core.taskfile.gold import gold_client
        from core.taskfile.models import OwnTask

        if item.task is None:
            raise EvalError(f"the oracle answers agent tasks only, not {item.suite.value} items")
        if isinstance(item.task, OwnTask):
            return gold_client(item.task, memorised or harness)
        return OracleClient(
            item.task, fixed.harness if fixed else harness, catalog, surface=fixed or surface
        )

    return make


# ----------------------------------------------------------------------------- the server


class _Server:
    """The endpoint a run talks to: a managed server it started, or an external base_url."""

    def __init__(self, base_url: str, managed: ManagedServer | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.managed = managed
        self.restarts = 0
        self.generation = 0
        self.down: str | None = None
        self.lock = asyncio.Lock()

    async def healthy(self) -> bool:
        if self.managed is not None and not self.managed.alive:
            return False
        try:
            async with httpx.AsyncClient(timeout=10.0) as http:
                response = await http.get(self.base_url + "/models")
            return response.status_code < 500
        except httpx.HTTPError:
            return False

    async def recover(self, seen_generation: int) -> bool:
        """After a model_error: True when the item should run again (the server was restarted
        since it started, or is restarted now); False when the server is fine (the error was
        the model's answer) or down for good (`down` set)."""
        async with self.lock:
            if self.down is not None:
                return False
            if self.generation != seen_generation:
                return True
            if await self.healthy():
                return False
            if self.managed is None:
                self.down = f"the server at {self.base_url} stopped answering"
                return False
            if self.restarts >= 1:
                self.down = "the server died again after its one restart"
                return False
            self.restarts += 1
            log.warning("evaluation: the model server died; restarting it once")
            from core.serving.server import ServerError

            try:
                await asyncio.to_thread(self.managed.restart)
            except ServerError as exc:
                self.down = f"the server died and did not restart: {exc}"
                return False
            self.base_url = self.managed.base_url.rstrip("/")
            self.generation += 1
            return True


async def _first_model(base_url: str) -> str | None:
    try:
        async with httpx.AsyncClient(timeout=10.0) as http:
            data = (await http.get(base_url.rstrip("/") + "/models")).json()
        return str(data["data"][0]["id"])
    except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError):
        return None


# ----------------------------------------------------------------------------- one item


@dataclass
class _Outcome:
    result: EvalResult
    trace: Trace | None = None
    retry: bool = False


@dataclass
class _Context:
    run_id: str
    request: EvalRequest
    harness: Harness
    catalog: Catalog
    factory: ClientFactory | None
    server: _Server | None
    client: ChatClient | None
    engine: str | None
    prepared: dict[str, Any] = field(default_factory=dict)
    prepare_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tools: Any = None
    """The run's ToolRuntime (the `tasks` suite): the harness's own bindings."""
    judge: Any = None
    """The LLM judge of reference-only tasks (core.sim.judge.LLMJudge), when asked for."""


def _failed(item: EvalItem, reason: str, trace: Trace | None = None, **extra: Any) -> EvalResult:
    fields: dict[str, Any] = {
        "suite": item.suite,
        "task_id": item.task_id,
        "sample": item.sample,
        "variant_seed": item.variant_seed,
        "dimension": item.dimension,
        "category": item.category,
        "score": 0.0,
        "passed": False,
        "status": ResultStatus.FAILED,
        "reason": reason,
        "trace_id": trace.request_id if trace is not None else None,
        "latency_s": trace.e2e_s if trace is not None else None,
    }
    fields.update(extra)
    return EvalResult(**fields)


async def _variant_harness(ctx: _Context, item: EvalItem, base: Harness) -> Harness:
    """The heldout HSA variant of `base` for an HV-QA item (module doc)."""
    from core.hsa.augment import augment_prepared, prepare
    from core.hsa.policy import Policy
    from core.sim.oracle import gold_trajectory

    from core.sim.models import Task

    assert isinstance(item.task, Task) and item.variant_seed is not None
    async with ctx.prepare_lock:
        req = ctx.prepared.get(item.task_id)
        if req is None:
            gold = await gold_trajectory(item.task, base, ctx.catalog, add_distractors=False)
            req = prepare(base, gold)
            if len(ctx.prepared) > 64:
                ctx.prepared.clear()
            ctx.prepared[item.task_id] = req
    dims = None if item.dimension in (None, "all") else [item.dimension]
    policy = Policy("heldout", "medium", dims)
    return augment_prepared(req, policy, item.variant_seed).harness


def _client(ctx: _Context, item: EvalItem, harness: Harness, surface: HarnessSurface) -> ChatClient:
    if ctx.factory is not None:
        return ctx.factory(item, harness, surface)
    assert ctx.client is not None
    return ctx.client


async def _agent_item(ctx: _Context, item: EvalItem) -> _Outcome:
    from core.sim.episode import play
    from core.sim.oracle import task_harness
    from core.sim.surface import HarnessSurface
    from core.taskfile.models import OwnTask

    task = item.task
    assert task is not None
    if isinstance(task, OwnTask):
        own_surface = HarnessSurface(ctx.harness, {}, {}, {})
        own = await play(
            task,
            ctx.harness,
            _client(ctx, item, ctx.harness, own_surface),
            tools=ctx.tools,
            judge=ctx.judge,
            request_id=uuid.uuid4().hex,
        )
        return _graded_outcome(item, own.trace, own.grades)
    harness = task_harness(task, ctx.harness)
    if item.suite is Suite.HV_QA:
        try:
            harness = await _variant_harness(ctx, item, harness)
        except Exception as exc:  # AugmentError and anything a transform raises
            return _Outcome(_failed(item, f"variant: {type(exc).__name__}: {exc}"))
    surface = HarnessSurface(harness, {}, {}, {})
    client = _client(ctx, item, harness, surface)
    episode = await play(
        task, harness, client, ctx.catalog, surface=surface, request_id=uuid.uuid4().hex
    )
    return _graded_outcome(item, episode.trace, episode.grades)


def _graded_outcome(item: EvalItem, trace: Trace, grades: Grades | None) -> _Outcome:
    """An agent item's row from its played trace and grades (failed kinds first)."""
    assert grades is not None
    dumped = grades.model_dump(mode="json")
    reply = (trace.final_reply or "").strip()
    if trace.status is TraceStatus.MODEL_ERROR:
        return _Outcome(_failed(item, f"model_error: {trace.reason}", trace, grades=dumped), trace)
    if trace.status is TraceStatus.MAX_TURNS:
        return _Outcome(_failed(item, f"max_turns: {trace.reason}", trace, grades=dumped), trace)
    if _silent(trace):
        reason = "empty_output: the model produced no text"
        return _Outcome(_failed(item, reason, trace, grades=dumped), trace)
    if trace.ok and not reply:
        reason = "empty_output: the model's final reply was empty"
        return _Outcome(_failed(item, reason, trace, grades=dumped), trace)
    scores = grades.scores()
    result = EvalResult(
        suite=item.suite,
        task_id=item.task_id,
        sample=item.sample,
        variant_seed=item.variant_seed,
        dimension=item.dimension,
        category=item.category,
        score=min(1.0, max(0.0, sum(scores.values()) / len(scores))),
        passed=grades.full_marks,
        grades=dumped,
        trace_id=trace.request_id,
        latency_s=trace.e2e_s,
    )
    return _Outcome(result, trace)


def _silent(trace: Trace) -> bool:
    """Every model call answered, and with nothing (whatever the hooks made of it)."""
    calls = trace.steps_of(ModelCallStep)
    return bool(calls) and all(c.error is None and not c.raw_output.strip() for c in calls)


async def _ifeval_item(ctx: _Context, item: EvalItem) -> _Outcome:
    """One IFEval prompt asked plainly (one user message, no harness) through the client; a
    failed row keeps the prompt's instructions, all not followed, for instruction-level
    accounting (`core.eval.ifeval.aggregate_results`)."""
    from core.eval import ifeval
    from core.runtime.client import ModelError
    from core.sim.surface import HarnessSurface

    record = item.prompt or {}
    client = _client(ctx, item, ctx.harness, HarnessSurface(ctx.harness, {}, {}, {}))
    messages: list[Message] = [{"role": "user", "content": str(record.get("prompt") or "")}]
    started = time.monotonic()
    reason: str | None = None
    response = ""
    try:
        reply = await client.complete(messages)
        response = reply.content or ""
        if not response.strip():
            reason = "empty_output: the model produced no text"
    except ModelError as exc:
        reason = f"model_error: {exc}"
    latency = time.monotonic() - started
    # Scoring is CPU work (langdetect, sentence splitting): off the event loop, so the
    # other items' streams keep flowing while one is scored.
    score = await asyncio.to_thread(ifeval.score_response, record, response)
    result = ifeval.to_result(score, sample=item.sample, response=response, latency_s=latency)
    if reason is not None:
        result = _failed(item, reason, grades=dict(score), latency_s=latency)
    return _Outcome(result)


async def run_item(ctx: _Context, item: EvalItem) -> _Outcome:
    """One item, never raising: a failed row for anything that goes wrong (module doc)."""
    generation = ctx.server.generation if ctx.server is not None else 0
    try:
        work = _ifeval_item(ctx, item) if item.suite is Suite.IFEVAL else _agent_item(ctx, item)
        outcome = await asyncio.wait_for(work, ctx.request.item_timeout_s)
    except TimeoutError:
        reason = f"timeout: the item took longer than {ctx.request.item_timeout_s:g} s"
        return _Outcome(_failed(item, reason))
    except Exception as exc:  # a bug in a client, a grader or a harness: the row says which
        log.exception("evaluation item %s crashed", item.key)
        return _Outcome(_failed(item, f"crash: {type(exc).__name__}: {exc}"))
    result = outcome.result
    if (
        ctx.server is not None
        and ctx.factory is None
        and failure_kind(result.reason) == "model_error"
        and await ctx.server.recover(generation)
    ):
        outcome.retry = True
    elif (
        ctx.server is not None
        and ctx.server.down is not None
        and result.status is ResultStatus.FAILED
    ):
        reason = f"{result.reason} ({ctx.server.down})"
        outcome.result = result.model_copy(update={"reason": reason})
    return outcome


# ----------------------------------------------------------------------------- the run


def _latency_row(ctx: _Context, trace: Trace, task_id: str, warmup: bool) -> Any:
    from core.serving.latency import request_row

    return request_row(
        trace,
        session=ctx.run_id,
        source="eval",
        engine=ctx.engine,
        model=ctx.request.model,
        task_id=task_id,
        warmup=warmup,
    )


async def _execute(
    store: Store,
    run: EvalRun,
    items: list[EvalItem],
    skip: set[ItemKey],
    *,
    on_progress: ProgressCallback | None,
    stop: StopFlag | None,
    factory: ClientFactory | None,
    base_url: str | None,
) -> EvalRun:
    """Run every item not in `skip`; the run's final record."""
    from core.sim.catalog import load_catalog

    request = run.request
    todo = [item for item in items if item.key not in skip]
    total = len(items)
    done = total - len(todo)
    store_update = asyncio.to_thread
    await store_update(
        update_run,
        store,
        run.id,
        status=RunStatus.RUNNING,
        started_at=run.started_at or utcnow(),
        finished_at=None,
        reason=None,
        total=total,
    )
    if on_progress is not None:
        on_progress(done, total, None)
    if not todo:
        return await store_update(
            update_run, store, run.id, status=RunStatus.DONE, finished_at=utcnow()
        )

    server: _Server | None = None
    managed: ManagedServer | None = None
    client: Any = None
    engine: str | None = None
    harness = await asyncio.to_thread(store.load, run.harness_version or "head", run.harness)
    try:
        if factory is None:
            url = base_url or request.base_url
            if url is None:
                managed, failure = await _start_server(store, request)
                if managed is None:
                    return await store_update(
                        update_run,
                        store,
                        run.id,
                        status=RunStatus.FAILED,
                        reason=failure,
                        finished_at=utcnow(),
                    )
                url = managed.base_url
                model_id = managed.model_id
                engine = request.engine
            else:
                model_id = request.model_id or await _first_model(url) or request.model
            server = _Server(url, managed)
            client = _openai_client(request, url, model_id)
        ctx = _Context(
            run_id=run.id,
            request=request,
            harness=harness,
            catalog=load_catalog(),
            factory=factory,
            server=server,
            client=client,
            engine=engine,
        )
        async with contextlib.AsyncExitStack() as world:
            blocked = None
            if any(item.suite is Suite.TASKS for item in todo):
                blocked = await _open_own_world(ctx, world)
            if blocked is None:
                status, reason = await _drive(store, ctx, todo, done, total, on_progress, stop)
            else:
                status, reason = RunStatus.FAILED, blocked
    finally:
        if client is not None:
            await client.aclose()
        if managed is not None:
            await asyncio.to_thread(managed.stop)
    return await store_update(
        update_run, store, run.id, status=status, reason=reason, finished_at=utcnow()
    )


async def _open_own_world(ctx: _Context, world: contextlib.AsyncExitStack) -> str | None:
    """The `tasks` suite's world: the harness's tool runtime (every binding must resolve) and
    the judge when some task needs one; the reason the run cannot start, or None."""
    from core.runtime.tool_runtime import ToolRuntime, binding_problems
    from core.sim.judge import LLMJudge
    from core.taskfile.judge import JudgeUnavailable, check_judge

    problems = binding_problems(ctx.harness)
    if problems:
        listed = "; ".join(p.message for p in problems)
        return f"tools: the harness has bindings the runtime cannot run: {listed}"
    ctx.tools = await world.enter_async_context(ToolRuntime(ctx.harness))
    request = ctx.request
    if request.judge_url is not None and request.judge_model is not None:
        judge = LLMJudge(request.judge_url, request.judge_model, timeout_s=request.call_timeout_s)
        world.push_async_callback(judge.close)
        try:
            await check_judge(judge)
        except JudgeUnavailable as exc:
            return f"judge: {exc}"
        ctx.judge = judge
    return None


def _openai_client(request: EvalRequest, url: str, model_id: str) -> Any:
    from core.serving.client import GenerationOptions, OpenAIChatClient

    return OpenAIChatClient(
        url,
        model_id,
        options=GenerationOptions(max_tokens=request.max_tokens, temperature=request.temperature),
        timeout_s=request.call_timeout_s,
    )


async def _start_server(store: Store, request: EvalRequest) -> tuple[ManagedServer | None, str]:
    from core.models.registry import RegistryError
    from core.serving.engines import EngineConfig, EngineError
    from core.serving.launch import server_for
    from core.serving.server import ServerError

    try:
        server = server_for(
            store, EngineConfig(request.engine), request.model, adapter=request.adapter
        )
        await asyncio.to_thread(server.start)
    except (RegistryError, EngineError, ServerError) as exc:
        return None, f"server: cannot start {request.engine} for {request.model}: {exc}"
    return server, ""


async def _drive(
    store: Store,
    ctx: _Context,
    todo: list[EvalItem],
    done: int,
    total: int,
    on_progress: ProgressCallback | None,
    stop: StopFlag | None,
) -> tuple[RunStatus, str | None]:
    queue = list(reversed(todo))
    state = {"done": done, "first": True}

    def next_item() -> EvalItem | None:
        if stop is not None and stop.is_set():
            return None
        if ctx.server is not None and ctx.server.down is not None:
            return None
        return queue.pop() if queue else None

    async def worker() -> None:
        while True:
            item = next_item()
            if item is None:
                return
            outcome = await run_item(ctx, item)
            if outcome.retry:
                outcome = await run_item(ctx, item)
                if outcome.retry:  # restarted and died again within one item
                    outcome.retry = False
            latency = None
            if outcome.trace is not None and ctx.factory is None:
                latency = _latency_row(ctx, outcome.trace, item.task_id, bool(state["first"]))
                state["first"] = False
            trace_data = outcome.trace.model_dump(mode="json") if outcome.trace else None
            await asyncio.to_thread(
                add_result, store, ctx.run_id, outcome.result, trace=trace_data, latency=latency
            )
            state["done"] = int(state["done"]) + 1
            if on_progress is not None:
                on_progress(int(state["done"]), total, outcome.result)

    workers = [asyncio.ensure_future(worker()) for _ in range(ctx.request.concurrency)]
    try:
        finished, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
        for task in finished:
            task.result()  # re-raise a callback's or the store's failure
    finally:
        for pending in workers:
            pending.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    if ctx.server is not None and ctx.server.down is not None:
        return RunStatus.FAILED, ctx.server.down
    if queue:
        return RunStatus.STOPPED, "stopped on request"
    return RunStatus.DONE, None


def _lock_path(store: Store, run_id: str) -> Path:
    return Path(store.path).parent / "eval-locks" / f"{run_id}.lock"


def _run_lock(store: Store, run_id: str) -> FileLock:
    path = _lock_path(store, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path)


def is_active(store: Store, run_id: str) -> bool:
    """Whether some process is evaluating `run_id` right now.

    A run holds an OS file lock while it executes; the lock goes with the process, so a run
    whose process died is stored as running but is not active (and can be resumed)."""
    if not _lock_path(store, run_id).exists():
        return False  # never started here: nothing to create on a read
    lock = _run_lock(store, run_id)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


async def _guarded(store: Store, run: EvalRun, coro: Any) -> EvalRun:
    """Await `coro` holding the run's lock; a cancelled or crashed run is stored as stopped /
    failed first. A run another process is executing is refused, untouched."""
    lock = _run_lock(store, run.id)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        coro.close()
        raise EvalError(
            f"run {run.id} is being evaluated by another process right now; "
            "resume it once that process has stopped"
        ) from None
    try:
        result: EvalRun = await coro
        return result
    except asyncio.CancelledError:
        await asyncio.to_thread(
            update_run,
            store,
            run.id,
            status=RunStatus.STOPPED,
            reason="cancelled",
            finished_at=utcnow(),
        )
        raise
    except BaseException as exc:
        await asyncio.to_thread(
            update_run,
            store,
            run.id,
            status=RunStatus.FAILED,
            reason=f"crash: {type(exc).__name__}: {exc}",
            finished_at=utcnow(),
        )
        raise
    finally:
        lock.release()


def _check_tasks(request: EvalRequest) -> None:
    """The `tasks` suite's file loads, and tasks that only a judge can grade have one."""
    if Suite.TASKS not in request.suites:
        return
    tasks = own_tasks(request)
    if (request.judge_url is None) != (request.judge_model is None):
        raise EvalError("a judge needs both its URL and its model (--judge-url, --judge-model)")
    judged = [t.id for t in tasks if t.needs_judge]
    if judged and request.judge_url is None:
        shown = ", ".join(judged[:5]) + (f" and {len(judged) - 5} more" if len(judged) > 5 else "")
        raise EvalError(
            f"{request.task_file}: tasks {shown} have only a reference answer: give a judge "
            "(--judge-url, --judge-model) or add facts"
        )


def _check_request(store: Store, request: EvalRequest, factory: ClientFactory | None) -> None:
    _check_tasks(request)
    if factory is not None or request.base_url is not None:
        return
    from core.models.registry import RegistryError, get

    try:
        record = get(store, request.model)
        if request.adapter is not None:
            get(store, request.adapter)
    except RegistryError as exc:
        raise EvalError(str(exc)) from None
    if record.kind == "adapter" and request.adapter is not None:
        raise EvalError(f"{request.model!r} is itself an adapter; pass its base as the model")


async def start_run(
    store: Store,
    request: EvalRequest,
    *,
    on_progress: ProgressCallback | None = None,
    stop: StopFlag | None = None,
    client_factory: ClientFactory | None = None,
) -> EvalRun:
    """Create and run a new evaluation (api.run_eval)."""
    _check_request(store, request, client_factory)
    _harness, name, version = await asyncio.to_thread(resolve_harness, store, request.harness)
    records = ifeval_prompts(request.ifeval_path) if Suite.IFEVAL in request.suites else None
    items = plan_items(request, ifeval_records=records)
    run = await asyncio.to_thread(
        create_run, store, request, harness=name, harness_version=version, total=len(items)
    )
    return await _guarded(
        store,
        run,
        _execute(
            store,
            run,
            items,
            set(),
            on_progress=on_progress,
            stop=stop,
            factory=client_factory,
            base_url=None,
        ),
    )


async def continue_run(
    store: Store,
    run_id: str,
    *,
    on_progress: ProgressCallback | None = None,
    stop: StopFlag | None = None,
    client_factory: ClientFactory | None = None,
    base_url: str | None = None,
    retry_failed: bool = True,
) -> EvalRun:
    """Resume a stored run (api.resume_eval)."""
    run = await asyncio.to_thread(get_run, store, run_id)
    request = run.request
    if base_url is None:
        _check_request(store, request, client_factory)
    records = ifeval_prompts(request.ifeval_path) if Suite.IFEVAL in request.suites else None
    items = plan_items(request, ifeval_records=records)
    stored = await asyncio.to_thread(done_items, store, run.id)
    skip = {
        key
        for key, (status, reason) in stored.items()
        if status is ResultStatus.OK
        or not retry_failed
        or failure_kind(reason) not in TRANSPORT_FAILURES
    }
    return await _guarded(
        store,
        run,
        _execute(
            store,
            run,
            items,
            skip,
            on_progress=on_progress,
            stop=stop,
            factory=client_factory,
            base_url=base_url,
        ),
    )
