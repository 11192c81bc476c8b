"""Hook checks: what each declarative hook kind decides, and dispatch to Python hooks.

A hook sees a `HookInput` (the event and what the loop knows at that point) and returns a
`HookResult`: allow, block(reason) or error(reason).

Fail-open: a hook that errors (a Python hook that raises, hangs or prints garbage, a declarative
check that trips over unexpected data) is recorded in the trace with decision `error` and treated
as allow. A broken check must not take the live room down; the trace and the studio surface the
error so the operator fixes the hook. Checks that must hold even then belong in the tools.

Declarative kinds:

- `require_reply_skill` (before_reply): blocks a reply when no enabled reply-kind skill was
  loaded in this request (skills loaded in earlier requests of a chat do not count).
- `validate_tool_args` (before_tool): matched tools' arguments must also satisfy
  `params.schema` (the tool's own schema is always checked by the loop first); the schema's
  patterns share the hook's `timeout`, and arguments they cannot clear in time are blocked.
- `forbidden_claims` (before_reply or on_input): case-insensitive regexes searched in the reply,
  or on on_input in the viewer message.
- `fact_check` (before_reply): every number in the reply (`params.number_pattern`, value >=
  `ignore_below`) must occur among the numbers of this request's tool results (the results the
  model saw, not errors) or the viewer message. Numbers compare by value: "1,299", "1299.00" and
  1299 are equal; a comma followed by exactly three digits is a thousands separator, any other
  comma a decimal comma ("1,5" is 1.5).
- `reply_format` (before_reply): `max_chars`, `min_chars`, `forbid_markdown`, `forbid_patterns`
  (case-insensitive, like forbidden_claims), and never a leftover `<tool_call>` tag. All
  violations are reported together so one retry can fix them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from string import Template
from typing import Any, Protocol

from core.harness.hook_params import (
    FactCheckParams,
    ForbiddenClaimsParams,
    ReplyFormatParams,
    ValidateToolArgsParams,
    parse_params,
)
from core.harness.models import Harness, Hook, HookEvent, HookKind, SkillKind
from core.harness.patterns import Deadline, PatternTimeout, TimedPattern
from core.harness.render import AUDIENCE_VARIABLE
from core.harness.schema import argument_errors
from core.runtime.hook_result import HookResult as HookResult
from core.runtime.python_hooks import run_python_hook


@dataclass
class HookInput:
    """What a hook sees. `payload()` is the JSON a Python hook receives on stdin."""

    event: HookEvent
    request_id: str
    viewer_message: str
    turn: int = 0
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    result: Any = None
    reply: str | None = None
    loaded_skills: list[str] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    """This request's tool results so far: {"name", "arguments", "result"} each."""

    def payload(self, hook: Hook, harness: Harness | None = None) -> dict[str, Any]:
        return {
            "event": self.event.value,
            "hook": hook.name,
            "params": hook.params,
            "harness": harness.name if harness is not None else None,
            "request_id": self.request_id,
            "viewer_message": self.viewer_message,
            "turn": self.turn,
            "tool": self.tool,
            "arguments": self.arguments,
            "result": self.result,
            "reply": self.reply,
            "loaded_skills": list(self.loaded_skills),
            "tool_results": list(self.tool_results),
        }


def hooks_for(harness: Harness, event: HookEvent, tool: str | None = None) -> list[Hook]:
    """Enabled hooks of `event` whose matcher accepts `tool`, in harness order."""
    return [h for h in harness.active_hooks if h.event is event and h.matches(tool)]


def render_reminder(hook: Hook, reason: str, tool: str | None = None) -> str:
    """The hook's reminder template with ${reason}, ${hook} and ${tool}; the reason if empty."""
    if not hook.reminder.strip():
        return reason
    values = {"reason": reason, "hook": hook.name, "tool": tool or ""}
    return Template(hook.reminder).safe_substitute(values)


