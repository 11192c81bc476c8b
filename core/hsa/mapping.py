"""What a Harness-State Augmentation transform renamed, and how that rewrites trajectories.

A transform is a pure function `(harness, rng, bank) -> (harness', SurfaceMapping)`. The
mapping names every surface change a gold trajectory can see — tool names, parameter names,
skill names, the skill-loader name, default values the gold must now pass explicitly — keyed
by the names of the transform's *input* harness. `forward` rewrites a trajectory from the input
harness to the output harness; `inverse` undoes it exactly. Several transforms compose as a
`MappingChain`: forward in order, inverse in reverse order, so composition needs no merging
logic that could drift from the single-step rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.runtime.trajectory import AssistantTurn, ToolCall, Trajectory


class MappingError(ValueError):
    """A mapping that cannot be inverted (two names mapped to one) or applied."""


def _invert(names: Mapping[str, str], what: str) -> dict[str, str]:
    inverse: dict[str, str] = {}
    for old, new in names.items():
        if new in inverse:
            raise MappingError(f"{what}: {inverse[new]!r} and {old!r} both map to {new!r}")
        inverse[new] = old
    return inverse


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class SurfaceMapping(BaseModel):
    """One transform's renames, keyed by its input harness's names. Identity when empty."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: dict[str, str] = Field(default_factory=dict, description="tool -> new tool name")
    params: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="tool (input name) -> {param -> new param}"
    )
    explicit_defaults: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description=(
            "tool (input name) -> {param (input name) -> old default}: the transform changed "
            "the default, so a call that relied on the old one must now pass it explicitly"
        ),
    )
    skills: dict[str, str] = Field(default_factory=dict, description="skill -> new skill name")
    load_skill_tool: tuple[str, str] | None = Field(
        default=None, description="(old, new) name of the built-in skill loader"
    )

    @model_validator(mode="after")
    def _check_invertible(self) -> SurfaceMapping:
        _invert(self.tools, "tools")
        _invert(self.skills, "skills")
        for tool, params in self.params.items():
            _invert(params, f"parameters of {tool}")
        return self

    @property
    def is_identity(self) -> bool:
        return not (self.tools or self.params or self.explicit_defaults or self.skills) and (
            self.load_skill_tool is None or self.load_skill_tool[0] == self.load_skill_tool[1]
        )

    # ------------------------------------------------------------------ single names

    def tool(self, name: str) -> str:
        return self.tools.get(name, name)

    def skill(self, name: str) -> str:
        return self.skills.get(name, name)

    def param(self, tool: str, name: str) -> str:
        return self.params.get(tool, {}).get(name, name)

    def loader(self, name: str) -> str:
        if self.load_skill_tool is not None and name == self.load_skill_tool[0]:
            return self.load_skill_tool[1]
        return name

    # ------------------------------------------------------------------ trajectories

    def forward_call(self, call: ToolCall, loader: str) -> ToolCall:
        """Rewrite one call; `loader` is the skill-loader name of the input harness."""
        if call.name == loader:
            args = dict(call.arguments)
            if isinstance(args.get("name"), str):
                args["name"] = self.skill(args["name"])
            return call.model_copy(update={"name": self.loader(loader), "arguments": args})
        args = dict(call.arguments)
        for param, old_default in self.explicit_defaults.get(call.name, {}).items():
            args.setdefault(param, old_default)
        renamed = {self.param(call.name, k): v for k, v in args.items()}
        return call.model_copy(update={"name": self.tool(call.name), "arguments": renamed})

    def inverse(self) -> SurfaceMapping:
        """The mapping from the output harness back to the input harness."""
        tools = _invert(self.tools, "tools")
        params = {
            self.tool(tool): _invert(names, f"parameters of {tool}")
            for tool, names in self.params.items()
        }
        loader = None
        if self.load_skill_tool is not None:
            loader = (self.load_skill_tool[1], self.load_skill_tool[0])
        return SurfaceMapping(
            tools=tools,
            params=params,
            skills=_invert(self.skills, "skills"),
            load_skill_tool=loader,
        )

    def inverse_call(self, call: ToolCall, loader: str) -> ToolCall:
        """Undo `forward_call`; `loader` is the skill-loader name of the OUTPUT harness."""
        back = self.inverse().forward_call(call, loader)
        original = _invert(self.tools, "tools").get(call.name, call.name)
        defaults = self.explicit_defaults.get(original, {})
        if not defaults or back.name == self.loader_inverse(loader):
            return back
        args = {
            k: v for k, v in back.arguments.items() if not (k in defaults and _same(v, defaults[k]))
        }
        return back.model_copy(update={"arguments": args})

    def loader_inverse(self, name: str) -> str:
        if self.load_skill_tool is not None and name == self.load_skill_tool[1]:
            return self.load_skill_tool[0]
        return name


class MappingChain(BaseModel):
    """The mappings of transforms applied in order, with the loader name before each step."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[SurfaceMapping] = Field(default_factory=list)
    loaders: list[str] = Field(
        default_factory=list, description="skill-loader name of each step's input harness"
    )

    @model_validator(mode="after")
    def _check(self) -> MappingChain:
        if len(self.steps) != len(self.loaders):
            raise MappingError("a chain needs one loader name per step")
        return self

    def then(self, mapping: SurfaceMapping, loader: str) -> MappingChain:
        return MappingChain(steps=[*self.steps, mapping], loaders=[*self.loaders, loader])

    # ------------------------------------------------------------------ names through the chain

    def tool(self, name: str) -> str:
        for step in self.steps:
            name = step.tool(name)
        return name

    def skill(self, name: str) -> str:
        for step in self.steps:
            name = step.skill(name)
        return name

    def param(self, tool: str, name: str) -> str:
        for step in self.steps:
            name = step.param(tool, name)
            tool = step.tool(tool)
        return name

    # ------------------------------------------------------------------ trajectories

    def forward_call(self, call: ToolCall) -> ToolCall:
        for step, loader in zip(self.steps, self.loaders, strict=True):
            call = step.forward_call(call, loader)
        return call

    def inverse_call(self, call: ToolCall) -> ToolCall:
        if not self.steps:
            return call
        outputs = [*self.loaders[1:], self._final_loader()]
        for step, loader in zip(reversed(self.steps), reversed(outputs), strict=True):
            call = step.inverse_call(call, loader)
        return call

    def _final_loader(self) -> str:
        if not self.steps:
            return ""
        return self.steps[-1].loader(self.loaders[-1])

    def forward_turns(self, turns: Iterable[AssistantTurn]) -> list[AssistantTurn]:
        return [_map_turn(t, self.forward_call) for t in turns]

    def inverse_turns(self, turns: Iterable[AssistantTurn]) -> list[AssistantTurn]:
        return [_map_turn(t, self.inverse_call) for t in turns]

    def forward(self, trajectory: Trajectory) -> Trajectory:
        return trajectory.model_copy(update={"turns": self.forward_turns(trajectory.turns)})

    def inverse(self, trajectory: Trajectory) -> Trajectory:
        return trajectory.model_copy(update={"turns": self.inverse_turns(trajectory.turns)})


def _map_turn(turn: AssistantTurn, fn: Any) -> AssistantTurn:
    return turn.model_copy(update={"tool_calls": [fn(c) for c in turn.tool_calls]})
