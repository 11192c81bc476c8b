"""Training configuration: one pydantic model per stage, and the pipeline that chains them.

    cfg = load_config("run.yaml", stage="sft")      # ConfigError naming every bad field

Whether a config can launch on this machine (GPU-only options on a CPU box, processes per core)
is core/train/launch_checks.py's.

The models are Qt- and torch-free: the CLI validates with them before anything is launched,
the studio builds its forms from them (every field has a default and a `description`), and the
training child (`python -m training`) reads the same frozen file back. Unknown keys are errors
(`extra="forbid"`) and every error names its field (`sft.learning_rate: ...`).

Batch sizes: `global_batch_size` is what one optimizer step sees across every process. It stays
fixed when the GPU count changes: gradient accumulation is computed as
`global_batch_size / (per_device_batch_size * processes)` and must divide exactly (see
`batch_plan`). Leave it unset to use `per_device_batch_size * processes *
gradient_accumulation_steps`.

GPU-only options (`use_vllm`, fp16, multi-GPU / FSDP2 / ZeRO-3, `device: cuda`) are rejected by
`check_launch` (core/train/launch_checks.py) on a machine without a GPU, with the field named.

Processes: one per GPU used; on the CPU `launch.num_processes` (default 1) processes run DDP
over gloo under accelerate launch (core/train/scaleout.py), at most one per core. FSDP2 and
ZeRO-3 need GPUs and more than one process (on CPU processes accelerate 1.16 silently trains
DDP instead, so they are refused there).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.yamlfile import YamlFileError, read_yaml_file

STAGES = ("sft", "opd", "rl")
Stage = Literal["sft", "opd", "rl"]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")


class ConfigError(ValueError):
    """A configuration that cannot run; `problems` are `(field, message)` pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{f}: {m}" if f else m for f, m in problems))

    def lines(self) -> list[str]:
        return [f"{f}: {m}" if f else m for f, m in self.problems]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


# ----------------------------------------------------------------------------- shared parts


class LoraSettings(_Model):
    r: int = Field(default=16, ge=1, le=1024, description="LoRA rank.")
    alpha: int = Field(default=32, ge=1, description="LoRA alpha (scaling = alpha / r).")
    dropout: float = Field(default=0.05, ge=0, lt=1, description="Dropout on the LoRA input.")
    target_modules: str | list[str] = Field(
        default="all-linear",
        description='Modules that get adapters: "all-linear" or a list of module names.',
    )


class LaunchSettings(_Model):
    """Where and how the stage runs; multi-node flags are passed to `accelerate launch`."""

    device: Literal["auto", "cpu", "cuda"] = Field(
        default="auto", description="auto: the GPUs when there are any, else the CPU."
    )
    num_gpus: int | None = Field(
        default=None,
        ge=0,
        description="GPUs per machine (None: every visible GPU; 0: CPU only).",
    )
    num_processes: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Training processes on this machine. None: one per GPU used, one on the CPU. On a "
            "machine without GPUs (or device cpu), 2 or more runs that many CPU processes "
            "under accelerate launch (DDP over gloo), the cores shared out between them; with "
            "GPUs it must equal the GPU count (one process per GPU)."
        ),
    )
    distributed: Literal["auto", "none", "multi_gpu", "fsdp2", "zero3"] = Field(
        default="auto",
        description=(
            "auto: none for one process, DDP for several (multi_gpu; on the CPU, over gloo); "
            "fsdp2 and zero3 shard the model across GPUs (accelerate configs are generated)."
        ),
    )
    num_machines: int = Field(default=1, ge=1, description="Machines in a multi-node run.")
    machine_rank: int = Field(default=0, ge=0, description="This machine's rank (0 = main).")
    main_process_ip: str | None = Field(
        default=None, description="Address of the rank-0 machine (multi-node only)."
    )
    main_process_port: int = Field(
        default=29500, ge=1, le=65535, description="Rendezvous port on the rank-0 machine."
    )

    @model_validator(mode="after")
    def _check_nodes(self) -> LaunchSettings:
        if self.machine_rank >= self.num_machines:
            raise ValueError(
                f"machine_rank {self.machine_rank} must be below num_machines {self.num_machines}"
            )
        if self.num_machines > 1 and not self.main_process_ip:
            raise ValueError(
                "main_process_ip is required for a multi-node run (num_machines > 1): the "
                "address of the machine with machine_rank 0, which every machine connects to"
            )
        return self


