"""The terminal's declaration (`PLATFORM`, channel `cli`): what shared code knows of it.

`roost chat` and `roost send --tenant` speak as this machine's person
(identity `local`, the local tenant). See `bridge.types.platform`.
"""

from __future__ import annotations

import re

from bridge.types.platform import Abilities, Platform

PLATFORM = Platform(
    name="cli",
    title="the terminal",
    style="The person reads in a terminal: use plain text; fenced code blocks are fine.",
    identity=re.compile(r"local"),
    abilities=Abilities(files=True, edits=True),
    loopback=True,
)
