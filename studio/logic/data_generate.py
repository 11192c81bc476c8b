"""Teacher generation from the studio: the form's values checked, turned into the same
`core.datagen.generate` call `hat data generate` makes, run on its own asyncio loop in a worker
thread, with a progress callback per finished job and a cancel that stops within one job step.

    run = GenerationRun(request, harness, harness_version)
    total = run.prepare()                      # jobs left to run (resume skips done keys)
    summary = run.run(on_progress)             # blocking; in a studio job
    run.cancel()                               # from any thread

Cancelling keeps every row already written (the generator flushes after each row); running
the same request again resumes where it stopped, like the CLI.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.harness import Harness
from studio.logic.data_tasks import SOURCES, load_tasks
from studio.logic.requests import RequestError, check_url

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")
SAMPLER_CHOICES: tuple[tuple[str, str], ...] = (
    ("hsa", "HSA · train bank, medium"),
    ("hsa-light", "HSA · train bank, light"),
    ("hsa-heavy", "HSA · train bank, heavy"),
    ("hsa-heldout", "HSA · held-out bank (evaluation data)"),
    ("identity", "Identity (original harness, new seed)"),
)


class _Cancelled(Exception):
    """Raised from the progress callback to stop the generator between two jobs."""


@dataclass(frozen=True)
class GenerationRequest:
    out_name: str
    teacher: str = "oracle"
    """oracle | openai"""
    url: str = ""
    model: str = ""
    api_key: str = ""
    temperature: float = 0.0
    source: str = "train"
    per_category: int | None = 2
    variants: int = 2
    sampler: str = "hsa"
    concurrency: int = 4
    seed: int = 0
    limit: int | None = None
    min_effectiveness: float = 0.5
    keep_whole: float = 0.1

    def out_path(self, home: Path) -> Path:
        name = self.out_name.strip()
        return Path(home) / "datasets" / (name if name.endswith(".jsonl") else f"{name}.jsonl")

    def validate(self) -> None:
        """RequestError for the first unusable field (the form shows it under the input)."""
        name = self.out_name.strip().removesuffix(".jsonl")
        if not NAME_RE.match(name):
            raise RequestError(
                "out_name",
                "use letters, digits, '.', '-' or '_' (a file name in the workspace's datasets)",
            )
        if self.teacher not in ("oracle", "openai"):
            raise RequestError("teacher", f"unknown teacher {self.teacher!r}")
        if self.teacher == "openai":
            check_url("url", self.url, "an OpenAI-compatible server")
            if not self.model.strip():
                raise RequestError("model", "the model name the server knows")
        if self.source not in {k for k, _ in SOURCES}:
            raise RequestError("source", f"unknown task source {self.source!r}")
        if self.variants < 0:
            raise RequestError("variants", "must be 0 or more")
        from core.datagen import SAMPLERS

        if self.variants and self.sampler not in SAMPLERS:
            raise RequestError("sampler", f"unknown sampler {self.sampler!r}")
        if self.concurrency < 1:
            raise RequestError("concurrency", "must be at least 1")

    def command(self) -> str:
        """The equivalent `hat data generate` line (shown under the form)."""
        parts = [
            "hat data generate",
            f"--out datasets/{self.out_name.strip().removesuffix('.jsonl')}.jsonl",
        ]
        parts.append(f"--tasks {self.source}")
        if self.per_category and self.source in ("train", "dev", "test"):
            parts.append(f"--per-category {self.per_category}")
        if self.teacher == "oracle":
            parts.append("--teacher oracle")
        else:
            parts += [f"--teacher-url {self.url.strip()}", f"--teacher-model {self.model.strip()}"]
            if self.temperature:
                parts.append(f"--temperature {self.temperature:g}")
        if self.variants:
            parts += [f"--variants {self.variants}", f"--sampler {self.sampler}"]
        if self.limit:
            parts.append(f"--limit {self.limit}")
        if self.seed:
            parts.append(f"--seed {self.seed}")
        parts.append(f"-j {self.concurrency}")
        return " ".join(parts)


@dataclass
class Progress:
    """Where a generation stands after a job (sent to the page after every job)."""

    total: int
    done: int = 0
    written: int = 0
    rejected: int = 0
    skipped: int = 0
    elapsed_s: float = 0.0
    last_key: str = ""
    last_kept: bool = True
    last_reason: str = ""
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0

    @property
    def rows_per_s(self) -> float:
        return self.done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def remaining_s(self) -> float | None:
        if self.done == 0 or self.elapsed_s <= 0:
            return None
        return (self.total - self.done) / self.rows_per_s


@dataclass
class GenerationResult:
    progress: Progress
    cancelled: bool
    out: Path
    summary: dict[str, Any] | None = None


class GenerationRun:
    def __init__(
        self,
        request: GenerationRequest,
        harness: Harness,
        home: Path,
        harness_version: str | None = None,
    ) -> None:
        request.validate()
        self.request = request
        self.harness = harness
        self.harness_version = harness_version
        self.out = request.out_path(home)
        self._cancel = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._lock = threading.Lock()
        self._tasks: list[Any] = []
        self.total = 0
        self.skipped = 0

    def prepare(self) -> int:
        """Build the task list and count the jobs this run will do: core's own count
        (`pending_jobs`: finished rows and rejects skipped, the limit applied)."""
        from core.datagen.generate import pending_jobs

        req = self.request
        per_category = req.per_category if req.source in ("train", "dev", "test") else None
        self._tasks = list(load_tasks(req.source, req.seed, per_category))
        config = self._config()
        left = pending_jobs(self._tasks, replace(config, limit=None))
        self.skipped = len(self._tasks) * (req.variants + 1) - left
        self.total = pending_jobs(self._tasks, config)
        return self.total

    def _config(self) -> Any:
        """The GenerateConfig of this request: what `generate` runs and `prepare` counts."""
        from core.datagen import GenerateConfig, get_sampler

        req = self.request
        return GenerateConfig(
            out=self.out,
            variants=req.variants,
            job_seed=req.seed,
            concurrency=req.concurrency,
            keep_whole_fraction=req.keep_whole,
            min_effectiveness=req.min_effectiveness,
            limit=req.limit or None,
            harness_version=self.harness_version,
            sampler=get_sampler(req.sampler) if req.variants else None,
            sampler_name=req.sampler if req.variants else None,
        )

    def cancel(self) -> None:
        """Stop as soon as possible (thread-safe); rows written so far stay."""
        self._cancel.set()
        with self._lock:
            loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def run(self, on_progress: Callable[[Progress], None] | None = None) -> GenerationResult:
        """Run the generation to the end or until cancelled (blocking; call from a worker)."""
        from core.datagen import OpenAITeacher, Teacher, generate
        from core.sim.catalog import load_catalog

        if not self._tasks:
            self.prepare()
        req = self.request
        catalog = load_catalog()
        progress = Progress(total=self.total, skipped=self.skipped)
        started = time.monotonic()
        remote: OpenAITeacher | None = None
        if req.teacher == "oracle":
            teacher = Teacher.oracle(catalog)
        else:
            remote = OpenAITeacher(
                req.url.strip(),
                req.model.strip(),
                api_key=req.api_key or None,
                temperature=req.temperature,
            )
            teacher = Teacher.shared(remote.spec, remote)
        config = self._config()

        def on_result(result: Any) -> None:
            progress.done += 1
            progress.elapsed_s = time.monotonic() - started
            progress.last_key = result.key
            progress.last_kept = result.kept
            if result.kept:
                progress.written += 1
                progress.last_reason = ""
            else:
                progress.rejected += 1
                kind = result.reason_kind or "rejected"
                progress.reasons[kind] = progress.reasons.get(kind, 0) + 1
                reasons = result.row.get("reasons") or []
                progress.last_reason = str(reasons[0]) if reasons else kind
            if on_progress is not None:
                on_progress(progress)
            if self._cancel.is_set():
                # The oracle never yields to the event loop (no I/O), so a task.cancel()
                # alone would only land after the last job: stop between two jobs instead.
                raise _Cancelled

        async def main() -> Any:
            try:
                return await generate(
                    self._tasks, self.harness, catalog, teacher, config, on_result=on_result
                )
            finally:
                if remote is not None:
                    await remote.close()

        loop = asyncio.new_event_loop()
        summary = None
        try:
            with self._lock:
                self._loop = loop
                self._task = loop.create_task(main())
                task = self._task
            if self._cancel.is_set():
                task.cancel()
            try:
                summary = loop.run_until_complete(task)
            except (asyncio.CancelledError, _Cancelled):
                summary = None
        finally:
            with self._lock:
                self._loop = None
                self._task = None
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        progress.elapsed_s = time.monotonic() - started
        return GenerationResult(
            progress=progress,
            cancelled=summary is None,
            out=self.out,
            summary=summary.to_dict() if summary is not None else None,
        )