class StageBase(_Model):
    """Fields every stage shares: model, adapter method, optimisation, saving, launch."""

    model: str | None = Field(
        default=None,
        description=(
            "Base model: a registered model name (hat models list) or a Hugging Face folder. "
            "Set by the pipeline inside `hat train pipeline`."
        ),
    )
    adapter: str | None = Field(
        default=None,
        description=(
            "A LoRA adapter to continue training (registered name or folder); the pipeline "
            "sets it to the previous stage's output."
        ),
    )
    output_name: str | None = Field(
        default=None,
        description="Name the result is registered under (default: <stage>-<run id>).",
    )
    method: Literal["lora", "full"] = Field(
        default="lora", description="lora: train an adapter; full: train every weight."
    )
    lora: LoraSettings = Field(default_factory=LoraSettings)
    merge: bool = Field(
        default=False, description="Also save (and register) the model with the adapter merged."
    )
    max_steps: int | None = Field(
        default=None, ge=1, description="Optimizer steps (overrides epochs when set)."
    )
    epochs: float = Field(default=1.0, gt=0, description="Passes over the data.")
    per_device_batch_size: int = Field(default=4, ge=1, description="Rows per device per step.")
    global_batch_size: int | None = Field(
        default=None,
        ge=1,
        description=(
            "Rows per optimizer step over every process; gradient accumulation is computed so "
            "it stays the same when the GPU count changes."
        ),
    )
    gradient_accumulation_steps: int = Field(
        default=1, ge=1, description="Used only when global_batch_size is not set."
    )
    learning_rate: float = Field(default=2e-4, gt=0, description="Peak learning rate.")
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup"] = Field(
        default="cosine", description="Learning-rate schedule."
    )
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1, description="Warm-up share of steps.")
    weight_decay: float = Field(default=0.0, ge=0, description="AdamW weight decay.")
    max_grad_norm: float = Field(default=1.0, gt=0, description="Gradient clipping norm.")
    seed: int = Field(default=0, ge=0, description="Seed for data order and initialisation.")
    logging_steps: int = Field(default=1, ge=1, description="Steps between metric events.")
    save_steps: int = Field(default=50, ge=1, description="Steps between checkpoints.")
    save_total_limit: int | None = Field(
        default=2, ge=1, description="Checkpoints kept (older ones are deleted)."
    )
    precision: Literal["auto", "fp32", "bf16", "fp16"] = Field(
        default="auto",
        description=(
            "auto: bf16 on GPUs that support it and on CPUs with native bf16 (AMX / "
            "AVX512-BF16), else fp32. fp16 needs a GPU."
        ),
    )
    gradient_checkpointing: bool = Field(
        default=False, description="Recompute activations in backward (less memory, slower)."
    )
    launch: LaunchSettings = Field(default_factory=LaunchSettings)

    @model_validator(mode="after")
    def _check_names(self) -> StageBase:
        if self.output_name is not None and not NAME_RE.match(self.output_name):
            raise ValueError(
                f"output_name {self.output_name!r} must be letters, digits, '.', '_' or '-'"
            )
        if self.adapter is not None and self.method == "full":
            raise ValueError("adapter is only for method 'lora' (a full fine-tune has no adapter)")
        return self


SystemPrompt = Literal["full", "compact"]
_SYSTEM_PROMPT_HELP = (
    "full: the harness's rendered system prompt, as served. compact: a short prompt (persona "
    "line, tool and skill names) for CPU experiments only; it is not what the server shows."
)


