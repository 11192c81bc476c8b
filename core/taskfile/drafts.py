"""Production conversations as task drafts: what went wrong in front of users becomes a task.

An operator exports real conversations (OpenAI chat JSONL, one conversation a line: `messages`
with the assistant's `tool_calls` and the `tool` results, as fine-tuning files and most
gateways log them; the studio's chat export writes the same shape). Each conversation becomes
a **draft**: a task-file line (core/taskfile/models.py) whose message is the last user turn,
whose history is the turns before it, whose gold calls are the calls the agent made after that
message, whose skills are the skills it loaded, and whose reference is the reply it gave;
`facts` are suggested from the reply's phrases that a tool returned (the operator keeps, fixes
or drops them). A draft is unreviewed: it grades nothing until the operator accepts it into the
task file's train or test split, fixing the gold first where the agent got it wrong, or drops it.

Drafts live beside their task file (`<tasks>.drafts.jsonl`), so a task file stays what it was:
every line a reviewed task. Personal data (e-mail addresses, phone numbers, payment-card
numbers) is masked by default as it is read, in every text and argument; a masked value the
tools need (a customer looked up by e-mail) is the operator's to fix at review, and each draft
says how many values were masked.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.harness.folder.safe_write import write_new
from core.jsonl import jsonl_lines, loads_line
from core.taskfile.models import OwnTask, TaskFileError, TaskSplit, load_task_file

DRAFTS_SUFFIX = ".drafts.jsonl"
DRAFT_KEY = "draft"
"""The key of a draft line's review data (status, source, masked); never in a task file."""
DEFAULT_LOADER = "load_skill"
MAX_FACT_CHARS = 60

# ----------------------------------------------------------------------------- masking

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
CARD = re.compile(r"(?<![\w-])[3-6]\d(?:[ -]?\d){11,17}(?![\w-])")
PHONE = re.compile(r"(?<![\w-])\+?\(?\d[\d ().-]{6,18}\d(?![\w-])")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _phone_like(text: str) -> bool:
    """A phone number as people write one: 8 to 15 digits, and either a leading + or digit
    groups split by spaces, dots, dashes or brackets. A bare run of digits (an ISBN, an order
    number) or an ISO date is not one."""
    digits = re.sub(r"\D", "", text)
    if not 8 <= len(digits) <= 15:
        return False
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    return text.startswith("+") or bool(re.search(r"\d[ ().-]+\d", text))


