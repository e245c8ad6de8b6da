"""What a running turn reports besides its text: tool steps, retries, the model.

The agent loop reports each tool call (`ToolStep`: start, then done or
error, its arguments and result masked and cut), the backend's waits before
another attempt (`RetryStep`) and the turn the model it runs on
(`ModelInfo`), through a `ProgressSink` beside the text's `DeltaSink`.
A channel that shows none of it passes no sink. Imports nothing from the
project.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

SHOWN_CHARS = 500  # arguments and results are cut to this many characters

ToolState = Literal["start", "done", "error"]


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` cut for a progress display ("…" marks the cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class ToolStep:
    """A tool call starting or ending; `args` and `result` are masked and cut."""

    id: str
    name: str
    state: ToolState
    args: str
    result: str = ""  # on done / error
    ms: int = 0  # on done / error


@dataclass(frozen=True, slots=True)
class RetryStep:
    """The model server failed; another attempt follows (`attempt` of `max`)."""

    attempt: int
    max: int
    reason: str


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """The model this turn runs on (what /status names)."""

    model: str


Progress = ToolStep | RetryStep | ModelInfo

ProgressSink = Callable[[Progress], Awaitable[None]]
"""Awaited with each progress report of a running turn."""
