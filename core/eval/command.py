"""The `hat eval run` line that reproduces an evaluation request.

The studio's Evaluate form previews the command its run is; `hat eval run` has defaults of its
own (8 items in flight, vLLM where installed) that differ from `EvalRequest`'s. Both read the
defaults from `RUN_DEFAULTS` here, and `run_command` writes every option whose value differs
from the CLI's default, so a previewed line pasted into a terminal starts the same request
(tests/test_eval_command.py parses the line back through the CLI and compares).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.eval.types import EvalRequest

RUN_DEFAULTS: dict[str, Any] = {
    "variants": 8,
    "samples": 1,
    "seed": 0,
    "concurrency": 8,
    "max_tokens": 256,
    "temperature": 0.0,
    "call_timeout_s": 120.0,
    "item_timeout_s": 600.0,
}
"""`hat eval run`'s option defaults (core/cli/eval_cmd.py reads them from here)."""

_OPTIONS: tuple[tuple[str, str], ...] = (
    ("variants", "--variants"),
    ("samples", "--samples"),
    ("seed", "--seed"),
    ("concurrency", "--concurrency"),
    ("max_tokens", "--max-tokens"),
    ("temperature", "--temperature"),
    ("call_timeout_s", "--call-timeout"),
    ("item_timeout_s", "--item-timeout"),
)


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def run_command(
    request: EvalRequest,
    *,
    oracle: bool = False,
    fixed_on: str | None = None,
) -> str:
    """The `hat eval run` line of `request`: `oracle` for the oracle (its model name is
    implied), `fixed_on` for the oracle fixed on that stored harness version. A URL is shown
    without its credentials (`redact_url`): a preview is for the screen and the clipboard."""
    from core.serving.client import redact_url  # heavy: openai, sqlalchemy, alembic

    parts = ["hat", "eval", "run"]
    if fixed_on:
        parts += ["--oracle-fixed", fixed_on]
    elif oracle:
        parts.append("--oracle")
    else:
        parts += ["--model", request.model]
        if request.adapter:
            parts += ["--adapter", request.adapter]
    for suite in request.suites:
        parts += ["-s", suite.value]
    if request.limit is not None:
        parts += ["--limit", str(request.limit)]
    for field, option in _OPTIONS:
        value = getattr(request, field)
        if value != RUN_DEFAULTS[field]:
            parts += [option, _value(value)]
    if request.harness:
        parts += ["--harness", request.harness]
    if request.base_url:
        parts += ["--base-url", redact_url(request.base_url)]
        if request.model_id:
            parts += ["--model-id", request.model_id]
    else:
        parts += ["--engine", request.engine]  # the CLI's default picks vLLM where installed
    if request.ifeval_path:
        parts += ["--ifeval", request.ifeval_path]
    if request.task_file:
        parts += ["--tasks", request.task_file]
    if request.judge_url:
        parts += ["--judge-url", redact_url(request.judge_url)]
    if request.judge_model:
        parts += ["--judge-model", request.judge_model]
    return shlex.join(parts)
