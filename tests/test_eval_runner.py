"""The evaluation runner: planning, storing, resuming, failure paths; real runs against the
served demo model (slow).

Fast tests drive the real agent loop, simulator, graders and SQLite store with the oracle
(`core.sim.oracle.OracleClient`, a real ChatClient that plays each task perfectly) or with
small scripted clients that misbehave on purpose (a model that writes nothing, one that calls
a tool forever): those are test doubles for a *model*, used where a real small model cannot be
made to fail on cue. The slow tests use the real `transformers serve` with the demo model.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.eval.api import (
    EvalItem,
    EvalRequest,
    RunStatus,
    get_eval_run,
    list_eval_runs,
    load_results,
    load_trace,
    resume_eval,
    run_eval,
)
from core.eval.oracle_model import oracle_clients
from core.eval.planning import HV_DIMENSIONS, plan_items, stratified
from core.eval.results import EvalResult, ResultStatus, Suite
from core.eval.store import add_result, create_run, done_items, update_run
from core.harness.demo import load_demo_harness
from core.harness.models import Harness
from core.runtime.client import ChatClient, Message, ModelReply
from core.sim.catalog import load_catalog
from core.sim.surface import HarnessSurface
from core.store import Store, StoreError
from core.store.serving import latency_rows
from core.taskfile.sources import suite_tasks
from tests.ifeval_data import require_ifeval


@pytest.fixture
def store(hat_home: Path) -> Iterator[Store]:
    s = Store.open(hat_home / "hat.db")
    yield s
    s.close()


@cache
def ls_qa_tasks() -> list[Any]:
    return suite_tasks("ls-qa", 0)


def oracle() -> Any:
    return oracle_clients(load_catalog())


# ----------------------------------------------------------------------------- planning


def test_plan_items_limit_variants_and_dimensions() -> None:
    request = EvalRequest(
        model="m", suites=[Suite.LS_QA, Suite.HV_QA, Suite.ROBUSTNESS], limit=9, variants=6
    )
    items = plan_items(request)
    ls = [i for i in items if i.suite is Suite.LS_QA]
    hv = [i for i in items if i.suite is Suite.HV_QA]
    rb = [i for i in items if i.suite is Suite.ROBUSTNESS]
    assert len(ls) == 9 and len(rb) == 9 and len(hv) == 9 * 6
    # the limit takes tasks round-robin over categories: 9 tasks, 9 categories
    assert len({i.category for i in ls}) == 9
    # HV-QA runs the same tasks; each task's 6 variants cover every dimension once
    assert {i.task_id for i in hv} == {i.task_id for i in ls}
    for task_id in {i.task_id for i in hv}:
        dims = [i.dimension for i in hv if i.task_id == task_id]
        assert sorted(dims) == sorted(HV_DIMENSIONS)
    assert len({i.key for i in items}) == len(items)
    assert all(i.task is not None and i.task.faults for i in rb)
    # stable: the same request plans the same keys
    assert [i.key for i in plan_items(request)] == [i.key for i in items]


def test_plan_items_samples_and_full_suites() -> None:
    items = plan_items(EvalRequest(model="m", suites=[Suite.LS_QA], samples=3))
    assert len(items) == 540 * 3
    assert {i.sample for i in items} == {0, 1, 2}
    assert len(suite_tasks("robustness", 0)) == 300


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=9),
    limit=st.integers(min_value=1, max_value=60),
)
def test_stratified_selection(sizes: list[int], limit: int) -> None:
    tasks = ls_qa_tasks()
    by_cat: dict[str, list[Any]] = {}
    for t in tasks:
        by_cat.setdefault(t.category.value, []).append(t)
    pool = [t for (_, ts), n in zip(sorted(by_cat.items()), sizes, strict=False) for t in ts[:n]]
    pool.sort(key=lambda t: t.id)
    picked = stratified(pool, limit)
    assert len(picked) == min(limit, len(pool))
    assert [t for t in pool if t in picked] == picked  # suite order kept
    counts: dict[str, int] = {}
    for t in picked:
        counts[t.category.value] = counts.get(t.category.value, 0) + 1
    available = {c: sum(t.category.value == c for t in pool) for c in counts}
    # round-robin: a category has fewer picks than another only when it ran out
    for c, n in counts.items():
        for m in counts.values():
            assert n >= m - 1 or n == available[c]


# ----------------------------------------------------------------------------- oracle runs


def test_oracle_run_stores_graded_rows(store: Store) -> None:
    request = EvalRequest(
        model="oracle", suites=[Suite.LS_QA, Suite.HV_QA, Suite.ROBUSTNESS], limit=2, variants=6
    )
    seen: list[tuple[int, int]] = []
    run = run_eval(
        store,
        request,
        client_factory=oracle(),
        on_progress=lambda done, total, last: seen.append((done, total)),
    )
    assert run.status is RunStatus.DONE
    assert run.total == 2 + 12 + 2 and run.done == run.total and run.failed == 0
    assert seen[0] == (0, run.total) and seen[-1] == (run.total, run.total)
    assert run.harness == "live-host" and run.harness_version is not None
    rows = load_results(store, run.id)
    assert len(rows) == run.total
    # the oracle is perfect under the original harness, every heldout variant and faults
    assert all(r.passed and r.score == 1.0 and r.status is ResultStatus.OK for r in rows)
    for row in rows:
        assert set(row.grades) >= {"accuracy", "effectiveness", "tool_rationality"}
        assert row.trace_id is not None and row.category is not None
    hv = [r for r in rows if r.suite is Suite.HV_QA]
    assert {r.dimension for r in hv} == set(HV_DIMENSIONS)
    assert all(r.variant_seed is not None for r in hv)
    # the variants really changed the surface: some HV-QA trace calls a tool or loads a skill
    # by a name the original harness does not have
    original = load_demo_harness()
    names = {t.name for t in original.tools} | {s.name for s in original.skills}
    renamed = 0
    for row in hv:
        trace = load_trace(store, run.id, row.key)
        assert trace is not None and trace["request_id"] == row.trace_id
        called = {s["name"] for s in trace["steps"] if s["type"] in ("tool_call", "skill_load")}
        renamed += bool(called - names)
    assert renamed > 0
    # the stored default harness is reused by the next run
    again = run_eval(
        store, request.model_copy(update={"suites": [Suite.LS_QA]}), client_factory=oracle()
    )
    assert again.harness_version == run.harness_version


def test_named_harness_and_bad_requests(store: Store) -> None:
    from core.eval.api import EvalError

    version = store.commit(load_demo_harness(), "v1")
    store.tag("staging", version.id)
    run = run_eval(
        store,
        EvalRequest(model="oracle", suites=[Suite.LS_QA], limit=1, harness="live-host@staging"),
        client_factory=oracle(),
    )
    assert run.harness_version == version.id
    with pytest.raises(EvalError, match="harness 'nope'"):
        run_eval(
            store,
            EvalRequest(model="o", suites=[Suite.LS_QA], harness="nope"),
            client_factory=oracle(),
        )
    with pytest.raises(EvalError, match=r"no-such-model"):
        run_eval(store, EvalRequest(model="no-such-model", suites=[Suite.LS_QA], limit=1))
    assert [r.id for r in list_eval_runs(store)] == [run.id]


class _Counting:
    """Counts the items a factory was asked for (to see what a resume re-runs)."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str, int | None, int]] = []
        self.inner = oracle()

    def __call__(self, item: EvalItem, harness: Harness, surface: HarnessSurface) -> ChatClient:
        self.keys.append(item.key)
        client: ChatClient = self.inner(item, harness, surface)
        return client


