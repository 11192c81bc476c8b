"""What makes the SFT stage fast on a CPU (and costs nothing on a GPU): a loss that projects
only the trained positions through the LM head, and an optional compiled decoder.

**The loss.** An SFT row of the replication is ~1,000 tokens, of which the assistant turns the
loss is on are ~150: the rest is the system prompt and the tool results. TRL's SFTTrainer
computes its loss through a fused LM head (`add_fused_lm_head`) that, without Triton (every
CPU), scores *every* position in Python-driven tiles and computes entropy and top-1 for each:
measured in the product's own child on the cpu profile's HAT rows, 295 tokens/s against 428
for a plain `model(labels=...)` loop on the same rows. Here the model is asked for the logits
of the trained positions only (`logits_to_keep` with their indices, a transformers feature of
every causal LM), the cross-entropy is taken in fp32 on those, and token accuracy (the one
metric cheap on a slice) is logged; entropy is not. The loss is the sum over trained tokens
divided by the trained tokens of the whole optimizer step (`num_items_in_batch`), exactly as
TRL and the Trainer normalise it, so gradient accumulation and several processes see the same
objective. Any other loss TRL offers (DFT, label smoothing, a MoE aux loss) goes to TRL.

**The compiled decoder** (`SftConfig.compile`): `torch.compile(dynamic=True)` on the decoder
module in place (state-dict keys, checkpoints and PEFT saving unchanged; the LM head and loss
stay eager). On the 2-core machine it lifts the step from ~490 to ~640 tokens/s on top of the
sliced loss after a one-time compile (benchmarks/train_throughput.py, docs/benchmarks.md).
Compiling needs a C++ compiler on a CPU (Triton on a GPU); where it fails, dynamo's
`suppress_errors` runs that code uncompiled instead of failing the run.
"""

from __future__ import annotations

from typing import Any

TRAINED = -100
"""The label of a position the loss ignores (TRL's and transformers' convention)."""


def trained_positions(labels: Any) -> Any:
    """Sequence positions t whose next token is trained in at least one row of the batch (the
    logits at t predict token t + 1): the only positions the LM head needs to project."""
    return (labels[:, 1:] != TRAINED).any(dim=0).nonzero().squeeze(-1)


def sliced_loss(logits: Any, labels: Any, keep: Any, num_items: Any | None) -> tuple[Any, Any, Any]:
    """(loss, trained tokens, correct top-1) from the logits of positions `keep` only."""
    import torch
    import torch.nn.functional as F

    target = labels[:, 1:][:, keep]
    flat = logits.float().reshape(-1, logits.size(-1))
    total = F.cross_entropy(flat, target.reshape(-1), ignore_index=TRAINED, reduction="sum")
    valid = target != TRAINED
    count = valid.sum()
    denominator = num_items if num_items is not None else count
    loss = total / torch.as_tensor(denominator, device=total.device).clamp(min=1)
    with torch.no_grad():
        correct = ((flat.argmax(-1) == target.reshape(-1)) & valid.reshape(-1)).sum()
    return loss, count, correct


def fast_sft_trainer() -> type:
    """SFTTrainer with the sliced loss (module doc); built on call so importing this module
    does not import TRL."""
    from trl import SFTTrainer

    class FastSFTTrainer(SFTTrainer):  # type: ignore[misc,valid-type]
        hat_lm_head_loss = "sliced"

        def _sliced(self) -> bool:
            return (
                self.hat_lm_head_loss == "sliced"
                # One process only: the sliced loss is not yet checked against a one-process
                # run under DDP (tests/test_scaleout.py checks TRL's), so several processes
                # train on TRL's loss.
                and self.accelerator.num_processes == 1
                and self.args.loss_type == "nll"
                and self.label_smoother is None
                and self.compute_loss_func is None
                and not self.aux_loss_enabled
            )

        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            if return_outputs or not self._sliced() or "labels" not in inputs:
                return super().compute_loss(
                    model, inputs, return_outputs=return_outputs,
                    num_items_in_batch=num_items_in_batch,
                )  # fmt: skip
            mode = "train" if self.model.training else "eval"
            labels = inputs["labels"]
            keep = trained_positions(labels)
            forward = {k: v for k, v in inputs.items() if k != "labels"}
            forward["use_cache"] = False
            mask = forward.get("attention_mask")
            if mask is not None and bool(mask.all()):
                # No padding (batch 1, or rows of one length): the mask says nothing the
                # causal attention does not, and without it SDPA keeps its causal flash path
                # (a compiled decoder cannot tell an all-ones mask apart and builds the 4-D one).
                del forward["attention_mask"]
            outputs = model(**forward, logits_to_keep=keep)
            loss, count, correct = sliced_loss(outputs.logits, labels, keep, num_items_in_batch)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * (self.accelerator.num_processes // self.get_tp_size())
            gather = self.accelerator.gather_for_metrics
            valid = gather(count).sum()
            right = gather(correct).sum()
            accuracy = (right / valid).item() if valid > 0 else 0.0
            self._metrics[mode]["mean_token_accuracy"].append(accuracy)
            if mode == "train":
                if "attention_mask" in inputs:
                    seen = gather(inputs["attention_mask"].sum()).sum().item()
                else:
                    seen = gather(labels.new_tensor(labels.numel())).sum().item()
                self._total_train_tokens += seen // self._tp_size
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
            return loss

    return FastSFTTrainer


def compile_decoder(model: Any) -> str:
    """Compile the decoder of `model` (a PeftModel or a causal LM) in place; what was done."""
    import torch._dynamo

    torch._dynamo.config.suppress_errors = True  # a failed compile runs eagerly (module doc)
    causal = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = getattr(causal, causal.base_model_prefix, None)
    if decoder is None or decoder is causal:
        return "not compiled: no decoder module found"
    decoder.compile(dynamic=True)
    return f"compiled {type(decoder).__name__} (torch.compile, dynamic shapes)"
