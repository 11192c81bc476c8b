"""Import a GGUF checkpoint into a Hugging Face model folder (a child process of `hat models`).

    python -m training.gguf_import FILE.gguf OUT_DIR

`core.models` starts this module as a child process (core never imports torch/transformers),
reads its stdout as JSON lines and shows a progress bar:

    {"event": "stage", "stage": "check" | "tokenizer" | "weights" | "copy" | "save" | "verify",
     "message": "..."}
    {"event": "progress", "stage": "weights", "done": 12, "total": 272}
    {"event": "done", "dir": "...", "architecture": "llama", "model_type": "llama",
     "parameters": 134515008, "weight_bytes": 538060032, "dtype": "float32"}
    {"event": "error", "kind": "missing" | "truncated" | "unsupported_architecture" | "failed",
     "message": "..."}

Exit status 0 on success, 2 for a bad input file (missing, truncated or corrupt, unsupported
architecture), 1 for anything else. OUT_DIR must not exist yet; the caller imports into a
temporary folder and renames it on success, so a failed import leaves nothing half-written.

How (DESIGN.md §3, "Embedded demo model"): `from_pretrained(folder, gguf_file=...)`
dequantises every tensor (needs the `gguf` package). The result still carries the GGUF
`quantization_config`, so its weights are copied into a fresh model built from the config
without it, and that one is saved (safetensors) together with the tokenizer and the generation
config. Finally the folder is loaded back and run on a few tokens: the import only counts when
the saved folder works.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from training.child_events import ChildFailure, emit, run_main, stage

# Architectures transformers can read from GGUF but that are not causal LMs.
_NOT_CAUSAL = {"t5", "umt5", "general", "tokenizer"}


def read_architecture(path: Path) -> tuple[str, int]:
    """(general.architecture, tensor count) of a GGUF file; ChildFailure when unreadable."""
    if not path.is_file():
        raise ChildFailure("missing", f"no GGUF file at {path}")
    with path.open("rb") as fh:
        if fh.read(4) != b"GGUF":
            raise ChildFailure("truncated", f"{path} is not a GGUF file (no GGUF magic number)")
    from gguf import GGUFReader

    try:
        reader = GGUFReader(str(path))
    except (ValueError, IndexError, OSError, KeyError, UnicodeDecodeError) as exc:
        raise ChildFailure(
            "truncated", f"the GGUF file {path} is truncated or corrupt ({exc})"
        ) from None
    field = reader.fields.get("general.architecture")
    if field is None:
        raise ChildFailure("truncated", f"{path} has no general.architecture field")
    architecture = str(field.contents())
    return architecture, len(reader.tensors)


def check_supported(architecture: str) -> None:
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    supported = sorted(a for a in GGUF_SUPPORTED_ARCHITECTURES if a not in _NOT_CAUSAL)
    if architecture not in supported:
        raise ChildFailure(
            "unsupported_architecture",
            f"GGUF architecture {architecture!r} is not supported for import "
            f"(transformers reads these causal LMs from GGUF: {', '.join(supported)})",
        )


def _patch_progress(total: int) -> None:
    """Report transformers' per-tensor dequantisation loop as progress events."""
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # pragma: no cover - checked before
        return
    if not hasattr(gguf_utils, "tqdm"):
        return

    def tqdm(iterable: Any, *args: Any, **kwargs: Any) -> Any:
        items = list(iterable)
        count = len(items) or total
        step = max(1, count // 50)
        for index, item in enumerate(items, start=1):
            yield item
            if index % step == 0 or index == count:
                emit("progress", stage="weights", done=index, total=count)

    gguf_utils.tqdm = tqdm


def import_gguf(gguf_path: Path, out_dir: Path) -> dict[str, Any]:
    if out_dir.exists():
        raise ChildFailure("failed", f"the output folder already exists: {out_dir}")
    stage("check", f"reading {gguf_path.name}")
    architecture, tensors = read_architecture(gguf_path)
    check_supported(architecture)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    stage("tokenizer", "converting the tokenizer")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    except (ValueError, KeyError, OSError) as exc:
        raise ChildFailure("failed", f"cannot read the tokenizer from {gguf_path}: {exc}") from None

    stage("weights", f"dequantising {tensors} tensors")
    _patch_progress(tensors)
    try:
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    except ValueError as exc:
        text = str(exc)
        kind = "unsupported_architecture" if "not supported" in text else "truncated"
        raise ChildFailure(kind, f"cannot load the weights of {gguf_path}: {text}") from None

    stage("copy", "copying the weights into a fresh model")
    config = loaded.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.name_or_path = out_dir.name
    with torch.device("meta"):
        fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = loaded.state_dict()
    missing, unexpected = fresh.load_state_dict(state, strict=False, assign=True)
    tied = set(getattr(fresh, "_tied_weights_keys", None) or [])
    real_missing = [k for k in missing if k not in tied and not k.startswith("lm_head")]
    if real_missing or unexpected:
        raise ChildFailure(
            "failed",
            f"weights do not match the config (missing {real_missing[:5]}, "
            f"unexpected {list(unexpected)[:5]})",
        )
    fresh.tie_weights()
    fresh.generation_config = loaded.generation_config
    del loaded, state

    stage("save", f"saving to {out_dir}")
    out_dir.mkdir(parents=True)
    fresh.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)

    stage("verify", "loading the saved folder back")
    check = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32)
    ids = tokenizer("Hello", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logits = check(ids).logits
    if not bool(torch.isfinite(logits).all()):
        raise ChildFailure("failed", "the imported model produces non-finite logits")
    unique = {p.data_ptr(): p for p in check.parameters()}
    parameters = sum(p.numel() for p in unique.values())
    weight_bytes = sum(p.numel() * p.element_size() for p in unique.values())
    return {
        "dir": str(out_dir),
        "architecture": architecture,
        "model_type": check.config.model_type,
        "parameters": parameters,
        "weight_bytes": weight_bytes,
        "dtype": str(check.dtype).removeprefix("torch."),
        "context_length": getattr(check.config, "max_position_embeddings", None),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.gguf_import", description=__doc__)
    parser.add_argument("gguf", type=Path, help="the .gguf file")
    parser.add_argument("out_dir", type=Path, help="the Hugging Face folder to create")
    args = parser.parse_args(argv)
    return run_main(
        lambda: import_gguf(args.gguf.expanduser().resolve(), args.out_dir.expanduser()),
        bad_input=lambda kind: kind != "failed",
    )


if __name__ == "__main__":
    sys.exit(main())
