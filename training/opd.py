"""Stage 2, general on-policy distillation: TRL `DistillationTrainer`, reverse KL (beta = 1).

Thinking Machines' recipe: the student samples completions for general instruction prompts,
the teacher (the pre-SFT base model) scores the sampled tokens, and the student minimises the
per-token reverse KL to it. TRL 1.16's DistillationTrainer does exactly that on-policy:
`beta=1.0` selects reverse KL, `teacher_model=` is the teacher. The student is the previous
stage's model: the base with the SFT adapter, trained further (`adapter`), so the output
adapter still sits on the registered base.

Prompts (core/train/data.py): the bundled bank (templates across writing, explanation, lists,
formatting and length constraints; never IFEval's prompts), a JSONL file, or Tulu 3
(`allenai/tulu-3-sft-mixture`) from the local `datasets` cache only (HF_HUB_OFFLINE is set
for the child, so nothing is downloaded).
"""

from __future__ import annotations

from typing import Any

from core.train.config import OpdConfig
from core.train.data import DataError, load_prompts
from training.common import (
    StageContext,
    load_model,
    load_tokenizer,
    make_callback,
    resolve_device,
    student,
    trainer_kwargs,
)

TULU3 = "allenai/tulu-3-sft-mixture"


def tulu3_prompts(max_prompts: int | None) -> list[list[dict[str, str]]]:
    """User turns of Tulu 3 from the local datasets cache (DataError when it is not there)."""
    import datasets

    try:
        data = datasets.load_dataset(TULU3, split="train")
    except Exception as exc:
        raise DataError(
            f"Tulu 3 ({TULU3}) is not in the local datasets cache ({type(exc).__name__}); "
            "use prompts: bank or a JSONL file"
        ) from None
    prompts: list[list[dict[str, str]]] = []
    for row in data:
        messages = row.get("messages") or []
        users = [m for m in messages if m.get("role") == "user" and m.get("content")]
        if users:
            prompts.append([{"role": "user", "content": str(users[0]["content"])}])
        if max_prompts is not None and len(prompts) >= max_prompts:
            break
    if not prompts:
        raise DataError(f"zero usable prompts in {TULU3}")
    return prompts


def run(config: OpdConfig, ctx: StageContext) -> str:
    if config.prompts == "tulu3":
        prompts = tulu3_prompts(config.max_prompts)
    else:
        prompts = load_prompts(config.prompts, max_prompts=config.max_prompts)
    ctx.info(prompts=len(prompts), source=config.prompts)
    if not config.teacher:
        raise DataError("OPD needs a teacher model (teacher: the pre-SFT base)")

    from datasets import Dataset
    from trl import DistillationConfig, DistillationTrainer

    assert config.model is not None
    device = resolve_device(config)
    tokenizer = load_tokenizer(config.model, padding_side="left")
    model, peft_config = student(config, device)
    teacher = load_model(config.teacher, device)
    teacher.eval()
    ctx.info(device=device.kind, precision=device.precision, notes=device.notes)
    dataset = Dataset.from_list([{"prompt": p} for p in prompts])
    extra: dict[str, Any] = {}
    if config.use_vllm:
        extra = {"use_vllm": True}
    args = DistillationConfig(
        **trainer_kwargs(config, device, ctx.run_dir),
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        beta=config.beta,
        **extra,
    )
    callback = make_callback(ctx.writer, ctx.run_dir, resume=ctx.resume)
    trainer = DistillationTrainer(
        model=model,
        teacher_model=teacher,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[callback],
    )
    outcome = ctx.train(trainer, callback)
    ctx.save(trainer, config, tokenizer, outcome)
    return outcome
