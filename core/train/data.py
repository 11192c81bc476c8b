"""Training data, torch-free: SFT rows, OPD prompts, dataset hashes, the compact prompt.

**SFT rows** are the JSONL lines `hat data generate` writes (core/datagen): OpenAI chat
`messages` (system prompt = the rendered harness variant, viewer message, assistant turns,
tool results as the harness's protocol renders them) plus `tools` and provenance. A row is
*usable* when it is not a rejected job, its messages are a list of role/content objects with
known roles, and at least one assistant message has content. `load_sft_rows` says why each
dropped row was dropped; zero usable rows is a `DataError` (the run fails with that reason).

**Compact system prompt** (`system_prompt: compact`, core/harness/render.py `compact_prompt`):
the harness's own "You are ..." sentence, the skill names, the tools with their parameters and
the call syntax: ~200 tokens instead of the demo's ~2.5k. It exists so CPU experiments and
tests can train on short rows; a model trained on it has not seen the served prompt, so never
use it for a model you deploy.

**OPD prompts**: `bank` is the bundled general-instruction prompt bank
(resources/train/opd_prompts.jsonl, made by core/train/prompt_bank.py from templates, never
from IFEval); a JSONL file may hold `prompt` (text or messages) or `messages` rows.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.harness.render import compact_prompt, persona_line
from core.jsonl import jsonl_lines

ROLES = frozenset({"system", "user", "assistant", "tool"})


class DataError(ValueError):
    """The data cannot train anything (the message says why); the run fails with it."""


@dataclass
class SftRows:
    rows: list[dict[str, Any]]
    read: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    harness_versions: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "rows_read": self.read,
            "rows_usable": len(self.rows),
            "rows_dropped": dict(self.dropped.most_common()),
            "harness_versions": self.harness_versions,
        }


def _row_problem(row: Any) -> str | None:
    if not isinstance(row, dict):
        return "not a JSON object"
    if "rejected" in row:
        return "a rejected job"
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        return "no messages"
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            return "a message without a known role"
        if not isinstance(message.get("content"), str):
            return "a message without text content"
    if not any(m["role"] == "assistant" and m["content"].strip() for m in messages):
        return "no assistant turn"
    return None


def load_sft_rows(paths: Sequence[str | Path], *, max_rows: int | None = None) -> SftRows:
    """Usable rows of the JSONL files, in order; DataError when none is usable."""
    out = SftRows(rows=[])
    versions: list[str] = []
    for item in paths:
        path = Path(item).expanduser()
        try:
            handle = path.open("r", encoding="utf-8")
        except OSError as exc:
            raise DataError(f"cannot read {path}: {exc.strerror}") from None
        with handle:
            for line in handle:
                if not line.strip():
                    continue
                out.read += 1
                try:
                    row = json.loads(line)
                except ValueError:
                    out.dropped["not valid JSON"] += 1
                    continue
                problem = _row_problem(row)
                if problem is not None:
                    out.dropped[problem] += 1
                    continue
                if max_rows is not None and len(out.rows) >= max_rows:
                    out.dropped["over max_rows"] += 1
                    continue
                out.rows.append(row)
                version = (row.get("provenance") or {}).get("harness_version")
                if isinstance(version, str) and version not in versions:
                    versions.append(version)
    out.harness_versions = versions
    if not out.rows:
        why = ", ".join(f"{n} {reason}" for reason, n in out.dropped.most_common()) or "empty"
        names = ", ".join(str(p) for p in paths)
        raise DataError(f"zero usable rows in {names} ({out.read} read: {why})")
    return out


def _category(row: dict[str, Any]) -> str:
    return str(row.get("category") or "?")


def _is_original(row: dict[str, Any]) -> bool:
    variant = (row.get("provenance") or {}).get("variant") or {}
    return int(variant.get("index") or 0) == 0


def reply_skills(row: dict[str, Any]) -> list[str]:
    """The skill names a row's trajectory loads, as loaded (an HSA rename counts under its new
    name: a skill renamed K ways is K slivers of the data, which is what these shares show)."""
    tools = row.get("tools") or []
    first = tools[0] if tools and isinstance(tools[0], dict) else {}
    loader = (first.get("function") or {}).get("name")  # rows list the skill loader first
    out: list[str] = []
    for turn in (row.get("trajectory") or {}).get("turns") or []:
        for call in turn.get("tool_calls") or []:
            if call.get("name") != loader:
                continue
            args = call.get("arguments") or {}
            name = next(iter(args.values()), None) if isinstance(args, dict) else None
            if isinstance(name, str):
                out.append(name)
    return out


def row_shares(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Shares of each category, of original-harness rows and of each loaded skill in `rows`
    (the SFT stage logs them: a skill or category that is a sliver of the data is the first
    suspect when a model stops using it)."""
    n = max(1, len(rows))
    categories = Counter(_category(r) for r in rows)
    skills = Counter(s for r in rows for s in set(reply_skills(r)))
    originals = sum(_is_original(r) for r in rows)
    return {
        "category": {k: round(v / n, 4) for k, v in sorted(categories.items())},
        "skill": {k: round(v / n, 4) for k, v in sorted(skills.items())},
        "original": {"rows": round(originals / n, 4)},
    }


