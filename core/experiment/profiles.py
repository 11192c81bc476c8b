"""Replication profiles: how big a `hat experiment replicate` run is, in one YAML file each.

    profile = load_profile("cpu")              # resources/experiment/profiles/cpu.yaml
    profile = load_profile("my-profile.yaml")  # or any file with the same fields

A profile names the student model, the harness mode, the data to build, the two training
recipes and the evaluation sizes. Unknown keys are errors naming their field (the stage
sections are the training configs' own models, core/train/config.py, so they are checked by
the same rules as `hat train`).

**Worlds.** `world: live-room` (the default) replicates in the demo's simulated live room:
generated tasks, the demo harness (its `lite` / `focus` / `full` cut) and the edited demo
harness. `world: task-file` replicates on an operator's own harness (DESIGN §2, "Worlds"):
`harness_folder` (its python:/mcp: tools are trusted: the profile names the code to run),
`task_file` (its train split is the data and RL tasks, its test split the evaluation) and
`edited_harness_folder` (the same harness after an edit, for the harness-edit test). Relative
paths are read from the current folder, else from the project root; the profile keeps them
absolute, so a run resumes from anywhere.

**Matched step budgets.** The fixed-harness SFT model gets exactly as many optimizer steps as
the HAT model's three stages together: `fixed_sft.max_steps = hat.sft.max_steps +
hat.opd.max_steps + hat.rl.max_steps` (set here, never in the file), with the same batch,
learning rate and LoRA settings as HAT's SFT stage. Steps, not tokens or FLOPs: OPD and RL
steps cost more wall time than SFT steps (sampling), so HAT gets more compute per step; the
report lists each stage's wall time so the difference is visible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.sim.models import TaskCategory
from core.train.config import ConfigError, OpdConfig, RlConfig, SftConfig, problems_from
from core.yamlfile import YamlFileError, read_yaml_file

PROFILES = ("ci", "cpu", "cpu-shared", "gpu", "order-desk-ci", "order-desk")

World = Literal["live-room", "task-file"]
TASK_FILE_FIELDS = ("harness_folder", "task_file", "edited_harness_folder")
"""The task-file world's settings (module doc, "Worlds")."""


