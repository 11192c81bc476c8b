"""The mini-replication of the HAT report: `hat experiment replicate --profile cpu`.

    run = Replication.create(store, load_profile("ci"), out=Path("runs/ci"))
    run.run_all(on_message=print)               # resumable: Replication.open(store, folder)

Steps, in order, each recorded in `<run folder>/state.json` with its wall time and outputs
(a step that finished is skipped on resume; one that did not is continued where its own
machinery allows: data generation skips written rows, training resumes from its last
checkpoint, evaluation skips stored items):

1. `setup`     the base model (the demo model is imported when missing), the original and the
               edited harness (lite copies for the CPU profiles, core/experiment/lite.py),
               exported to `harness/` and stored as two versions of one harness.
2. `data`      oracle teacher rows on the train split (core/datagen): K = 0 rows for the
               fixed-harness SFT, original + K `train`-bank HSA variants per task for HAT.
3. `train`     fixed-harness SFT on the K = 0 rows with HAT's total step count (profiles.py:
               matched budgets), merged and registered; and the HAT pipeline
               (core/train/pipeline.py): HSA-SFT -> OPD (teacher: the base) -> HSA-RL in the
               simulated room under the same harness, the last stage merged. With
               `parallel_training` both run at once (two training processes).
4. `eval-hv-qa`, `eval-ifeval`, `eval-ls-qa`, `eval-edit`  one suite at a time for base,
               fixed-SFT and HAT side by side, each model served from its merged folder by
               its own server (core/eval): HV-QA (heldout variants, the method's headline),
               IFEval (one model call per item, cheap), LS-QA under the original harness and
               LS-QA under the edited harness (the harness-edit test; "before" is the same
               tasks' LS-QA rows). Suite by suite, so a run cut short by its deadline still
               compares the three models on the suites it finished.
5. `eval-stages` (with the profile's `eval.stages`) HAT's kept stage adapters, after HSA-SFT
               and after OPD (`<tag>-hat-sft`, `<tag>-hat-opd`), each merged
               (core.models.merge) and served like the models above, on the HAT model's own
               requests (the same items) for `eval.stage_suites`; after RL is the HAT model,
               whose eval-hat rows the report reuses. A run folder from before this step
               shows it as not run.
6. `report`    core/experiment/report.py: table, intervals, plots, report.md / report.json.

**In a task-file world** (`world: task-file`, core/experiment/profiles.py) the same steps run
on an operator's harness: setup imports its folder and the edited folder (with trust: the
profile names the code to run) as two versions of one stored harness and checks the task file
against it; data is oracle rows on the file's train split (the gold remapped onto each
variant, core/episode/task_file.py); HSA-RL plays train tasks of the file through the
harness's own tools (RlConfig.tasks: a task file; harness: the stored version, whose trust
the store keeps); LS-QA is the `tasks` suite (the file's test split), HV-QA the `hv-tasks`
suite, the edit test the `tasks` suite under the edited harness (graded in the names of the
harness the file was written for); IFEval is unchanged. core/experiment/task_world.py picks
the tasks.

Everything runs through the project's own pieces (datagen, training runs and pipeline, model
registry, managed servers, the evaluation runner); this module only sequences them.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from core.eval.results import Suite
from core.experiment.lite import focus_harness, lite_harness
from core.experiment.profiles import Profile, edited_harness_path, parse_profile
from core.experiment.report import write_replication_report
from core.experiment.steps import EVAL_PARTS as EVAL_PARTS
from core.experiment.steps import HAT_STAGES
from core.experiment.steps import MODELS as MODELS
from core.experiment.steps import STEPS as STEPS
from core.experiment.task_world import (
    TaskWorldError,
    check_task_file,
    pick_per_category,
    read_tasks,
    split,
    write_tasks,
)
from core.harness import HarnessError, export_folder, import_folder
from core.harness.demo import load_demo_harness
from core.jsonl import jsonl_lines
from core.models import RegistryError, add_demo, get
from core.models.merge import merged_model
from core.models.registry import DEMO_MODEL_NAME
from core.sim.catalog import load_catalog
from core.sim.models import Split
from core.source import code_source
from core.store import Store
from core.store.training import get_run, list_runs
from core.train.config import PipelineConfig
from core.train.launch_checks import detect_environment
from core.train.pipeline import resume_pipeline, run_pipeline
from core.train.runs import RunError, prepare, process_alive, resume, start, watch

if TYPE_CHECKING:
    from core.harness.models import Harness
    from core.serving.server import ManagedServer

STATE_FILE = "state.json"
PROFILE_FILE = "profile.yaml"

Message = Callable[[str], None]


class ReplicationError(RuntimeError):
    """A step cannot go on; the message says which and why (the state keeps what was done)."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _quiet(_: str) -> None:
    return None


