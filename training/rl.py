"""Stage 3, HSA-RL: TRL `GRPOTrainer` in a world: the simulated live room, or the operator's
own harness and task file (`tasks` names a task file: its train split, the harness's own
tools, the task file's graders).

Prompt groups and rewards come from core/train/rl_env.py (torch-free; its docstring is the
reward design): each group is one task under a fresh harness variant (the configured HSA
sampler), at one turn of the gold trajectory, with fault injection on in the live room. Five reward
functions, one per component (accuracy, effectiveness, tool_rationality, skill_selection,
length), share one cache so each completion runs through the agent loop and the graders once;
GRPO logs each as `rewards/<name>/mean` and combines them with `reward_weights`.

`use_vllm` (GPU only; `check_launch` rejects it on CPU) passes TRL's vLLM generation through:
`colocate` shares the training GPUs, `server` talks to a separate `trl vllm-serve` process.
"""

from __future__ import annotations

from typing import Any

from core.harness.models import Harness
from core.train.config import REWARD_COMPONENTS, RlConfig
from core.train.data import DataError
from training.common import StageContext, make_callback, resolve_device, student, trainer_kwargs


def load_tasks(config: RlConfig) -> list[Any]:
    """The stage's tasks through the one task-source resolver: live-room tasks, or a task
    file's train split (played in the harness's own world)."""
    from core.taskfile.sources import TaskSourceError, load_source

    try:
        return load_source(config.tasks, seed=config.task_seed, per_category=config.per_category)
    except TaskSourceError as exc:
        raise DataError(f"cannot read the tasks {config.tasks}: {exc}") from None


def load_harness(ref: str | None) -> tuple[Harness, str]:
    """The stage's harness by the one rule (core/store/harness_ref.py): a folder, a stored
    ref, or live-host@production / @head / the bundled demo when none is given."""
    from core.store import Store
    from core.store.harness_ref import resolve_harness

    with Store.open() as store:
        harness, version = resolve_harness(store, ref)
    return harness, version or (ref if ref is not None else "demo")


def groups_needed(config: RlConfig, batch: int, tasks: int) -> int:
    if config.groups is not None:
        return config.groups
    if config.max_steps is not None:
        return max(1, config.max_steps * batch // config.num_generations)
    return tasks


def run(config: RlConfig, ctx: StageContext) -> str:
    from core.sim.catalog import load_catalog
    from core.taskfile.sources import source_is_task_file
    from core.train.rl_env import RlEnvironment

    tasks = load_tasks(config)
    if not tasks:
        raise DataError(f"zero tasks in {config.tasks}")
    harness, harness_id = load_harness(config.harness)
    env = RlEnvironment(
        harness,
        load_catalog(),
        tasks,
        sampler=config.sampler,
        fault_rate=config.fault_rate,
        system_prompt=config.system_prompt,
        turn=config.turn,
        seed=config.seed,
        length_budget=config.length_budget,
        task_file=source_is_task_file(config.tasks),
    )
    try:
        return _train(config, ctx, env, tasks, harness_id)
    finally:
        env.close()


def _train(config: RlConfig, ctx: StageContext, env: Any, tasks: list[Any], harness_id: str) -> str:
    from core.train.rl_env import RewardCache, reward_functions

    device = resolve_device(config)
    from training.common import accumulation

    batch = config.per_device_batch_size * device.world_size * accumulation(config, device)
    prompts, dropped = env.build_prompts(groups_needed(config, batch, len(tasks)))
    if not prompts:
        raise DataError(f"zero usable prompt groups ({dropped})")
    ctx.info(
        groups=len(prompts),
        groups_dropped=dropped,
        tasks=len(tasks),
        sampler=config.sampler,
        fault_rate=config.fault_rate,
        harness=harness_id,
        reward_components=list(REWARD_COMPONENTS),
    )

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from training.common import load_tokenizer

    assert config.model is not None
    tokenizer = load_tokenizer(config.model, padding_side="left")
    model, peft_config = student(config, device)
    ctx.info(device=device.kind, precision=device.precision, notes=device.notes)
    dataset = Dataset.from_list([p.row() for p in prompts])
    cache = RewardCache(env)
    extra: dict[str, Any] = {}
    if config.use_vllm:
        extra = {"use_vllm": True, "vllm_mode": config.vllm_mode}
    args = GRPOConfig(
        **trainer_kwargs(config, device, ctx.run_dir),
        num_generations=config.num_generations,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        beta=config.beta,
        reward_weights=config.reward_weights.as_list(),
        multi_objective_aggregation=config.multi_objective_aggregation,
        importance_sampling_level=config.importance_sampling_level,
        remove_unused_columns=False,
        **extra,
    )
    callback = make_callback(ctx.writer, ctx.run_dir, resume=ctx.resume)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward_functions(cache),
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[callback],
    )
    outcome = ctx.train(trainer, callback)
    ctx.info(completions_scored=cache.scored)
    ctx.save(trainer, config, tokenizer, outcome)
    return outcome
