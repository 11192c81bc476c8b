"""Playing one planned item: its world, the model client, the grades, the stored row's fields.

**One item.** A fresh `LiveRoom` for the task (its faults), the harness with the task's
distractor tools, `AgentLoop.run(viewer message)`, `core.sim.graders.grade`. The row's score
is the mean of the four grades, `passed` is full marks. An item is **failed** (status failed,
score 0, grades kept when there is a trace) when it could not be completed: `model_error`
(the server was unreachable or answered with an error), `max_turns` (an endless tool loop),
`empty_output` (the model wrote nothing), `timeout` (longer than `item_timeout_s`), `crash` (a
bug; the reason names it) or `variant` (no HSA variant could be built). The reason starts with
that kind. `model_error`, `timeout` and `crash` say nothing about the model: those rows are
stored with status `error` (results.INFRA_FAILURES), left out of scores and retried.

**A dead server.** After a `model_error` the runner checks the server (GET /models). A
managed server that is down is restarted once per run invocation and the items that hit it
are run again; when it is down again (or cannot restart, or an external `base_url` stops
answering) the item is stored as failed and the run ends with status `failed` and the reason.
`resume` continues: stored items are skipped, transport failures (`model_error`, `timeout`,
`crash`) are run again.

The server an item talks to (`RunServer`) is checked after a `model_error`; a managed one that
is down is restarted (core/eval/runner.py says how often) and the item run again.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from core.episode.live_room import LiveRoomWorld
from core.episode.play import play
from core.episode.variant import HarnessVariant
from core.episode.world import GoldUnavailable
from core.eval import ifeval
from core.eval.oracle_model import OracleModel
from core.eval.results import INFRA_FAILURES, EvalResult, ResultStatus, Suite, failure_kind
from core.eval.types import ClientFactory, EvalItem, EvalRequest
from core.hsa.augment import augment_prepared, prepare
from core.hsa.policy import Policy
from core.runtime.client import ChatClient, Message, ModelError
from core.runtime.trace import ModelCallStep, Trace, TraceStatus
from core.sim.surface import HarnessSurface

if TYPE_CHECKING:
    from core.episode.variant import HarnessVariant
    from core.episode.world import World
    from core.harness.models import Harness
    from core.serving.server import ManagedServer
    from core.sim.graders import Grades
    from core.sim.models import Catalog
    from core.sim.surface import HarnessSurface

log = logging.getLogger(__name__)

# ----------------------------------------------------------------------------- the server


class RunServer:
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
                from core.serving.client import redact_url  # heavy: openai, sqlalchemy, alembic

                self.down = f"the server at {redact_url(self.base_url)} stopped answering"
                return False
            if self.restarts >= 1:
                self.down = "the server died again after its one restart"
                return False
            self.restarts += 1
            log.warning("evaluation: the model server died; restarting it once")
            from core.serving.server import ServerError  # heavy: openai, sqlalchemy, alembic

            try:
                await asyncio.to_thread(self.managed.restart)
            except ServerError as exc:
                self.down = f"the server died and did not restart: {exc}"
                return False
            self.base_url = self.managed.base_url.rstrip("/")
            self.generation += 1
            return True


async def first_model(base_url: str) -> str | None:
    try:
        async with httpx.AsyncClient(timeout=10.0) as http:
            data = (await http.get(base_url.rstrip("/") + "/models")).json()
        return str(data["data"][0]["id"])
    except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError):
        return None


# ----------------------------------------------------------------------------- one item


@dataclass
class Outcome:
    result: EvalResult
    trace: Trace | None = None
    retry: bool = False


@dataclass
class ItemContext:
    run_id: str
    request: EvalRequest
    harness: Harness
    catalog: Catalog
    factory: ClientFactory | None
    server: RunServer | None
    client: ChatClient | None
    engine: str | None
    prepared: dict[str, Any] = field(default_factory=dict)
    prepare_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    task_world: World[Any] | None = None
    """The task-file suites' world (the run's task file, tool runtime and judge)."""
    room_world: World[Any] | None = None
    """The live-room suites' world (built on first use)."""


def failed_result(
    item: EvalItem, reason: str, trace: Trace | None = None, **extra: Any
) -> EvalResult:
    """The row of an item that could not be completed: `error` when the reason's kind is an
    infrastructure one (results.INFRA_FAILURES), else `failed` (the model's doing)."""
    infra = failure_kind(reason) in INFRA_FAILURES
    fields: dict[str, Any] = {
        "suite": item.suite,
        "task_id": item.task_id,
        "sample": item.sample,
        "variant_seed": item.variant_seed,
        "dimension": item.dimension,
        "category": item.category,
        "score": 0.0,
        "passed": False,
        "status": ResultStatus.ERROR if infra else ResultStatus.FAILED,
        "reason": reason,
        "trace_id": trace.request_id if trace is not None else None,
        "latency_s": trace.e2e_s if trace is not None else None,
    }
    fields.update(extra)
    return EvalResult(**fields)


TASK_FILE_SUITES = frozenset({Suite.TASKS, Suite.HV_TASKS})
"""Suites whose items play in the task-file world (the run's task file and tool runtime)."""

HV_SUITES = frozenset({Suite.HV_QA, Suite.HV_TASKS})
"""Suites whose items play under a heldout HSA variant of the run's harness."""


def item_world(ctx: ItemContext, item: EvalItem) -> World[Any]:
    """The world an item plays in: chosen by its suite, never by its task's type."""
    if item.suite in TASK_FILE_SUITES:
        if ctx.task_world is None:
            raise RuntimeError("the run's task-file world is not open")
        return ctx.task_world
    if ctx.room_world is None:
        ctx.room_world = LiveRoomWorld(ctx.catalog)
    return ctx.room_world