def test_stop_and_resume_skip_stored_items(store: Store) -> None:
    request = EvalRequest(model="oracle", suites=[Suite.LS_QA, Suite.HV_QA], limit=3, variants=2)
    stop = threading.Event()

    def on_progress(done: int, total: int, last: EvalResult | None) -> None:
        if done >= 4:
            stop.set()

    first = _Counting()
    run = run_eval(store, request, client_factory=first, on_progress=on_progress, stop=stop)
    assert run.status is RunStatus.STOPPED and run.done == 4 and run.total == 9
    stored = set(done_items(store, run.id))
    assert stored == set(first.keys)
    second = _Counting()
    resumed = resume_eval(store, run.id, client_factory=second)
    assert resumed.status is RunStatus.DONE and resumed.done == 9
    assert len(second.keys) == 5 and not set(second.keys) & stored
    # nothing left: a second resume runs nothing
    third = _Counting()
    assert resume_eval(store, run.id, client_factory=third).status is RunStatus.DONE
    assert third.keys == []


def test_a_run_another_process_executes_is_not_resumed(store: Store) -> None:
    """While a process executes a run (here a child holding the run's lock, as a running
    `hat eval run` does) a resume is refused and changes nothing; once that process is gone,
    the run (still stored as running) resumes."""
    import subprocess
    import sys

    from core.eval.api import EvalError, eval_run_active, get_eval_run
    from core.store.types import utcnow

    request = EvalRequest(model="oracle", suites=[Suite.LS_QA], limit=2)
    stop = threading.Event()
    stop.set()
    run = run_eval(store, request, client_factory=oracle(), stop=stop)
    update_run(store, run.id, status=RunStatus.RUNNING, finished_at=None, started_at=utcnow())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from core.eval.runner import _run_lock\n"
            "from core.store import Store\n"
            f"lock = _run_lock(Store.open({str(store.path)!r}), {run.id!r})\n"
            "lock.acquire()\n"
            "print('held', flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert eval_run_active(store, run.id)
        before = done_items(store, run.id)
        with pytest.raises(EvalError, match="another process"):
            resume_eval(store, run.id, client_factory=oracle())
        assert get_eval_run(store, run.id).status is RunStatus.RUNNING
        assert done_items(store, run.id) == before
    finally:
        holder.kill()
        holder.wait()
    assert not eval_run_active(store, run.id)
    assert resume_eval(store, run.id, client_factory=oracle()).status is RunStatus.DONE


