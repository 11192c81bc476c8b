"""Stage 1, HSA-SFT: TRL `SFTTrainer` on teacher trajectories, loss on assistant turns only.

Rows come from `hat data generate` (core/train/data.py: usable rows, compact prompt option).
They are conversational (`messages`, plus `tools` under the native tool protocol).

**Assistant-only loss.** TRL's `assistant_only_loss=True` needs a chat template with
`{% generation %}` markers, or one TRL knows how to patch (`get_training_chat_template`).
SmolLM2's template (the demo model) has neither: TRL raises "patching is not supported for
this template". So the mask is built here when TRL cannot: the conversation is rendered once
with the tokenizer's own template, each assistant message's character span is found by
rendering the prefix before it (with the generation prompt) and the prefix through it, and
tokens whose characters start inside a span get mask 1 (the message text and its end-of-turn
token, e.g. `<|im_end|>`, so the model learns to stop). A template that is not
prefix-preserving (a rendered prefix is not a prefix of the whole) drops that row, counted.
The rows go to SFTTrainer pre-tokenized (`input_ids` + `assistant_masks`); TRL builds the
labels (-100 outside the mask), truncates to `max_length` and drops rows left without loss.
When the template has generation markers (or TRL can patch it), TRL's own
`assistant_only_loss` is used instead, unless a row holds an assistant message marked
`"train": false` (a recovery row's mistaken call, core/datagen/recovery.py): TRL would train
on it, so the mask is built here then, with no span for such a message. (`loss_on: all`
trains on every token, marked messages included.)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from core.train.config import SftConfig
from core.train.data import DataError, balance_rows, chat_row, load_sft_rows, row_shares
from training.common import StageContext, make_callback, resolve_device, student, trainer_kwargs


def untrained(message: dict[str, Any]) -> bool:
    """A message the row marks `"train": false` (a recovery row's mistaken call)."""
    return message.get("train") is False


def has_untrained(chats: list[dict[str, Any]]) -> bool:
    return any(untrained(m) for chat in chats for m in chat["messages"])


def assistant_spans(
    tokenizer: Any, messages: list[dict[str, Any]], **kw: Any
) -> tuple[str, list[tuple[int, int]]]:
    """(rendered text, [(start, end) character span of each assistant message to train on]):
    assistant messages marked `"train": false` get no span (the mark is not rendered)."""
    marked = [untrained(m) for m in messages]
    messages = [{k: v for k, v in m.items() if k != "train"} for m in messages]
    text = tokenizer.apply_chat_template(messages, tokenize=False, **kw)
    spans = []
    for index, message in enumerate(messages):
        if message["role"] != "assistant" or marked[index]:
            continue
        before = tokenizer.apply_chat_template(
            messages[:index], tokenize=False, add_generation_prompt=True, **kw
        )
        through = tokenizer.apply_chat_template(messages[: index + 1], tokenize=False, **kw)
        if (
            not text.startswith(before)
            or not text.startswith(through)
            or len(through) < len(before)
        ):
            raise ValueError("the chat template is not prefix-preserving")
        spans.append((len(before), len(through)))
    return text, spans


def tokenize_with_mask(tokenizer: Any, row: dict[str, Any]) -> dict[str, list[int]]:
    """input_ids and assistant_masks of one conversational row (module doc)."""
    kw: dict[str, Any] = {"tools": row["tools"]} if row.get("tools") else {}
    text, spans = assistant_spans(tokenizer, row["messages"], **kw)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = []
    for start, _end in encoded["offset_mapping"]:
        mask.append(int(any(a <= start < b for a, b in spans)))
    return {"input_ids": list(encoded["input_ids"]), "assistant_masks": mask}


def trl_can_mask(tokenizer: Any) -> bool:
    """Whether TRL's assistant_only_loss works with this tokenizer's template."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    if template and has_generation_markers(template):
        return True
    try:
        get_training_chat_template(tokenizer)
    except ValueError:
        return False
    return True


def build_dataset(
    tokenizer: Any, rows: list[dict[str, Any]], config: SftConfig
) -> tuple[Any, dict[str, Any]]:
    """The train dataset and how it was built (mask mode, rows dropped and why)."""
    from datasets import Dataset

    chats = [chat_row(r, system_prompt=config.system_prompt) for r in rows]
    if config.loss_on == "all":
        return Dataset.from_list(chats), {"mask": "none (loss on every token)"}
    if trl_can_mask(tokenizer) and not has_untrained(chats):
        return Dataset.from_list(chats), {"mask": "trl assistant_only_loss"}
    dropped: Counter[str] = Counter()
    tokenized = []
    for chat in chats:
        try:
            item = tokenize_with_mask(tokenizer, chat)
        except ValueError as exc:
            dropped[str(exc)] += 1
            continue
        if not any(item["assistant_masks"][: config.max_length]):
            dropped[f"no assistant token within max_length {config.max_length}"] += 1
            continue
        tokenized.append(item)
    if not tokenized:
        why = ", ".join(f"{n} {r}" for r, n in dropped.items())
        raise DataError(f"zero usable rows after tokenization ({why})")
    info = {
        "mask": "prefix spans (chat template has no generation markers)",
        "rows_tokenized": len(tokenized),
        "rows_dropped_tokenizing": dict(dropped),
        "tokens": sum(min(len(t["input_ids"]), config.max_length) for t in tokenized),
    }
    return Dataset.from_list(tokenized), info


def run(config: SftConfig, ctx: StageContext) -> str:
    loaded = load_sft_rows(config.data, max_rows=config.max_rows)  # fails fast, before torch
    ctx.info(**loaded.summary())

    from trl import SFTConfig

    from training.common import load_tokenizer
    from training.fast_sft import compile_decoder, fast_sft_trainer

    assert config.model is not None
    device = resolve_device(config)
    tokenizer = load_tokenizer(config.model)
    rows = loaded.rows
    if config.balance_categories or config.balance_skills or config.original_weight > 1:
        rows = balance_rows(
            rows, seed=config.seed, by_category=config.balance_categories,
            original_weight=config.original_weight, by_skill=config.balance_skills,
        )  # fmt: skip
        ctx.info(rows_balanced=len(rows))
    ctx.info(shares=row_shares(rows))
    dataset, info = build_dataset(tokenizer, rows, config)
    model, peft_config = student(config, device)
    ctx.info(device=device.kind, precision=device.precision, notes=device.notes, **info)
    args = SFTConfig(
        **trainer_kwargs(config, device, ctx.run_dir),
        max_length=config.max_length,
        packing=config.packing,
        assistant_only_loss=info["mask"] == "trl assistant_only_loss",
        dataset_num_proc=None,
    )
    callback = make_callback(ctx.writer, ctx.run_dir, resume=ctx.resume)
    trainer = fast_sft_trainer()(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[callback],
    )
    trainer.hat_lm_head_loss = config.lm_head_loss
    if config.compile:
        ctx.info(compile=compile_decoder(trainer.model))
    outcome = ctx.train(trainer, callback)
    ctx.save(trainer, config, tokenizer, outcome)
    return outcome
