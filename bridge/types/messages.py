"""The message types every channel and the core share.

A channel turns platform input into an `Inbound`, hands it to the core and
sends back what the core yields: `Delta` pieces while a model answer grows
and exactly one `Final` at the end. Nothing platform-specific passes this
line. This module imports nothing from the project.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class Inbound:
    """One message from a person, as a channel received it."""

    channel: str  # "web" | "cli" | "telegram" | ...
    identity: str  # the platform's user id, as text ("local" for loopback)
    chat: str  # the platform's chat id, as text
    text: str
    msg_id: str  # unique per message within (channel, chat)
    is_private: bool = True  # a one-to-one chat (not a group)
    display_name: str = ""


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of an answer that is still growing."""

    text: str


FinalKind = Literal["answer", "command", "refusal", "error"]


@dataclass(frozen=True, slots=True)
class Final:
    """The complete reply; always the last thing the core yields."""

    text: str
    kind: FinalKind = "answer"


Outbound = Delta | Final


DeltaSink = Callable[[str], Awaitable[None]]
"""Awaited with each new piece of a growing answer."""

Handle = Callable[[Inbound, DeltaSink | None], Awaitable[Final]]
"""What a channel calls for each message: the core's `handle`."""
