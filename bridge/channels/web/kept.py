"""The page's slash commands kept as they are answered: a wrapper of the core's handle.

`kept_commands(handle, …)` is the web channel's handle: every reply of kind
`command` to a message the page sent is kept in the `CommandLog` with the
current conversation (after the command: `/reset` is not kept, its effect
is the new conversation), the person's text and the reply masked by the
tenant's masker first, so a vaulted value is never written in clear. A
model answer (kind `answer`) that offers one-tap actions has them kept the
same way, with the time the session stored that answer (found by the
turn's msg_id; an answer that was not stored, `Final.unstored`, keeps none
and costs no read), so a reload shows them under it. Keeping is best effort:
a failure is logged and the reply goes out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from bridge.channels.web.commandlog import CommandLog, Sent
from bridge.channels.web.timeline import Timeline
from bridge.channels.web.turns import ProgressHandle
from bridge.core.conversations import ConversationArchive
from bridge.core.sessions import SessionKey
from bridge.types.masked import TextMask
from bridge.types.messages import DeltaSink, Final, Inbound
from bridge.types.progress import ProgressSink

log = logging.getLogger(__name__)

NOT_KEPT = frozenset({"reset"})


def command_name(text: str) -> str:
    """'memory' for '/memory show x', '' for a text that is no command."""
    head = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    return head[1:].partition("@")[0].lower() if head.startswith("/") else ""


def kept_commands(
    handle: ProgressHandle,
    commands: CommandLog,
    timeline: Timeline,
    archive: ConversationArchive,
    masks: Callable[[str], TextMask] | None,
    local_tenant: str,
    clock: Callable[[], float] = time.time,
) -> ProgressHandle:
    """`handle`, keeping each command the page sent and its reply (see the module)."""

    async def kept(
        inbound: Inbound, on_delta: DeltaSink | None, on_progress: ProgressSink | None
    ) -> Final:
        final = await handle(inbound, on_delta, on_progress)
        name = command_name(inbound.text)
        command = final.kind == "command" and bool(name) and name not in NOT_KEPT
        if command or (final.kind == "answer" and final.actions and not final.unstored):
            tenant = (
                local_tenant
                if inbound.identity == "local"
                else inbound.identity.removeprefix("tenant:")
            )
            try:
                await _keep(SessionKey(tenant, "web", inbound.chat), inbound, final)
            except Exception:  # the reply goes out all the same
                log.exception("web: the command could not be kept for the history")
        return final

    async def _keep(key: SessionKey, inbound: Inbound, final: Final) -> None:
        mask = (lambda text: text) if masks is None else masks(key.tenant).mask
        now = clock()
        actions = tuple({"label": mask(a.label), "command": mask(a.command)} for a in final.actions)
        answer = None
        if final.kind == "answer":  # a model answer's offers, under the answer stored
            answer = await timeline.answered_at(key, inbound.msg_id)
            if answer is None:
                return
        conversation = await archive.current(key, now)
        if answer is not None:
            sent = Sent(conversation, now, "", "", actions, answer=answer)
        else:
            sent = Sent(conversation, now, mask(inbound.text), mask(final.text), actions)
        await commands.add(key, sent, await timeline.conversations(key))

    return kept