def mask_text(text: str, counts: Counter[str]) -> str:
    """`text` with e-mail addresses, card numbers (Luhn-valid, 13-19 digits from a card
    network's first digit) and phone numbers replaced by [email], [card], [phone]."""

    def email(match: re.Match[str]) -> str:
        counts["email"] += 1
        return "[email]"

    def card(match: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", match.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits):
            counts["card"] += 1
            return "[card]"
        return match.group(0)

    def phone(match: re.Match[str]) -> str:
        if _phone_like(match.group(0)):
            counts["phone"] += 1
            return "[phone]"
        return match.group(0)

    text = EMAIL.sub(email, text)
    text = CARD.sub(card, text)
    return PHONE.sub(phone, text)


def _mask_value(value: Any, counts: Counter[str]) -> Any:
    if isinstance(value, str):
        return mask_text(value, counts)
    if isinstance(value, list):
        return [_mask_value(v, counts) for v in value]
    if isinstance(value, dict):
        return {k: _mask_value(v, counts) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------- reading a log


class ChatLogError(ValueError):
    """A conversation that cannot be a draft; the message names the line and the cause."""


@dataclass
class ImportReport:
    drafts: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One line per skipped conversation: `file:line: why`."""
    masked: Counter[str] = field(default_factory=Counter)


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def _arguments(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ChatLogError(f"{where}: a tool call's arguments are not a JSON object")
    return data


def _scalars(value: Any) -> list[str]:
    """Every short string or number in a tool result (a JSON text is read as JSON)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value] if len(value) <= MAX_FACT_CHARS else []
        if isinstance(parsed, str):
            return [parsed] if len(parsed) <= MAX_FACT_CHARS else []
        return _scalars(parsed)
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [str(value)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    return []


def suggested_facts(reply: str, tool_results: list[Any]) -> list[str]:
    """Values a tool returned that the reply states (as the graders read a reply), longest
    first, each once: a starting point for the operator's facts, not a grade."""
    from core.taskfile.grading import states  # heavy: jsonschema, regex

    seen: set[str] = set()
    facts: list[str] = []
    values = sorted({s.strip() for r in tool_results for s in _scalars(r)}, key=len, reverse=True)
    for value in values:
        key = value.lower()
        if len(value) < 3 or key in seen or any(key in f.lower() for f in facts):
            continue
        if states(reply, value):
            facts.append(value)
            seen.add(key)
    return facts


def draft_from_messages(
    messages: Any, *, where: str, loader: str = DEFAULT_LOADER, mask: bool = True
) -> tuple[dict[str, Any], Counter[str]]:
    """One conversation as a draft line (module doc) and what was masked in it."""
    counts: Counter[str] = Counter()
    if not isinstance(messages, list) or not messages:
        raise ChatLogError(f"{where}: no messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise ChatLogError(f"{where}: messages[{i}] is not a chat message with a known role")
    users = [i for i, m in enumerate(messages) if m["role"] == "user" and _text(m.get("content"))]
    if not users:
        raise ChatLogError(f"{where}: no user message")
    last = users[-1]
    after = messages[last + 1 :]
    replies = [m for m in after if m["role"] == "assistant" and _text(m.get("content")).strip()]
    if not replies:
        raise ChatLogError(f"{where}: the last user message has no reply")
    history = [
        {"role": m["role"], "content": _text(m.get("content"))}
        for m in messages[:last]
        if m["role"] in ("user", "assistant") and _text(m.get("content")).strip()
    ]
    calls: list[dict[str, Any]] = []
    skills: list[str] = []
    results: list[Any] = []
    for m in after:
        for call in m.get("tool_calls") or [] if m["role"] == "assistant" else []:
            fn = call.get("function") if isinstance(call, dict) else None
            name = fn.get("name") if isinstance(fn, dict) else None
            if not isinstance(name, str) or not name:
                raise ChatLogError(f"{where}: a tool call has no function name")
            arguments = _arguments(fn.get("arguments"), where) if isinstance(fn, dict) else {}
            if name == loader and isinstance(arguments.get("name"), str):
                skills.append(arguments["name"])
            else:
                calls.append({"tool": name, "arguments": arguments})
        if m["role"] == "tool":
            results.append(m.get("content"))
    reply = _text(replies[-1].get("content")).strip()
    message = _text(messages[last].get("content"))
    if mask:
        message, reply = mask_text(message, counts), mask_text(reply, counts)
        history = _mask_value(history, counts)
        calls = _mask_value(calls, counts)
        results = _mask_value(results, Counter())  # the same values: counted once, above
    digest = hashlib.sha256(json.dumps([message, history, calls], sort_keys=True).encode())
    draft = {
        "id": f"draft-{digest.hexdigest()[:10]}",
        "message": message,
        "history": history,
        "facts": suggested_facts(reply, results),
        "reference": reply,
        "gold_calls": calls,
        "skills": list(dict.fromkeys(skills)),
        "category": "imported",
        "split": TaskSplit.TRAIN.value,
        DRAFT_KEY: {"status": "unreviewed", "source": where, "masked": dict(counts)},
    }
    if not history:
        del draft["history"]
    return draft, counts


def read_chat_log(path: Path, *, loader: str = DEFAULT_LOADER, mask: bool = True) -> ImportReport:
    """Every conversation of a chat log as a draft; a line that cannot be one is a problem
    naming its line, and the rest are read (ChatLogError only for an unreadable file)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ChatLogError(f"{path}: cannot read the chat log ({exc})") from None
    report = ImportReport()
    ids: set[str] = set()
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = loads_line(line)
        except ValueError as exc:
            report.problems.append(f"{where}: not JSON ({exc})")
            continue
        messages = data.get("messages") if isinstance(data, dict) else data
        try:
            draft, counts = draft_from_messages(messages, where=where, loader=loader, mask=mask)
        except ChatLogError as exc:
            report.problems.append(str(exc))
            continue
        if draft["id"] in ids:
            report.problems.append(f"{where}: the same conversation as an earlier line")
            continue
        ids.add(draft["id"])
        report.drafts.append(draft)
        report.masked.update(counts)
    return report


# ----------------------------------------------------------------------------- the drafts file


def drafts_path(task_file: Path) -> Path:
    return task_file.with_name(task_file.name.removesuffix(".jsonl") + DRAFTS_SUFFIX)


def load_drafts(task_file: Path) -> list[dict[str, Any]]:
    path = drafts_path(task_file)
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(f"{path}: cannot read the drafts ({exc})") from None
    drafts = []
    for number, line in enumerate(jsonl_lines(text), start=1):
        if line.strip():
            try:
                drafts.append(loads_line(line))
            except ValueError as exc:
                raise TaskFileError(f"{path}:{number}: not JSON ({exc})") from None
    return drafts


def _lines(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def save_drafts(task_file: Path, drafts: list[dict[str, Any]]) -> None:
    write_new(drafts_path(task_file), _lines(drafts))


def add_drafts(task_file: Path, new: list[dict[str, Any]]) -> int:
    """Append drafts not already there (by id) or already tasks; how many were added."""
    drafts = load_drafts(task_file)
    known = {d.get("id") for d in drafts}
    if task_file.exists():
        known |= {t.id for t in load_task_file(task_file)}
    fresh = [d for d in new if d["id"] not in known]
    if fresh:
        save_drafts(task_file, drafts + fresh)
    return len(fresh)


def as_task(draft: dict[str, Any], **changes: Any) -> OwnTask:
    """The task a draft becomes (its review data left out), with the operator's changes."""
    data = {k: v for k, v in draft.items() if k != DRAFT_KEY}
    data.update({k: v for k, v in changes.items() if v is not None})
    try:
        return OwnTask.model_validate(data)
    except ValueError as exc:
        raise TaskFileError(f"draft {draft.get('id')}: {exc}") from None


def accept(task_file: Path, draft_id: str, *, split: TaskSplit | str, **changes: Any) -> OwnTask:
    """Move a draft into the task file's `split` (with the operator's fixes: facts,
    gold_calls, skills, reference, category, id): one line appended, the file replaced
    through a temporary sibling, then the drafts file; a crash between the two leaves the task
    in both, and a later import skips it as a task."""
    drafts = load_drafts(task_file)
    match = [d for d in drafts if d.get("id") == draft_id]
    if not match:
        raise TaskFileError(f"{drafts_path(task_file)}: no draft {draft_id!r}")
    task = as_task(match[0], split=TaskSplit(split).value, **changes)
    tasks = load_task_file(task_file) if task_file.exists() else []
    if any(t.id == task.id for t in tasks):
        raise TaskFileError(f"{task_file}: a task {task.id!r} is already there")
    before = task_file.read_bytes() if task_file.exists() else b""
    if before and not before.endswith(b"\n"):
        before += b"\n"
    line = task.model_dump(mode="json", exclude_defaults=True)
    line.update(id=task.id, message=task.message, split=task.split.value)
    write_new(task_file, before + _lines([line]))  # the operator's lines kept byte for byte
    save_drafts(task_file, [d for d in drafts if d.get("id") != draft_id])
    return task


def drop(task_file: Path, draft_id: str) -> None:
    drafts = load_drafts(task_file)
    kept = [d for d in drafts if d.get("id") != draft_id]
    if len(kept) == len(drafts):
        raise TaskFileError(f"{drafts_path(task_file)}: no draft {draft_id!r}")
    save_drafts(task_file, kept)
