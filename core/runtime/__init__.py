"""The agent loop and what it records: `AgentLoop.run(viewer_message) -> Trace`."""

from core.runtime.bindings import (
    Binding,
    BindingFn,
    Bindings,
    ToolContext,
    ToolError,
    ToolErrorKind,
)
from core.runtime.client import (
    CallTiming,
    ChatClient,
    Message,
    ModelError,
    ModelReply,
    ScriptedClient,
)
from core.runtime.hooks import HookInput, HookResult, check_declarative, run_hook
from core.runtime.loop import AgentLoop, EventCallback
from core.runtime.python_hooks import run_python_hook
from core.runtime.trace import (
    Counts,
    Decision,
    HookStep,
    ModelCallStep,
    ModelTiming,
    ReplyStep,
    SkillLoadStep,
    Step,
    ToolCallStep,
    Trace,
    TraceStatus,
)
from core.runtime.trajectory import AssistantTurn, ToolCall, Trajectory

__all__ = [
    "AgentLoop",
    "AssistantTurn",
    "Binding",
    "BindingFn",
    "Bindings",
    "CallTiming",
    "ChatClient",
    "Counts",
    "Decision",
    "EventCallback",
    "HookInput",
    "HookResult",
    "HookStep",
    "Message",
    "ModelCallStep",
    "ModelError",
    "ModelReply",
    "ModelTiming",
    "ReplyStep",
    "ScriptedClient",
    "SkillLoadStep",
    "Step",
    "ToolCall",
    "ToolCallStep",
    "ToolContext",
    "ToolError",
    "ToolErrorKind",
    "Trace",
    "TraceStatus",
    "Trajectory",
    "check_declarative",
    "run_hook",
    "run_python_hook",
]
