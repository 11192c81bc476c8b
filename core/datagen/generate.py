"""Teacher data generation: run, grade, filter, prune and write SFT rows (HSA-SFT, stage 1).

    summary = await generate(tasks, harness, catalog, teacher, GenerateConfig(out=path))

For every task and every harness variant (the original, index 0, plus `variants` sampled ones,
see variants.py) one *job* runs the real agent loop with the teacher in a fresh `LiveRoom`
(the task's faults injected, its distractor tools added), grades the trace
(core/sim/graders.py) and writes one JSONL line:

- **kept** (accuracy == 1 and effectiveness >= `min_effectiveness`, default 0.5) -> `out`;
  hook-retry trajectories are pruned to the final correct behaviour (rows.py) except a seeded
  fraction `keep_whole_fraction` (default 10 %) kept whole;
- **recovery** (oracle teacher, recovery.py): a seeded share `recovery_fraction` (default
  25 %) of the variant jobs whose variant renames a parameter the gold passes play the first
  such call with the original parameter names, get the loop's rejection and make the right
  call; the mistaken assistant message is kept marked `"train": false`, the row graded as
  played (the rejected call is its intended content) and marked `"recovery": true`;
- **rejected** -> `rejects` (default `<out>.rejects.jsonl`) with the reasons: the trace status
  and its reason (model_error for HTTP failures, max_turns for endless tool loops,
  retry_budget_exhausted...) and every failing grader's reasons. A teacher that crashes, hangs
  past `job_timeout_s` or writes garbage is a rejected row, never a crashed job.

Row (one JSON object per line, keys sorted):

    {"key": "<task id>#v<k>", "task_id", "split", "category", "template_id",
     "provenance": {"harness": name, "harness_version": id | null,
                    "variant": {"index", "seed", "sampler", "mapping"?},
                    "teacher": {"kind", "model"?, "url"?, "temperature"?},
                    "job_seed": int, "generator": "hat-datagen/1"},
     "grades": Grades (scores and reasons per grader),
     "status": "ok", "hook_retry": bool, "kept_whole": bool, "recovery": bool,
     "pruned_turns": int,
     "messages": OpenAI chat messages (system prompt, viewer message, assistant turns, tool
                 results as the harness's protocol renders them, final reply; an assistant
                 message SFT must not train on carries "train": false),
     "tools": OpenAI tool list of the variant (skill loader first),
     "tool_protocol": "prompt" | "native",
     "trajectory": Trajectory (the assistant turns alone)}

**Resume.** Output files are append-only and flushed after every row. On start, the keys
already in `out` (and in `rejects`, unless `retry_rejects`) are skipped, and a torn last line
(the job was killed mid-write) is cut off first. Re-running an interrupted command therefore
finishes the job without duplicates.

**Concurrency.** `concurrency` asyncio workers share one event loop; rows are written in
completion order (use 1 for a byte-reproducible file). The oracle and the simulator are pure
CPU work, so concurrency only helps remote teachers.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from core.datagen.paths import rejects_of
from core.datagen.recovery import (
    RecoveryClient,
    played_as_planned,
    recovery_coin,
    renamed_params,
)
from core.datagen.rows import failed_turns, keep_whole, prune, whole
from core.datagen.teacher import ORACLE, TeacherSpec
from core.datagen.variants import HarnessVariant, VariantSampler, variants_for
from core.episode.live_room import LiveRoomWorld
from core.episode.play import play
from core.episode.world import GoldRun, GoldUnavailable, World, surface_of
from core.harness.models import Harness, ToolProtocol
from core.harness.render import tool_specs
from core.runtime.client import ChatClient
from core.runtime.trace import Trace
from core.sim.graders import Grades

if TYPE_CHECKING:
    from core.sim.models import Catalog

GENERATOR = "hat-datagen/1"

FAILURE_KINDS = frozenset({"crash", "timeout", "unplayable"})
"""Rejection kinds that are failures of the job, not verdicts on the teacher's answer."""