async def run_hook(hook: Hook, data: HookInput, harness: Harness) -> HookResult:
    """Run any hook kind; never raises (a failing check is a HookResult with decision error)."""
    if hook.kind is HookKind.PYTHON:
        return await run_python_hook(hook, data.payload(hook, harness))
    try:
        return check_declarative(hook, data, harness)
    except PatternTimeout as exc:
        return HookResult.error(f"{hook.kind.value} check timed out: {exc}")
    except Exception as exc:
        return HookResult.error(f"{hook.kind.value} check failed: {type(exc).__name__}: {exc}")


def check_declarative(hook: Hook, data: HookInput, harness: Harness) -> HookResult:
    """The decision of a declarative hook. Its patterns share one deadline of `hook.timeout`
    seconds (PatternTimeout past it), so no pattern can hold the event loop longer."""
    checks = {
        HookKind.REQUIRE_REPLY_SKILL: _require_reply_skill,
        HookKind.VALIDATE_TOOL_ARGS: _validate_tool_args,
        HookKind.FORBIDDEN_CLAIMS: _forbidden_claims,
        HookKind.FACT_CHECK: _fact_check,
        HookKind.REPLY_FORMAT: _reply_format,
    }
    check = checks.get(hook.kind)
    if check is None:
        return HookResult.error(f"{hook.kind.value} is not a declarative hook kind")
    return check(hook, data, harness)


def _require_reply_skill(hook: Hook, data: HookInput, harness: Harness) -> HookResult:
    for name in data.loaded_skills:
        skill = harness.skill(name)
        if skill is not None and skill.kind is SkillKind.REPLY:
            return HookResult.allow()
    options = [s.name for s in harness.active_skills if s.kind is SkillKind.REPLY]
    loader = harness.settings.load_skill_tool
    return HookResult.block(
        f"no reply skill was loaded before replying; call {loader} with one of: "
        + (", ".join(options) or "(none)")
    )


def _validate_tool_args(hook: Hook, data: HookInput, harness: Harness) -> HookResult:
    params: ValidateToolArgsParams = parse_params(hook.kind, hook.params)
    errors = argument_errors(params.schema_, data.arguments or {}, timeout_s=hook.timeout)
    if errors:
        return HookResult.block(f"arguments of {data.tool}: " + "; ".join(errors))
    return HookResult.allow()


def _audience(harness: Harness) -> str:
    """Who writes the request ("viewer" in the live room; "user" unless the harness's
    `audience` prompt variable says otherwise): no domain word reaches another harness."""

    return harness.prompt.variables.get(AUDIENCE_VARIABLE, "").strip() or "user"


def _forbidden_claims(hook: Hook, data: HookInput, harness: Harness) -> HookResult:
    params: ForbiddenClaimsParams = parse_params(hook.kind, hook.params)
    on_input = data.event is HookEvent.ON_INPUT
    text = data.viewer_message if on_input else (data.reply or "")
    where = f"the {_audience(harness)} message" if on_input else "the reply"
    deadline = Deadline(hook.timeout)
    for pattern in params.patterns:
        match = TimedPattern(pattern, deadline, ignore_case=True).search(text)
        if match:
            return HookResult.block(f"{where} contains a forbidden claim: {match.group(0)!r}")
    return HookResult.allow()


def _fact_check(hook: Hook, data: HookInput, harness: Harness) -> HookResult:
    params: FactCheckParams = parse_params(hook.kind, hook.params)
    pattern = TimedPattern(params.number_pattern, Deadline(hook.timeout))
    known = numbers_in(data.viewer_message, pattern)
    for entry in data.tool_results:
        known |= numbers_in(entry.get("result"), pattern)
    unsupported: list[str] = []
    for match in pattern.finditer(data.reply or ""):
        value = normalise_number(match.group(0))
        if value is None or Decimal(value) < Decimal(str(params.ignore_below)):
            continue
        if value not in known and match.group(0) not in unsupported:
            unsupported.append(match.group(0))
    if unsupported:
        return HookResult.block(
            f"the reply states numbers that no tool result or the {_audience(harness)} message "
            "contains: " + ", ".join(unsupported)
        )
    return HookResult.allow()


