"""Export a model for other runtimes (a child process of `hat models export`).

    python -m training.export --base B [--adapter A] --out O --format hf|gguf
                              [--dtype auto|f32|f16|bf16] [--name N] [--tokenizer-gguf G]
                              [--verify]

Loads the base model, folds the LoRA adapter in (when given), and writes into O (which must not
exist; `core.models.export` passes a temporary folder and renames it when everything is there):

- `hf`: the merged model as a Hugging Face folder (safetensors, config, generation config,
  tokenizer);
- `gguf`: one `<name>-<dtype>.gguf` file (training/export_gguf.py: Llama architecture).

`--verify` loads what was written back (the folder with transformers, the GGUF with
transformers' GGUF loader) and compares its logits and tokenization on a probe conversation
with the merged model in memory.

Events on stdout, one JSON object a line, as `training.gguf_import` writes them:

    {"event": "stage", "stage": "load" | "merge" | "write" | "verify", "message": "..."}
    {"event": "note", "message": "..."}
    {"event": "done", "files": [...], "model_type": "llama", "dtype": "float16", "gguf": "x.gguf",
     "tokenizer": "base GGUF ...", "chat_template": "...", "eos_token": "<|im_end|>",
     "verify": {"max_abs_diff": 0.01, "argmax_agreement": 1.0, "same_tokens": true, ...}}
    {"event": "error", "kind": "unsupported_architecture" | "missing" | "failed", "message": "..."}

Exit status 0 on success, 2 for a model this export cannot write (unsupported architecture), 1
for anything else.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from training.child_events import ChildFailure, emit, run_main, stage

FORMATS = ("hf", "gguf")
TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
PROBE = [
    {"role": "system", "content": "You are a careful assistant. Call tools as asked."},
    {"role": "user", "content": "What is 12 + 30? Answer in one word, then say why."},
]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip(".-") or "model"


def _has_tokenizer(folder: Path) -> bool:
    return any((folder / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))


def load_merged(base: str, adapter: Path | None) -> tuple[Any, Any]:
    """(model, tokenizer): the base with the adapter folded in, on CPU, in the stored dtype;
    the tokenizer from the adapter folder when training saved one there, else the base's."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    stage("load", f"loading {base}")
    try:
        model = AutoModelForCausalLM.from_pretrained(base, dtype="auto")
    except (OSError, ValueError) as exc:
        raise ChildFailure("missing", f"cannot load the model {base}: {exc}") from None
    source = str(adapter) if adapter is not None and _has_tokenizer(adapter) else base
    tokenizer = AutoTokenizer.from_pretrained(source)
    if adapter is not None:
        from peft import PeftModel

        stage("merge", f"folding the adapter {adapter.name} into the base")
        try:
            model = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
        except (OSError, ValueError) as exc:
            raise ChildFailure("missing", f"cannot load the adapter {adapter}: {exc}") from None
    model.eval()
    return model, tokenizer


def resolve_dtype(model: Any, dtype: str) -> str:
    """auto: bf16 for a bf16 model, else f16 (llama.cpp's converter's choice)."""
    import torch

    if dtype != "auto":
        return dtype
    return "bf16" if model.dtype == torch.bfloat16 else "f16"


def write_hf(model: Any, tokenizer: Any, out: Path, dtype: str) -> list[str]:
    import torch

    if dtype != "auto":
        model = model.to(getattr(torch, TORCH_DTYPES[dtype]))
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return sorted(p.name for p in out.iterdir())


def probe_ids(tokenizer: Any) -> list[int]:
    text = (
        tokenizer.apply_chat_template(PROBE, tokenize=False, add_generation_prompt=True)
        if tokenizer.chat_template
        else "\n".join(m["content"] for m in PROBE)
    )
    return list(tokenizer(text)["input_ids"])


def reference(model: Any, tokenizer: Any) -> dict[str, Any]:
    """The merged model's float32 logits on the probe (computed before anything is written,
    so a dtype change on the way out is measured); the model is left in its own dtype
    (up-casting and back is exact)."""
    import torch

    ids = probe_ids(tokenizer)
    dtype = model.dtype
    with torch.no_grad():
        logits = model.to(torch.float32)(torch.tensor([ids])).logits[0]
    model.to(dtype)
    return {"ids": ids, "logits": logits, "tokenizer": tokenizer}


PLAIN = "Tokens 12, 345 and 6789: naïve café — done.\n\tindented  twice"


