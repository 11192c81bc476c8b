"""Teacher data generation (HSA-SFT stage 1): run a teacher through the agent loop on simulator
tasks under harness variants, grade, filter, prune hook retries and write JSONL rows."""

from core.datagen.generate import (
    GenerateConfig,
    GenerateSummary,
    JobResult,
    Teacher,
    done_keys,
    generate,
    job_key,
    run_job,
)
from core.datagen.recovery import RecoveryClient, recovery_coin, renamed_params
from core.datagen.rows import failed_turns, is_hook_retry, keep_whole, prune, whole
from core.datagen.teacher import ORACLE, OpenAITeacher, TeacherSpec
from core.datagen.variants import (
    SAMPLERS,
    HarnessVariant,
    VariantSampler,
    get_sampler,
    identity_sampler,
    register_sampler,
    variant_seed,
    variants_for,
)

__all__ = [
    "ORACLE",
    "SAMPLERS",
    "GenerateConfig",
    "GenerateSummary",
    "HarnessVariant",
    "JobResult",
    "OpenAITeacher",
    "RecoveryClient",
    "Teacher",
    "TeacherSpec",
    "VariantSampler",
    "done_keys",
    "failed_turns",
    "generate",
    "get_sampler",
    "identity_sampler",
    "is_hook_retry",
    "job_key",
    "keep_whole",
    "prune",
    "recovery_coin",
    "register_sampler",
    "renamed_params",
    "run_job",
    "variant_seed",
    "variants_for",
    "whole",
]
