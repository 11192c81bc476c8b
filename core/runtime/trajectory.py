"""What a model writes in one call, and a trajectory as the sequence of those outputs.

A gold trajectory is a list of AssistantTurn: the tool results between them come from the
environment (simulator or bindings), so HSA only has to remap what the model writes.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str = ""


class AssistantTurn(BaseModel):
    """One model output: visible text and zero or more tool calls."""

    model_config = ConfigDict(extra="forbid")

    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    parse_errors: list[str] = Field(
        default_factory=list,
        description="Why the output's tool calls could not be parsed; `content` is then the "
        "model's exact text and no call was run.",
    )

    @property
    def is_reply(self) -> bool:
        return not self.tool_calls and not self.parse_errors


class Trajectory(BaseModel):
    """The model's side of one agent request, in order."""

    model_config = ConfigDict(extra="forbid")

    viewer_message: str
    turns: list[AssistantTurn] = Field(default_factory=list)

    @property
    def final_reply(self) -> str | None:
        return self.turns[-1].content if self.turns and self.turns[-1].is_reply else None