def balance_rows(
    rows: Sequence[dict[str, Any]], *, seed: int = 0, by_category: bool = True,
    original_weight: int = 1, by_skill: bool = False,
) -> list[dict[str, Any]]:  # fmt: skip
    """`rows` reweighted so that no category or harness surface fades out of training:

    - `original_weight`: each original-harness row (variant 0) appears this many times, so
      the harness the model is deployed under keeps a share of the data however many variants
      each task has (with K = 3 an original row is otherwise a quarter of its task's rows);
    - `by_category`: rows of smaller categories are repeated (whole passes over the category,
      then a seeded draw for the remainder) until every category has as many rows as the
      largest, so a minority category — and the reply skill it needs — is as frequent in the
      batches as the majority's;
    - `by_skill`: the same, with rows grouped by the reply skill their task loads under the
      original harness (a variant's renamed skill counts as the skill it renames), so a skill
      that serves one category is as frequent as one that serves three (the live room's
      product-qa answers price, spec and stock: 60 % of the rows, and the skill a model
      falls back to when it cannot tell which one an ask needs).

    Deterministic in `seed`; the order is interleaved round-robin over categories (seeded
    within each), so even an unshuffled pass sees every category early."""

    weighted: list[dict[str, Any]] = []
    for row in rows:
        weighted.extend([row] * (original_weight if _is_original(row) else 1))
    original_skills = {
        str(row.get("task_id")): "+".join(reply_skills(row)) for row in rows if _is_original(row)
    }

    def key(row: dict[str, Any]) -> str:
        if by_skill:
            found = original_skills.get(str(row.get("task_id")))
            return found if found is not None else "+".join(reply_skills(row))
        return _category(row)

    by: dict[str, list[dict[str, Any]]] = {}
    for row in weighted:
        by.setdefault(key(row), []).append(row)
    rng = random.Random(f"balance:{seed}")
    target = max((len(v) for v in by.values()), default=0)
    groups: list[list[dict[str, Any]]] = []
    for name in sorted(by):
        group = list(by[name])
        if (by_category or by_skill) and len(group) < target:
            whole, rest = divmod(target, len(group))
            group = group * whole + rng.sample(group, rest)
        rng.shuffle(group)
        groups.append(group)
    out: list[dict[str, Any]] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def chat_row(row: dict[str, Any], *, system_prompt: str = "full") -> dict[str, Any]:
    """The conversational row SFT trains on: `messages` (+ `tools` for native tool calling).
    An assistant message marked `"train": false` (a recovery row's mistaken call,
    core/datagen/recovery.py) keeps the mark: the SFT stage does not train on it."""
    messages: list[dict[str, Any]] = []
    for m in row["messages"]:
        message: dict[str, Any] = {"role": m["role"], "content": m["content"]}
        if m.get("train") is False:
            message["train"] = False
        messages.append(message)
    tools = row.get("tools") if isinstance(row.get("tools"), list) else []
    if system_prompt == "compact" and messages and messages[0]["role"] == "system":
        persona = persona_line(str(messages[0]["content"]))
        messages[0] = {"role": "system", "content": compact_prompt(tools or [], persona=persona)}
    out: dict[str, Any] = {"messages": messages}
    if row.get("tool_protocol") == "native" and tools:
        out["tools"] = tools
    return out


# ----------------------------------------------------------------------------- prompts


def bank_path() -> Path:
    return Path(__file__).resolve().parents[2] / "resources" / "train" / "opd_prompts.jsonl"


def load_prompts(source: str, *, max_prompts: int | None = None) -> list[list[dict[str, str]]]:
    """OPD prompts as chat messages (bank or a JSONL file; tulu3 is read in training/)."""
    path = bank_path() if source == "bank" else Path(source).expanduser()
    prompts: list[list[dict[str, str]]] = []
    try:
        lines = jsonl_lines(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(f"cannot read the prompts {path}: {exc.strerror}") from None
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            continue
        messages = _prompt_messages(row)
        if messages:
            prompts.append(messages)
        if max_prompts is not None and len(prompts) >= max_prompts:
            break
    if not prompts:
        raise DataError(f"zero usable prompts in {path}")
    return prompts


def _prompt_messages(row: Any) -> list[dict[str, str]] | None:
    if not isinstance(row, dict):
        return None
    value = row.get("prompt", row.get("messages"))
    if isinstance(value, str) and value.strip():
        return [{"role": "user", "content": value}]
    if isinstance(value, list):
        messages = [
            {"role": m["role"], "content": m["content"]}
            for m in value
            if isinstance(m, dict) and m.get("role") in ROLES and isinstance(m.get("content"), str)
        ]
        # A conversation: train on the turn after its last user message.
        while messages and messages[-1]["role"] == "assistant":
            messages.pop()
        return messages or None
    return None


# ----------------------------------------------------------------------------- hashes


def files_hash(paths: Iterable[str | Path]) -> str:
    """sha256 over the files' names and bytes, in the order given."""
    digest = hashlib.sha256()
    for item in paths:
        path = Path(item).expanduser()
        digest.update(path.name.encode() + b"\0")
        try:
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except OSError:
            digest.update(b"<missing>")
    return digest.hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
