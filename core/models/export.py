"""Exporting a registered model for other runtimes: `hat models export NAME --out DIR`.

    source = export_source(store, "hat-sft")               # what to merge, from the registry
    prompt = served_system_prompt(store, version_id)       # what chat sends under that harness
    result = run_export(source, Path("out"), "ollama", card_text=..., system_prompt=prompt)

Formats:

- `hf`: the merged model as a Hugging Face folder (safetensors, config, tokenizer) and its card
  as README.md;
- `gguf`: one GGUF file (Llama architecture; written with llama.cpp's gguf-py, see
  training/export_gguf.py) and the card;
- `ollama`: the GGUF, the card and a `Modelfile` whose SYSTEM is the harness's rendered system
  prompt, with the chat template and stop token Ollama needs (`modelfile_text`).

The weights are handled by `python -m training.export`, a child process (core imports no torch),
which writes into a temporary folder beside the target; the card and the Modelfile are added
there, and only then is the folder renamed to DIR. A failed or interrupted export leaves no
DIR (and no folder it created for DIR's parents).
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.harness import HarnessError
from core.harness.render import render_system_prompt
from core.models.child import ChildFailure, EventCallback, run_event_child
from core.models.registry import RegistryError, get, model_dir
from core.pythons import training_python
from core.store import Store, StoreError
from core.store.serving import ModelRecord

FORMATS = ("hf", "gguf", "ollama")
GGUF_MODEL_TYPES = ("llama",)
"""The architectures the GGUF writer handles (training/export_gguf.py SUPPORTED_MODEL_TYPES;
checked here from config.json so an unsupported model is refused before the child starts)."""
DTYPES = ("auto", "f32", "f16", "bf16")
EXPORT_TIMEOUT_S = 3600.0
MODELFILE = "Modelfile"
CARD = "README.md"


class ExportError(Exception):
    """An export cannot be made, for a reason the message gives in one line."""

    def __init__(self, message: str, *, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


# ----------------------------------------------------------------------------- what to export


@dataclass(frozen=True)
class ExportSource:
    """A registered model as the export child needs it: full-model folder, adapter folder."""

    name: str
    kind: str
    model: Path
    """The full model: the base of an adapter, else the model's own folder."""
    adapter: Path | None = None
    base_gguf: Path | None = None
    """The GGUF the base model was imported from, when it still exists: its tokenizer keys
    are copied into an exported GGUF."""


def _folder(record: ModelRecord, role: str) -> Path:
    folder = model_dir(record)
    if folder is None:
        raise ExportError(
            f"{role} {record.name!r} is the hub id {record.location}, not a folder on disk: "
            f"register a local copy (hat models add NAME FOLDER) and export that",
            kind="missing",
        )
    if not folder.is_dir():
        raise ExportError(f"{role} {record.name!r} has no folder at {folder}", kind="missing")
    return folder


def _gguf_of(record: ModelRecord) -> Path | None:
    path = record.meta.get("gguf")
    return Path(path) if isinstance(path, str) and Path(path).is_file() else None


def export_source(store: Store, name: str) -> ExportSource:
    """What exporting `name` reads; RegistryError for an unknown name, ExportError when a
    folder it needs is not on disk."""
    record = get(store, name)
    if record.kind == "adapter":
        if not record.base:
            raise ExportError(f"the adapter {name!r} names no base model", kind="missing")
        base = get(store, record.base)
        return ExportSource(
            name=name,
            kind=record.kind,
            model=_folder(base, "its base model"),
            adapter=_folder(record, "the adapter"),
            base_gguf=_gguf_of(base),
        )
    base_gguf = _gguf_of(record)
    if base_gguf is None and record.base:
        try:
            base_gguf = _gguf_of(get(store, record.base))
        except RegistryError:  # its base was unregistered: no tokenizer to copy
            base_gguf = None
    return ExportSource(
        name=name, kind=record.kind, model=_folder(record, "the model"), base_gguf=base_gguf
    )


