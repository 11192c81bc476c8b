"""Bank files: their schema, reading them with errors that name the file and the table, and
layering a user's bank folder over a shipped bank (or using it instead).

A bank folder holds one YAML file per dimension (`tools.yaml`, `skills.yaml`, `prompt.yaml`,
`hooks.yaml`; any may be left out). Each file is a mapping of tables; the tables a file may
have, and their shapes, are in `TABLES` (JSON Schema, checked with jsonschema) and documented
in docs/hsa-banks.md. A file may also hold `domains: {<domain>: {<tables>}}`, tables that apply
only to harnesses of that domain (core/hsa/domain.py).

    bank = layer_bank(load_bank("train"), Path("my-banks"))          # user tables added
    bank = layer_bank(load_bank("train"), Path("my-banks"), replace=True)   # user tables only
    variant = sample_variant(harness, Policy("train"), seed, bank=bank)

A user folder may hold the files directly or in `train/` and `heldout/` subfolders (then the
one named like the policy bank is used). Layering merges tables (mappings key by key, lists
extended); `replace=True` drops the shipped tables altogether.

Banks: `train` and `heldout` draw names, phrasings and styles from disjoint files under
resources/hsa/<bank>/ (one YAML file per dimension), so Harness-Variant QA measures
generalisation, not memorised augmentations. Tables are neutral (any harness) or scoped to a
domain (`domains:` in a file; core/hsa/domain.py decides a harness's domain); a user bank
folder can be layered over a shipped bank or replace it (`core.hsa.banks.layer_bank`). The
format is documented in docs/hsa-banks.md.

This module holds the bank model (`Bank`, `load_bank`) as well as the files' reading, so
the transforms and the reader import it, and it imports neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

import resources
from core.harness.models import Harness
from core.hsa.domain import harness_domain

DIMENSION_FILES = ("tools", "skills", "prompt", "hooks")

_STR = {"type": "string", "minLength": 1}
_STRS = {"type": "array", "items": _STR}
_TABLE = {"type": "object", "additionalProperties": _STRS}
"""key -> list of texts (synonyms, descriptions, phrases)."""
_SNAKE = {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"}
_PREFIXES = {"type": "array", "items": {"type": "string", "pattern": "^[a-z][a-z0-9]*$"}}
_STYLES = {
    "type": "array",
    "items": {
        "enum": [
            "snake",
            "kebab",
            "camel",
            "pascal",
            "screaming_snake",
            "capital_dash",
            "capital_snake",
            "compact",
        ]
    },
}
_TOOL_NAME = {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"}
_SKILL_NAME = {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "maxLength": 64}

TABLES: dict[str, dict[str, Any]] = {
    "tools": {
        "names": _TABLE,
        "name_styles": _STYLES,
        "param_styles": _STYLES,
        "random_prefixes": _PREFIXES,
        "param_random_prefixes": _PREFIXES,
        "params": _TABLE,
        "descriptions": _TABLE,
        "param_descriptions": _TABLE,
        "phrases": _TABLE,
        "default_notes": {
            "type": "array",
            "items": {"type": "string", "pattern": r"\{value:default\}"},
        },
        "optional_params": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "description", "schema"],
                "additionalProperties": False,
                "properties": {
                    "name": _SNAKE,
                    "description": _STR,
                    "schema": {
                        "type": "object",
                        "minProperties": 1,
                        "maxProperties": 1,
                        "propertyNames": {
                            "enum": ["string", "integer", "number", "boolean", "array", "object"]
                        },
                        "additionalProperties": {"type": ["object", "null"]},
                    },
                },
            },
        },
        "distractors": {
            "type": "object",
            "additionalProperties": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "description"],
                    "additionalProperties": False,
                    "properties": {"name": _TOOL_NAME, "description": _STR},
                },
            },
        },
        "distractor_tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "description"],
                "additionalProperties": False,
                "properties": {
                    "name": _TOOL_NAME,
                    "description": _STR,
                    "parameters": {
                        "type": "object",
                        "properties": {"type": {"const": "object"}},
                    },
                    "result": {},
                },
            },
        },
    },
    "skills": {
        "names": _TABLE,
        "opaque_prefixes": _PREFIXES,
        "affixes": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"prefixes": _PREFIXES, "suffixes": _PREFIXES},
        },
        "kind_tags": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"reply": _PREFIXES, "strategy": _PREFIXES},
        },
        "loader_names": {"type": "array", "items": _TOOL_NAME},
        "descriptions": _TABLE,
        "phrases": _TABLE,
        "prose": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "ordered": {"type": "array", "items": {**_STRS, "minItems": 2}},
                "lead_ins": _STRS,
            },
        },
        "distractors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "description", "body"],
                "additionalProperties": False,
                "properties": {
                    "name": _SKILL_NAME,
                    "description": {**_STR, "maxLength": 1024},
                    "body": {"type": "string"},
                },
            },
        },
    },
    "prompt": {
        "styles": {
            "type": "object",
            "additionalProperties": {
                "type": "array",
                "items": {"anyOf": [{"type": "null"}, {"type": "string", "pattern": r"\{title\}"}]},
            },
        },
        "headings": _TABLE,
        "variables": _TABLE,
    },
    "hooks": {
        "reminders": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "by_hook": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "array",
                        "items": {"type": "string", "pattern": r"\$\{reason\}"},
                    },
                },
                "by_kind": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "array",
                        "items": {"type": "string", "pattern": r"\$\{reason\}"},
                    },
                },
            },
        },
        "reminder_formats": {
            "type": "array",
            "items": {"type": "string", "pattern": r"\$\{reminder\}"},
        },
    },
}

DOMAIN_NAME = "^[a-z][a-z0-9-]*$"


def file_schema(dimension: str) -> dict[str, Any]:
    """JSON Schema of one bank file (`<dimension>.yaml`)."""
    tables = {"type": "object", "additionalProperties": False, "properties": TABLES[dimension]}
    return {
        **tables,
        "properties": {
            **TABLES[dimension],
            "domains": {
                "type": "object",
                "propertyNames": {"pattern": DOMAIN_NAME},
                "additionalProperties": tables,
            },
        },
    }


class BankError(ValueError):
    """A bank file that cannot be used: the message names the file and the table."""


def _where(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the file)"


def check_file(file: Path, dimension: str, data: Any) -> None:
    """BankError listing every problem of one bank file's data (file: table.path: message)."""
    import jsonschema

    if dimension not in TABLES:
        known = ", ".join(f"{d}.yaml" for d in DIMENSION_FILES)
        raise BankError(f"{file}: not a bank file (a bank folder holds {known})")
    if not isinstance(data, dict):
        raise BankError(f"{file}: expected a mapping of bank tables, got {type(data).__name__}")
    validator = jsonschema.Draft202012Validator(file_schema(dimension))
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return
    lines = []
    for error in errors[:8]:
        message = error.message
        if error.validator == "additionalProperties" and not error.absolute_path:
            known = ", ".join(sorted(TABLES[dimension]))
            message += f" (tables of {dimension}.yaml: {known}, domains)"
        lines.append(f"{file}: {_where(error.absolute_path)}: {message}")
    if len(errors) > 8:
        lines.append(f"{file}: ... and {len(errors) - 8} more")
    raise BankError("\n".join(lines))