StageSuite = Literal["ls-qa", "hv-qa", "ifeval"]
STAGE_SUITES: tuple[StageSuite, ...] = ("ls-qa", "hv-qa", "ifeval")
"""The suites `eval.stages` may evaluate HAT's stage adapters on (EvalSettings)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataSettings(_Model):
    per_category: int = Field(
        default=4,
        ge=1,
        description="Train-split tasks per category (a task file: at most this many of each "
        "of its categories, drawn with `seed`).",
    )
    hat_variants: int = Field(
        default=3,
        ge=1,
        description="K: `train`-bank HSA variants per task for HAT (besides the original).",
    )
    sampler: str = Field(default="hsa", description="Variant sampler for HAT rows (train bank).")
    seed: int = Field(default=0, ge=0, description="Task and variant seed.")


class HatStages(_Model):
    sft: SftConfig
    opd: OpdConfig
    rl: RlConfig

    @model_validator(mode="after")
    def _steps(self) -> HatStages:
        for stage in (self.sft, self.opd, self.rl):
            if stage.max_steps is None:
                raise ValueError(
                    f"hat.{stage.stage}.max_steps is required (budgets are matched in steps)"
                )
        return self

    @property
    def total_steps(self) -> int:
        return sum(int(s.max_steps or 0) for s in (self.sft, self.opd, self.rl))


class EvalSettings(_Model):
    ls_qa: int = Field(default=8, ge=1, description="LS-QA test tasks (stratified by category).")
    hv_qa: int = Field(default=8, ge=1, description="HV-QA test tasks.")
    hv_variants: int = Field(default=1, ge=1, description="HV-QA heldout variants per task.")
    ifeval: int = Field(default=8, ge=1, description="IFEval prompts (the first N).")
    edit: int = Field(default=8, ge=1, description="LS-QA tasks run under the edited harness.")
    max_tokens: int = Field(default=128, ge=8, description="Tokens per model call.")
    call_timeout_s: float = Field(default=300.0, gt=0)
    item_timeout_s: float = Field(default=900.0, gt=0)
    concurrency: int = Field(
        default=16,
        ge=1,
        description="Items in flight at once on the one server of a model (batched decoding: "
        "on a CPU a batch of 16 costs little more than one sequence).",
    )
    dtype: str | None = Field(
        default="float32", description="Serving dtype (float32 on CPU; None: the engine's choice)."
    )
    stages: bool = Field(
        default=False,
        description="Also evaluate HAT's kept stage adapters (after HSA-SFT, after OPD) on "
        "`stage_suites`, the same items as the HAT model (the `eval-stages` step; after RL is "
        "the HAT model itself), so the report says what each stage added.",
    )
    stage_suites: list[StageSuite] = Field(
        default_factory=lambda: list(STAGE_SUITES),
        description="The suites `stages` evaluates each stage adapter on.",
    )
    engine: Literal["transformers", "vllm"] = Field(
        default="vllm",
        description="vllm (prefix caching, batching; the default) or transformers serve. "
        "Without a vLLM environment the run falls back to transformers serve, and says so.",
    )


class Profile(_Model):
    name: str
    description: str = ""
    world: World = Field(
        default="live-room",
        description="live-room: the demo's simulated live room; task-file: an operator's "
        "harness and task file (`harness_folder`, `task_file`, `edited_harness_folder`).",
    )
    harness_folder: str | None = Field(
        default=None,
        description="task-file world: the operator's harness folder (imported with trust).",
    )
    task_file: str | None = Field(
        default=None,
        description="task-file world: the task file (JSONL, docs/task-files.md): its train "
        "split builds the data and RL tasks, its test split is evaluated.",
    )
    edited_harness_folder: str | None = Field(
        default=None,
        description="task-file world: the harness folder after an edit (the harness-edit "
        "test; imported with trust).",
    )
    model: str = Field(
        default="smollm2-135m-instruct",
        description="Registered base model; the demo model is added when it is missing.",
    )
    harness: Literal["lite", "focus", "full"] = Field(
        default="lite",
        description="Live room only. lite: the short-text copy of the demo harness "
        "(core/experiment/lite.py); focus: lite with only the skills and tools `categories` "
        "can use; full: the demo harness as shipped.",
    )
    categories: list[TaskCategory] | None = Field(
        default=None,
        description="Live room only: task categories trained and evaluated (None: all). "
        "Data, RL tasks and every agent suite use only these.",
    )
    max_turns: int | None = Field(
        default=5, ge=1, description="Live room, lite and focus: model calls per request."
    )
    edited_harness: str = Field(
        default="live-host-edited",
        description="Live room: the edited harness, a folder under resources/experiment/ or "
        "a path.",
    )
    data: DataSettings = Field(default_factory=DataSettings)
    parallel_training: bool = Field(
        default=False,
        description="Run the fixed SFT child while the HAT stages run (two training "
        "processes at once; worth it on a CPU shared with other work, where each process "
        "gets its own share).",
    )
    hat: HatStages
    eval: EvalSettings = Field(default_factory=EvalSettings)

    @model_validator(mode="after")
    def _focus(self) -> Profile:
        if self.world == "task-file":
            return self
        if self.harness == "focus" and not self.categories:
            raise ValueError("harness 'focus' needs `categories` (the skills and tools it keeps)")
        return self

    @model_validator(mode="after")
    def _world(self) -> Profile:
        problems = world_problems(self)
        if problems:
            raise FieldProblems(problems)
        return self

    def with_seed(self, seed: int) -> Profile:
        """The same profile under another seed: the training tasks and their HSA variants,
        the RL tasks, and each stage's data order and LoRA initialisation. The evaluation
        items are not seeded here (every run evaluates the same test tasks), so two seeds'
        reports compare the models on the same items."""
        hat = self.hat.model_copy(
            update={
                "sft": self.hat.sft.model_copy(update={"seed": seed}),
                "opd": self.hat.opd.model_copy(update={"seed": seed}),
                "rl": self.hat.rl.model_copy(update={"seed": seed, "task_seed": seed}),
            }
        )
        data = self.data.model_copy(update={"seed": seed})
        return self.model_copy(update={"data": data, "hat": hat})

    @property
    def seed(self) -> int:
        """The run's seed as `with_seed` sets it (the data seed; stages follow it)."""
        return self.data.seed

    def fixed_sft(self) -> SftConfig:
        """HAT's SFT settings with HAT's total step count (module doc: matched budgets), on
        its rows as they are: the reweighting options exist for HSA's K-variant data (a
        renamed skill's slivers, the original harness's share), and fixed-harness SFT stays
        the plain baseline the method is compared with."""
        return self.hat.sft.model_copy(
            update={
                "max_steps": self.hat.total_steps,
                "merge": True,
                "balance_categories": False,
                "balance_skills": False,
                "original_weight": 1,
            }
        )


