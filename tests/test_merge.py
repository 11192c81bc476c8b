"""Adapters served by an engine that cannot load them: merged on first use (issue 23, item 1).

Real parts: the demo model, a real PEFT LoRA adapter saved beside it, the real
`python -m training.merge` child, the real registry."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.models import add_folder, list_models, register_adapter
from core.models.merge import merged_model
from core.serving.engines import EngineConfig
from core.serving.launch import server_for
from core.store import Store


def _adapter(base: Path, out: Path) -> Path:
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(base))
    config = peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj"], init_lora_weights=False
    )  # not the zero init: the merge must change the weights
    peft.get_peft_model(model, config).save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(out))
    return out


def test_an_adapter_is_merged_once_and_served_by_transformers(
    demo_model_folder: Path, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    adapter = _adapter(demo_model_folder, tmp_path / "ad")
    phases: list[str] = []
    with Store.open() as store:
        add_folder(store, "demo", demo_model_folder)
        register_adapter(store, "ad", adapter, base="demo")
        record = merged_model(store, "ad", on_phase=phases.append)
        assert record.kind == "merged" and record.base == "demo"
        assert record.name == "ad-merged" and record.meta["adapter"] == "ad"
        assert phases == ["Merging the adapter into its base"]
        folder = Path(record.location)
        merged = load_file(str(next(folder.glob("*.safetensors"))))
        base = load_file(str(next(demo_model_folder.glob("*.safetensors"))))
        key = next(k for k in merged if k.endswith("layers.0.self_attn.q_proj.weight"))
        assert not bool((merged[key] == base[key]).all())  # the adapter's delta is folded in
        other = next(k for k in merged if k.endswith("layers.0.self_attn.k_proj.weight"))
        assert bool((merged[other] == base[other]).all())  # and nothing else changed

        start = time.monotonic()
        again = merged_model(store, "ad", on_phase=phases.append)
        assert again.location == record.location and len(phases) == 1
        assert time.monotonic() - start < 2.0  # no second merge
        server = server_for(store, EngineConfig("transformers"), "demo", adapter="ad")
        assert server.model == record.location and not server.config.adapters
        assert [r.name for r in list_models(store) if r.kind == "merged"] == ["ad-merged"]
