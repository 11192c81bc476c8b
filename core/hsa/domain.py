"""Which domain a harness belongs to, for HSA's banks.

The shipped banks (resources/hsa/) were written for the live-shopping room: their tool and
parameter synonyms are keyed by `sim.*` bindings and the live room's canonical parameter
names, their distractor tools are the live room's (`sim.distractor.*`), and their headings,
host names, reminders and skill phrases speak of viewers, links and streams. Such tables sit
under `domains: {live-room: ...}` in a bank file and apply only to a harness of that domain:

- **live-room**: some active or disabled tool is bound to `sim.<...>` (a simulator handler or
  a live-room distractor). The demo harness and its variants are live-room harnesses.
- **own**: every other harness (tools bound to `python:`, `mcp:`, `http:` or anything else,
  or no tools). It sees the banks' neutral tables (naming styles, masked-name prefixes, loader
  names, generic reminder wrappers, default notes) plus whatever a user bank gives it (under
  `domains: {own: ...}` or at the top level), and distractors only from a user bank or from its
  own disabled tools and skills (core/hsa/distractors.py).

The domain is decided from the bindings alone, so an HSA variant (renamed tools keep their
binding) has the domain of its original, and HSA-added distractor tools (`hsa.distractor.*`)
never change it.
"""

from __future__ import annotations

from core.harness.models import Harness

LIVE_ROOM = "live-room"
OWN = "own"
DOMAINS = (LIVE_ROOM, OWN)

SIM_PREFIX = "sim."


def harness_domain(harness: Harness) -> str:
    """`live-room` when a tool of `harness` is bound to `sim.*`, else `own` (module doc)."""
    return LIVE_ROOM if any(t.binding.startswith(SIM_PREFIX) for t in harness.tools) else OWN
