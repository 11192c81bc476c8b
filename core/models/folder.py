"""What a usable Hugging Face model folder is, checked without torch.

A base or merged model folder needs `config.json` (with `model_type`), weights
(`*.safetensors`, or `pytorch_model*.bin`) and a tokenizer (`tokenizer.json` or
`tokenizer_config.json`). An adapter folder (PEFT) needs `adapter_config.json` and
`adapter_model.safetensors` (or `.bin`). Parameter count and weight bytes come from the
safetensors headers (8-byte length + JSON), so the registry can show sizes and the benchmark
can compute the memory roofline without loading anything.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
}


class FolderError(Exception):
    """The folder is not a usable model (the message names what is wrong)."""


@dataclass(frozen=True)
class FolderInfo:
    path: Path
    architecture: str | None
    model_type: str | None
    parameters: int | None
    weight_bytes: int | None
    dtype: str | None
    context_length: int | None = None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FolderError(f"missing {path.name} in {path.parent}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise FolderError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise FolderError(f"{path} must hold a JSON object")
    return data


def safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a .safetensors file; FolderError when truncated or corrupt."""
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise FolderError(f"{path} is truncated (no safetensors header)")
            (size,) = struct.unpack("<Q", head)
            if size <= 0 or size > 100_000_000:
                raise FolderError(f"{path} is not a safetensors file (header size {size})")
            raw = fh.read(size)
            total = path.stat().st_size
    except OSError as exc:
        raise FolderError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) != size:
        raise FolderError(f"{path} is truncated (header cut short)")
    try:
        header = json.loads(raw)
    except ValueError:
        raise FolderError(f"{path} has a corrupt safetensors header") from None
    if not isinstance(header, dict):
        raise FolderError(f"{path} has a corrupt safetensors header")
    end = max(
        (int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"),
        default=0,
    )
    if 8 + size + end > total:
        raise FolderError(
            f"{path} is truncated: its header describes {8 + size + end} bytes, the file has "
            f"{total}"
        )
    return header


def _weights_summary(files: list[Path]) -> tuple[int, int, str | None]:
    parameters = 0
    weight_bytes = 0
    dtypes: dict[str, int] = {}
    for file in files:
        for name, entry in safetensors_header(file).items():
            if name == "__metadata__":
                continue
            count = 1
            for dim in entry.get("shape", []):
                count *= int(dim)
            parameters += count
            start, end = entry["data_offsets"]
            weight_bytes += int(end) - int(start)
            dtype = str(entry.get("dtype"))
            dtypes[dtype] = dtypes.get(dtype, 0) + count
    main = max(dtypes, key=lambda d: dtypes[d]) if dtypes else None
    names = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64"}
    return parameters, weight_bytes, names.get(main or "", main.lower() if main else None)


def _safetensors_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = _read_json(index).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise FolderError(f"{index} has no weight_map")
        files = sorted({folder / str(f) for f in weight_map.values()})
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise FolderError(f"missing weight shards in {folder}: {', '.join(missing)}")
        return files
    return sorted(folder.glob("*.safetensors"))


def check_model_folder(path: str | Path) -> FolderInfo:
    """Check a base/merged model folder; FolderError naming the problem."""
    folder = Path(path).expanduser()
    if not folder.exists():
        raise FolderError(f"no such folder: {folder}")
    if not folder.is_dir():
        gguf = folder.suffix.lower() == ".gguf"
        hint = " (a GGUF file: import it with `hat models import-gguf`)" if gguf else ""
        raise FolderError(f"not a folder: {folder}{hint}")
    config = _read_json(folder / "config.json")
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise FolderError(f"{folder / 'config.json'} has no model_type")
    architectures = config.get("architectures")
    architecture = architectures[0] if isinstance(architectures, list) and architectures else None
    files = _safetensors_files(folder)
    if files:
        parameters, weight_bytes, dtype = _weights_summary(files)
        if parameters == 0:
            raise FolderError(f"the weights in {folder} hold no tensors")
    elif list(folder.glob("pytorch_model*.bin")):
        parameters, weight_bytes, dtype = 0, 0, None
    else:
        raise FolderError(f"no weights in {folder} (expected *.safetensors or pytorch_model.bin)")
    if not ((folder / "tokenizer.json").is_file() or (folder / "tokenizer_config.json").is_file()):
        raise FolderError(f"no tokenizer in {folder} (expected tokenizer.json)")
    context = config.get("max_position_embeddings")
    return FolderInfo(
        path=folder,
        architecture=architecture,
        model_type=model_type,
        parameters=parameters or None,
        weight_bytes=weight_bytes or None,
        dtype=dtype or (str(config["torch_dtype"]) if "torch_dtype" in config else None),
        context_length=context if isinstance(context, int) else None,
    )


def check_adapter_folder(path: str | Path) -> FolderInfo:
    """Check a PEFT adapter folder; FolderError naming the problem."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise FolderError(f"no such folder: {folder}")
    config = _read_json(folder / "adapter_config.json")
    weights = folder / "adapter_model.safetensors"
    if weights.is_file():
        parameters, weight_bytes, dtype = _weights_summary([weights])
    elif (folder / "adapter_model.bin").is_file():
        parameters, weight_bytes, dtype = 0, 0, None
    else:
        raise FolderError(f"no adapter weights in {folder} (expected adapter_model.safetensors)")
    peft_type = config.get("peft_type")
    return FolderInfo(
        path=folder,
        architecture=str(peft_type) if peft_type else None,
        model_type=None,
        parameters=parameters or None,
        weight_bytes=weight_bytes or None,
        dtype=dtype,
    )