class FieldProblems(ValueError):
    """Problems of several fields at once, each (field, message): parse_profile names each
    field in its own line of the ConfigError."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{f}: {m}" for f, m in problems))
        self.problems = problems


def world_problems(profile: Profile) -> list[tuple[str, str]]:
    """(field, message) for each world setting that is missing, misplaced or names nothing;
    the task-file world's paths are made absolute on the way (module doc, "Worlds")."""
    given = [f for f in TASK_FILE_FIELDS if getattr(profile, f) is not None]
    if profile.world == "live-room":
        where = "only for `world: task-file` (this profile's world is live-room)"
        return [(f, where) for f in given]
    problems = [(f, "required in `world: task-file`") for f in TASK_FILE_FIELDS if f not in given]
    if profile.categories is not None:
        problems.append(
            ("categories", "the live room's task categories; a task-file world trains and "
             "evaluates every category of its file (leave it unset)")
        )  # fmt: skip
    for name in given:
        value = str(getattr(profile, name))
        path = resolve_path(value)
        want = "file" if name == "task_file" else "folder"
        if not (path.is_file() if want == "file" else path.is_dir()):
            problems.append((name, f"{value}: no such {want}"))
        else:
            setattr(profile, name, str(path))
    return problems


def project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def resolve_path(value: str) -> Path:
    """A profile's path: absolute, else from the current folder, else from the project root
    (the bundled profiles name resources/... that way)."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    here = Path.cwd() / path
    if here.exists():
        return here.resolve()
    return (project_root() / path).resolve()


def profiles_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "resources" / "experiment" / "profiles"


def profile_path(ref: str) -> Path:
    """A bundled profile's file, or `ref` itself when it is a file."""
    path = Path(ref).expanduser()
    if path.is_file():
        return path
    bundled = profiles_dir() / f"{ref}.yaml"
    if bundled.is_file():
        return bundled
    known = ", ".join(sorted(p.stem for p in profiles_dir().glob("*.yaml")))
    raise ConfigError([("profile", f"{ref!r} is neither a profile ({known}) nor a file")])


def parse_profile(data: Any, *, where: str = "profile") -> Profile:
    if not isinstance(data, dict):
        raise ConfigError([(where, "must be a mapping of settings")])
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        problems: list[tuple[str, str]] = []
        for error, problem in zip(exc.errors(), problems_from(exc, Profile, where), strict=True):
            found = (error.get("ctx") or {}).get("error")
            if isinstance(found, FieldProblems):
                problems += [(f"{where}.{field}", message) for field, message in found.problems]
            else:
                problems.append(problem)
        raise ConfigError(problems) from None


def load_profile(ref: str) -> Profile:
    path = profile_path(ref)
    try:
        data = read_yaml_file(path)
    except YamlFileError as exc:
        raise ConfigError([("profile", str(exc))]) from None
    return parse_profile(data, where=path.name)


def edited_harness_path(profile: Profile) -> Path:
    path = Path(profile.edited_harness).expanduser()
    if path.is_dir():
        return path
    return profiles_dir().parent / profile.edited_harness
