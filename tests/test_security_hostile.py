"""Issue 34 part B: what a hostile harness, hook, server or URL can make the product do
(hang, leave processes behind, store secrets, write through links, exhaust memory, reach
the network). Each test failed on the code before its fix."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.harness.demo import load_demo_harness
from core.harness.models import Hook
from core.harness.schema import argument_errors
from core.runtime import Decision, HookInput, run_hook

# ----------------------------------------------------------------------------- B10. ReDoS

# repeated overlapping alternatives backtrack exponentially on "a" * n + "!" (under `re`
# for minutes; the `regex` engine optimises simpler nestings such as (a+)+ away)
_ALTERNATIVES = st.sampled_from(["a|aa", "aa|a", "a|a", "a|aa|aaa"])
_ENDINGS = st.sampled_from(["$", "b", "z$"])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=st.builds(lambda alt, end: f"({alt})+{end}", _ALTERNATIVES, _ENDINGS),
    where=st.sampled_from(["pattern", "patternProperties", "additionalProperties"]),
    n=st.integers(min_value=34, max_value=60),
)
def test_a_backtracking_schema_pattern_is_a_rejected_call_not_a_hang(
    pattern: str, where: str, n: int
) -> None:
    evil = "a" * n + "!"
    schema: dict[str, Any]
    if where == "pattern":
        schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}}
        arguments: dict[str, Any] = {"q": evil}
    elif where == "patternProperties":
        schema = {"type": "object", "patternProperties": {pattern: {"type": "integer"}}}
        arguments = {evil: 1}
    else:
        schema = {
            "type": "object",
            "patternProperties": {pattern: {"type": "integer"}},
            "additionalProperties": False,
        }
        arguments = {evil: 1}
    start = time.monotonic()
    errors = argument_errors(schema, arguments, timeout_s=0.2)
    assert time.monotonic() - start < 2.0
    assert errors and any("limit" in e for e in errors), errors


def test_schema_patterns_still_match_normally() -> None:
    schema = {
        "type": "object",
        "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d+$"}},
        "patternProperties": {"^x_": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert argument_errors(schema, {"sku": "ABC-12", "x_n": 3}) == []
    errors = argument_errors(schema, {"sku": "abc", "x_n": "no", "other": 1})
    assert len(errors) == 3, errors


def test_validate_tool_args_hook_obeys_its_timeout() -> None:
    hook = Hook(
        name="h",
        event="before_tool",
        kind="validate_tool_args",
        params={"schema": {"type": "object", "properties": {"q": {"pattern": "(a|aa)+$"}}}},
        timeout=0.3,
    )
    data = HookInput(
        event=hook.event,
        request_id="r",
        viewer_message="",
        tool="t",
        arguments={"q": "a" * 60 + "!"},
    )
    start = time.monotonic()
    result = asyncio.run(run_hook(hook, data, load_demo_harness()))
    assert time.monotonic() - start < 3.0
    assert result.decision is Decision.BLOCK
    assert "0.3 s limit" in result.reason


def test_schema_regexes_are_checked_at_import() -> None:
    from core.harness.schema import check_parameters_schema

    with pytest.raises(ValueError, match="unevaluatedProperties beside patternProperties"):
        check_parameters_schema(
            {"type": "object", "patternProperties": {"^x": {}}, "unevaluatedProperties": False}
        )
    with pytest.raises(ValueError, match=r"properties/q/pattern.*not a valid regex"):
        check_parameters_schema({"type": "object", "properties": {"q": {"pattern": "(?<n>a"}}})
