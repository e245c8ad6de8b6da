"""The web page's declaration (`PLATFORM`): what shared code knows of the channel.

The page on this machine speaks as the local person (identity `local`; a
tenant's own `web_token` signs in as `tenant:<tid>`); `roost send --to
web[:<chat>]` pushes to open pages of the local tenant. See
`bridge.types.platform`.
"""

from __future__ import annotations

import re

from bridge.types.platform import Abilities, Platform

_CHAT = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _address(rest: str) -> str | None:
    if not rest:
        return "default"
    return rest if _CHAT.fullmatch(rest) else None


PLATFORM = Platform(
    name="web",
    title="the web page",
    style="The person reads in a web page that renders Markdown (code blocks, bold, links).",
    identity=re.compile(r"local"),
    address="web[:<chat>]",
    parse_address=_address,
    abilities=Abilities(voice=True, files=True, buttons=True, edits=True),  # the page plays
    loopback=True,
)
