"""What a hook decided: allow, block(reason) or error(reason).

Its own module so that both kinds of hook runner (the declarative checks in
core/runtime/hooks.py and the Python child process in core/runtime/python_hooks.py) return it
without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

from core.runtime.trace import Decision


@dataclass(frozen=True)
class HookResult:
    decision: Decision
    reason: str = ""

    @classmethod
    def allow(cls, reason: str = "") -> HookResult:
        return cls(Decision.ALLOW, reason)

    @classmethod
    def block(cls, reason: str) -> HookResult:
        return cls(Decision.BLOCK, reason)

    @classmethod
    def error(cls, reason: str) -> HookResult:
        return cls(Decision.ERROR, reason)

    @property
    def blocks(self) -> bool:
        return self.decision is Decision.BLOCK
