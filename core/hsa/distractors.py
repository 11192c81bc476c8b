"""Distractor tools and skills for harnesses outside the live room, and their implementation.

A live-room harness (core/hsa/domain.py) gets the live room's distractor tools
(`sim.distractor.*`, core/sim/distractors.py, which every LiveRoom runs) under bank names, and
the banks' live-room distractor skills. Any other harness gets distractors only from

1. a user bank: `distractor_tools` in tools.yaml (`{name, description, parameters, result}`:
   a tool no task needs, answered with the canned `result`) and `distractors` in skills.yaml
   (`{name, description, body}`), see docs/hsa-banks.md;
2. its own material: its disabled tools and skills. A disabled tool is needed by no task (the
   model cannot call it under the original harness); as a distractor it is switched on under
   its own name, schema and description but rebound to `hsa.distractor.<name>`, so calling it
   runs nothing of the operator's (a disabled `delete_account` stays harmless) and answers
   `UNAVAILABLE`. A disabled skill is switched on as a distractor (metadata `distractor`).

With neither, the transforms raise `Skip` naming the missing bank table, never borrowing the
live room's. Every HSA-made distractor tool of such a harness has a binding
`hsa.distractor.<name>` and its canned result in `annotations["x-hsa-result"]`;
`register_distractors(bindings, harness)` registers an inline implementation for each, and
`core.sim.distractors.is_distractor` counts both prefixes as distractors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from core.harness.models import Harness, Tool
from core.runtime.bindings import Bindings, ToolContext

BINDING_PREFIX = "hsa.distractor."
RESULT_KEY = "x-hsa-result"
"""Tool annotation holding the canned result of an HSA distractor tool."""
UNAVAILABLE: dict[str, Any] = {
    "status": "unavailable",
    "message": "This function is not available for this request.",
}
"""What a disabled tool turned distractor answers."""
EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def distractor_binding(name: str) -> str:
    return BINDING_PREFIX + name


def is_hsa_distractor(tool: Tool) -> bool:
    return tool.binding.startswith(BINDING_PREFIX)


def bank_tool(entry: dict[str, Any]) -> Tool:
    """A `distractor_tools` bank entry as a tool bound to `hsa.distractor.<name>`."""
    name = str(entry["name"])
    parameters = copy.deepcopy(entry.get("parameters") or EMPTY_PARAMETERS)
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    result = copy.deepcopy(entry.get("result", {}))
    return Tool.model_validate(
        {
            "name": name,
            "description": str(entry["description"]),
            "parameters": parameters,
            "binding": distractor_binding(name),
            "annotations": {RESULT_KEY: result},
        }
    )


def disabled_tool_distractor(tool: Tool) -> Tool:
    """A disabled tool switched on as a distractor: same name, description and schema, bound
    to `hsa.distractor.<name>` (its own implementation never runs), answering UNAVAILABLE."""
    annotations = {**tool.annotations, RESULT_KEY: copy.deepcopy(UNAVAILABLE)}
    return tool.model_copy(
        update={
            "enabled": True,
            "binding": distractor_binding(tool.name),
            "binding_args": {},
            "annotations": annotations,
            "trusted": True,
        }
    )


def _answer(result: Any) -> Callable[[dict[str, Any], ToolContext], Any]:
    def fn(args: dict[str, Any], ctx: ToolContext) -> Any:
        return copy.deepcopy(result)

    return fn


def register_distractors(bindings: Bindings, harness: Harness) -> None:
    """Register on `bindings` an inline implementation for every tool of `harness` bound to
    `hsa.distractor.*`: it returns the tool's canned result (`annotations["x-hsa-result"]`;
    `{}` when there is none), whatever the arguments. Other tools are left alone."""
    for tool in harness.tools:
        if is_hsa_distractor(tool):
            result = tool.annotations.get(RESULT_KEY, {})
            bindings.register(tool.binding, _answer(result), inline=True)
