"""What a running turn shows in the terminal besides its text: one dim line per step.

A tool call is one line when it ends: the tool as the person knows it
(`me.wordcount`, not the wire name `me__wordcount`; an MCP tool as
`server.tool`), how long it ran and whether it worked:
`  tool me.wordcount · ok · 12 ms`. A retry of the model server is one line
too (`  retrying: the model server is busy (HTTP 429) · 1 of 3`). The
arguments and results stay out of the conversation (`/status` and the
audit say what ran). A name the model made up is shown with its control
characters replaced (`controls.shown`), never obeyed. Pure: `step_line`
turns a progress report into the line or None (nothing to show: a tool
starting, the model's name).
"""

from __future__ import annotations

import re

from bridge.channels.terminal.controls import shown
from bridge.types.progress import Progress, RetryStep, ToolStep
from forge.names import BadName, from_wire

_MCP = re.compile(r"^mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)__([A-Za-z0-9_-]+)$")


def person_name(wire: str) -> str:
    """A tool's name as the person knows it, from the name the model called."""
    try:
        return from_wire(wire)
    except BadName:
        pass
    found = _MCP.match(wire)
    return f"{found.group(1)}.{found.group(2)}" if found else wire


def duration(ms: int) -> str:
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def step_line(step: Progress) -> str | None:
    """The line a progress report shows as, or None."""
    if isinstance(step, ToolStep):
        if step.state == "start":
            return None
        state = "ok" if step.state == "done" else "error"
        return shown(f"  tool {person_name(step.name)} · {state} · {duration(step.ms)}")
    if isinstance(step, RetryStep):
        return shown(f"  retrying: {step.reason} · {step.attempt} of {step.max}")
    return None
