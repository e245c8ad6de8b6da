"""The web page's turns under the chat's cluster lease (instances sharing one home).

A web turn runs on the instance that holds its HTTP request (`/api/chat`,
the event stream, edit and regenerate all go through one `handle`): it
cannot be handed to another instance as a webhook's update is. So with
`[database] url` PostgreSQL the composition root wraps the web's `handle`
in `leased`: the turn takes the lease `chat:web:<identity>:<chat>` (the same
per-chat leases as Telegram's and WhatsApp's people, `bridge.core.dispatch`),
waits while another instance holds it (its turn of this chat runs; at most
`wait_s`, then the person gets `BUSY`, an error reply, and nothing ran),
keeps it renewed while the turn runs and lets it go after. So one web
chat's turns run one at a time across the instances, in the order they
got the lease, and its conversation is written by one instance at a time.
With a `relay` (`bridge.channels.web.relay`) the turn is known to it while
the lease is held, so a Stop that reached another instance stops it here.
"""

from __future__ import annotations

from typing import Final as Constant

from bridge.channels.web.relay import StopRelay, chat_key
from bridge.channels.web.turns import ProgressHandle
from bridge.core.lease_hold import LeaseHold
from bridge.types.messages import DeltaSink, Final, Inbound
from bridge.types.progress import ProgressSink

WAIT_S: Constant = 60.0  # another instance's turn of this chat: a long model answer fits
BUSY: Constant = (
    "⏳ Another roost instance is still answering in this chat, so I could not take your "
    "message now. Please send it again in a moment."
)


def key_of(inbound: Inbound) -> str:
    """The chat's key in the dispatcher's names: its lease is `chat:<key>`."""
    return chat_key(inbound.identity, inbound.chat)


def leased(
    handle: ProgressHandle,
    hold: LeaseHold,
    wait_s: float = WAIT_S,
    relay: StopRelay | None = None,
) -> ProgressHandle:
    async def run(
        inbound: Inbound, on_delta: DeltaSink | None, on_progress: ProgressSink | None
    ) -> Final:
        async with hold.hold(key_of(inbound), wait_s) as held:
            if not held:
                return Final(BUSY, kind="error")
            if relay is None:
                return await handle(inbound, on_delta, on_progress)
            with relay.holding(inbound.identity, inbound.chat):
                return await handle(inbound, on_delta, on_progress)

    return run