# ----------------------------------------------------------------------------- failures


class _Silent:
    """A model that writes nothing."""

    async def complete(
        self, messages: Sequence[Message], *, tools: Any = None, on_delta: Any = None
    ) -> ModelReply:
        return ModelReply(content="")


class _Looping:
    """A model that calls the same tool forever."""

    async def complete(
        self, messages: Sequence[Message], *, tools: Any = None, on_delta: Any = None
    ) -> ModelReply:
        return ModelReply(
            content='<tool_call>{"name": "get_live_room_status", "arguments": {}}</tool_call>'
        )


class _Crashing:
    async def complete(
        self, messages: Sequence[Message], *, tools: Any = None, on_delta: Any = None
    ) -> ModelReply:
        raise RuntimeError("client bug")


def test_bad_models_become_failed_rows(store: Store) -> None:
    clients: dict[str, ChatClient] = {
        "test.price.0000": _Silent(),
        "test.spec.0000": _Looping(),
        "test.stock.0000": _Crashing(),
    }
    run = run_eval(
        store,
        EvalRequest(model="bad", suites=[Suite.LS_QA], limit=3),
        client_factory=lambda item, harness, surface: clients[item.task_id],
    )
    # the model's own failures are failed rows; a client that raises is an infrastructure
    # error: its own status, not counted among the failures
    assert run.status is RunStatus.DONE and run.failed == 2 and run.errors == 1
    rows = {r.task_id: r for r in load_results(store, run.id)}
    assert rows["test.price.0000"].reason == "empty_output: the model produced no text"
    assert rows["test.spec.0000"].reason.startswith("max_turns: ")  # type: ignore[union-attr]
    # a client that raises is a model_error of the loop (the loop never raises)
    assert rows["test.stock.0000"].reason.startswith("model_error: RuntimeError")  # type: ignore[union-attr]
    for task, row in rows.items():
        expected = ResultStatus.ERROR if task == "test.stock.0000" else ResultStatus.FAILED
        assert row.status is expected and row.score == 0 and not row.passed
        assert row.trace_id is not None and row.grades["accuracy"]["score"] == 0
    # model failures are results: a resume keeps them, transport failures are re-run
    again = _Counting()
    resume_eval(store, run.id, client_factory=again)
    assert again.keys == [("ls-qa", "test.stock.0000", None, 0)]
    rows = {r.task_id: r for r in load_results(store, run.id)}
    assert rows["test.stock.0000"].passed and len(rows) == 3