class SftConfig(StageBase):
    """Stage 1, HSA-SFT: SFTTrainer on teacher trajectories (original + K harness variants)."""

    stage: Literal["sft"] = "sft"
    data: Annotated[list[str], Field(min_length=1)] = Field(
        default_factory=lambda: ["data/sft.jsonl"],
        description="JSONL files written by `hat data generate` (rows with messages).",
    )
    max_length: int = Field(
        default=2048, ge=16, description="Tokens per row; longer rows are cut at the end."
    )
    loss_on: Literal["assistant", "all"] = Field(
        default="assistant", description="assistant: loss on assistant turns only."
    )
    system_prompt: SystemPrompt = Field(default="full", description=_SYSTEM_PROMPT_HELP)
    max_rows: int | None = Field(default=None, ge=1, description="Use only the first N rows.")
    packing: bool = Field(default=False, description="Pack rows into max_length blocks.")
    lm_head_loss: Literal["sliced", "trl"] = Field(
        default="trl",
        description="sliced: only the trained (assistant) positions go through the LM head, "
        "1.5x the tokens/s of TRL's head on a 2-core CPU (one process; runs of several "
        "processes use TRL's head); trl: TRL's fused head, every position in tiles "
        "(memory-lean on a GPU with Triton; logs entropy).",
    )
    compile: bool = Field(
        default=False,
        description="Compile the model's decoder with torch.compile (dynamic shapes): about 2x "
        "the tokens/s on a 2-core CPU after a one-time compile (~4.5 min there, ~1.5 min when "
        "the compiler's cache has it); where compiling fails the model runs uncompiled.",
    )
    balance_categories: bool = Field(
        default=False,
        description="Repeat rows of smaller categories until every category has as many rows "
        "as the largest (a minority category and its reply skill stay in the batches).",
    )
    balance_skills: bool = Field(
        default=False,
        description="Repeat rows of the reply skills that serve fewer tasks (grouped by the "
        "skill a task loads under the original harness) until every reply skill has as many "
        "rows as the most used one.",
    )
    original_weight: int = Field(
        default=1,
        ge=1,
        le=16,
        description="Each original-harness row (variant 0) counts this many times, so the "
        "deployed harness keeps its share however many variants each task has.",
    )


class OpdConfig(StageBase):
    """Stage 2, general on-policy distillation: DistillationTrainer, reverse KL to a teacher."""

    stage: Literal["opd"] = "opd"
    learning_rate: float = Field(default=5e-5, gt=0, description="Peak learning rate.")
    teacher: str | None = Field(
        default=None,
        description=(
            "Teacher model (registered name or folder): the pre-SFT base model. The pipeline "
            "sets it to its base model."
        ),
    )
    prompts: str = Field(
        default="bank",
        description=(
            "bank: the bundled general-instruction prompt bank; a JSONL file (prompt or "
            "messages per row); tulu3: allenai/tulu-3-sft-mixture, from the local datasets "
            "cache only."
        ),
    )
    max_prompts: int | None = Field(default=None, ge=1, description="Use at most N prompts.")
    max_completion_length: int = Field(
        default=256, ge=1, description="Tokens the student samples per prompt."
    )
    temperature: float = Field(default=1.0, gt=0, description="Sampling temperature.")
    beta: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="Divergence: 1 = reverse KL (the recipe), 0 = forward KL, 0.5 = JSD.",
    )
    use_vllm: bool = Field(
        default=False, description="Sample with vLLM (GPU only; vLLM in the same environment)."
    )


class RewardWeights(_Model):
    accuracy: float = Field(default=1.0, ge=0, description="Binary accuracy grader.")
    effectiveness: float = Field(default=1.0, ge=0, description="0 / 0.5 / 1 effectiveness.")
    tool_rationality: float = Field(default=0.5, ge=0, description="BFCL-style tool use.")
    skill_selection: float = Field(default=0.5, ge=0, description="Right skills loaded.")
    length: float = Field(default=0.2, ge=0, description="Penalty for outputs over the budget.")

    def as_list(self) -> list[float]:
        return [self.accuracy, self.effectiveness, self.tool_rationality, self.skill_selection,
                self.length]  # fmt: skip