ClientFactory = Callable[[Any, HarnessVariant, Harness], ChatClient]
"""Builds the teacher's client for one job: (task, variant, the job's harness)."""


@dataclass
class Teacher:
    """A teacher: what rows record (`spec`) and how a job gets its client. The oracle
    (`gold`) is the world's gold (`World.gold`): the live room's oracle, or a task file's gold
    run remapped onto the job's variant; it needs no client of its own."""

    spec: TeacherSpec
    client_for: ClientFactory
    gold: bool = False

    @classmethod
    def oracle(cls, catalog: Catalog | None = None) -> Teacher:
        """The oracle teacher (`catalog` is accepted for older callers; the world holds it)."""

        def no_client(task: Any, variant: HarnessVariant, harness: Harness) -> ChatClient:
            raise RuntimeError("the oracle plays through its world's gold")

        return cls(ORACLE, no_client, gold=True)

    @classmethod
    def shared(cls, spec: TeacherSpec, client: ChatClient) -> Teacher:
        """One client for every job (a remote model: the client is stateless per call)."""
        return cls(spec, lambda task, variant, harness: client)


@dataclass
class GenerateConfig:
    out: Path
    variants: int = 0
    """Sampled harness variants per task, besides the original."""
    rejects: Path | None = None
    """Where rejected jobs go; default `<out>.rejects.jsonl`."""
    job_seed: int = 0
    concurrency: int = 4
    keep_whole_fraction: float = 0.1
    recovery_fraction: float = 0.25
    """Oracle teacher: the seeded share of variant jobs played as a recovery (recovery.py)
    when the variant renames a parameter the gold passes."""
    min_effectiveness: float = 0.5
    retry_rejects: bool = False
    """Resume: run again the jobs that were rejected before."""
    job_timeout_s: float = 600.0
    limit: int | None = None
    """Stop after this many jobs have run (kept or rejected) in this call."""
    harness_version: str | None = None
    sampler: VariantSampler | None = None
    sampler_name: str | None = None
    judge: Any = None
    """Task-file tasks with only a reference answer: the LLM judge (core.sim.judge.LLMJudge)."""

    @property
    def rejects_path(self) -> Path:
        return self.rejects or rejects_of(self.out)


@dataclass
class GenerateSummary:
    written: int = 0
    rejected: int = 0
    skipped: int = 0
    """Jobs already done in an earlier run (resume)."""
    jobs: int = 0
    """Jobs run in this call."""
    elapsed_s: float = 0.0
    hook_retry: int = 0
    kept_whole: int = 0
    recovery: int = 0
    """Rows kept as recovery rows (recovery.py)."""
    reasons: Counter[str] = field(default_factory=Counter)
    """Rejections by their first reason's kind."""
    examples: dict[str, str] = field(default_factory=dict)
    """The first rejection's reason of each kind, as it was written (what to show a user)."""

    def failed(self, *, oracle: bool) -> int:
        """Jobs that failed rather than were filtered: crashes, timeouts and unplayable golds;
        with the oracle teacher every rejection (the gold should get full marks)."""
        if oracle:
            return self.rejected
        return sum(n for kind, n in self.reasons.items() if kind in FAILURE_KINDS)

    @property
    def rows_per_s(self) -> float:
        return self.written / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "written": self.written,
            "rejected": self.rejected,
            "skipped": self.skipped,
            "jobs": self.jobs,
            "elapsed_s": round(self.elapsed_s, 3),
            "rows_per_s": round(self.rows_per_s, 1),
            "hook_retry": self.hook_retry,
            "kept_whole": self.kept_whole,
            "recovery": self.recovery,
            "reasons": dict(self.reasons.most_common()),
        }


# ----------------------------------------------------------------------------- files


def job_key(task_id: str, variant_index: int) -> str:
    return f"{task_id}#v{variant_index}"