def compare(want: dict[str, Any], loaded: Any, loaded_tokenizer: Any) -> dict[str, Any]:
    """Logits of `loaded` (float32) against the reference on the probe, and whether the two
    tokenizers cut the probe and a plain text the same way."""
    import torch

    ids = want["ids"]
    tokenizer = want["tokenizer"]
    same_tokens = probe_ids(loaded_tokenizer) == ids and (
        loaded_tokenizer(PLAIN)["input_ids"] == tokenizer(PLAIN)["input_ids"]
    )
    with torch.no_grad():
        got = loaded.to(torch.float32)(torch.tensor([ids])).logits[0]
    diff = (want["logits"] - got).abs()
    return {
        "max_abs_diff": float(diff.max()),
        "mean_abs_diff": float(diff.mean()),
        "logit_scale": float(want["logits"].abs().max()),
        "argmax_agreement": float((want["logits"].argmax(-1) == got.argmax(-1)).float().mean()),
        "same_tokens": bool(same_tokens),
        "probe_tokens": len(ids),
    }


def verify_hf(want: dict[str, Any], out: Path) -> dict[str, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    loaded = AutoModelForCausalLM.from_pretrained(str(out), dtype="auto")
    return compare(want, loaded, AutoTokenizer.from_pretrained(str(out)))


def verify_gguf(want: dict[str, Any], path: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(path.parent), path.name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    return compare(want, loaded, AutoTokenizer.from_pretrained(folder, gguf_file=name))


def export(args: argparse.Namespace) -> dict[str, Any]:
    out: Path = args.out
    if out.exists():
        raise ChildFailure("failed", f"the output folder already exists: {out}")
    adapter: Path | None = args.adapter
    if adapter is not None and not adapter.is_dir():
        raise ChildFailure("missing", f"no adapter folder at {adapter}")
    model, tokenizer = load_merged(args.base, adapter)
    info: dict[str, Any] = {
        "model_type": getattr(model.config, "model_type", None),
        "chat_template": tokenizer.chat_template
        if isinstance(tokenizer.chat_template, str)
        else None,
        "eos_token": tokenizer.eos_token,
        "bos_token": tokenizer.bos_token,
    }
    want = reference(model, tokenizer) if args.verify else None
    if args.format == "hf":
        stage("write", f"saving the Hugging Face folder ({args.dtype})")
        out.mkdir(parents=True)
        info["files"] = write_hf(model, tokenizer, out, args.dtype)
        info["dtype"] = str(next(model.parameters()).dtype).removeprefix("torch.")
        if want is not None:
            stage("verify", "loading the folder back and comparing logits")
            info["verify"] = verify_hf(want, out)
        return info

    from training.export_gguf import UnsupportedModel, check_supported, write_gguf

    try:
        check_supported(model.config)
    except UnsupportedModel as exc:
        raise ChildFailure("unsupported_architecture", str(exc)) from None
    dtype = resolve_dtype(model, args.dtype)
    filename = f"{_slug(args.name or 'model')}-{dtype}.gguf"
    stage("write", f"writing {filename}")
    out.mkdir(parents=True)
    try:
        written = write_gguf(
            model,
            tokenizer,
            out / filename,
            name=args.name or "model",
            dtype=dtype,
            tokenizer_gguf=args.tokenizer_gguf,
            on_note=lambda message: emit("note", message=message),
        )
    except UnsupportedModel as exc:
        raise ChildFailure("unsupported_architecture", str(exc)) from None
    info.update(files=[filename], gguf=filename, dtype=dtype, tokenizer=written["tokenizer"])
    if want is not None:
        stage("verify", "loading the GGUF back with transformers and comparing logits")
        info["verify"] = verify_gguf(want, out / filename)
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.export", description=__doc__)
    parser.add_argument("--base", required=True, help="Base (or merged) model folder.")
    parser.add_argument("--adapter", type=Path, help="PEFT adapter folder to fold in.")
    parser.add_argument("--out", required=True, type=Path, help="Folder to write (must not exist).")
    parser.add_argument("--format", choices=FORMATS, default="hf")
    parser.add_argument("--dtype", choices=("auto", *TORCH_DTYPES), default="auto")
    parser.add_argument("--name", help="Model name (GGUF general.name and file name).")
    parser.add_argument("--tokenizer-gguf", type=Path, help="The base model's GGUF file.")
    parser.add_argument("--verify", action="store_true", help="Load it back and compare.")
    args = parser.parse_args(argv)
    return run_main(lambda: export(args), bad_input=lambda kind: kind == "unsupported_architecture")


if __name__ == "__main__":
    sys.exit(main())