class _Hanging:
    """A server that never answers, as the client sees it (the real refused-connection and
    dead-server paths are the tests below; a hang needs no server process)."""

    async def complete(
        self, messages: Sequence[Message], *, tools: Any = None, on_delta: Any = None
    ) -> ModelReply:
        await asyncio.sleep(60)
        raise AssertionError("the item timeout should have ended this")


def test_infrastructure_errors_are_not_scored_and_retry_runs_only_them(store: Store) -> None:
    from core.eval.report import build_report

    answers = oracle()
    hanging = "test.price.0000"

    def factory(item: EvalItem, harness: Harness, surface: HarnessSurface) -> ChatClient:
        client: ChatClient = (
            _Hanging() if item.task_id == hanging else answers(item, harness, surface)
        )
        return client

    run = run_eval(
        store,
        EvalRequest(
            model="m",
            suites=[Suite.LS_QA],
            limit=3,
            concurrency=3,
            call_timeout_s=0.5,
            item_timeout_s=0.5,
        ),
        client_factory=factory,
    )
    assert run.status is RunStatus.DONE
    assert (run.passed, run.failed, run.errors) == (2, 0, 1)
    rows = {r.task_id: r for r in load_results(store, run.id)}
    assert rows[hanging].status is ResultStatus.ERROR
    assert (rows[hanging].reason or "").startswith("timeout: ")
    ls = build_report(list(rows.values()), resamples=50).suite(Suite.LS_QA)
    # the timed-out item is left out of the score, not graded as a wrong answer
    assert ls is not None and ls.items == 3 and ls.errors == 1 and ls.failed == 0
    assert ls.score is not None and ls.score.n == 2 and ls.score.mean == 1.0
    # "retry failed items": only the error item runs again, the answered ones are kept
    again = _Counting()
    retried = resume_eval(store, run.id, client_factory=again)
    assert again.keys == [("ls-qa", hanging, None, 0)]
    assert (retried.passed, retried.failed, retried.errors) == (3, 0, 0)


def test_refused_connection_fails_rows_not_the_caller(store: Store) -> None:
    from core.serving.server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    run = run_eval(
        store,
        EvalRequest(model="m", suites=[Suite.LS_QA], limit=3, base_url=url, concurrency=2),
    )
    assert run.status is RunStatus.FAILED
    assert run.reason is not None and "stopped answering" in run.reason
    rows = load_results(store, run.id)
    assert 1 <= len(rows) <= 2  # the items in flight; the rest wait for a resume
    for row in rows:
        assert row.status is ResultStatus.ERROR
        assert row.reason is not None and row.reason.startswith("model_error: ")
        assert "stopped answering" in row.reason
    # resumed with a working model, every item completes (the failed rows are re-run)
    done = resume_eval(store, run.id, client_factory=oracle())
    assert done.status is RunStatus.DONE and done.done == 3 and done.passed == 3