def _repair_tail(path: Path) -> None:
    """Cut a torn last line (no trailing newline) left by an interrupted write."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(-1, 2)
        if handle.read(1) == b"\n":
            return
        data = path.read_bytes()
        cut = data.rfind(b"\n") + 1
        handle.seek(cut)
        handle.truncate()


def done_keys(path: Path) -> set[str]:
    """Keys of the complete rows in a JSONL file (a torn last line is ignored)."""
    keys: set[str] = set()
    if not path.exists():
        return keys
    with path.open("r", encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break
            try:
                data = json.loads(line)
            except ValueError:
                continue
            key = data.get("key") if isinstance(data, dict) else None
            if isinstance(key, str):
                keys.add(key)
    return keys


def _dump_line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


# ----------------------------------------------------------------------------- one job


@dataclass
class JobResult:
    key: str
    kept: bool
    row: dict[str, Any]
    hook_retry: bool = False
    kept_whole: bool = False
    reason_kind: str | None = None
    recovery: bool = False


async def run_job(
    task: Any,
    variant: HarnessVariant,
    world: World[Any],
    teacher: Teacher,
    config: GenerateConfig,
    *,
    harness_name: str,
) -> JobResult:
    """Run, grade and turn into a row one (task, variant) job in `world`. Never raises."""
    key = job_key(task.id, variant.index)
    info = world.task_info(task)
    base: dict[str, Any] = {
        "key": key,
        "task_id": info.id,
        "split": info.split,
        "category": info.category,
        "template_id": info.template_id,
        "provenance": {
            "harness": harness_name,
            "harness_version": config.harness_version,
            "variant": variant.provenance(),
            "teacher": teacher.spec.to_dict(),
            "job_seed": config.job_seed,
            "generator": GENERATOR,
        },
    }
    recovery: RecoveryClient | None = None
    try:
        if teacher.gold:
            try:
                gold = await world.gold(task, variant)
            except GoldUnavailable as exc:
                return _rejected(base, "unplayable", [str(exc)])
            harness, surface, client = gold.harness, gold.surface, gold.client
            base["provenance"]["variant"] = gold.variant.provenance()
            recovery = _recovery_client(gold, key, config)
        else:
            harness = world.harness_for(task, variant.harness)
            surface = surface_of(variant, harness)
            client = teacher.client_for(task, variant, harness)

        async def run(client: ChatClient) -> tuple[Trace, Grades]:
            episode = await asyncio.wait_for(
                play(
                    task, harness, client, world, surface=surface, request_id=key,
                    retry_crashed=True,
                ),
                config.job_timeout_s,
            )  # fmt: skip
            assert episode.grades is not None
            return episode.trace, episode.grades

        trace, grades = await run(recovery or client)
        if recovery is not None and recovery.mistake is not None:
            planned = played_as_planned(trace, recovery.mistake)
            if not planned or not _keep(trace, grades, config):
                recovery = None  # e.g. the extra turn overran max_turns: the plain gold
                trace, grades = await run((await world.gold(task, variant)).client)
    except TimeoutError:
        reason = f"the job took longer than {config.job_timeout_s:g} s"
        return _rejected(base, "timeout", [reason])
    except Exception as exc:  # a teacher or harness bug must not end the whole job
        return _rejected(base, "crash", [f"{type(exc).__name__}: {exc}"])
    if not _keep(trace, grades, config):
        kind, reasons = _rejection(trace, grades, config)
        rejected = _rejected(base, kind, reasons)
        rejected.row["grades"] = grades.model_dump(mode="json")
        rejected.row["trajectory"] = trace.trajectory.model_dump(mode="json")
        return rejected
    mistake = recovery.mistake if recovery is not None else None
    untrained = {mistake.turn} if mistake is not None else set()
    retry = bool(failed_turns(trace) - untrained)
    whole_row = retry and keep_whole(config.job_seed, key, config.keep_whole_fraction)
    if retry and not whole_row:
        pruned = prune(trace, untrained=untrained)
        messages, turns, removed = pruned.messages, pruned.turns, pruned.removed
    elif untrained:
        rebuilt = whole(trace, untrained=untrained)
        messages, turns, removed = rebuilt.messages, rebuilt.turns, 0
    else:
        messages, turns, removed = trace.messages, trace.trajectory.turns, 0
    trajectory = trace.trajectory.model_copy(update={"turns": list(turns)})
    row = {
        **base,
        "grades": grades.model_dump(mode="json"),
        "status": trace.status.value,
        "hook_retry": retry,
        "kept_whole": whole_row,
        "recovery": mistake is not None,
        "pruned_turns": removed,
        "messages": messages,
        "tools": tool_specs(harness),
        "tool_protocol": harness.settings.tool_protocol.value,
        "trajectory": trajectory.model_dump(mode="json"),
    }
    return JobResult(key, True, row, retry, whole_row, recovery=mistake is not None)


def _recovery_client(gold: GoldRun, key: str, config: GenerateConfig) -> RecoveryClient | None:
    """The recovery wrapper of a gold client for this job (recovery.py), or None: not a
    variant, the job's coin says no, or the variant renames no parameter."""
    original = gold.variant.original
    if gold.variant.index == 0 or original is None:
        return None
    if not recovery_coin(config.job_seed, key, config.recovery_fraction):
        return None
    renamed = renamed_params(gold.harness, original)
    if not renamed:
        return None
    native = gold.harness.settings.tool_protocol is ToolProtocol.NATIVE
    return RecoveryClient(gold.client, gold.harness, renamed, native=native)


