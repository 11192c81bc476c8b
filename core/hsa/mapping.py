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

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.hsa.build import memo
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

    def loader_inverse(self, name: str) -> str:
        if self.load_skill_tool is not None and name == self.load_skill_tool[1]:
            return self.load_skill_tool[0]
        return name

    @property
    def _back(self) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, str]]:
        """Inverse tables: tools, params (keyed by the OUTPUT tool name), skills (memoised)."""

        def tables() -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, str]]:
            params = {
                self.tool(tool): _invert(names, f"parameters of {tool}")
                for tool, names in self.params.items()
            }
            return _invert(self.tools, "tools"), params, _invert(self.skills, "skills")

        return memo("mapping-back", self, (self.tools, self.params, self.skills), tables)

    # ------------------------------------------------------------------ calls

    def forward_args(
        self, name: str, arguments: dict[str, Any], loader: str
    ) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        """(name, arguments, filled) of one call after this step; `loader` is the skill-loader
        name of the input harness; `filled`: the parameters (input names) whose old default
        the step passed explicitly because the call relied on it."""
        if name == loader:
            args = dict(arguments)
            if isinstance(args.get("name"), str):
                args["name"] = self.skill(args["name"])
            return self.loader(loader), args, ()
        filled: tuple[str, ...] = ()
        defaults = self.explicit_defaults.get(name)
        if defaults:
            args = dict(arguments)
            for param, old_default in defaults.items():
                if param not in args:
                    args[param] = copy.deepcopy(old_default)
                    filled = (*filled, param)
            arguments = args
        renames = self.params.get(name)
        if renames:
            arguments = {renames.get(k, k): v for k, v in arguments.items()}
        elif not defaults:
            arguments = dict(arguments)
        return self.tools.get(name, name), arguments, filled

    def inverse_args(
        self,
        name: str,
        arguments: dict[str, Any],
        loader: str,
        filled: Iterable[str] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """Undo `forward_args`; `loader` is the skill-loader name of the OUTPUT harness.
        `filled`: the parameters (input names) `forward_args` filled in, which are dropped
        again — exact. Without it, a parameter whose value equals its old default is taken as
        filled in: exact unless the original call passed the old default explicitly."""
        tools, params, skills = self._back
        if name == loader:
            args = dict(arguments)
            if isinstance(args.get("name"), str):
                args["name"] = skills.get(args["name"], args["name"])
            return self.loader_inverse(loader), args
        renames = params.get(name)
        args = {renames.get(k, k): v for k, v in arguments.items()} if renames else dict(arguments)
        original = tools.get(name, name)
        defaults = self.explicit_defaults.get(original)
        if defaults:
            if filled is not None:
                for param in filled:
                    args.pop(param, None)
            else:
                for param, value in defaults.items():
                    if param in args and _same(args[param], value):
                        del args[param]
        return original, args

    def forward_call(self, call: ToolCall, loader: str) -> ToolCall:
        """Rewrite one call; `loader` is the skill-loader name of the input harness."""
        name, args, _ = self.forward_args(call.name, call.arguments, loader)
        return call.model_copy(update={"name": name, "arguments": args})

    def inverse(self) -> SurfaceMapping:
        """The mapping from the output harness back to the input harness (renames only: the
        explicit defaults are undone by `inverse_call`)."""
        tools, params, skills = self._back
        loader = None
        if self.load_skill_tool is not None:
            loader = (self.load_skill_tool[1], self.load_skill_tool[0])
        return SurfaceMapping(tools=tools, params=params, skills=skills, load_skill_tool=loader)

    def inverse_call(
        self, call: ToolCall, loader: str, filled: Iterable[str] | None = None
    ) -> ToolCall:
        """Undo `forward_call`; `loader` is the skill-loader name of the OUTPUT harness
        (`filled`: see `inverse_args`)."""
        name, args = self.inverse_args(call.name, call.arguments, loader, filled)
        return call.model_copy(update={"name": name, "arguments": args})


class Fill(NamedTuple):
    """An old default that a chain step passed explicitly in one call of a trajectory: turn and
    call index (from 0), the step (from 0) and the parameter's name at that step's input."""

    turn: int
    call: int
    step: int
    param: str


class Remapped(NamedTuple):
    """A trajectory mapped forward, and the defaults the mapping filled in (what `inverse`
    needs to be exact: a call that relied on an old default and one that passed it explicitly
    look the same after the forward mapping)."""

    trajectory: Trajectory
    fills: tuple[Fill, ...]


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
        """The chain with one more step (built without re-validating the steps, which are
        validated mappings already)."""
        if not isinstance(mapping, SurfaceMapping):
            raise MappingError(f"a chain step must be a SurfaceMapping, not {type(mapping)}")
        return MappingChain.model_construct(
            steps=[*self.steps, mapping], loaders=[*self.loaders, str(loader)]
        )

    @property
    def is_identity(self) -> bool:
        return not self._active

    @property
    def _active(self) -> list[tuple[int, SurfaceMapping, str, str]]:
        """(index, step, input loader, output loader) of the steps that change anything
        (memoised while the chain's lists are the same objects)."""

        def active() -> list[tuple[int, SurfaceMapping, str, str]]:
            outputs = [*self.loaders[1:], self._final_loader()]
            return [
                (i, step, self.loaders[i], outputs[i])
                for i, step in enumerate(self.steps)
                if not step.is_identity
            ]

        return memo("chain-active", self, (self.steps, self.loaders, *self.steps), active)

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

    # ------------------------------------------------------------------ calls

    def forward_filled(self, call: ToolCall) -> tuple[ToolCall, tuple[tuple[int, str], ...]]:
        """`forward_call` and the (step, parameter) defaults it filled in."""
        name, args = call.name, call.arguments
        filled: tuple[tuple[int, str], ...] = ()
        for i, step, loader, _ in self._active:
            name, args, added = step.forward_args(name, args, loader)
            if added:
                filled = (*filled, *((i, p) for p in added))
        if name == call.name and args is call.arguments:
            return call.model_copy(), filled
        return call.model_copy(update={"name": name, "arguments": args}), filled

    def forward_call(self, call: ToolCall) -> ToolCall:
        return self.forward_filled(call)[0]

    def inverse_call(
        self, call: ToolCall, filled: Iterable[tuple[int, str]] | None = None
    ) -> ToolCall:
        """Undo `forward_call`. `filled` (from `forward_filled`) makes it exact; without it a
        value equal to a changed default is taken as filled in (see
        `SurfaceMapping.inverse_args`)."""
        name, args = self.inverse_parts(call, filled)
        if name == call.name and args is call.arguments:
            return call.model_copy()
        return call.model_copy(update={"name": name, "arguments": args})

    def inverse_parts(
        self, call: ToolCall, filled: Iterable[tuple[int, str]] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """(name, arguments) of `inverse_call`, without building the call (verification
        compares them with the original's)."""
        by_step: dict[int, list[str]] | None = None
        if filled is not None:
            by_step = {}
            for step_index, param in filled:
                by_step.setdefault(step_index, []).append(param)
        name, args = call.name, call.arguments
        for i, step, _, output in reversed(self._active):
            params = None if by_step is None else by_step.get(i, [])
            name, args = step.inverse_args(name, args, output, params)
        return name, args

    def _final_loader(self) -> str:
        if not self.steps:
            return ""
        return self.steps[-1].loader(self.loaders[-1])

    # ------------------------------------------------------------------ trajectories

    def remap(self, trajectory: Trajectory) -> Remapped:
        """The trajectory mapped forward, with the defaults filled in on the way."""
        turns: list[AssistantTurn] = []
        fills: list[Fill] = []
        for t, turn in enumerate(trajectory.turns):
            calls: list[ToolCall] = []
            for c, call in enumerate(turn.tool_calls):
                mapped, filled = self.forward_filled(call)
                calls.append(mapped)
                fills.extend(Fill(t, c, step, param) for step, param in filled)
            turns.append(turn.model_copy(update={"tool_calls": calls}))
        return Remapped(trajectory.model_copy(update={"turns": turns}), tuple(fills))

    def forward(self, trajectory: Trajectory) -> Trajectory:
        return self.remap(trajectory).trajectory

    def inverse(
        self, trajectory: Trajectory, fills: Iterable[Fill | Iterable[Any]] | None = None
    ) -> Trajectory:
        """Map a trajectory of the final harness back. With the `fills` of the `remap` that
        produced it the result is exactly the original; without them a parameter whose value
        equals a changed default is taken as filled in (exact unless the original passed the
        old default explicitly)."""
        by_call: dict[tuple[int, int], list[tuple[int, str]]] | None = None
        if fills is not None:
            by_call = {}
            for fill in fills:
                turn, call, step, param = fill
                by_call.setdefault((int(turn), int(call)), []).append((int(step), str(param)))
        turns: list[AssistantTurn] = []
        for t, turn in enumerate(trajectory.turns):
            calls = [
                self.inverse_call(call, None if by_call is None else by_call.get((t, c), []))
                for c, call in enumerate(turn.tool_calls)
            ]
            turns.append(turn.model_copy(update={"tool_calls": calls}))
        return trajectory.model_copy(update={"turns": turns})

    def forward_turns(self, turns: Iterable[AssistantTurn]) -> list[AssistantTurn]:
        return [_map_turn(t, self.forward_call) for t in turns]

    def inverse_turns(self, turns: Iterable[AssistantTurn]) -> list[AssistantTurn]:
        return [_map_turn(t, self.inverse_call) for t in turns]


def _map_turn(turn: AssistantTurn, fn: Any) -> AssistantTurn:
    return turn.model_copy(update={"tool_calls": [fn(c) for c in turn.tool_calls]})