@dataclass
class Replication:
    """One replication run folder and its state (module doc)."""

    store: Store
    folder: Path
    profile: Profile
    state: dict[str, Any]
    ifeval_path: str | None = None
    deadline: float | None = None
    """Epoch seconds after which no evaluation item starts (the steps end "partial" and the
    report is written from the rows there are); None: no deadline."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ------------------------------------------------------------------ create / open

    @classmethod
    def create(
        cls, store: Store, profile: Profile, out: Path, *, ifeval_path: str | None = None
    ) -> Replication:
        out = out.expanduser().resolve()
        if (out / STATE_FILE).exists():
            raise ReplicationError(f"{out} already holds a replication; resume it instead")
        out.mkdir(parents=True, exist_ok=True)
        (out / PROFILE_FILE).write_text(
            yaml.safe_dump(profile.model_dump(mode="json"), sort_keys=False), encoding="utf-8"
        )
        state: dict[str, Any] = {
            "profile": profile.name,
            "created_at": _now(),
            "tag": out.name,
            "ifeval_path": ifeval_path,
            "steps": {},
            "machine": machine_note(),
            "code": code_source(),
        }
        run = cls(store, out, profile, state, ifeval_path)
        run.save()
        return run

    @classmethod
    def open(cls, store: Store, folder: Path) -> Replication:
        folder = folder.expanduser().resolve()
        try:
            state = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
            data = yaml.safe_load((folder / PROFILE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise ReplicationError(f"{folder} is not a replication folder: {exc}") from None
        profile = parse_profile(data, where=str(folder / PROFILE_FILE))
        return cls(store, folder, profile, state, state.get("ifeval_path"))

    def save(self) -> None:
        path = self.folder / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(path)

    # ------------------------------------------------------------------ running

    def step(self, name: str) -> dict[str, Any]:
        steps: dict[str, Any] = self.state.setdefault("steps", {})
        entry: dict[str, Any] = steps.setdefault(name, {"status": "pending"})
        return entry

    def done(self, name: str) -> bool:
        return self.step(name).get("status") == "done"

    def run_all(self, *, on_message: Message = _quiet, until: str | None = None) -> None:
        """Run every step not done yet, in order (stops after `until` when given). Past the
        deadline, evaluation steps end "partial" and the report is still written."""
        snapshot_modules()
        for name in STEPS:
            if not self.done(name):
                self.run_step(name, on_message=on_message)
            if name == until:
                return

    def run_step(self, name: str, *, on_message: Message = _quiet) -> None:
        entry = self.step(name)
        entry["status"] = "running"
        entry.setdefault("started_at", _now())
        entry["attempts"] = int(entry.get("attempts", 0)) + 1
        self.save()
        on_message(f"[{name}] started")
        started = time.monotonic()
        try:
            handler = getattr(self, "_" + name.replace("-", "_"))
            outcome = handler(entry, on_message)
        except BaseException as exc:
            entry["status"] = "failed"
            entry["reason"] = f"{type(exc).__name__}: {exc}"
            entry["wall_s"] = round(float(entry.get("wall_s", 0.0)) + time.monotonic() - started, 1)
            self.save()
            raise
        entry["status"] = outcome or "done"
        entry.pop("reason", None)
        entry["ended_at"] = _now()
        entry["wall_s"] = round(float(entry.get("wall_s", 0.0)) + time.monotonic() - started, 1)
        self.save()
        on_message(f"[{name}] {entry['status']} in {entry['wall_s']:.0f} s")

    @property
    def in_task_file(self) -> bool:
        """Whether the profile's world is an operator's harness and task file."""
        return self.profile.world == "task-file"

    # ------------------------------------------------------------------ 1. setup

    def _setup(self, entry: dict[str, Any], say: Message) -> None:

        try:
            record = get(self.store, self.profile.model)
        except RegistryError:
            if self.profile.model != DEMO_MODEL_NAME:
                raise ReplicationError(
                    f"model {self.profile.model!r} is not registered (hat models add ...)"
                ) from None
            say("importing the demo model (first use)")
            record, _ = add_demo(self.store)
        entry["base_model"] = record.name
        entry["base_location"] = record.location
        if self.in_task_file:
            original, edited, name = self._own_harnesses(entry, say)
        else:
            original, edited, name = self._demo_harnesses()
        edited = edited.model_copy(update={"name": name})
        folders = {"original": self.folder / "harness" / "original",
                   "edited": self.folder / "harness" / "edited"}  # fmt: skip
        export_folder(original, folders["original"])
        export_folder(edited, folders["edited"])
        tag = self.state["tag"]
        first = self.store.commit(original, f"replication {tag}: the original harness", parent=None)
        second = self.store.commit(
            edited, f"replication {tag}: the edited harness", parent=first.id
        )
        entry["harness_name"] = name
        entry["versions"] = {"original": first.id, "edited": second.id}
        entry["folders"] = {k: str(v) for k, v in folders.items()}

    def _demo_harnesses(self) -> tuple[Harness, Harness, str]:
        """The live room's original and edited harness (the profile's cut) and their name."""

        original = load_demo_harness()
        edited = import_folder(edited_harness_path(self.profile))
        if self.profile.harness in ("lite", "focus"):
            original = lite_harness(original, max_turns=self.profile.max_turns)
            edited = lite_harness(edited, max_turns=self.profile.max_turns)
            if self.profile.harness == "focus" and self.profile.categories:
                original = focus_harness(original, self.profile.categories)
                edited = focus_harness(edited, self.profile.categories)
            name = original.name
        else:
            name = f"{original.name}-replication"
            original = original.model_copy(update={"name": name})
        return original, edited, name

    def _own_harnesses(self, entry: dict[str, Any], say: Message) -> tuple[Harness, Harness, str]:
        """The task-file world's harness and edited harness, read from the profile's folders
        with trust (the profile names the code to run), and the task file checked against
        the harness it was written for."""
        from core.runtime.tool_runtime import binding_problems  # heavy: jsonschema, regex

        found: dict[str, Harness] = {}
        for key, field_name in (("original", "harness_folder"),
                                ("edited", "edited_harness_folder")):  # fmt: skip
            folder = Path(str(getattr(self.profile, field_name)))
            try:
                harness = import_folder(folder, trust_python_hooks=True)
            except HarnessError as exc:
                listed = "; ".join(str(p) for p in exc.problems[:5])
                raise ReplicationError(f"{field_name} {folder}: {listed}") from None
            problems = binding_problems(harness)
            if problems:
                listed = "; ".join(p.message for p in problems)
                raise ReplicationError(
                    f"{field_name} {folder}: bindings the runtime cannot run: {listed}"
                )
            found[key] = harness
        original = found["original"]
        path = Path(str(self.profile.task_file))
        try:
            counts = check_task_file(
                path, {t.name for t in original.tools}, {s.name for s in original.skills}
            )
        except TaskWorldError as exc:
            raise ReplicationError(f"task_file: {exc}") from None
        name = f"{original.name}-replication"
        entry["task_file"] = str(path)
        entry["task_counts"] = counts
        say(f"task file {path.name}: {counts.get('train', 0)} train, {counts.get('test', 0)} test")
        return original.model_copy(update={"name": name}), found["edited"], name

    # ------------------------------------------------------------------ 2. data

    def _data(self, entry: dict[str, Any], say: Message) -> None:

        from core.datagen import GenerateConfig, get_sampler  # heavy: openai, httpx, rich
        from core.sim.tasks import generate_tasks, suite_bytes  # heavy: jsonschema, regex

        setup = self.step("setup")
        harness = self.store.load(setup["versions"]["original"])
        catalog = load_catalog()
        data = self.profile.data
        cats = list(self.profile.categories) if self.profile.categories else None
        tasks: list[Any]
        if self.in_task_file:
            tasks = self._own_train_tasks(data.per_category, data.seed)
        else:
            tasks = list(
                generate_tasks(
                    Split.TRAIN, seed=data.seed, per_category=data.per_category, categories=cats
                )
            )
        out = self.folder / "data"
        files = {"fixed": out / "fixed-k0.jsonl", "hat": out / f"hat-k{data.hat_variants}.jsonl"}
        counts: dict[str, Any] = {"tasks": len(tasks)}
        for kind, path in files.items():
            variants = 0 if kind == "fixed" else data.hat_variants
            config = GenerateConfig(
                out=path,
                variants=variants,
                job_seed=data.seed,
                concurrency=1,
                harness_version=setup["versions"]["original"],
                sampler=get_sampler(data.sampler) if variants else None,
                sampler_name=data.sampler if variants else None,
            )
            summary = asyncio.run(self._generate(tasks, harness, catalog, config))
            rows = sum(1 for line in jsonl_lines(path.read_text(encoding="utf-8")) if line.strip())
            if rows == 0:
                raise ReplicationError(f"data: no {kind} rows were kept ({summary.to_dict()})")
            counts[kind] = {"rows": rows, **summary.to_dict()}
            say(f"{kind}: {rows} rows ({summary.rejected} rejected)")
        rl = self.profile.hat.rl
        if self.in_task_file:  # HSA-RL plays train tasks of the file, every category in turn
            chosen = self._own_train_tasks(rl.per_category or 4, rl.task_seed)
            files["rl_tasks"] = write_tasks(chosen, out / "rl-tasks.jsonl")
            counts["rl_tasks"] = len(chosen)
        elif cats:  # HSA-RL plays the same categories (a task file: RlConfig.tasks)
            rl_tasks = out / "rl-tasks.jsonl"
            chosen = generate_tasks(
                Split.TRAIN, seed=rl.task_seed, per_category=rl.per_category or 4, categories=cats
            )
            rl_tasks.write_bytes(suite_bytes(chosen))
            files["rl_tasks"] = rl_tasks
        entry["files"] = {k: str(v) for k, v in files.items()}
        entry["counts"] = counts

    def _own_train_tasks(self, per_category: int, seed: int) -> list[Any]:
        """Train tasks of the task file: at most `per_category` of each category."""

        path = Path(self.step("setup")["task_file"])
        return pick_per_category(split(read_tasks(path), "train"), per_category, seed=seed)

    async def _generate(self, tasks: list[Any], harness: Any, catalog: Any, config: Any) -> Any:
        """Oracle rows of `tasks` in the profile's world (a task file's: the harness's own
        tools, open for the generation; golds that cannot play stop it before any job)."""
        from core.datagen import Teacher, generate  # heavy: openai, httpx, rich

        teacher = Teacher.oracle(catalog)
        if not self.in_task_file:
            return await generate(tasks, harness, catalog, teacher, config)
        from core.episode.open_world import open_world  # heavy: jsonschema, regex

        try:
            async with open_world(harness, task_file=True, catalog=catalog) as world:
                return await generate(tasks, harness, catalog, teacher, config, world=world)
        except ValueError as exc:  # bindings that cannot run, golds that cannot play
            raise ReplicationError(f"data: {exc}") from None

    # ------------------------------------------------------------------ 3./4. training

    def _rl_update(self) -> dict[str, Any]:
        """HSA-RL under the run's original harness, on its categories' tasks when it has any.
        A task-file world names the stored version (its python:/mcp: tools load trusted from
        the store; a folder would load them untrusted) and plays its RL task file."""
        setup = self.step("setup")
        key = "versions" if self.in_task_file else "folders"
        harness = setup[key]["original"]
        update: dict[str, Any] = {"harness": str(harness), "merge": True}
        rl_tasks = (self.step("data").get("files") or {}).get("rl_tasks")
        if rl_tasks:
            update["tasks"] = rl_tasks
        return update

    def _train(self, entry: dict[str, Any], say: Message) -> None:
        """Fixed SFT and the HAT pipeline; in parallel when the profile says so (the fixed
        SFT child runs while the pipeline's stages run one after another)."""
        fixed = entry.setdefault("fixed", {})
        hat = entry.setdefault("hat", {})
        proc = None if fixed.get("merged") else self._launch_fixed(fixed, say)
        if proc is not None and not self.profile.parallel_training:
            self._finish_fixed(fixed, proc, say)
            proc = None
        if not hat.get("merged"):
            self._train_hat(hat, say)
        if not fixed.get("merged"):
            self._finish_fixed(fixed, proc, say)

    def _launch_fixed(self, entry: dict[str, Any], say: Message) -> Any:
        """Start (or resume) the fixed SFT child; None when it is already done."""

        run_id = entry.get("run")
        if run_id:
            run = get_run(self.store, run_id)
            if run.status == "done":
                return None
            if run.status == "running" and process_alive(run):
                return None  # another process of this replication watches it
            try:
                proc = resume(self.store, run_id)
                say(f"fixed SFT: resuming {run_id}")
                return proc
            except RunError:
                pass
        config = self.profile.fixed_sft().model_copy(
            update={
                "model": self.step("setup")["base_model"],
                "data": [self.step("data")["files"]["fixed"]],
                "output_name": f"{self.state['tag']}-fixed-sft",
            }
        )
        run = prepare(self.store, config, detect_environment())
        entry["run"] = run.id
        self.save()
        say(f"fixed SFT: {config.max_steps} steps ({run.id})")
        return start(self.store, run.id)

    def _finish_fixed(self, entry: dict[str, Any], proc: Any, say: Message) -> None:
        """Watch the fixed SFT child to its end; a child that was killed (e.g. by the
        out-of-memory killer while the HAT stages ran beside it) is run again once, alone."""

        run = watch(self.store, entry["run"], proc, on_event=_progress(say, "fixed"))
        if run.status == "failed" and "killed" in (run.reason or "") and not entry.get("retried"):
            say(f"fixed SFT: {run.id} was killed ({(run.reason or '').splitlines()[0]}); again")
            entry["retried"] = True
            proc = self._launch_fixed(entry, say)
            run = watch(self.store, entry["run"], proc, on_event=_progress(say, "fixed"))
        if run.status != "done":
            raise ReplicationError(f"fixed SFT run {run.id} {run.status}: {run.reason}")
        self._record_training(entry, run.outputs)
        entry["wall_s"] = _run_wall(run)

    def _train_hat(self, entry: dict[str, Any], say: Message) -> None:

        env = detect_environment()
        hat = self.profile.hat
        base = self.step("setup")["base_model"]
        pipeline = PipelineConfig(
            model=base,
            name=f"{self.state['tag']}-hat",
            sft=hat.sft.model_copy(update={"data": [self.step("data")["files"]["hat"]]}),
            opd=hat.opd,
            rl=hat.rl.model_copy(update=self._rl_update()),
        )
        on_event = _progress(say, "hat")
        run_id = entry.get("run")
        if run_id:
            run = get_run(self.store, run_id)
            if run.status != "done":
                say(f"HAT: resuming pipeline {run_id}")
                run = resume_pipeline(self.store, run_id, env, on_event=on_event)
        else:
            say(
                f"HAT: SFT {hat.sft.max_steps} + OPD {hat.opd.max_steps} + RL "
                f"{hat.rl.max_steps} steps"
            )
            run = run_pipeline(
                self.store,
                pipeline,
                env,
                on_event=on_event,
                on_stage=lambda r, how: self._note_stage(entry, r.id, r.stage, how, say),
            )
        entry["run"] = run.id
        if run.status != "done":
            raise ReplicationError(f"HAT pipeline {run.id} {run.status}: {run.reason}")
        self._record_training(entry, dict(run.outputs.get("final") or {}))
        entry["stages"] = self._stage_walls(run.id)
        entry["wall_s"] = _run_wall(run)

    def _note_stage(
        self, entry: dict[str, Any], run_id: str, stage: str, how: str, say: Message
    ) -> None:

        if "run" not in entry:
            parent = get_run(self.store, run_id).parent
            entry["run"] = parent
            self.save()
        say(f"HAT {stage}: {how} ({run_id})")

    def _stage_walls(self, pipeline_id: str) -> dict[str, Any]:

        out: dict[str, Any] = {}
        for run in list_runs(self.store, parent=pipeline_id):
            if run.status == "done" and run.started_at and run.ended_at:
                out[run.stage] = {
                    "run": run.id,
                    "wall_s": round((run.ended_at - run.started_at).total_seconds(), 1),
                }
        return out

    def _record_training(self, entry: dict[str, Any], outputs: dict[str, Any]) -> None:
        merged = outputs.get("merged") or outputs.get("model")
        if not merged:
            raise ReplicationError("the training run registered no merged model to serve")
        entry["merged"] = merged
        entry["adapter"] = outputs.get("adapter")
        entry["registered"] = outputs.get("registered")

    # ------------------------------------------------------------------ 5. evaluation

    def model_folder(self, model: str) -> str:
        if model == "base":
            return str(self.step("setup")["base_location"])
        if model.startswith("hat-"):  # a stage adapter, merged by the eval-stages step
            return str(self.step("eval-stages")[model.removeprefix("hat-")]["location"])
        return str(self.step("train")[model]["merged"])

    def model_label(self, model: str) -> str:
        if model == "base":
            return str(self.step("setup")["base_model"])
        if model.startswith("hat-"):
            return str(self.step("eval-stages")[model.removeprefix("hat-")]["merged"])
        registered = self.step("train")[model].get("registered") or []
        merged = [r for r in registered if r.endswith("-merged")]
        return merged[0] if merged else f"{self.state['tag']}-{model}"

    def requests(self, model: str) -> dict[str, Any]:
        """The four evaluation requests of one model (without the server address); a HAT
        stage (`hat-sft`, `hat-opd`): the HAT model's requests for the profile's
        `stage_suites`, under the stage's merged model (the same items)."""
        from core.eval.api import EvalRequest  # heavy: httpx, rich, jsonschema

        if model.startswith("hat-"):
            label = self.model_label(model)
            suites = self.profile.eval.stage_suites
            return {
                part: request.model_copy(update={"model": label})
                for part, request in self.requests("hat").items()
                if part in suites
            }

        ev = self.profile.eval
        versions = self.step("setup")["versions"]
        common: dict[str, Any] = {
            "model": self.model_label(model),
            "max_tokens": ev.max_tokens,
            "concurrency": ev.concurrency,
            "call_timeout_s": ev.call_timeout_s,
            "item_timeout_s": ev.item_timeout_s,
            "engine": self.engine(),
            "seed": 0,
        }
        out: dict[str, Any]
        if self.in_task_file:
            out = self._own_requests(common)
        else:
            cats = [c.value for c in self.profile.categories] if self.profile.categories else None
            agent = {**common, "categories": cats}
            out = {
                "hv-qa": EvalRequest(
                    suites=[Suite.HV_QA], harness=versions["original"], limit=ev.hv_qa,
                    variants=ev.hv_variants, **agent,
                ),
                "ls-qa": EvalRequest(
                    suites=[Suite.LS_QA], harness=versions["original"], limit=ev.ls_qa, **agent
                ),
                "edit": EvalRequest(
                    suites=[Suite.LS_QA], harness=versions["edited"], limit=ev.edit, **agent
                ),
            }  # fmt: skip
        if self.ifeval_path:
            out["ifeval"] = EvalRequest(
                suites=[Suite.IFEVAL], harness=versions["original"], limit=ev.ifeval,
                ifeval_path=self.ifeval_path, **common,
            )  # fmt: skip
        return out

    def _own_requests(self, common: dict[str, Any]) -> dict[str, Any]:
        """The task-file world's agent requests: LS-QA is the `tasks` suite (the file's test
        split under the harness), HV-QA the `hv-tasks` suite (the same tasks under heldout
        variants), the edit test the `tasks` suite under the edited harness, graded in the
        names of the harness the file was written for (a renamed tool is matched by its
        binding)."""
        from core.eval.api import EvalRequest  # heavy: httpx, rich, jsonschema

        ev = self.profile.eval
        versions = self.step("setup")["versions"]
        own = {**common, "task_file": self.step("setup")["task_file"]}
        return {
            "hv-qa": EvalRequest(
                suites=[Suite.HV_TASKS], harness=versions["original"], limit=ev.hv_qa,
                variants=ev.hv_variants, **own,
            ),
            "ls-qa": EvalRequest(
                suites=[Suite.TASKS], harness=versions["original"], limit=ev.ls_qa, **own
            ),
            "edit": EvalRequest(
                suites=[Suite.TASKS], harness=versions["edited"], limit=ev.edit,
                task_file_harness=versions["original"], **own,
            ),
        }  # fmt: skip

    def model_server(
        self,
        model: str,
        *,
        dtype: str | None = None,
        concurrency: int | None = None,
        log_dir: Path | None = None,
    ) -> ManagedServer:
        """The server one model is evaluated on, as every evaluation of the run serves it (the
        profile's engine, dtype and items in flight, prefix caching on vLLM); `dtype` and
        `concurrency` override the profile's (benchmarks/eval_flips.py). Not started.

        Through `server_for` like every server of core; by the model's folder, as the run
        records it (a registration can fail and leave the folder), under the folder's path
        as the model id that the run's stored requests name."""
        from core.serving.engines import EngineConfig  # heavy: openai, httpx, rich
        from core.serving.launch import server_for  # heavy: openai, httpx, rich

        ev = self.profile.eval
        engine = self.engine()
        seqs = concurrency or ev.concurrency
        config = EngineConfig(
            engine,
            dtype=dtype or ev.dtype,
            extra_args=["--enable-prefix-caching"] if engine == "vllm" else [],
            max_num_seqs=seqs if engine == "vllm" else None,
        )
        return server_for(
            self.store,
            config,
            self.model_folder(model),
            by_location=True,
            startup_timeout_s=900,
            log_dir=log_dir,
        )

    def engine(self, say: Message = _quiet) -> str:
        """The serving engine: the profile's, or transformers serve when the profile asks for
        vLLM and no vLLM environment exists here (a one-line notice, kept in the run's notes)."""
        from core.serving.engines import pick_engine  # heavy: openai, httpx, rich

        engine, notice = pick_engine(self.profile.eval.engine)
        if notice is not None:
            note = f"{notice} (evaluation)"
            notes: list[str] = self.state.setdefault("notes", [])
            if note not in notes:
                notes.append(note)
                self.save()
                say(note)
        return engine

    def _evaluate(self, model: str, entry: dict[str, Any], say: Message) -> str | None:
        """Every suite of one model through ONE server: the model is loaded once, items run
        `concurrency` at a time (batched decoding) and the rendered harness is byte-stable, so
        vLLM's prefix cache serves the shared system prompt across items and turns. Suites
        run one after another (agent suites first); a server that died during a suite is
        started again (`core.serving.launch.revive`) and the suite resumed (its model_error
        rows are run again). "partial" when the deadline stopped it."""
        from core.eval.api import RunStatus, get_eval_run  # heavy: httpx, rich, jsonschema

        runs: dict[str, str] = entry.setdefault("runs", {})
        entry.setdefault("walls", {})
        requests = self.requests(model)
        if "ifeval" not in requests and not model.startswith("hat-"):
            entry["note"] = "no IFEval prompts (give --ifeval FILE)"
        todo = [
            (part, requests[part])
            for part in EVAL_PARTS
            if part in requests
            and not (part in runs and get_eval_run(self.store, runs[part]).status is RunStatus.DONE)
        ]
        if not todo:
            return None
        if self.deadline_passed():
            return "partial"
        engine = self.engine(say)
        folder = self.model_folder(model)
        server = self.model_server(model, log_dir=self.folder / "logs" / f"serve-{model}")
        t0 = time.monotonic()
        try:
            server.start()
            entry["server_start_s"] = round(time.monotonic() - t0, 1)
            say(f"{model}: serving {folder} with {engine} ({entry['server_start_s']:.0f} s)")
            for part, request in todo:
                request = request.model_copy(
                    update={"engine": engine, "base_url": server.base_url,
                            "model_id": server.model_id}
                )  # fmt: skip
                status = self._run_part(model, part, request, entry, server, say)
                if status is RunStatus.STOPPED and self.deadline_passed():
                    return "partial"
                if status is not RunStatus.DONE:
                    raise ReplicationError(
                        f"evaluation {runs.get(part)} ({part}, {model}) ended {status}"
                    )
        finally:
            server.stop()
            entry["wall_s_serving"] = round(
                float(entry.get("wall_s_serving", 0.0)) + time.monotonic() - t0, 1
            )
            self.save()
        return None

    def _run_part(
        self, model: str, part: str, request: Any, entry: dict[str, Any], server: ManagedServer,
        say: Message,
    ) -> Any:  # fmt: skip
        """One suite of one model on the model's running server (`_evaluate`)."""
        from core.eval.api import resume_eval, run_eval  # heavy: httpx, rich, jsonschema
        from core.serving.launch import revive  # heavy: openai, httpx, rich

        runs: dict[str, str] = entry["runs"]
        t0 = time.monotonic()
        progress = _eval_progress(say, f"{part} {model}")
        stop = _Deadline(self.deadline)
        if part not in runs:
            found = _unfinished_run(self.store, request)
            if found is not None:  # started by a process of this run that was killed
                runs[part] = found
                self.save()
        if part in runs:
            run = resume_eval(
                self.store, runs[part], base_url=server.base_url, on_progress=progress, stop=stop
            )
        else:
            run = run_eval(self.store, request, on_progress=progress, stop=stop)
            runs[part] = run.id
            self.save()
        if revive(server):
            say(f"{part}: the server died during the suite; started it again, resuming")
            run = resume_eval(
                self.store, runs[part], base_url=server.base_url, on_progress=progress, stop=stop
            )
        walls: dict[str, float] = entry["walls"]
        walls[part] = round(float(walls.get(part, 0.0)) + time.monotonic() - t0, 1)
        return run.status

    def _eval_base(self, entry: dict[str, Any], say: Message) -> str | None:
        return self._evaluate("base", entry, say)

    def _eval_fixed(self, entry: dict[str, Any], say: Message) -> str | None:
        return self._evaluate("fixed", entry, say)

    def _eval_hat(self, entry: dict[str, Any], say: Message) -> str | None:
        return self._evaluate("hat", entry, say)

    def _eval_stages(self, entry: dict[str, Any], say: Message) -> str | None:
        """HAT's kept stage adapters after HSA-SFT and after OPD, each merged and evaluated
        like a model of its own (`_evaluate`: one server, the HAT model's items) on the
        profile's `stage_suites` (module doc, step 5). Off in the profile: nothing to do."""

        if not self.profile.eval.stages:
            entry["note"] = "off in the profile (eval.stages)"
            return None
        tag = self.state["tag"]
        outcome: str | None = None
        for stage in HAT_STAGES:
            sub: dict[str, Any] = entry.setdefault(stage, {})
            if not sub.get("merged"):
                if self.deadline_passed():
                    return "partial"
                try:
                    record = merged_model(self.store, f"{tag}-hat-{stage}")
                except RegistryError as exc:
                    if exc.kind == "failed":  # the merge itself failed: say so, stop here
                        raise ReplicationError(f"eval-stages: {exc}") from None
                    sub["note"] = f"no stage adapter to evaluate: {exc}"
                    say(f"stage {stage}: {sub['note']}")
                    continue
                sub["adapter"] = f"{tag}-hat-{stage}"
                sub["merged"] = record.name
                sub["location"] = record.location
                self.save()
            status = self._evaluate(f"hat-{stage}", sub, say)
            if status == "partial":
                outcome = "partial"
                break
        return outcome

    def eval_runs(self, model: str) -> dict[str, str]:
        """{part: evaluation run id} of one model (`hat-sft`, `hat-opd`: a HAT stage), for
        the parts that have a run."""
        if model.startswith("hat-"):
            stages = self.state.get("steps", {}).get("eval-stages") or {}
            runs = (stages.get(model.removeprefix("hat-")) or {}).get("runs") or {}
        else:
            runs = self.step(f"eval-{model}").get("runs") or {}
        return {part: runs[part] for part in EVAL_PARTS if runs.get(part)}

    def deadline_passed(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline

    # ------------------------------------------------------------------ 7. report

    def _report(self, entry: dict[str, Any], say: Message) -> None:
        paths = write_replication_report(self, self.folder / "report")
        entry["files"] = {k: str(v) for k, v in paths.items()}
        say(f"report: {paths['markdown']}")

    # ------------------------------------------------------------------ helpers

    def total_wall_s(self) -> float:
        return round(
            sum(float(s.get("wall_s", 0.0)) for s in self.state.get("steps", {}).values()), 1
        )


def _unfinished_run(store: Store, request: Any) -> str | None:
    """The newest unfinished evaluation run of exactly this request (same model label,
    harness version, suites and settings), so a replication killed mid-suite resumes it."""
    from core.eval.api import RunStatus, list_eval_runs  # heavy: httpx, rich, jsonschema

    def key(req: Any) -> Any:
        return req.model_dump(mode="json", exclude={"base_url", "model_id"})

    for run in reversed(list_eval_runs(store)):
        if run.status is not RunStatus.DONE and key(run.request) == key(request):
            return run.id
    return None


class _Deadline:
    """A stop flag for the evaluation runner that turns on at `deadline` (epoch seconds)."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline

    def is_set(self) -> bool:
        return self.deadline is not None and time.time() >= self.deadline


def _run_wall(run: Any) -> float | None:
    if run.started_at and run.ended_at:
        return round(float((run.ended_at - run.started_at).total_seconds()), 1)
    return None


def _progress(say: Message, label: str) -> Callable[[dict[str, Any]], None]:
    def on_event(event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "log" and event.get("step") is not None:
            loss = event.get("loss")
            extra = f" loss {loss:.3f}" if isinstance(loss, int | float) else ""
            say(f"  {label} step {event['step']}{extra}")
        elif kind == "phase":
            say(f"  {label}: {event.get('phase')}")

    return on_event


def _eval_progress(say: Message, label: str) -> Callable[[int, int, Any], None]:
    def on_progress(done: int, total: int, last: Any) -> None:
        if last is not None:
            mark = "pass" if last.passed else (last.reason or "fail")[:60]
            say(f"  {label} {done}/{total} {last.task_id}: {mark}")

    return on_progress


SNAPSHOT = (
    "core.datagen",
    "core.eval.api",
    "core.eval.runner",
    "core.eval.planning",
    "core.eval.items",
    "core.eval.ifeval",
    "core.eval.stats",
    "core.experiment.lite",
    "core.experiment.report",
    "core.hsa.augment",
    "core.hsa.policy",
    "core.serving.launch",
    "core.serving.server",
    "core.sim.graders",
    "core.train.pipeline",
)


def snapshot_modules() -> None:
    """Import now every module a later step uses, so a run that lasts an hour executes one
    consistent version of the code even when the checkout changes under it."""

    for name in SNAPSHOT:
        importlib.import_module(name)


def machine_note() -> dict[str, Any]:
    """What the run ran on: CPU count and model, Python, load at start."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_at_start": load,
    }