def _keep(trace: Trace, grades: Grades, config: GenerateConfig) -> bool:
    return (
        trace.ok
        and grades.accuracy.score == 1
        and grades.effectiveness.score >= config.min_effectiveness
    )


def _rejection(trace: Trace, grades: Grades, config: GenerateConfig) -> tuple[str, list[str]]:
    if not trace.ok:
        return trace.status.value, [f"{trace.status.value}: {trace.reason or ''}".strip()]
    reasons: list[str] = []
    kind = "graded"
    if grades.accuracy.score < 1:
        kind = "accuracy"
        reasons += [f"accuracy: {r}" for r in grades.accuracy.reasons]
    if grades.effectiveness.score < config.min_effectiveness:
        kind = "effectiveness" if kind == "graded" else kind
        reasons += [f"effectiveness: {r}" for r in grades.effectiveness.reasons]
    return kind, reasons


def _rejected(base: dict[str, Any], kind: str, reasons: list[str]) -> JobResult:
    row = {**base, "rejected": kind, "reasons": reasons}
    return JobResult(str(base["key"]), False, row, reason_kind=kind)


# ----------------------------------------------------------------------------- the job


def _jobs(
    tasks: Iterable[Any], harness: Harness, config: GenerateConfig, skip: set[str]
) -> Iterator[tuple[Any, HarnessVariant]]:
    for task in tasks:
        if all(job_key(task.id, i) in skip for i in range(config.variants + 1)):
            continue
        variants = variants_for(
            harness,
            task.id,
            config.variants,
            job_seed=config.job_seed,
            sampler=config.sampler,
            sampler_name=config.sampler_name,
        )
        for variant in variants:
            if job_key(task.id, variant.index) not in skip:
                yield task, variant


def _done(config: GenerateConfig) -> set[str]:
    """Keys of the jobs a rerun skips: rows written, and rejects unless they are retried."""
    rejects = set() if config.retry_rejects else done_keys(config.rejects_path)
    return done_keys(config.out) | rejects


def pending_jobs(tasks: Sequence[Any], config: GenerateConfig) -> int:
    """How many jobs `generate` will run for `tasks` (finished ones skipped, `limit` applied):
    the total a progress display counts towards."""
    skip = _done(config)
    pending = sum(job_key(t.id, i) not in skip for t in tasks for i in range(config.variants + 1))
    return pending if config.limit is None else min(pending, config.limit)