def hv_variant(item: EvalItem, base: Harness) -> HarnessVariant:
    """The heldout variant an HV item asks for, not yet drawn: its policy and seed."""

    assert item.variant_seed is not None
    dims = None if item.dimension in (None, "all") else [item.dimension]
    return HarnessVariant(
        harness=base,
        index=1,
        seed=item.variant_seed,
        sampler="hsa-heldout",
        policy=Policy("heldout", "medium", dims),
        original=base,
    )


async def _variant_harness(
    ctx: ItemContext, world: World[Any], item: EvalItem, base: Harness
) -> Harness:
    """The heldout HSA variant of `base` for an HV item, built from the task's gold run in
    its world so only transforms that preserve this task are kept (core/hsa/augment.py)."""

    wanted = hv_variant(item, base)
    assert wanted.policy is not None and wanted.seed is not None
    async with ctx.prepare_lock:
        req = ctx.prepared.get(item.task_id)
        if req is None:
            unplayable = await world.unplayable_golds([item.task])
            if unplayable:
                raise GoldUnavailable(unplayable[item.task_id])
            gold = await world.gold_trace(item.task, base)
            req = prepare(base, gold)
            if len(ctx.prepared) > 64:
                ctx.prepared.clear()
            ctx.prepared[item.task_id] = req
    return augment_prepared(req, wanted.policy, wanted.seed).harness


async def _client(
    ctx: ItemContext, world: World[Any], item: EvalItem, harness: Harness, surface: HarnessSurface
) -> ChatClient:

    if isinstance(ctx.factory, OracleModel):
        variant = hv_variant(item, ctx.harness) if item.suite in HV_SUITES else None
        return await ctx.factory.client(world, item.task, harness, variant)
    if ctx.factory is not None:
        return ctx.factory(item, harness, surface)
    assert ctx.client is not None
    return ctx.client


async def _agent_item(ctx: ItemContext, item: EvalItem) -> Outcome:

    task = item.task
    assert task is not None
    world = item_world(ctx, item)
    harness = world.harness_for(task, ctx.harness)
    if item.suite in HV_SUITES:
        try:
            harness = await _variant_harness(ctx, world, item, harness)
        except Exception as exc:  # AugmentError, a gold that fails, anything a transform raises
            return Outcome(failed_result(item, f"variant: {type(exc).__name__}: {exc}"))
    surface = HarnessSurface(harness, {}, {}, {})
    client = await _client(ctx, world, item, harness, surface)
    episode = await play(
        task, harness, client, world, surface=surface, request_id=uuid.uuid4().hex,
        retry_crashed=True,
    )  # fmt: skip
    return _graded_outcome(item, episode.trace, episode.grades)


def _graded_outcome(item: EvalItem, trace: Trace, grades: Grades | None) -> Outcome:
    """An agent item's row from its played trace and grades (failed kinds first)."""
    assert grades is not None
    dumped = grades.model_dump(mode="json")
    reply = (trace.final_reply or "").strip()
    if trace.status is TraceStatus.MODEL_ERROR:
        return Outcome(
            failed_result(item, f"model_error: {trace.reason}", trace, grades=dumped), trace
        )
    if trace.status is TraceStatus.MAX_TURNS:
        return Outcome(
            failed_result(item, f"max_turns: {trace.reason}", trace, grades=dumped), trace
        )
    if _silent(trace):
        reason = "empty_output: the model produced no text"
        return Outcome(failed_result(item, reason, trace, grades=dumped), trace)
    if trace.ok and not reply:
        reason = "empty_output: the model's final reply was empty"
        return Outcome(failed_result(item, reason, trace, grades=dumped), trace)
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
    return Outcome(result, trace)


def _silent(trace: Trace) -> bool:
    """Every model call answered, and with nothing (whatever the hooks made of it)."""
    calls = trace.steps_of(ModelCallStep)
    return bool(calls) and all(c.error is None and not c.raw_output.strip() for c in calls)


async def _ifeval_item(ctx: ItemContext, item: EvalItem) -> Outcome:
    """One IFEval prompt asked plainly (one user message, no harness) through the client; a
    failed row keeps the prompt's instructions, all not followed, for instruction-level
    accounting (`core.eval.ifeval.aggregate_results`)."""

    record = item.prompt or {}
    factory = ctx.factory
    if factory is not None:
        client = factory(item, ctx.harness, HarnessSurface(ctx.harness, {}, {}, {}))
    else:
        assert ctx.client is not None
        client = ctx.client
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
        result = failed_result(item, reason, grades=dict(score), latency_s=latency)
    return Outcome(result)


async def run_item(ctx: ItemContext, item: EvalItem) -> Outcome:
    """One item, never raising: a failed row for anything that goes wrong (module doc)."""
    generation = ctx.server.generation if ctx.server is not None else 0
    try:
        work = _ifeval_item(ctx, item) if item.suite is Suite.IFEVAL else _agent_item(ctx, item)
        outcome = await asyncio.wait_for(work, ctx.request.item_timeout_s)
    except TimeoutError:
        reason = f"timeout: the item took longer than {ctx.request.item_timeout_s:g} s"
        return Outcome(failed_result(item, reason))
    except Exception as exc:  # a bug in a client, a grader or a harness: the row says which
        log.exception("evaluation item %s crashed", item.key)
        return Outcome(failed_result(item, f"crash: {type(exc).__name__}: {exc}"))
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
        and result.status is not ResultStatus.OK
    ):
        reason = f"{result.reason} ({ctx.server.down})"
        outcome.result = result.model_copy(update={"reason": reason})
    return outcome
