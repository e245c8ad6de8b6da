"""What names one chat's session: a tenant, a channel and a chat (a protocol).

`bridge.core.sessions.SessionKey` is the dataclass the core makes; the stores that
only read these three fields (sessions' units, conversations, history pages, failed
turns, versions) take anything that has them.
"""

from __future__ import annotations

from typing import Protocol


class SessionKey(Protocol):
    @property
    def tenant(self) -> str: ...

    @property
    def channel(self) -> str: ...

    @property
    def chat(self) -> str: ...