def test_ifeval_items(store: Store) -> None:
    pytest.importorskip("langdetect")

    class Echo:
        def __init__(self) -> None:
            self.prompts: list[str] = []

        async def complete(
            self, messages: Sequence[Message], *, tools: Any = None, on_delta: Any = None
        ) -> ModelReply:
            assert len(messages) == 1 and messages[0]["role"] == "user"  # no harness
            self.prompts.append(messages[0]["content"])
            return ModelReply(content="" if len(self.prompts) == 2 else "a short answer")

    echo = Echo()
    run = run_eval(
        store,
        EvalRequest(
            model="echo", suites=[Suite.IFEVAL], limit=3, ifeval_path=str(require_ifeval())
        ),
        client_factory=lambda item, harness, surface: echo,
    )
    rows = load_results(store, run.id)
    assert len(rows) == 3 and len(echo.prompts) == 3
    failed = [r for r in rows if r.status is ResultStatus.FAILED]
    assert len(failed) == 1 and failed[0].reason == "empty_output: the model produced no text"
    assert all("instructions" in r.grades for r in rows)
    assert all(r.grades.get("response") == "a short answer" for r in rows if r not in failed)


# ----------------------------------------------------------------------------- store


def test_rows_replace_by_key_and_run_prefixes(store: Store) -> None:
    request = EvalRequest(model="m", suites=[Suite.LS_QA])
    run = create_run(store, request, harness="h", harness_version=None, total=1)
    row = EvalResult(
        suite=Suite.LS_QA,
        task_id="t|1",
        score=0,
        passed=False,
        status=ResultStatus.FAILED,
        reason="model_error: x",
    )
    add_result(store, run.id, row, trace={"request_id": "a"})
    add_result(
        store,
        run.id[:12],
        row.model_copy(
            update={"status": ResultStatus.OK, "score": 1.0, "passed": True, "reason": None}
        ),
    )
    rows = load_results(store, run.id)
    assert len(rows) == 1 and rows[0].passed and rows[0].task_id == "t|1"
    assert load_trace(store, run.id, row.key) is None  # replaced along with the row
    assert get_eval_run(store, run.id[:14]).passed == 1
    with pytest.raises(StoreError, match="unknown evaluation run"):
        get_eval_run(store, "eval-nope")


# ----------------------------------------------------------------------------- CLI


