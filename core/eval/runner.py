"""The run: start or resume a stored evaluation, drive its planned items, store each row.

What a run's items are is core/eval/planning.py; playing one item is core/eval/items.py; the
oracle as a model is core/eval/oracle_model.py.

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
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from core.episode.task_file import TaskFileWorld
from core.eval.items import (
    TASK_FILE_SUITES,
    ItemContext,
    RunServer,
    first_model,
    run_item,
)
from core.eval.planning import ifeval_prompts, own_tasks, plan_items
from core.eval.results import INFRA_FAILURES, ResultStatus, Suite, failure_kind
from core.eval.store import (
    ItemKey,
    add_result,
    create_run,
    done_items,
    get_run,
    update_run,
)
from core.eval.types import (
    ClientFactory,
    EvalError,
    EvalItem,
    EvalRequest,
    EvalRun,
    ProgressCallback,
    RunStatus,
    StopFlag,
)
from core.models.registry import RegistryError, get
from core.runtime.tool_runtime import ToolRuntime, binding_problems
from core.runtime.trace import Trace
from core.sim.catalog import load_catalog
from core.store.errors import StoreError
from core.store.harness_ref import resolve_stored
from core.store.types import utcnow
from core.taskfile.judge import JudgeUnavailable, check_judge
from core.taskfile.models import check_against_harness

if TYPE_CHECKING:
    from core.harness.models import Harness
    from core.serving.server import ManagedServer
    from core.store import Store

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- harness


def resolve_harness(store: Store, ref: str | None) -> tuple[Harness, str, str]:
    """(harness, its name, stored version id) for a request's `harness`: the one rule of
    core/store/harness_ref.py (None: live-host@production, else @head, else the bundled demo,
    committed first so the run names a stored version; a bare name the same way)."""

    try:
        return resolve_stored(store, ref)
    except StoreError as exc:
        raise EvalError(f"harness {ref!r}: {exc}") from None


# ----------------------------------------------------------------------------- the run


def _latency_row(ctx: ItemContext, trace: Trace, task_id: str, warmup: bool) -> Any:
    from core.serving.latency import request_row  # heavy: openai, numpy, anyio

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

    server: RunServer | None = None
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
                model_id = request.model_id or await first_model(url) or request.model
            server = RunServer(url, managed)
            client = _openai_client(request, url, model_id)
        ctx = ItemContext(
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
            if any(item.suite in TASK_FILE_SUITES for item in todo):
                written_for = None
                if request.task_file_harness is not None:
                    written_for = await asyncio.to_thread(store.load, request.task_file_harness)
                blocked = await _open_own_world(ctx, world, written_for)
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


async def _open_own_world(
    ctx: ItemContext, world: contextlib.AsyncExitStack, written_for: Harness | None = None
) -> str | None:
    """The task-file suites' world: the harness's tool runtime (every binding must resolve) and
    the judge when some task needs one; the reason the run cannot start, or None.
    `written_for`: the harness the task file names things in (default: the run's)."""
    from core.serving.judge import http_judge  # heavy: openai, numpy, anyio

    problems = binding_problems(ctx.harness)
    if problems:
        listed = "; ".join(p.message for p in problems)
        return f"tools: the harness has bindings the runtime cannot run: {listed}"

    tools = await world.enter_async_context(ToolRuntime(ctx.harness))
    request = ctx.request
    ctx.task_world = TaskFileWorld(written_for or ctx.harness, tools)
    if request.judge_url is not None and request.judge_model is not None:
        judge = http_judge(request.judge_url, request.judge_model, timeout_s=request.call_timeout_s)
        world.push_async_callback(judge.close)
        try:
            await check_judge(judge)
        except JudgeUnavailable as exc:
            return f"judge: {exc}"
        ctx.task_world.judge = judge
    return None


def _follow_restart(ctx: ItemContext) -> None:
    """Point the run's client at the restarted server: a restart takes a new port when the
    old one is still held (a killed server's socket lingers), and the items run again must
    not knock on the old one."""
    server, client = ctx.server, ctx.client
    if server is None or client is None or server.managed is None:
        return
    if getattr(client, "base_url", server.base_url) != server.base_url:
        ctx.client = _openai_client(ctx.request, server.base_url, server.managed.model_id)


def _openai_client(request: EvalRequest, url: str, model_id: str) -> Any:
    from core.serving.client import (  # heavy: openai, numpy, anyio
        GenerationOptions,
        OpenAIChatClient,
    )

    return OpenAIChatClient(
        url,
        model_id,
        options=GenerationOptions(max_tokens=request.max_tokens, temperature=request.temperature),
        timeout_s=request.call_timeout_s,
    )


async def _start_server(store: Store, request: EvalRequest) -> tuple[ManagedServer | None, str]:
    from core.serving.engines import EngineConfig, EngineError  # heavy: openai, numpy, anyio
    from core.serving.launch import server_for  # heavy: openai, numpy, anyio
    from core.serving.server import ServerError  # heavy: openai, numpy, anyio

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
    ctx: ItemContext,
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
                _follow_restart(ctx)
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
    if not TASK_FILE_SUITES & set(request.suites):
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


def _check_task_names(request: EvalRequest, written_for: Harness) -> None:
    """A task file whose gold names a tool or skill the harness lacks is refused before a run
    is stored: graded, such a task would only say the file is wrong, as a model's score."""
    if not TASK_FILE_SUITES & set(request.suites):
        return

    problems = check_against_harness(
        own_tasks(request),
        {t.name for t in written_for.tools},
        {s.name for s in written_for.skills},
    )
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise EvalError(
            f"{request.task_file}: "
            + "; ".join(problems[:5])
            + more
            + f" (harness {written_for.name})"
        )


def _check_request(store: Store, request: EvalRequest, factory: ClientFactory | None) -> None:
    _check_tasks(request)
    if request.task_file_harness is not None:
        try:
            store.info(request.task_file_harness)
        except StoreError as exc:
            raise EvalError(f"task_file_harness: {exc}") from None
    if factory is not None or request.base_url is not None:
        return

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
    harness, name, version = await asyncio.to_thread(resolve_harness, store, request.harness)
    if request.task_file_harness is not None:
        harness = await asyncio.to_thread(store.load, request.task_file_harness)
    _check_task_names(request, harness)
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
        or failure_kind(reason) not in INFRA_FAILURES
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
