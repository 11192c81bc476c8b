"""The HAT pipeline: SFT -> OPD -> RL, each stage starting from the previous stage's output.

    run = run_pipeline(store, load_pipeline("pipeline.yaml"), detect_environment())

The pipeline is a run of its own (stage `pipeline`, its frozen config in the store); each
stage is a child run (`parent` = the pipeline) launched and watched in turn by this process:

- every stage's `model` is the pipeline's base model; OPD's `teacher` defaults to it too
  (the pre-SFT base, as the recipe asks);
- a LoRA stage continues the previous stage's adapter (`adapter` = its folder), so the last
  adapter holds all three stages and its base is still the registered base model; after a
  full fine-tune the next stage starts from the saved model folder instead;
- outputs are registered per stage as `<name>-<stage>` (name defaults to the pipeline run id).

A stage that does not end `done` ends the pipeline as failed (stopped, cancelled) with that
stage's reason; later stages are not started and earlier stages' outputs stay as they are.
`resume_pipeline` resumes the stage that ended early from its checkpoint and then runs the
remaining stages.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from core.paths import runs_dir
from core.store import Store
from core.store.training import RunRecord, add_run, get_run, list_runs, update_run
from core.store.types import utcnow
from core.train.config import (
    ConfigError,
    OpdConfig,
    PipelineConfig,
    StageConfig,
    dump_config,
    parse_pipeline,
)
from core.train.launch_checks import Environment, check_pipeline
from core.train.runs import (
    EventCallback,
    RunError,
    code_revision,
    new_run_id,
    prepare,
    refresh,
    resume,
    start,
    watch,
)

PIPELINE_LOG = "pipeline.log"
"""The orchestrator's output in the pipeline's run folder (core/train/orchestrate.py)."""


def stage_for(
    config: PipelineConfig, stage: StageConfig, previous: RunRecord | None, pipeline_id: str
) -> StageConfig:
    """The stage's config inside the pipeline: model, adapter (or model), teacher, name."""
    update: dict[str, Any] = {"model": config.model}
    if isinstance(stage, OpdConfig) and stage.teacher is None:
        update["teacher"] = config.model
    if previous is not None:
        outputs = previous.outputs
        if outputs.get("model"):
            update["model"] = outputs["model"]
        elif outputs.get("adapter") and stage.method == "lora":
            update["adapter"] = outputs["adapter"]
        elif outputs.get("adapter"):
            # A full fine-tune after a LoRA stage starts from the merged model.
            if not outputs.get("merged"):
                raise ConfigError(
                    [(f"pipeline.{stage.stage}.method",
                      "a full fine-tune after a LoRA stage needs that stage's merge: true")]
                )  # fmt: skip
            update["model"] = outputs["merged"]
    if stage.output_name is None:
        update["output_name"] = f"{config.name or pipeline_id}-{stage.stage}"
    return stage.model_copy(update=update)


def start_pipeline(store: Store, config: PipelineConfig, env: Environment) -> RunRecord:
    """Validate the whole pipeline and create its run (stages are created as they start)."""
    problems = check_pipeline(config, env)
    if problems:
        raise ConfigError([("", p) for p in problems])
    run_id = new_run_id("pipeline")
    run_dir = runs_dir(store.home) / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    text = dump_config(config)
    (run_dir / "config.yaml").write_text(text, encoding="utf-8")
    record = RunRecord(
        id=run_id,
        stage="pipeline",
        status="created",
        config=text,
        run_dir=str(run_dir),
        code_revision=code_revision(),
        outputs={"base_model": config.model, "stages": []},
    )
    return add_run(store, record)


def run_pipeline(
    store: Store,
    config: PipelineConfig,
    env: Environment,
    *,
    on_event: EventCallback | None = None,
    on_stage: Any = None,
    python: str | None = None,
) -> RunRecord:
    """Create the pipeline run and run its stages in the foreground (module doc)."""
    pipeline = start_pipeline(store, config, env)
    return continue_pipeline(
        store, pipeline.id, env, on_event=on_event, on_stage=on_stage, python=python
    )


def continue_pipeline(
    store: Store,
    pipeline_id: str,
    env: Environment,
    *,
    on_event: EventCallback | None = None,
    on_stage: Any = None,
    python: str | None = None,
) -> RunRecord:
    """Run the pipeline's stages that are not done yet, in order."""
    pipeline = get_run(store, pipeline_id)
    config = parse_pipeline(_yaml(pipeline.config))
    update_run(
        store, pipeline.id, status="running", pid=os.getpid(), reason=None, ended_at=None,
        started_at=pipeline.started_at or utcnow(),
    )  # fmt: skip
    done = {r.stage: r for r in list_runs(store, parent=pipeline.id) if r.status == "done"}
    previous: RunRecord | None = None
    stage_ids: list[str] = list(pipeline.outputs.get("stages") or [])
    for stage in config.stages():
        if stage.stage in done:
            previous = done[stage.stage]
            continue
        existing = [r for r in list_runs(store, parent=pipeline.id) if r.stage == stage.stage]
        proc = None
        if existing and existing[-1].status in ("failed", "stopped", "cancelled"):
            run = existing[-1]
            try:
                proc = resume(store, run.id)
            except RunError:
                proc = None  # nothing to resume from: the stage starts afresh below
            else:
                if on_stage is not None:
                    on_stage(run, "resume")
        if proc is None:
            try:
                stage_config = stage_for(config, stage, previous, pipeline.id)
                run = prepare(store, stage_config, env, parent=pipeline.id, python=python)
            except ConfigError as exc:
                return update_run(
                    store, pipeline.id, status="failed", ended_at=utcnow(),
                    reason=f"stage {stage.stage} could not start: {exc}",
                )  # fmt: skip
            stage_ids.append(run.id)
            update_run(store, pipeline.id, outputs={**pipeline.outputs, "stages": stage_ids})
            if on_stage is not None:
                on_stage(run, "start")
            proc = start(store, run.id)
        run = watch(store, run.id, proc, on_event=on_event)
        if run.status != "done":
            status = run.status if run.status in ("stopped", "cancelled") else "failed"
            return update_run(
                store, pipeline.id, status=status, ended_at=utcnow(),
                reason=f"stage {stage.stage} ({run.id}) {run.status}: {run.reason or ''}".strip(),
            )  # fmt: skip
        previous = run
    pipeline = get_run(store, pipeline.id)
    final = previous.outputs if previous is not None else {}
    outputs = {**pipeline.outputs, "stages": stage_ids, "final": final}
    return update_run(store, pipeline.id, status="done", ended_at=utcnow(), outputs=outputs)


def resume_pipeline(store: Store, pipeline_id: str, env: Environment, **kwargs: Any) -> RunRecord:
    pipeline = refresh(store, pipeline_id)
    if pipeline.stage != "pipeline":
        raise RunError(f"{pipeline.id} is not a pipeline run")
    if pipeline.status in ("running", "done"):
        raise RunError(f"pipeline {pipeline.id} is {pipeline.status}")
    return continue_pipeline(store, pipeline.id, env, **kwargs)


def _yaml(text: str) -> Any:
    return yaml.safe_load(text)


def pipeline_dir(run: RunRecord) -> Path:
    return Path(run.run_dir)
