"""Form specs from the training config models (Qt-free): what editor each field gets.

    specs = form_fields(SftConfig, exclude={"stage", "launch"})
    data = form_data(specs, {"learning_rate": "2e-4", "lora.r": "16", ...})   # nested dict
    errors = field_errors(problems, specs, prefix="sft")    # {"learning_rate": "..."}

Every field of a stage model (core/train/config.py) has a default and a `description`; the
form shows the default as the starting value and the description as help. Text editors hand
pydantic the text as typed (its lax mode parses "2e-4" and "16"), so the error a user sees
for a bad value is the model's own, with the field named. Nested models (`lora`,
`reward_weights`, `launch`) become dotted paths.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

Kind = Literal["bool", "choice", "int", "float", "text", "list"]

SECTIONS: dict[str, tuple[str, ...]] = {
    title: tuple(names.split())
    for title, names in {
        "Model": "model name adapter teacher output_name method merge",
        "Data": "data max_length loss_on system_prompt max_rows packing balance_categories "
        "balance_skills original_weight prompts max_prompts "
        "tasks per_category task_seed harness sampler turn groups",
        "Optimisation": "max_steps epochs per_device_batch_size global_batch_size "
        "gradient_accumulation_steps learning_rate lr_scheduler warmup_ratio weight_decay "
        "max_grad_norm seed precision gradient_checkpointing lm_head_loss compile",
        "Generation": "num_generations max_completion_length temperature beta fault_rate "
        "length_budget multi_objective_aggregation importance_sampling_level use_vllm vllm_mode",
        "Saving and logging": "logging_steps save_steps save_total_limit",
    }.items()
}
NESTED_SECTIONS = {"lora": "LoRA", "reward_weights": "Reward weights", "launch": "Scale-out"}
TITLES = {
    "lr_scheduler": "LR schedule",
    "max_grad_norm": "Max grad norm",
    "per_device_batch_size": "Batch per device",
    "global_batch_size": "Global batch",
    "gradient_accumulation_steps": "Grad accumulation",
    "gradient_checkpointing": "Gradient checkpointing",
    "use_vllm": "vLLM generation",
    "multi_objective_aggregation": "Reward aggregation",
    "importance_sampling_level": "Importance sampling",
    "vllm_mode": "vLLM mode",
    "num_gpus": "GPUs per machine",
    "num_machines": "Machines",
    "machine_rank": "Machine rank",
    "main_process_ip": "Main process IP",
    "main_process_port": "Main process port",
    "r": "Rank r",
    "tool_rationality": "Tool rationality",
    "skill_selection": "Skill selection",
    "loss_on": "Loss on",
}


@dataclass(frozen=True)
class FieldSpec:
    """One editable field of a config model."""

    path: str
    """Dotted path in the config: "learning_rate", "lora.r"."""
    title: str
    kind: Kind
    default: Any
    help: str
    section: str
    nullable: bool = False
    choices: tuple[str, ...] = ()
    single_allowed: bool = False
    """A "list" field that also takes one plain string (LoRA target_modules)."""

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    def text(self, value: Any) -> str:
        """The editor text of a value."""
        if value is None:
            return ""
        if self.kind == "list":
            return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
        if self.kind == "float" and isinstance(value, float):
            return f"{value:g}"
        return str(value)


def title_of(name: str) -> str:
    return TITLES.get(name) or name.replace("_", " ").capitalize()


def _section(name: str, prefix: str) -> str:
    if prefix:
        return NESTED_SECTIONS.get(prefix.split(".")[0], title_of(prefix))
    return next((title for title, names in SECTIONS.items() if name in names), "Stage")


def _kind(annotation: Any) -> tuple[Kind, bool, tuple[str, ...], bool]:
    """(kind, nullable, choices, single string allowed) of a field annotation."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _kind(args[0])
    if origin in (typing.Union, types.UnionType):
        nullable = type(None) in args
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            kind, _, choices, single = _kind(rest[0])
            return kind, nullable, choices, single
        if str in rest and any(typing.get_origin(a) is list for a in rest):
            return "list", nullable, (), True
        return "text", nullable, (), False
    if origin is Literal:
        return "choice", False, tuple(str(a) for a in args), False
    if origin is list:
        return "list", False, (), False
    if annotation is bool:
        return "bool", False, (), False
    if annotation is int:
        return "int", False, (), False
    if annotation is float:
        return "float", False, (), False
    return "text", False, (), False


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    candidates = [annotation, *typing.get_args(annotation)]
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def form_fields(
    model: type[BaseModel], *, exclude: Iterable[str] = (), prefix: str = ""
) -> list[FieldSpec]:
    """The editable fields of `model` in declaration order, nested models flattened."""
    skip = set(exclude)
    out: list[FieldSpec] = []
    for name, info in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        if path in skip or name == "stage":
            continue
        nested = _nested_model(info.annotation)
        if nested is not None:
            out += form_fields(nested, exclude=skip, prefix=path)
            continue
        kind, nullable, choices, single = _kind(info.annotation)
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        help_text = (info.description or "").strip()
        if not help_text and choices:
            help_text = f"One of: {', '.join(choices)}."
        out.append(
            FieldSpec(
                path=path,
                title=title_of(name),
                kind=kind,
                default=default,
                help=help_text,
                section=_section(name, prefix),
                nullable=nullable,
                choices=choices,
                single_allowed=single,
            )
        )
    return out