def test_cli_run_list_show(hat_home: Path) -> None:
    from core.cli.main import app

    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "eval",
            "run",
            "--oracle",
            "--suite",
            "ls-qa",
            "--limit",
            "2",
            "--out",
            str(hat_home / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "ls-qa" in result.output and "1.000" in result.output
    listed = runner.invoke(app, ["eval", "list"])
    assert listed.exit_code == 0 and "done" in listed.output
    run_id = listed.output.split()[0]
    shown = runner.invoke(app, ["eval", "show", run_id, "--json"])
    assert shown.exit_code == 0 and '"done": 2' in shown.output
    assert list((hat_home / "out").iterdir())
    bad = runner.invoke(app, ["eval", "run", "--suite", "nope"])
    assert bad.exit_code == 1 and "unknown suite 'nope'" in bad.output
    missing = runner.invoke(app, ["eval", "show", "eval-missing"])
    assert missing.exit_code == 1 and "unknown evaluation run" in missing.output
    refused = runner.invoke(app, ["eval", "run", "--model", "nosuch", "--suite", "ls-qa"])
    assert refused.exit_code == 1 and "unknown model 'nosuch'" in refused.output
    assert "0/?" not in refused.output  # no progress bar for a run that never started


# ----------------------------------------------------------------------------- real model


def short_harness(store: Store) -> str:
    """The demo harness cut down for CPU tests: one model call per request, a system prompt
    of ~550 tokens instead of ~2,800 (persona, skill index and tool block only; one tool and
    one skill enabled: on a shared 2-core CPU the demo model needs about a minute to prefill
    the full prompt). The first task of LS-QA (a price ask) needs nothing else, so the loop,
    the simulator, the HSA variants and the graders run as in a real run."""
    harness = load_demo_harness()
    harness.settings.max_turns = 1
    for section in harness.prompt.sections:
        section.enabled = section.id in ("persona", "skills", "tools")
    for tool in harness.tools:
        tool.enabled = tool.name == "get_product_by_link"
    for skill in harness.skills:
        skill.enabled = skill.name == "product-qa"
    return store.commit(harness, "cut down for CPU tests").id


@pytest.mark.slow
def test_real_run_against_served_model(store: Store, transformers_server: Any) -> None:
    request = EvalRequest(
        model="demo",
        suites=[Suite.LS_QA, Suite.HV_QA],
        harness=short_harness(store),
        limit=1,
        variants=2,
        max_tokens=8,
        call_timeout_s=600,
        item_timeout_s=1800,
        base_url=transformers_server.base_url,
    )
    run = run_eval(store, request)
    assert run.status is RunStatus.DONE and run.done == run.total == 3
    rows = load_results(store, run.id)
    assert {r.suite for r in rows} == {Suite.LS_QA, Suite.HV_QA}
    for row in rows:
        assert row.trace_id is not None and row.latency_s is not None and row.latency_s > 0
        assert set(row.grades) >= {"accuracy", "effectiveness", "skill_selection"}
        if row.status is ResultStatus.FAILED:  # a 135M model may loop or stay silent
            kind = (row.reason or "").split(":")[0]
            assert kind in ("max_turns", "empty_output"), row.reason
        trace = load_trace(store, run.id, row.key)
        assert trace is not None and trace["request_id"] == row.trace_id
        assert trace["messages"][0]["role"] == "system" and len(trace["steps"]) >= 1
    latency = latency_rows(store, session=run.id)
    assert len(latency) == 3 and all(r.source == "eval" for r in latency)
    assert sum(r.warmup for r in latency) == 1
    assert resume_eval(store, run.id).done == 3  # nothing left to run


def _serve_children(keep: int | None = None) -> list[int]:
    """Pids of `transformers serve` processes this test process started (but `keep`): its
    descendants, since a managed engine runs under a watchdog that kills it with its parent."""
    import psutil

    spared = set()
    if keep is not None:  # the shared server: its watchdog and the engine under it
        spared = {keep} | {p.pid for p in psutil.Process(keep).children(recursive=True)}
    out = []
    for child in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if child.pid not in spared and "transformers" in cmd and " serve" in cmd:
            out.append(child.pid)
    return out


@pytest.mark.slow
def test_managed_server_restarted_once_then_run_fails(
    store: Store, demo_model_folder: Path, transformers_server: Any
) -> None:
    """The runner starts its own server; it is killed after the first item (restarted, the
    item re-run), then again (the run fails with the reason, in-flight items are failed rows);
    a resume against another server finishes the run."""
    from core.models.registry import add_folder

    add_folder(store, "demo-eval", demo_model_folder)
    version = short_harness(store)
    killed: list[int] = []

    def on_progress(done: int, total: int, last: EvalResult | None) -> None:
        if done in (1, 2) and len(killed) < done:
            pids = _serve_children(keep=transformers_server.pid)
            assert pids, "the runner's server is not running"
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            killed.append(done)

    request = EvalRequest(
        model="demo-eval",
        suites=[Suite.LS_QA],
        harness=version,
        limit=3,
        max_tokens=4,
        call_timeout_s=600,
        item_timeout_s=1800,
    )
    run = run_eval(store, request, on_progress=on_progress)
    assert killed == [1, 2]
    assert run.status is RunStatus.FAILED
    assert run.reason == "the server died again after its one restart"
    rows = load_results(store, run.id)
    assert len(rows) == 3
    # the first two items answered (the second after the restart); a 135M model may still
    # fail them on its own (max_turns, empty output), never for the server
    reasons = [r.reason for r in rows]
    assert all(not (r or "").startswith("model_error") for r in reasons[:2]), reasons
    last = rows[2]
    assert last.status is ResultStatus.ERROR and last.reason is not None
    assert last.reason.startswith("model_error: ") and "after its one restart" in last.reason
    assert not _serve_children(keep=transformers_server.pid)  # the runner stopped its own
    finished = resume_eval(store, run.id, base_url=transformers_server.base_url)
    assert finished.status is RunStatus.DONE and finished.done == 3
    assert all(not (r.reason or "").startswith("model_error") for r in load_results(store, run.id))


def test_event_loop_api(store: Store) -> None:
    """run_eval_async runs inside a caller's loop (the studio's)."""
    from core.eval.api import run_eval_async

    async def main() -> RunStatus:
        run = await run_eval_async(
            store, EvalRequest(model="o", suites=[Suite.LS_QA], limit=1), client_factory=oracle()
        )
        return run.status

    assert asyncio.run(main()) is RunStatus.DONE


def test_plan_eval_matches_total_and_delete(store: Store) -> None:
    from core.eval.api import delete_eval_run, plan_eval

    request = EvalRequest(model="o", suites=[Suite.LS_QA, Suite.HV_QA], limit=2, variants=3)
    planned = plan_eval(request)
    run = run_eval(store, request, client_factory=oracle())
    assert run.total == len(planned) == 8
    assert {r.key for r in load_results(store, run.id)} == {i.key for i in planned}
    delete_eval_run(store, run.id)
    assert list_eval_runs(store) == []
    with pytest.raises(StoreError):
        load_results(store, run.id)


@given(st.sets(st.sampled_from(["price", "spec", "stock", "chit_chat", "after_sales", "coupon"]),
               min_size=1), st.integers(1, 40))  # fmt: skip
def test_categories_keep_only_their_tasks_and_stay_stratified(cats: set[str], limit: int) -> None:
    """A request's categories filter every agent suite before the stratified limit, so a
    small run still covers every named category and nothing else."""
    request = EvalRequest(
        model="o", suites=[Suite.LS_QA, Suite.HV_QA], limit=limit, variants=2,
        categories=sorted(cats),
    )  # fmt: skip
    items = plan_items(request)
    assert {i.category for i in items} <= cats
    ls = [i for i in items if i.suite is Suite.LS_QA]
    assert len(ls) == min(limit, 45 * len(cats))
    if limit >= len(cats):
        assert {i.category for i in ls} == cats
    hv = [i for i in items if i.suite is Suite.HV_QA]
    assert len(hv) == 2 * len(ls)


def test_unknown_categories_are_refused_by_name() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="unknown task categories \\['pricing'\\]"):
        EvalRequest(model="o", suites=[Suite.LS_QA], categories=["pricing"])
    # an unset filter leaves the fingerprint of older requests alone
    plain = EvalRequest(model="o", suites=[Suite.LS_QA])
    assert "categories" not in plain.model_dump(exclude_none=True)
    assert (
        plain.fingerprint()
        != EvalRequest(model="o", suites=[Suite.LS_QA], categories=["price"]).fingerprint()
    )