class GoldsUnplayable(ValueError):
    """The oracle teacher was given tasks whose gold cannot be played (refused before any job
    runs); `reasons` maps each task id to why."""

    def __init__(self, reasons: dict[str, str]) -> None:
        self.reasons = reasons
        listed = "\n".join(f"  {reason}" for reason in reasons.values())
        super().__init__(
            f"{len(reasons)} task(s) have a gold the oracle cannot play; nothing was run:\n{listed}"
        )


async def generate(
    tasks: Iterable[Any],
    harness: Harness,
    catalog: Catalog | None,
    teacher: Teacher,
    config: GenerateConfig,
    *,
    world: World[Any] | None = None,
    on_result: Callable[[JobResult], None] | None = None,
) -> GenerateSummary:
    """Run every (task, variant) job not already done in `world` (default: the live room of
    `catalog`) and append the rows (module doc). With the oracle teacher every task's gold
    must play (GoldsUnplayable otherwise, before any job runs)."""
    if config.concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if not 0 <= config.keep_whole_fraction <= 1:
        raise ValueError("keep_whole_fraction must be between 0 and 1")
    if not 0 <= config.recovery_fraction <= 1:
        raise ValueError("recovery_fraction must be between 0 and 1")
    started = time.monotonic()
    summary = GenerateSummary()
    out, rejects = config.out, config.rejects_path
    out.parent.mkdir(parents=True, exist_ok=True)
    rejects.parent.mkdir(parents=True, exist_ok=True)
    _repair_tail(out)
    _repair_tail(rejects)
    skip = _done(config)
    task_list = list(tasks)
    variant_range = range(config.variants + 1)
    summary.skipped = sum(job_key(t.id, i) in skip for t in task_list for i in variant_range)
    jobs = _jobs(task_list, harness, config, skip)
    budget = config.limit
    played_in: World[Any] = world if world is not None else LiveRoomWorld(catalog)
    if teacher.gold:
        unplayable = await played_in.unplayable_golds(
            [t for t in task_list if not all(job_key(t.id, i) in skip for i in variant_range)]
        )
        if unplayable:
            raise GoldsUnplayable(unplayable)
    with (
        out.open("a", encoding="utf-8") as out_file,
        rejects.open("a", encoding="utf-8") as rej,
    ):

        def write(result: JobResult) -> None:
            handle: IO[str] = out_file if result.kept else rej
            handle.write(_dump_line(result.row))
            handle.flush()
            summary.jobs += 1
            if result.kept:
                summary.written += 1
                summary.hook_retry += result.hook_retry
                summary.kept_whole += result.kept_whole
                summary.recovery += result.recovery
            else:
                summary.rejected += 1
                kind = result.reason_kind or "rejected"
                summary.reasons[kind] += 1
                if kind not in summary.examples:
                    first = result.row.get("reasons") or [kind]
                    summary.examples[kind] = f"{result.key}: {first[0]}"
            if on_result is not None:
                on_result(result)

        def next_job() -> tuple[Any, HarnessVariant] | None:
            nonlocal budget
            if budget is not None:
                if budget <= 0:
                    return None
                budget -= 1
            return next(jobs, None)

        async def worker() -> None:
            while True:
                job = next_job()
                if job is None:
                    return
                task, variant = job
                result = await run_job(
                    task, variant, played_in, teacher, config, harness_name=harness.name
                )
                write(result)

        workers = [asyncio.ensure_future(worker()) for _ in range(config.concurrency)]
        try:
            finished_set, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
            for finished in finished_set:
                finished.result()  # re-raise the first failure (e.g. an on_result callback)
        finally:
            for pending in workers:
                pending.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
    summary.elapsed_s = time.monotonic() - started
    return summary