def check_format(source: ExportSource, fmt: str) -> None:
    """ExportError when `fmt` cannot be written for this model: GGUF needs a Llama."""
    if fmt == "hf":
        return
    try:
        config = json.loads((source.model / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ExportError(f"cannot read {source.model / 'config.json'}: {exc}") from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if model_type not in GGUF_MODEL_TYPES:
        raise ExportError(
            f"GGUF export supports Llama-architecture models (model_type "
            f"{', '.join(GGUF_MODEL_TYPES)}); {source.name} is {model_type!r}: export it with "
            "--format hf and convert that with llama.cpp's convert_hf_to_gguf.py",
            kind="unsupported_architecture",
        )


def check_target(out: Path) -> None:
    """ExportError unless `out` is absent or an empty folder."""
    if out.is_dir():
        if any(out.iterdir()):
            raise ExportError(f"{out} already exists and is not empty", kind="exists")
    elif out.exists() or out.is_symlink():
        raise ExportError(f"{out} exists and is not a folder", kind="exists")


def served_system_prompt(store: Store, ref: str) -> tuple[str, str]:
    """(version id, system prompt) of a stored harness version: the prompt exactly as chat
    renders it for that version (`render_system_prompt`, what `core.runtime` sends)."""
    try:
        version = store.resolve(ref)
        harness = store.load(version)
        return version, render_system_prompt(harness)
    except StoreError as exc:
        raise ExportError(f"harness version {ref!r}: {exc}", kind="missing") from None
    except HarnessError as exc:
        first = exc.problems[0] if exc.problems else exc
        raise ExportError(f"cannot render harness version {ref!r}: {first}") from None


# ----------------------------------------------------------------------------- Modelfile

CHATML_TEMPLATE = (
    "{{- range .Messages }}<|im_start|>{{ .Role }}\n"
    "{{ .Content }}<|im_end|>\n"
    "{{ end }}<|im_start|>assistant\n"
)
"""Ollama's Go template for ChatML: each message `<|im_start|>role\\ncontent<|im_end|>\\n`,
then the assistant's turn opened, as the Hugging Face ChatML templates render it (Ollama puts
the Modelfile's SYSTEM first when a request has no system message of its own)."""


def chat_family(chat_template: str | None) -> str | None:
    """The chat format a Hugging Face chat template writes, when a Modelfile can say it:
    "chatml" (`<|im_start|>role ... <|im_end|>`, SmolLM2, Qwen), else None."""
    if chat_template and "<|im_start|>" in chat_template and "<|im_end|>" in chat_template:
        return "chatml"
    return None


def _quoted(label: str, text: str) -> str:
    """A Modelfile value in triple quotes. Ollama's parser has no escapes: a text holding
    three double quotes cannot be written (it would end the value early)."""
    if '"""' in text:
        raise ExportError(
            f'the {label} holds three double quotes ("""), which a Modelfile cannot quote'
        )
    return f'"""{text}"""'


def modelfile_text(
    gguf_file: str,
    *,
    model_name: str,
    system: str | None,
    chat_template: str | None,
    eos_token: str | None,
    harness: str | None = None,
) -> str:
    """An Ollama Modelfile for the exported GGUF: FROM the file beside it, TEMPLATE and stop
    for the model's chat format, SYSTEM with the harness's rendered system prompt."""
    lines = [
        f"# Ollama Modelfile for {model_name}, written by HAT Studio (hat models export).",
        f"#   ollama create {model_name} -f {MODELFILE}",
        "# (add --quantize q4_K_M to store it quantized)",
        f"FROM ./{gguf_file}",
        "",
    ]
    stops: list[str] = []
    if chat_family(chat_template) == "chatml":
        lines.append(f"TEMPLATE {_quoted('chat template', CHATML_TEMPLATE)}")
        stops.append("<|im_end|>")
    else:
        lines.append(
            "# No TEMPLATE: Ollama reads the chat template from the GGUF (tokenizer.chat_template)."
        )
    if eos_token and eos_token not in stops:
        stops.append(eos_token)
    for stop in stops:
        if '"' in stop or "\n" in stop:
            continue  # a quoted PARAMETER value cannot hold either
        lines.append(f'PARAMETER stop "{stop}"')
    lines.append("")
    if system:
        if harness:
            lines.append(
                f"# The system prompt of harness {harness}, as HAT Studio's chat sends it."
            )
        lines.append(f"SYSTEM {_quoted('system prompt', system)}")
    else:
        lines.append("# No SYSTEM: no harness version is known for this model (--harness REF).")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- the card


def export_notes(
    source: ExportSource, fmt: str, info: dict[str, Any], *, harness: str | None
) -> str:
    """The card's closing section: what this folder is and how it was made."""
    merged = (
        f"the adapter `{source.name}` folded into its base"
        if source.adapter is not None
        else f"`{source.name}`"
    )
    lines = ["", "## Export", "", f"Exported by HAT Studio (`hat models export`): {merged}.", ""]
    if fmt == "hf":
        lines.append(f"- Hugging Face folder, weights in {info.get('dtype', '?')} (safetensors).")
    else:
        lines.append(
            f"- GGUF `{info.get('gguf')}` ({info.get('dtype')}), tokenizer from "
            f"{info.get('tokenizer')}."
        )
    if fmt == "ollama":
        lines.append(
            f"- Ollama: `ollama create {source.name} -f {MODELFILE}` in this folder; the "
            f"Modelfile's SYSTEM is "
            + (f"the rendered system prompt of harness `{harness}`." if harness else "not set.")
        )
    check = info.get("verify")
    if isinstance(check, dict):
        lines.append(
            f"- Checked on export: logits within {check.get('max_abs_diff', 0):.3g} of the "
            f"merged model's (largest logit {check.get('logit_scale', 0):.3g}), next-token "
            f"choice the same at {100 * float(check.get('argmax_agreement', 0)):.0f} % of "
            f"{check.get('probe_tokens')} positions, tokenization "
            + ("identical." if check.get("same_tokens") else "DIFFERENT.")
        )
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- running it


@dataclass
class ExportResult:
    out: Path
    format: str
    files: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _child(
    argv: list[str], *, on_event: EventCallback | None, timeout_s: float
) -> tuple[dict[str, Any], list[str]]:
    """Run the export child; (its done event, its notes) or ExportError."""
    try:
        result = run_event_child(argv, job="the export", on_event=on_event, timeout_s=timeout_s)
    except ChildFailure as exc:
        raise ExportError(exc.message, kind=exc.kind) from None
    return result.done, result.notes


def _make_parents(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; the ones created, deepest first."""
    made: list[Path] = []
    for parent in [folder, *folder.parents]:
        if parent.exists():
            break
        made.append(parent)
    for parent in reversed(made):
        parent.mkdir()
    return made


def run_export(
    source: ExportSource,
    out: Path,
    fmt: str,
    *,
    card_text: str,
    system_prompt: str | None = None,
    harness: str | None = None,
    dtype: str = "auto",
    verify: bool = False,
    python: str | None = None,
    on_event: EventCallback | None = None,
    timeout_s: float = EXPORT_TIMEOUT_S,
) -> ExportResult:
    """Export `source` into the new folder `out` (all or nothing)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    if dtype not in DTYPES:
        raise ExportError(f"unknown dtype {dtype!r} (one of {', '.join(DTYPES)})")
    out = out.expanduser().absolute()
    check_format(source, fmt)
    check_target(out)
    made = _make_parents(out.parent)
    tmp = out.parent / f".{out.name}.export-{uuid.uuid4().hex[:8]}"
    argv = [
        python or training_python(), "-m", "training.export",
        "--base", str(source.model), "--out", str(tmp),
        "--format", "hf" if fmt == "hf" else "gguf", "--dtype", dtype, "--name", source.name,
    ]  # fmt: skip
    if source.adapter is not None:
        argv += ["--adapter", str(source.adapter)]
    if source.base_gguf is not None and fmt != "hf":
        argv += ["--tokenizer-gguf", str(source.base_gguf)]
    if verify:
        argv.append("--verify")
    try:
        info, notes = _child(argv, on_event=on_event, timeout_s=timeout_s)
        if not tmp.is_dir():
            raise ExportError("the export process wrote nothing", kind="failed")
        modelfile = None
        if fmt == "ollama":
            modelfile = modelfile_text(
                str(info.get("gguf")),
                model_name=source.name,
                system=system_prompt,
                chat_template=info.get("chat_template"),
                eos_token=info.get("eos_token"),
                harness=harness,
            )
        card = card_text.rstrip("\n") + "\n" + export_notes(source, fmt, info, harness=harness)
        (tmp / CARD).write_text(card, encoding="utf-8")
        if modelfile is not None:
            (tmp / MODELFILE).write_text(modelfile, encoding="utf-8")
        if out.is_dir():
            out.rmdir()  # empty (checked above); a file put there since fails here, not later
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in made:
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    files = sorted(p.name for p in out.iterdir())
    return ExportResult(out=out, format=fmt, files=files, info=info, notes=notes)