def test_engine_auto_falls_back_to_transformers_with_one_notice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, hat_home: Path
) -> None:
    """Without a vLLM environment, auto and an explicit vllm fall back to transformers serve
    with a notice that says where vLLM was looked for (never a crash mid-run)."""
    from core.cli.main import app
    from core.serving.engines import EngineError, pick_engine

    runner = CliRunner()
    monkeypatch.setenv("HAT_VLLM_PYTHON", str(tmp_path / "no-vllm" / "python"))
    for requested in ("auto", "vllm"):
        engine, notice = pick_engine(requested)
        assert engine == "transformers"
        assert notice is not None and "no-vllm" in notice and "setup-vllm.sh" in notice
    assert pick_engine("transformers") == ("transformers", None)
    with pytest.raises(EngineError, match="unknown engine 'tgi'"):
        pick_engine("tgi")
    fake = tmp_path / "vllm" / "python"
    fake.parent.mkdir()
    fake.write_text("")
    monkeypatch.setenv("HAT_VLLM_PYTHON", str(fake))
    assert pick_engine("auto") == ("vllm", None)
    monkeypatch.setenv("HAT_VLLM_PYTHON", str(tmp_path / "no-vllm" / "python"))
    result = runner.invoke(app, ["eval", "run", "--model", "nosuch", "--suite", "ls-qa"])
    assert result.exit_code != 0
    assert "no vLLM environment" in result.output and "Traceback" not in result.output
