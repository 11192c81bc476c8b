"""What the status bar says about the model servers of the Chat page's server cards.

Each card publishes a `ServerStatus` (by its slot, "A" or "B") to the studio context; the
main window turns all of them into one `StatusLine`, so the status bar stays true whichever
page is showing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Tone = Literal["ok", "busy", "error", "off"]


@dataclass(frozen=True)
class ServerStatus:
    """One card's server: `state` is the card's (stopped, starting, running, failed, died);
    `label`, `url` and `managed` describe what it serves while running."""

    state: str
    label: str = ""
    url: str = ""
    managed: bool = False
    model_id: str = ""
    """The id requests name (an adapter's name on vLLM)."""


@dataclass(frozen=True)
class StatusLine:
    text: str
    tone: Tone
    tooltip: str


def server_status_line(servers: Mapping[str, ServerStatus]) -> StatusLine:
    """One line for every card: a server that stopped on its own comes first (it needs
    the user), then those running (what is served), then one starting, else none."""
    by_slot = sorted(servers.items())
    running = [(slot, s) for slot, s in by_slot if s.state == "running"]
    starting = [slot for slot, s in by_slot if s.state == "starting"]
    died = [slot for slot, s in by_slot if s.state == "died"]
    details = [
        f"Server {slot}: {s.label} at {s.url} ({'started here' if s.managed else 'attached'})"
        for slot, s in running
    ]
    details += [f"Server {slot}: starting" for slot in starting]
    details += [f"Server {slot}: stopped unexpectedly" for slot in died]
    tooltip = "\n".join(details)
    if died:
        text = "Model server stopped unexpectedly"
        if len(died) > 1:
            text = f"{len(died)} model servers stopped unexpectedly"
        return StatusLine(text, "error", tooltip + "\nRestart it on the Chat page")
    if running:
        text = running[0][1].label if len(running) == 1 else f"{len(running)} model servers"
        if starting:
            text += f" · {len(starting)} starting"
        return StatusLine(text, "ok", tooltip)
    if starting:
        return StatusLine("Starting a model server…", "busy", tooltip)
    return StatusLine("No model server", "off", "Start a model server from the Chat page")
