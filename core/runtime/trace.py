"""The structured record of one agent request: every message, step, decision and timing.

A Trace is what chat shows, what evaluation grades, what data generation turns into SFT rows and
what RL rewards read, so it holds everything and serialises to JSON losslessly
(`Trace.model_validate_json(trace.model_dump_json()) == trace`).

Steps form a discriminated union on `type`, in the order they happened; `on_event` receives
each one as it is appended. Every step carries `turn` (the 1-based model call it belongs to, 0
for on_input hooks) and `t_s` (seconds since the request started, when the step finished).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from core.runtime.trajectory import ToolCall, Trajectory


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceStatus(StrEnum):
    OK = "ok"
    RETRY_BUDGET_EXHAUSTED = "retry_budget_exhausted"
    MAX_TURNS = "max_turns"
    MODEL_ERROR = "model_error"
    BLOCKED_INPUT = "blocked_input"


class Decision(StrEnum):
    ALLOW = "allow"
    BLOCK = "block"
    ERROR = "error"


class ModelTiming(_Model):
    """Latency of one model call as the client measured it (DESIGN.md §3)."""

    ttft_s: float | None = None
    e2e_s: float = 0.0
    tpot_s: float | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None


class _Step(_Model):
    turn: int = 0
    t_s: float = 0.0


class ModelCallStep(_Step):
    type: Literal["model_call"] = "model_call"
    messages_sent: int = Field(description="The call saw Trace.messages[:messages_sent].")
    raw_output: str = Field(default="", description="Exactly what the model wrote.")
    content: str = Field(default="", description="Visible text, tool-call blocks removed.")
    tool_calls: list[ToolCall] = Field(default_factory=list)
    parse_errors: list[str] = Field(default_factory=list)
    finish_reason: str | None = None
    model: str | None = Field(
        default=None, description="The model id the server named as the one that answered."
    )
    timing: ModelTiming = Field(default_factory=ModelTiming)
    wall_s: float = Field(default=0.0, description="Wall time of the call as the loop saw it.")
    error: str | None = Field(default=None, description="Why the call failed (ModelError).")


class SkillLoadStep(_Step):
    type: Literal["skill_load"] = "skill_load"
    name: str
    call_id: str
    ok: bool
    kind: str | None = Field(default=None, description="reply | strategy when the skill exists.")
    error: str | None = None


class ToolCallStep(_Step):
    type: Literal["tool_call"] = "tool_call"
    name: str
    call_id: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = Field(default=None, description="The binding's JSON result; None on error.")
    error_kind: str | None = None
    error: str | None = None
    crashed: bool = False
    """The binding raised an exception of its own (a bug), not a ToolError it meant to give."""
    duration_s: float = 0.0


class HookStep(_Step):
    type: Literal["hook"] = "hook"
    hook: str
    kind: str
    event: str
    tool: str | None = None
    decision: Decision
    reason: str = ""
    reminder: str | None = Field(default=None, description="What the model was told on block.")
    duration_s: float = 0.0


class ReplyStep(_Step):
    type: Literal["reply"] = "reply"
    content: str
    accepted: bool
    blocked_by: str | None = None


Step = Annotated[
    ModelCallStep | SkillLoadStep | ToolCallStep | HookStep | ReplyStep,
    Field(discriminator="type"),
]


S = TypeVar("S", bound=_Step)


class Counts(_Model):
    model_calls: int = 0
    tool_calls: int = Field(default=0, description="Harness tool calls, load_skill excluded.")
    tool_errors: int = 0
    skill_loads: int = Field(default=0, description="Successful load_skill calls.")
    parse_errors: int = Field(default=0, description="Model outputs with unparseable calls.")
    hook_runs: int = 0
    hook_blocks: int = Field(default=0, description="All blocks, on_input included.")
    hook_errors: int = 0
    retries: int = Field(default=0, description="Replies blocked and asked again.")


class Trace(_Model):
    request_id: str
    harness: str
    viewer_message: str
    tool_protocol: str
    messages: list[dict[str, Any]] = Field(
        default_factory=list,
        description="The whole conversation: system prompt, history, this request, final reply.",
    )
    request_start: int = Field(
        default=0,
        description="Index of this request's viewer message in `messages`; before it: the system "
        "prompt and the history.",
    )
    steps: list[Step] = Field(default_factory=list)
    trajectory: Trajectory
    final_reply: str | None = None
    last_candidate: str | None = Field(
        default=None, description="The last reply the model proposed, accepted or not."
    )
    status: TraceStatus = TraceStatus.OK
    reason: str | None = Field(default=None, description="Why the status is not ok.")
    counts: Counts = Field(default_factory=Counts)
    loaded_skills: list[str] = Field(default_factory=list)
    started_at: datetime
    finished_at: datetime | None = None
    e2e_s: float = Field(default=0.0, description="Viewer message to final reply, wall time.")

    @property
    def ok(self) -> bool:
        return self.status is TraceStatus.OK

    def steps_of(self, kind: type[S]) -> list[S]:
        """The steps of one type, in order: `trace.steps_of(ToolCallStep)`."""
        return [s for s in self.steps if isinstance(s, kind)]

    def next_history(self) -> list[dict[str, Any]]:
        """The conversation without the system prompt: `history` for the next request."""
        messages = self.messages
        if messages and messages[0].get("role") == "system":
            messages = messages[1:]
        return [dict(m) for m in messages]
