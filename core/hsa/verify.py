"""Static verification of a remapped trajectory: does the variant treat it as the original did?

The principle: on every model output of the trajectory, the variant harness must make the same
decision the original made on the original output — a call that ran runs (its tool exists and
its arguments match the variant's schema and before_tool checks), a skill load that worked
works, a reply the hooks accepted is accepted, a reply they blocked is blocked — and the retry
budget must still cover the blocks. `decisions` computes those decisions without a simulator:

- skill loads: the skill exists and is enabled;
- tool calls: unknown tool / invalid arguments (the tool's JSON Schema) / blocked by a
  `validate_tool_args` hook / ok;
- the viewer message: `forbidden_claims` on_input hooks;
- replies: `require_reply_skill` (skills loaded so far), `forbidden_claims` and `reply_format`
  hooks.

Checks that need tool results (`fact_check`) or run user code (`python` hooks) cannot be
decided statically; the invariant tests replay every remapped gold through the real agent loop
in the simulator for those (tests/test_hsa_invariants.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from core.harness.models import Harness, Hook, HookEvent, HookKind, Tool
from core.harness.schema import argument_errors
from core.hsa.build import _skeleton, memo
from core.hsa.mapping import Fill, MappingChain
from core.runtime.hooks import HookInput, HookResult, check_declarative
from core.runtime.trajectory import AssistantTurn, ToolCall, Trajectory

T = TypeVar("T")

STATIC_REPLY_KINDS = frozenset(
    {HookKind.REQUIRE_REPLY_SKILL, HookKind.FORBIDDEN_CLAIMS, HookKind.REPLY_FORMAT}
)


@dataclass(frozen=True)
class Decision:
    """What the harness does with one model output (or the viewer message): `what` is a
    category compared across harnesses; `detail` says why, for messages."""

    where: str
    what: str
    detail: str = ""

    def same(self, other: Decision) -> bool:
        return self.where == other.where and self.what == other.what


def _static_hook_block(harness: Harness, event: HookEvent, data: HookInput) -> str | None:
    """Name and reason of the first statically checkable hook of `event` that blocks."""
    for hook in harness.active_hooks:
        if hook.event is not event or not hook.matches(data.tool):
            continue
        if event is HookEvent.BEFORE_TOOL and hook.kind is not HookKind.VALIDATE_TOOL_ARGS:
            continue
        if event is HookEvent.BEFORE_REPLY and hook.kind not in STATIC_REPLY_KINDS:
            continue
        if event is HookEvent.ON_INPUT and hook.kind is not HookKind.FORBIDDEN_CLAIMS:
            continue
        try:
            result = _checked(hook, data, harness)
        except Exception:  # the loop fails open on a crashing check; so do we
            continue
        if result.blocks:
            return f"{hook.name}: {result.reason}"
    return None


_RESULTS: dict[tuple[Any, ...], Any] = {}
RESULTS_LIMIT = 50_000
"""Cached check results kept before the cache is emptied."""


def _cached(key: tuple[Any, ...], compute: Callable[[], T]) -> T:
    if key in _RESULTS:
        return _RESULTS[key]  # type: ignore[no-any-return]
    value = compute()
    if len(_RESULTS) >= RESULTS_LIMIT:
        _RESULTS.clear()
    _RESULTS[key] = value
    return value


def _json_key(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _params_key(hook: Hook) -> str | None:
    """A hook's params as canonical JSON, memoised on the hook (while its params are the same
    object)."""
    return memo("verify-params", hook, (hook.params,), lambda: _json_key(hook.params))


def _checked(hook: Hook, data: HookInput, harness: Harness) -> HookResult:
    """`check_declarative`, cached for the checks that are pure functions of the hook's params
    and one text or argument set (forbidden_claims, reply_format, validate_tool_args): the
    same golds are verified against many variants that share those hooks, and the regexes
    and JSON Schemas cost far more than a lookup."""
    params = _params_key(hook)
    if params is None or hook.kind not in _PURE_KINDS:
        return check_declarative(hook, data, harness)
    if hook.kind is HookKind.VALIDATE_TOOL_ARGS:
        schema = hook.params.get("schema", {})
        if isinstance(schema, dict):
            canonical = memo(
                "verify-hook-skeleton", hook, (hook.params,), lambda: _canonical(schema)
            )
            if _valid_by_skeleton(canonical, schema, data.arguments or {}):
                return HookResult.allow()  # what the check says of valid arguments
        args = _json_key(data.arguments or {})
        if args is None:
            return check_declarative(hook, data, harness)
        key: tuple[Any, ...] = (hook.kind, params, data.tool, args)
    else:
        text = data.viewer_message if data.event is HookEvent.ON_INPUT else (data.reply or "")
        key = (hook.kind, params, data.event, text)
    return _cached(key, lambda: check_declarative(hook, data, harness))


_PURE_KINDS = frozenset(
    {HookKind.FORBIDDEN_CLAIMS, HookKind.REPLY_FORMAT, HookKind.VALIDATE_TOOL_ARGS}
)


def _argument_errors(tool: Tool, arguments: dict[str, Any]) -> list[str]:
    """`argument_errors(tool.parameters, arguments)`, cached.

    Whether arguments are valid is cached on the schema's *skeleton* (`core.hsa.build.
    _skeleton`: texts and defaults blanked, top-level properties renamed p0, p1, ... in a
    canonical order) with the arguments renamed alike, so a variant that renamed or reworded a
    tool reuses the original's check. That is exact where the schema's validation does not
    depend on property names beyond what the skeleton renames (`_name_free`); other schemas
    are cached on their own JSON. The messages of invalid arguments (rare in a gold) come
    from the real schema."""
    schema_of = tool.parameters
    canonical = memo("verify-skeleton", tool, (schema_of,), lambda: _canonical(schema_of))
    if _valid_by_skeleton(canonical, schema_of, arguments):
        return []
    schema = memo("verify-schema", tool, (tool.parameters,), lambda: _json_key(tool.parameters))
    args = _json_key(arguments)
    if schema is None or args is None:
        return argument_errors(tool.parameters, arguments)
    found = _cached(
        ("args", schema, args), lambda: tuple(argument_errors(tool.parameters, arguments))
    )
    return list(found)


def _valid_by_skeleton(
    canonical: tuple[str, dict[str, str]] | None, schema: dict[str, Any], arguments: Any
) -> bool:
    """True when `arguments` are valid for `schema`, decided on its skeleton (cached); False
    when they are not, or when that cannot be decided this way."""
    if canonical is None or not isinstance(arguments, dict):
        return False
    key, names = canonical
    args = _json_key({names.get(k, "\x01" + k): v for k, v in arguments.items()})
    if args is None:
        return False
    valid: bool = _cached(("valid", key, args), lambda: not argument_errors(schema, arguments))
    return valid


_NAME_FREE_KEYS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "unevaluatedProperties",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "description",
        "title",
        "$comment",
        "default",
        "examples",
    }
)
"""Keywords of an object schema whose meaning survives renaming its properties the way
`rename_properties` does (it renames `properties`, `required`, `dependentRequired`,
`dependentSchemas`, and the same inside allOf / anyOf / oneOf / not / if / then / else)."""


def _name_free(schema: Any) -> bool:
    """Whether validating against `schema` depends on property names only through the
    keywords `rename_properties` renames (no patternProperties, propertyNames, enum / const
    of whole objects, references...)."""
    if not isinstance(schema, dict) or not set(schema) <= _NAME_FREE_KEYS:
        return False
    for key in ("allOf", "anyOf", "oneOf"):
        subs = schema.get(key, [])
        if not isinstance(subs, list) or not all(_name_free(sub) for sub in subs):
            return False
    for key in ("not", "if", "then", "else"):
        if key in schema and not _name_free(schema[key]):
            return False
    deps = schema.get("dependentSchemas", {})
    return isinstance(deps, dict) and all(_name_free(sub) for sub in deps.values())


def _canonical(schema: Any) -> tuple[str, dict[str, str]] | None:
    """(skeleton JSON, property -> skeleton name) of an arguments schema, or None when its
    validation may depend on names in other ways (or it holds a reference)."""
    dumped = _json_key(schema)
    if dumped is None or "$ref" in dumped or "$dynamicRef" in dumped or not _name_free(schema):
        return None
    skeleton, names = _skeleton(schema)
    key = _json_key(skeleton)
    return (key, names) if key is not None else None


def _static_hooks(harness: Harness, event: HookEvent) -> tuple[Any, ...]:
    """What the static checks of `event` depend on: the enabled hooks' check-relevant fields
    (not their reminders), for telling whether two harnesses check alike."""
    return tuple(
        (h.name, h.kind, h.matcher, h.params) for h in harness.active_hooks if h.event is event
    )


@dataclass(frozen=True)
class Reference:
    """Decisions already made on `trajectory` under `harness`: `decisions` reuses one wherever
    the variant's tool / skill object and static hooks are those of the reference (a
    transform shares every component it does not change), so verifying a variant costs only
    what the variant changed."""

    harness: Harness
    trajectory: Trajectory
    decisions: list[Decision]


def _call_decision(
    harness: Harness, call: ToolCall, where: str, viewer: str, loaded: list[str]
) -> Decision:
    loader = harness.settings.load_skill_tool
    if call.name == loader:
        name = call.arguments.get("name")
        skill = harness.skill(name) if isinstance(name, str) else None
        if skill is None:
            return Decision(where, "unknown_skill", f"{loader} {call.arguments}")
        if skill.name not in loaded:
            loaded.append(skill.name)
        return Decision(where, "skill_loaded", skill.name)
    tool = harness.tool(call.name)
    if tool is None:
        return Decision(where, "unknown_tool", call.name)
    problems = _argument_errors(tool, call.arguments)
    if problems:
        return Decision(where, "invalid_arguments", f"{call.name}: {'; '.join(problems)}")
    data = HookInput(
        event=HookEvent.BEFORE_TOOL,
        request_id="verify",
        viewer_message=viewer,
        tool=call.name,
        arguments=call.arguments,
        loaded_skills=list(loaded),
    )
    blocked = _static_hook_block(harness, HookEvent.BEFORE_TOOL, data)
    if blocked is not None:
        return Decision(where, "blocked", blocked)
    return Decision(where, "ok", call.name)


def _same_call(harness: Harness, call: ToolCall, ref: Harness, old: ToolCall) -> bool:
    """True when `call` under `harness` must be decided like `old` under `ref`."""
    if call.arguments != old.arguments:
        return False
    new_loader = call.name == harness.settings.load_skill_tool
    if new_loader != (old.name == ref.settings.load_skill_tool):
        return False
    if new_loader:
        name, was = call.arguments.get("name"), old.arguments.get("name")
        return (
            isinstance(name, str) and isinstance(was, str) and harness.skill(name) is ref.skill(was)
        )
    if call.name != old.name:  # hooks match by tool name
        return False
    return harness.tool(call.name) is ref.tool(old.name)


def decisions(
    harness: Harness, trajectory: Trajectory, reference: Reference | None = None
) -> list[Decision]:
    """The harness's decision on the viewer message and on every output of the trajectory."""
    viewer = trajectory.viewer_message
    ref = reference
    if ref is not None and (
        len(ref.trajectory.turns) != len(trajectory.turns)
        or ref.trajectory.viewer_message != viewer
    ):
        ref = None
    same_tool_hooks = fewer_reply_hooks = same_input_hooks = False
    reply_hook_names: set[str] = set()
    ref_items: list[Decision] = []
    if ref is not None:
        ref_items = ref.decisions
        same_tool_hooks = _static_hooks(harness, HookEvent.BEFORE_TOOL) == _static_hooks(
            ref.harness, HookEvent.BEFORE_TOOL
        )
        reply_hooks = _static_hooks(harness, HookEvent.BEFORE_REPLY)
        ref_reply_hooks = _static_hooks(ref.harness, HookEvent.BEFORE_REPLY)
        fewer_reply_hooks = all(sig in ref_reply_hooks for sig in reply_hooks)
        reply_hook_names = {sig[0] for sig in reply_hooks}
        same_input_hooks = _static_hooks(harness, HookEvent.ON_INPUT) == _static_hooks(
            ref.harness, HookEvent.ON_INPUT
        )
    out: list[Decision] = []
    if same_input_hooks:
        out.append(ref_items[0])
    else:
        data = HookInput(event=HookEvent.ON_INPUT, request_id="verify", viewer_message=viewer)
        blocked = _static_hook_block(harness, HookEvent.ON_INPUT, data)
        out.append(Decision("input", "blocked" if blocked else "ok", blocked or ""))
    loaded: list[str] = []
    skills_alike = True  # every skill loaded so far is the reference's object
    for t, turn in enumerate(trajectory.turns, start=1):
        old_turn = ref.trajectory.turns[t - 1] if ref is not None else None
        if turn.parse_errors:
            out.append(Decision(f"turn {t}", "parse_error", "; ".join(turn.parse_errors)))
            continue
        if turn.tool_calls:
            for c, call in enumerate(turn.tool_calls, start=1):
                where = f"turn {t} call {c}"
                old = None
                if (
                    ref is not None
                    and old_turn is not None
                    and len(old_turn.tool_calls) == len(turn.tool_calls)
                ):
                    old = old_turn.tool_calls[c - 1]
                if (
                    ref is not None
                    and old is not None
                    and same_tool_hooks
                    and skills_alike
                    and _same_call(harness, call, ref.harness, old)
                ):
                    found = ref_items[len(out)] if len(out) < len(ref_items) else None
                    if found is not None and found.where == where:
                        decision = found
                        if decision.what == "skill_loaded" and decision.detail not in loaded:
                            loaded.append(decision.detail)
                        out.append(decision)
                        continue
                decision = _call_decision(harness, call, where, viewer, loaded)
                if decision.what == "skill_loaded" and ref is not None and old is not None:
                    was = old.arguments.get("name")
                    same = isinstance(was, str) and ref.harness.skill(was) is harness.skill(
                        decision.detail
                    )
                    skills_alike = skills_alike and same
                out.append(decision)
            continue
        where = f"turn {t} reply"
        if ref is not None and fewer_reply_hooks and skills_alike and old_turn is not None:
            found = ref_items[len(out)] if len(out) < len(ref_items) else None
            if found is not None and found.where == where and old_turn.content == turn.content:
                # the variant runs the reference's checks or a subset of them: an accepted
                # reply stays accepted; a blocked one stays blocked if its blocker is still on
                # (it was the first to block, so it still is)
                blocker = found.detail.split(":", 1)[0]
                if found.what == "accepted" or blocker in reply_hook_names:
                    out.append(found)
                    continue
        reply = HookInput(
            event=HookEvent.BEFORE_REPLY,
            request_id="verify",
            viewer_message=viewer,
            reply=turn.content,
            loaded_skills=list(loaded),
        )
        blocked = _static_hook_block(harness, HookEvent.BEFORE_REPLY, reply)
        out.append(Decision(where, "blocked" if blocked else "accepted", blocked or ""))
    return out


def blocks_needed(trajectory: Trajectory, original: list[Decision]) -> int:
    """Hook blocks the trajectory spends at least: every reply but an accepted last one was
    blocked (nothing else makes the loop ask again), plus the calls a check blocked."""
    replies = [i for i, turn in enumerate(trajectory.turns) if turn.is_reply]
    blocked_replies = len(replies)
    if replies and replies[-1] == len(trajectory.turns) - 1:
        last = next(d for d in reversed(original) if d.where.endswith("reply"))
        if last.what == "accepted":
            blocked_replies -= 1
    blocked_calls = sum(1 for d in original if d.what == "blocked" and "call" in d.where)
    return blocked_replies + blocked_calls


def ends_accepted(trajectory: Trajectory, original: list[Decision]) -> bool:
    return (
        bool(trajectory.turns) and trajectory.turns[-1].is_reply and original[-1].what == "accepted"
    )


def input_problems(decided: list[Decision]) -> list[str]:
    """Why a trajectory cannot be remapped at all (bad input), from its decisions under its own
    harness: a call to a tool or a load of a skill the harness does not have, or output whose
    tool calls could not be parsed (its raw text would keep the old names)."""
    problems: list[str] = []
    for decision in decided:
        if decision.what == "unknown_tool":
            problems.append(
                f"{decision.where}: calls {decision.detail!r}, not a tool of the harness"
            )
        elif decision.what == "unknown_skill":
            problems.append(
                f"{decision.where}: loads a skill the harness lacks ({decision.detail})"
            )
        elif decision.what == "parse_error":
            problems.append(f"{decision.where}: unparseable tool calls cannot be remapped")
    return problems


def compare(
    original: list[Decision], variant: list[Decision], *, labels: tuple[str, str] = ("", "")
) -> str | None:
    """The first decision the variant makes differently, as a sentence; None when all agree."""
    if len(original) != len(variant):
        return f"the variant sees {len(variant)} outputs, the original {len(original)}"
    for before, after in zip(original, variant, strict=True):
        if not before.same(after):
            detail = f" ({after.detail})" if after.detail else ""
            return f"{after.where}: {before.what} under the original, {after.what}{detail}"
    return None


def _equal_call(a: ToolCall, b: ToolCall) -> bool:
    return a.name == b.name and a.id == b.id and a.arguments == b.arguments


def _equal_turn(a: AssistantTurn, b: AssistantTurn) -> bool:
    return (
        a.content == b.content
        and a.parse_errors == b.parse_errors
        and len(a.tool_calls) == len(b.tool_calls)
        and all(_equal_call(x, y) for x, y in zip(a.tool_calls, b.tool_calls, strict=True))
    )


def inverse_problem(
    chain: MappingChain,
    original: Trajectory,
    remapped: Trajectory,
    fills: Iterable[Fill] | None = None,
) -> str | None:
    """None when mapping `remapped` back (with the `fills` of the remap that made it) gives
    `original` exactly. The mapping rewrites tool calls only, so the rest of every turn is
    compared as it is and each call is mapped back on its own (no trajectory copies)."""
    if remapped.viewer_message != original.viewer_message:
        return "the inverse changes the viewer message"
    if len(remapped.turns) != len(original.turns):
        return "the inverse changes the number of turns"
    by_call: dict[tuple[int, int], list[tuple[int, str]]] | None = None
    if fills is not None:
        by_call = {}
        for turn_index, call_index, step, param in fills:
            by_call.setdefault((turn_index, call_index), []).append((step, param))
    identity = chain.is_identity

    def filled_of(t: int, c: int) -> list[tuple[int, str]] | None:
        return None if by_call is None else by_call.get((t, c), [])

    def same_back(t: int, c: int, call: ToolCall, old: ToolCall) -> bool:
        if identity:
            return _equal_call(call, old)
        name, arguments = chain.inverse_parts(call, filled_of(t, c))
        return name == old.name and call.id == old.id and arguments == old.arguments

    for t, (turn, old) in enumerate(zip(remapped.turns, original.turns, strict=True)):
        calls, olds = turn.tool_calls, old.tool_calls
        if (
            turn.content == old.content
            and turn.parse_errors == old.parse_errors
            and len(calls) == len(olds)
            and all(same_back(t, c, x, olds[c]) for c, x in enumerate(calls))
        ):
            continue
        # not equal field by field: build the inverse turn (equal as JSON, or the message)
        if not identity and calls:
            calls = [chain.inverse_call(call, filled_of(t, c)) for c, call in enumerate(calls)]
        back = turn if calls is turn.tool_calls else turn.model_copy(update={"tool_calls": calls})
        if not _equal_turn(back, old) and back.model_dump(mode="json") != old.model_dump(
            mode="json"
        ):
            return (
                f"turn {t + 1}: the inverse gives {back.model_dump(mode='json')}, not the original"
            )
    return None


def schema_problems(harness: Harness, trajectory: Trajectory) -> list[str]:
    """Every tool call matches its schema and every loaded skill exists (invariant 1, static)."""
    return [
        f"{d.where}: {d.what} ({d.detail})"
        for d in decisions(harness, trajectory)
        if d.what in ("unknown_tool", "unknown_skill", "invalid_arguments", "parse_error")
    ]