REWARD_COMPONENTS = ("accuracy", "effectiveness", "tool_rationality", "skill_selection", "length")


class RlConfig(StageBase):
    """Stage 3, HSA-RL: GRPOTrainer in a world (the simulated live room, or a task file with the
    harness's own tools), a fresh harness variant per group."""

    stage: Literal["rl"] = "rl"
    learning_rate: float = Field(default=1e-5, gt=0, description="Peak learning rate.")
    tasks: str = Field(
        default="train",
        description="Tasks: train | dev | a suite name | live-room tasks (JSONL) | a task "
        "file (its train split, played with the harness's own tools).",
    )
    per_category: int | None = Field(
        default=4, ge=1, description="Tasks per category when tasks is a split."
    )
    task_seed: int = Field(default=0, ge=0, description="Seed of the task generator.")
    harness: str | None = Field(
        default=None, description="Harness folder or stored version (default: the demo)."
    )
    sampler: str = Field(
        default="hsa", description="Harness-variant sampler (one fresh variant per group)."
    )
    turn: Literal["any", "first", "final"] = Field(
        default="any",
        description=(
            "Which turn of the gold trajectory the model writes: any (a seeded pick per "
            "group), the first, or the final reply."
        ),
    )
    groups: int | None = Field(
        default=None, ge=1, description="Prompt groups to build (default: enough for the run)."
    )
    num_generations: int = Field(default=4, ge=2, description="Completions per prompt group.")
    max_completion_length: int = Field(default=256, ge=1, description="Tokens per completion.")
    temperature: float = Field(default=1.0, gt=0, description="Sampling temperature.")
    beta: float = Field(default=0.0, ge=0, description="KL penalty against the start model.")
    fault_rate: float = Field(
        default=0.1, ge=0, le=1, description="Per tool call fault probability (five kinds)."
    )
    reward_weights: RewardWeights = Field(default_factory=RewardWeights)
    multi_objective_aggregation: Literal["normalize_then_sum", "sum_then_normalize"] = Field(
        default="normalize_then_sum",
        description="How the reward components combine: normalize_then_sum normalises each "
        "within its group before the weighted sum (GDPO-style, the HAT report's choice: a "
        "component that barely varies is not drowned by one that varies a lot); "
        "sum_then_normalize is GRPO's sum, then one normalisation.",
    )
    importance_sampling_level: Literal["sequence", "token"] = Field(
        default="sequence",
        description="Importance ratios per sequence (GSPO, the HAT report's choice: the rewards "
        "grade whole turns) or per token (GRPO). Only matters once training is off-policy "
        "(several optimizer steps per generation).",
    )
    length_budget: int = Field(
        default=128, ge=1, description="Completion tokens before the length penalty starts."
    )
    system_prompt: SystemPrompt = Field(default="full", description=_SYSTEM_PROMPT_HELP)
    use_vllm: bool = Field(
        default=False,
        description=(
            "Generate with vLLM (GPU only; vLLM in the training environment). colocate shares "
            "the training GPUs; server talks to a `trl vllm-serve` process."
        ),
    )
    vllm_mode: Literal["colocate", "server"] = Field(default="colocate")


StageConfig = SftConfig | OpdConfig | RlConfig
STAGE_MODELS: dict[str, type[StageBase]] = {"sft": SftConfig, "opd": OpdConfig, "rl": RlConfig}


class PipelineConfig(_Model):
    """SFT -> OPD -> RL; each stage starts from the previous stage's adapter."""

    model: str = Field(description="The base model every stage builds on (and OPD's teacher).")
    name: str | None = Field(default=None, description="Prefix of the registered outputs.")
    sft: SftConfig | None = Field(default=None, description="Stage 1 (omit to skip).")
    opd: OpdConfig | None = Field(default=None, description="Stage 2 (omit to skip).")
    rl: RlConfig | None = Field(default=None, description="Stage 3 (omit to skip).")

    @model_validator(mode="after")
    def _check(self) -> PipelineConfig:
        if self.sft is None and self.opd is None and self.rl is None:
            raise ValueError("a pipeline needs at least one stage (sft, opd or rl)")
        for stage in self.stages():
            if stage.model is not None or stage.adapter is not None:
                raise ValueError(
                    f"{stage.stage}.model / {stage.stage}.adapter are set by the pipeline "
                    "(use the pipeline's model)"
                )
        if self.name is not None and not NAME_RE.match(self.name):
            raise ValueError(f"name {self.name!r} must be letters, digits, '.', '_' or '-'")
        return self

    def stages(self) -> list[StageConfig]:
        return [s for s in (self.sft, self.opd, self.rl) if s is not None]