def read_bank_file(file: Path) -> dict[str, Any]:
    """One bank file, parsed and checked (BankError on a YAML error or a bad table)."""
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise BankError(f"{file}: cannot read it: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BankError(f"{file}: not valid YAML: {exc}") from None
    data = {} if data is None else data
    check_file(file, file.stem, data)
    out: dict[str, Any] = data
    return out


def read_bank_folder(folder: Path) -> dict[str, dict[str, Any]]:
    """Every `<dimension>.yaml` of `folder`, checked; BankError when the folder is missing or
    holds another YAML file."""
    if not folder.is_dir():
        raise BankError(f"{folder}: no such bank folder")
    data: dict[str, dict[str, Any]] = {}
    for file in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        data[file.stem] = read_bank_file(file)
    return data


def user_bank_folder(folder: Path, bank: str) -> Path:
    """The folder of a user bank that applies to policy bank `bank`: `folder/<bank>/` when the
    user split their bank by policy, else `folder` itself."""
    split = folder / bank
    return split if split.is_dir() else folder


def layer_bank(base: Bank, folder: Path, *, replace: bool = False) -> Bank:
    """`base` with the user bank in `folder` layered over it (tables merged: mappings key by
    key, lists extended), or instead of it with `replace`. BankError names a bad file or
    table; a folder with no bank file at all is an error too (a typo in a path must not
    silently give the shipped bank)."""
    where = user_bank_folder(folder, base.name.value)
    user = read_bank_folder(where)
    if not user:
        known = ", ".join(f"{d}.yaml" for d in DIMENSION_FILES)
        raise BankError(f"{where}: no bank file in it (expected some of {known})")
    if replace:
        return Bank(base.name, user, base.domain, (str(where),))
    data = {d: dict(tables) for d, tables in base.data.items()}
    for dimension, tables in user.items():
        data[dimension] = merge_tables(data.get(dimension, {}), tables)
    return Bank(base.name, data, base.domain, (*base.sources, str(where)))


# ---------------------------------------------------------------- the bank a policy draws from


class BankName(StrEnum):
    TRAIN = "train"
    HELDOUT = "heldout"


DOMAINS_KEY = "domains"
"""Top-level key of a bank file holding tables that apply to one domain only (see
`core.hsa.domain`): `domains: {live-room: {<table>: ...}}`."""


def merge_tables(base: Any, over: Any) -> Any:
    """`over` layered on `base`: mappings merged key by key (recursively), lists extended
    with the items `base` lacks, anything else replaced by `over`."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = merge_tables(base[key], value) if key in base else value
        return out
    if isinstance(base, list) and isinstance(over, list):
        return [*base, *(v for v in over if v not in base)]
    return over


@dataclass(frozen=True)
class Bank:
    """Phrase banks of one policy bank, by dimension file: bank.section("tools")["names"].

    `data` holds each file as written: neutral tables at the top level (they apply to every
    harness) and domain tables under `domains: {<domain>: {...}}`. A bank with `domain=None`
    is unscoped: `section` merges every domain's tables in (what tests and tools that list
    the bank see). `for_harness(harness)` scopes it to the harness's domain
    (`core.hsa.domain.harness_domain`): neutral tables plus that domain's tables, nothing
    else; every registered transform is called with the scoped bank. `sources` names the
    folders the tables came from (shipped, then user layers), for Skip reasons."""

    name: BankName
    data: dict[str, dict[str, Any]]
    domain: str | None = None
    sources: tuple[str, ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def section(self, dimension: str) -> dict[str, Any]:
        key = f"section:{dimension}"
        if key not in self._cache:
            raw = self.data.get(dimension, {})
            out = {k: v for k, v in raw.items() if k != DOMAINS_KEY}
            domains = raw.get(DOMAINS_KEY) or {}
            if isinstance(domains, dict):
                for name, tables in domains.items():
                    if (self.domain is None or name == self.domain) and isinstance(tables, dict):
                        out = merge_tables(out, tables)
            self._cache[key] = out
        section: dict[str, Any] = self._cache[key]
        return section

    def domains(self) -> set[str]:
        """The domains some file of the bank has tables for."""
        out: set[str] = set()
        for raw in self.data.values():
            found = raw.get(DOMAINS_KEY)
            if isinstance(found, dict):
                out.update(str(d) for d in found)
        return out

    def scoped(self, domain: str) -> Bank:
        """The bank as a harness of `domain` sees it (neutral tables + `domain`'s)."""
        if self.domain == domain:
            return self
        key = f"scoped:{domain}"
        if key not in self._cache:
            self._cache[key] = Bank(self.name, self.data, domain, self.sources)
        scoped: Bank = self._cache[key]
        return scoped

    def for_harness(self, harness: Harness) -> Bank:
        """`scoped` to the domain of `harness` (an already scoped bank is kept as it is)."""
        if self.domain is not None:
            return self
        return self.scoped(harness_domain(harness))

    def label(self) -> str:
        """How Skip reasons name this bank: `train` or `train + /my/banks`."""
        return " + ".join([self.name.value, *self.sources[1:]])

    def strings(self) -> set[str]:
        """Every string value in the bank. Mapping keys are left out: synonym tables are keyed
        by the original names they replace, which are not text the bank contributes."""
        return _strings(list(self.data.values()))

    def domain_strings(self, domain: str) -> set[str]:
        """String values of the tables only harnesses of `domain` see, minus those a neutral
        table also has: what must never show up in a harness of another domain."""
        neutral = _strings(
            [{k: v for k, v in raw.items() if k != DOMAINS_KEY} for raw in self.data.values()]
        )
        scoped = _strings(
            [
                (raw.get(DOMAINS_KEY) or {}).get(domain, {})
                for raw in self.data.values()
                if isinstance(raw.get(DOMAINS_KEY), dict)
            ]
        )
        return scoped - neutral


def _strings(values: list[Any]) -> set[str]:
    out: set[str] = set()
    stack: list[Any] = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            out.add(value)
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return out


def banks_root() -> Path:
    return Path(resources.__file__).parent / "hsa"


@lru_cache(maxsize=4)
def load_bank(name: BankName | str, root: Path | None = None) -> Bank:
    """The policy bank `name` from `root` (default: the shipped banks, resources/hsa/), each
    `<dimension>.yaml` of `root/<name>/` validated (`core.hsa.banks`; BankError names the
    file and the table)."""
    bank = BankName(name)
    folder = (root or banks_root()) / bank.value
    return Bank(bank, read_bank_folder(folder), None, (str(folder),))
