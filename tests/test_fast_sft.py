"""The sliced LM-head loss (training/fast_sft.py): the same objective as TRL's, on fewer logits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from training.fast_sft import sliced_loss, trained_positions  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(1, 3),
    length=st.integers(2, 12),
    seed=st.integers(0, 10_000),
    share=st.floats(0.0, 1.0),
)
def test_sliced_loss_equals_the_full_cross_entropy(
    batch: int, length: int, seed: int, share: float
) -> None:
    """Whatever the label mask (rows of a padded batch trained at different positions, none
    trained at all), projecting only the kept positions gives the loss and token accuracy of
    the full logits."""
    gen = torch.Generator().manual_seed(seed)
    vocab = 7
    logits = torch.randn(batch, length, vocab, generator=gen)
    labels = torch.randint(0, vocab, (batch, length), generator=gen)
    labels[torch.rand(batch, length, generator=gen) > share] = -100
    keep = trained_positions(labels)
    loss, count, correct = sliced_loss(logits[:, keep], labels, keep, None)
    target = labels[:, 1:]
    full = logits[:, :-1]
    valid = target != -100
    assert int(count) == int(valid.sum())
    if int(count) == 0:
        assert float(loss) == 0.0
        return
    expected = torch.nn.functional.cross_entropy(
        full.reshape(-1, vocab), target.reshape(-1), ignore_index=-100
    )
    assert torch.allclose(loss, expected, atol=1e-5)
    hits = ((full.argmax(-1) == target) & valid).sum()
    assert int(correct) == int(hits)


def test_num_items_normalises_over_the_optimizer_step() -> None:
    """With `num_items_in_batch` (the trained tokens of every micro-batch of the step) the
    loss is a sum divided by it, so accumulated micro-batches add up to the step's mean."""
    logits = torch.zeros(1, 4, 5)
    labels = torch.tensor([[1, 2, 3, 4]])
    keep = trained_positions(labels)
    mean, count, _ = sliced_loss(logits[:, keep], labels, keep, None)
    summed, _, _ = sliced_loss(logits[:, keep], labels, keep, 30)
    assert int(count) == 3
    assert torch.allclose(summed * 30, mean * 3)


def test_the_stage_loss_matches_trls_on_the_demo_model(
    demo_model_folder: Path, tmp_path: Path
) -> None:
    """The real student and a real row: FastSFTTrainer's loss is TRL's (fused head) loss to
    float precision, and its gradient on the adapter points the same way."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig

    from training.fast_sft import fast_sft_trainer

    tokenizer = AutoTokenizer.from_pretrained(demo_model_folder)
    ids = tokenizer("user: how much is link 4?\nassistant: Link 4 is 12.50 USD.")["input_ids"]
    mask = [0] * (len(ids) // 2) + [1] * (len(ids) - len(ids) // 2)
    data = Dataset.from_list([{"input_ids": ids, "assistant_masks": mask}])

    def trainer(kind: str, out: Path) -> Any:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(demo_model_folder, dtype=torch.float32)
        args = SFTConfig(
            output_dir=str(out), use_cpu=True, report_to="none", max_length=256,
            per_device_train_batch_size=1, max_steps=1, dataset_num_proc=None,
        )  # fmt: skip
        lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM")
        t = fast_sft_trainer()(
            model=model, args=args, train_dataset=data, processing_class=tokenizer,
            peft_config=lora,
        )  # fmt: skip
        t.hat_lm_head_loss = kind
        return t

    losses = {}
    grads = {}
    for kind in ("trl", "sliced"):
        t = trainer(kind, tmp_path / kind)
        batch = next(iter(t.get_train_dataloader()))
        loss = t.compute_loss(t.model, dict(batch))
        loss.backward()
        losses[kind] = float(loss)
        grads[kind] = torch.cat(
            [p.grad.flatten() for n, p in t.model.named_parameters() if p.grad is not None]
        )
    assert losses["sliced"] == pytest.approx(losses["trl"], rel=1e-4)
    cos = torch.nn.functional.cosine_similarity(grads["sliced"], grads["trl"], dim=0)
    assert float(cos) > 0.999