# ----------------------------------------------------------------------------- loading


def _known_fields(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """Field names of the sub-model at `loc` (for 'did you mean' hints)."""
    current: Any = model
    for part in loc[:-1]:
        if not isinstance(current, type) or not issubclass(current, BaseModel):
            return []
        info = current.model_fields.get(str(part))
        if info is None:
            return []
        annotation = info.annotation
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        current = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None
        )
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def problems_from(
    exc: ValidationError, model: type[BaseModel], prefix: str
) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        where = ".".join([prefix, *map(str, loc)] if prefix else map(str, loc))
        if error["type"] == "extra_forbidden":
            known = _known_fields(model, loc)
            hint = difflib.get_close_matches(str(loc[-1]), known, n=1)
            message = "unknown key" + (f" (did you mean {hint[0]!r}?)" if hint else "")
        elif error["type"] == "missing":
            message = "required"
        else:
            message = str(error["msg"]).removeprefix("Value error, ")
        out.append((where or prefix, message))
    return out


def parse_stage(data: Any, stage: str, *, prefix: str | None = None) -> StageConfig:
    """A stage config from parsed YAML/JSON; ConfigError names every bad field."""
    if stage not in STAGE_MODELS:
        raise ConfigError([("stage", f"unknown stage {stage!r} (one of {', '.join(STAGES)})")])
    where = stage if prefix is None else prefix
    if not isinstance(data, dict):
        raise ConfigError([(where, "must be a mapping of settings")])
    declared = data.get("stage", stage)
    if declared != stage:
        raise ConfigError(
            [(f"{where}.stage", f"this file is a {declared!r} config, not {stage!r}")]
        )
    model = STAGE_MODELS[stage]
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problems_from(exc, model, where)) from None
    assert isinstance(parsed, SftConfig | OpdConfig | RlConfig)
    return parsed


def parse_pipeline(data: Any) -> PipelineConfig:
    if not isinstance(data, dict):
        raise ConfigError([("pipeline", "must be a mapping of settings")])
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problems_from(exc, PipelineConfig, "pipeline")) from None


def read_yaml(path: str | Path) -> Any:
    try:
        return read_yaml_file(path) or {}
    except YamlFileError as exc:
        raise ConfigError([("config", str(exc))]) from None


def load_config(path: str | Path, stage: str) -> StageConfig:
    return parse_stage(read_yaml(path), stage)


def load_pipeline(path: str | Path) -> PipelineConfig:
    return parse_pipeline(read_yaml(path))


def dump_config(config: BaseModel) -> str:
    """The canonical YAML of a config (every field, defaults included): the frozen copy."""
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def config_schema(stage: str) -> dict[str, Any]:
    """JSON Schema of a stage (or "pipeline") config: what the studio builds forms from."""
    model: type[BaseModel] = PipelineConfig if stage == "pipeline" else STAGE_MODELS[stage]
    return model.model_json_schema()


def resolved_stages(config: PipelineConfig) -> list[StageConfig]:
    """The pipeline's stages with model (and OPD's teacher) filled in; adapters are chained at
    run time (each stage's `adapter` is the previous stage's output)."""
    out: list[StageConfig] = []
    for stage in config.stages():
        update: dict[str, Any] = {"model": config.model}
        if isinstance(stage, OpdConfig) and stage.teacher is None:
            update["teacher"] = config.model
        if out:
            update["adapter"] = "<previous stage>"
        out.append(stage.model_copy(update=update))
    return out
