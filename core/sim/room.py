"""One simulated live room: a catalog, the room state, fault injection and a call log.

    room = LiveRoom(load_catalog(), task.room, faults=task.faults, seed=task.seed)
    bindings = Bindings()
    room.register(bindings)                     # every sim.* binding, inline=True
    trace = await AgentLoop(harness, client, bindings).run(task.viewer_message)
    room.calls                                  # what the model called and what came back

`room.bindings()` is the plain mapping binding -> fn(args, ctx) if you register yourself
(`Bindings.register_many` takes no `inline` flag, so register one by one with `inline=True`:
the handlers are cheap, pure and share the room's call counters, so they must not run in
worker threads). The mapping holds the nine demo-tool bindings (`HANDLERS`) and the distractor
bindings (`sim.distractor.*`, core/sim/distractors.py).

A room is stateful only in its call counters and log (fault specs count calls per binding), so
use one LiveRoom per agent request (or call `reset()` between requests).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.runtime.bindings import BindingFn, Bindings, ToolContext, ToolError, to_json_data
from core.sim.catalog import load_catalog
from core.sim.distractors import DISTRACTOR_HANDLERS
from core.sim.faults import FaultInjector, FaultRates, fault_error
from core.sim.handlers import HANDLERS
from core.sim.models import Catalog, FaultKind, FaultSpec, RoomState, Task

if TYPE_CHECKING:
    from core.sim.surface import HarnessSurface


@dataclass
class CallRecord:
    """One binding call as the room saw it."""

    index: int
    """0-based position in `LiveRoom.calls`."""
    binding: str
    tool: str
    """The harness's name for the tool (differs from the binding under HSA variants)."""
    args: dict[str, Any]
    call_no: int
    """1-based count of calls of this binding, this one included (what FaultSpec.on_call means)."""
    result: Any = None
    error_kind: str | None = None
    error: str | None = None
    fault: FaultKind | None = None
    """Set when the error was injected, not produced by the handler."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "binding": self.binding,
            "tool": self.tool,
            "args": self.args,
            "call_no": self.call_no,
            "result": self.result,
            "error_kind": self.error_kind,
            "error": self.error,
            "fault": self.fault.value if self.fault is not None else None,
        }


class LiveRoom:
    """The simulator behind the `sim.*` bindings for one room state."""

    def __init__(
        self,
        catalog: Catalog,
        state: RoomState,
        *,
        faults: list[FaultSpec] | tuple[FaultSpec, ...] = (),
        fault_rates: FaultRates | None = None,
        seed: int = 0,
    ) -> None:
        self.catalog = catalog
        self.state = state
        self.injector = FaultInjector(faults, fault_rates, seed=seed)
        self.calls: list[CallRecord] = []

    @classmethod
    def for_task(
        cls,
        task: Task,
        catalog: Catalog | None = None,
        *,
        fault_rates: FaultRates | None = None,
    ) -> LiveRoom:
        """The room of `task`: its state, its fault specs and its seed."""
        return cls(
            catalog if catalog is not None else load_catalog(),
            task.room,
            faults=task.faults,
            fault_rates=fault_rates,
            seed=task.seed,
        )

    # ------------------------------------------------------------------ bindings

    def bindings(self) -> dict[str, BindingFn]:
        """Binding name -> fn(args, ctx) for every demo tool and every distractor tool."""
        names = [*HANDLERS, *DISTRACTOR_HANDLERS]
        return {name: self._binding(name) for name in names}

    def register(self, bindings: Bindings) -> Bindings:
        """Register every binding on `bindings` with inline=True; returns `bindings`."""
        for name, fn in self.bindings().items():
            bindings.register(name, fn, inline=True)
        return bindings

    def _binding(self, name: str) -> BindingFn:
        def call(args: dict[str, Any], ctx: ToolContext) -> Any:
            return self.call(name, args, tool=ctx.tool)

        call.__name__ = name.replace(".", "_")
        call.__qualname__ = f"LiveRoom.{call.__name__}"
        return call

    # ------------------------------------------------------------------ calls

    def call(self, binding: str, args: dict[str, Any], *, tool: str | None = None) -> Any:
        """Run one binding call with fault injection and log it; raises ToolError on failure.

        Usable without the agent loop (the oracle and graders replay calls this way); `tool`
        defaults to the binding's demo tool name.
        """
        tool_name = tool or binding.rsplit(".", 1)[-1]
        record = CallRecord(
            index=len(self.calls),
            binding=binding,
            tool=tool_name,
            args=dict(args),
            call_no=self.injector.calls(binding) + 1,
        )
        self.calls.append(record)
        fault = self.injector.next_fault(binding)
        try:
            if fault is not None:
                preview = None
                if fault is FaultKind.MALFORMED:
                    try:
                        preview = self._run(binding, args)
                    except ToolError:
                        preview = None
                record.fault = fault
                raise fault_error(fault, tool_name, preview=preview, n=record.call_no)
            result = to_json_data(self._run(binding, args))
        except ToolError as exc:
            record.error_kind = exc.kind.value
            record.error = exc.message
            raise
        record.result = result
        return result

    def _run(self, binding: str, args: dict[str, Any]) -> Any:
        handler = HANDLERS.get(binding)
        if handler is not None:
            return handler(self.catalog, self.state, args)
        distractor = DISTRACTOR_HANDLERS.get(binding)
        if distractor is not None:
            return distractor(args)
        raise ToolError("error", f"the live room has no binding {binding!r}")

    def reset(self) -> None:
        """Forget the call log and the per-binding call counters (fault specs apply again)."""
        self.calls.clear()
        self.injector.reset()

    # ------------------------------------------------------------------ views

    def calls_of(self, binding: str) -> list[CallRecord]:
        return [c for c in self.calls if c.binding == binding]

    def faulted(self) -> list[CallRecord]:
        return [c for c in self.calls if c.fault is not None]


def room_bindings(room: LiveRoom, surface: HarnessSurface | None = None) -> Bindings:
    """The room's bindings (inline).

    The agent loop translates a tool's `binding_args` (model-facing name -> the binding's
    name) before it calls a binding, so a variant harness whose tools carry their renames in
    `binding_args` needs nothing more: its bindings receive canonical names. Only renames a
    `surface` knows from an explicit `param_names` mapping (a harness renamed without
    `binding_args`) and renamed enum values are translated here, for the names the loop left
    alone (`HarnessSurface.received_to_canonical`): nothing is translated twice, and the
    simulator's handlers, which read canonical names, see the same world under any harness.
    """
    bindings = Bindings()
    translate = surface is not None and surface.translates_received
    for name, fn in room.bindings().items():
        if translate and surface is not None:
            fn = _canonical_args(fn, name, surface)
        bindings.register(name, fn, inline=True)
    return bindings


def _canonical_args(fn: BindingFn, binding: str, surface: HarnessSurface) -> BindingFn:
    def call(args: dict[str, Any], ctx: ToolContext) -> Any:
        return fn(surface.received_to_canonical(binding, args, ctx.tool), ctx)

    return call