_MARKDOWN = [
    (re.compile(r"^\s{0,3}#{1,6}\s", re.MULTILINE), "a heading"),
    (re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__"), "bold text"),
    (re.compile(r"^\s*[-*+]\s+\S", re.MULTILINE), "a bullet list"),
    (re.compile(r"^\s*\d+[.)]\s+\S", re.MULTILINE), "a numbered list"),
    (re.compile(r"```"), "a code fence"),
    (re.compile(r"`[^`\n]+`"), "inline code"),
    (re.compile(r"\[[^\]\n]+\]\([^)\s]+\)"), "a link"),
    (re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE), "a table"),
]
_LEFTOVER_CALL = re.compile(r"</?tool_call>", re.IGNORECASE)


def markdown_features(text: str) -> list[str]:
    return [name for pattern, name in _MARKDOWN if pattern.search(text)]


def _reply_format(hook: Hook, data: HookInput, harness: Harness) -> HookResult:
    params: ReplyFormatParams = parse_params(hook.kind, hook.params)
    reply = data.reply or ""
    problems: list[str] = []
    if _LEFTOVER_CALL.search(reply):
        problems.append("the reply contains a leftover <tool_call> tag")
    if params.max_chars is not None and len(reply) > params.max_chars:
        problems.append(
            f"the reply is {len(reply)} characters, over the limit of {params.max_chars}"
        )
    if params.min_chars is not None and len(reply.strip()) < params.min_chars:
        problems.append(
            f"the reply is {len(reply.strip())} characters, under the minimum of {params.min_chars}"
        )
    if params.forbid_markdown:
        features = markdown_features(reply)
        if features:
            problems.append(
                f"the reply uses Markdown ({', '.join(features)}) but must be plain text"
            )
    deadline = Deadline(hook.timeout)
    for pattern in params.forbid_patterns:
        match = TimedPattern(pattern, deadline, ignore_case=True).search(reply)
        if match:
            problems.append(f"the reply contains {match.group(0)!r}")
    if problems:
        return HookResult.block("; ".join(problems))
    return HookResult.allow()


# ----------------------------------------------------------------------------- numbers

_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def normalise_number(text: str) -> str | None:
    """Canonical decimal string of a number as written: "1,299" / "1299.00" / "1299" -> "1299"."""
    cleaned = re.sub(r"[^\d.,]", "", text)
    if not cleaned:
        return None
    if _THOUSANDS.fullmatch(cleaned):
        cleaned = cleaned.replace(",", "")
    else:
        cleaned = cleaned.replace(",", ".")
    if cleaned.count(".") > 1:
        return None
    try:
        value = Decimal(cleaned.strip("."))
    except InvalidOperation:
        return None
    return _canonical(value)


def _canonical(value: Decimal) -> str | None:
    if not value.is_finite():
        return None
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "0") else text


class _FindsNumbers(Protocol):
    def finditer(self, text: str, /) -> Iterator[Any]: ...


def numbers_in(value: Any, pattern: _FindsNumbers) -> set[str]:
    """Canonical numbers in JSON data: numeric values, and numbers written inside strings."""
    found: set[str] = set()
    if isinstance(value, bool) or value is None:
        return found
    if isinstance(value, int | float):
        canonical = _canonical(Decimal(str(value)))
        if canonical is not None:
            found.add(canonical)
    elif isinstance(value, str):
        for match in pattern.finditer(value):
            number = normalise_number(match.group(0))
            if number is not None:
                found.add(number)
    elif isinstance(value, dict):
        for item in value.values():
            found |= numbers_in(item, pattern)
    elif isinstance(value, list | tuple):
        for item in value:
            found |= numbers_in(item, pattern)
    return found