class Missing:
    """A field left empty that needs a value (shown as "required")."""

    def __repr__(self) -> str:
        return "<required>"


MISSING = Missing()


def value_of(spec: FieldSpec, raw: Any) -> Any:
    """The value to validate for what the editor holds (text as typed, or a bool / choice)."""
    if spec.kind in ("bool", "choice"):
        return raw
    text = str(raw).strip()
    if spec.kind == "list":
        items = [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]
        if not items:
            return None if spec.nullable else MISSING
        if spec.single_allowed and len(items) == 1:
            return items[0]
        return items
    if not text:
        return None if spec.nullable else MISSING
    return text


def form_data(specs: list[FieldSpec], raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(nested config data, paths of required fields left empty) from editor values."""
    data: dict[str, Any] = {}
    missing: list[str] = []
    for spec in specs:
        if spec.path not in raw:
            continue
        value = value_of(spec, raw[spec.path])
        if value is MISSING:
            missing.append(spec.path)
            continue
        target = data
        parts = spec.path.split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = value
    return data, missing


def flatten(data: dict[str, Any], specs: list[FieldSpec]) -> dict[str, Any]:
    """Editor values (by path) from nested config data (a frozen or default config)."""
    out: dict[str, Any] = {}
    for spec in specs:
        node: Any = data
        for part in spec.path.split("."):
            if not isinstance(node, dict) or part not in node:
                node = None
                break
            node = node[part]
        else:
            out[spec.path] = node
            continue
    return out


def field_errors(
    problems: Iterable[tuple[str, str]], specs: list[FieldSpec], *, prefix: str = ""
) -> tuple[dict[str, str], list[str]]:
    """({field path: message}, messages that name no field of the form).

    A problem's field is `prefix.path[.index]`; a model-level check (its location is the
    model) goes to the first field its message names ("output_name 'x y' must be ...", "a
    multi-node run (num_machines > 1) needs main_process_ip").
    """
    paths = sorted((s.path for s in specs), key=len, reverse=True)
    by_name = {s.name: s.path for s in specs}
    found: dict[str, str] = {}
    other: list[str] = []
    for where, message in problems:
        key = where
        if prefix and (key == prefix or key.startswith(prefix + ".")):
            key = key[len(prefix) + 1 :]
        target = next((p for p in paths if key == p or key.startswith(p + ".")), None)
        if target is None:  # a model-level check: the first field its message names
            for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", message):
                scope = f"{key}.{word}" if key else word
                target = next((p for p in paths if p == scope), None) or (
                    by_name.get(word) if not key else None
                )
                if target is not None:
                    break
        if target is None:
            other.append(f"{where}: {message}" if where else message)
        else:
            found.setdefault(target, message)
    return found, other


def split_problem(line: str) -> tuple[str, str]:
    """("sft.data.0", "no such file: x") from a check_launch line."""
    where, sep, message = line.partition(": ")
    if not sep or " " in where:
        return "", line
    return where, message


def newest_dataset(folder: Path) -> Path | None:
    """The most recently written dataset in `folder` (rejects files left out): what the Train
    form offers after the Data page generated one."""
    try:
        found = [
            p for p in folder.glob("*.jsonl")
            if p.is_file() and not p.name.endswith(".rejects.jsonl")
        ]  # fmt: skip
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime, default=None)


def data_files_missing(text: str, home: Path) -> bool:
    """Whether a data field (comma-separated paths) names no file, or one that is not there
    (relative paths: against the workspace, then the working folder)."""
    paths = [p.strip() for p in text.split(",") if p.strip()]
    if not paths:
        return True
    for raw in paths:
        path = Path(raw).expanduser()
        if not (path.is_file() or (not path.is_absolute() and (home / path).is_file())):
            return True
    return False
