"""The web page's routes beyond chatting, wired to the roost: the conversation list
(rename, delete, search), edit and regenerate with versions, image thumbnails,
what the page shows before the first message (`/api/status`), and spoken answers.

`spoken_handle(roost)` is the core's `handle` with the answer's voice added
(`bridge.channels.web.speech`); `mount_extras(web, roost, handle)` adds the
routes of `web_chats`, `web_branch` and `web_thumbs` to the web channel's app
before it starts, under its gate (the same tokens, reloaded with it).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from bridge.app.roost import Roost
from bridge.channels.web.branch import WebBranches
from bridge.channels.web.channel import SECURITY_HEADERS, WebChannel
from bridge.channels.web.chats import WebChats
from bridge.channels.web.speech import speaking
from bridge.channels.web.thumbs import SIDE, Thumbnail, WebThumbs
from bridge.channels.web.turns import ProgressHandle
from bridge.core.conversation_edits import ConversationEdits, Unindex
from bridge.core.sessions import SessionKey
from bridge.llm.offline import CONFIG_ENV, CONFIG_TOML
from bridge.senses.decoders import DecodeFailed
from bridge.senses.pipeline import SensePipeline
from bridge.types.messages import Inbound
from bridge.types.session_key import SessionKey as ChatKey
from bridge.types.tenant_dirs import TenantDirs


def page_status(roost: Roost, key: SessionKey) -> dict[str, Any]:
    """What the page shows before the first message: the chat's model (a setup
    banner when none is configured), whether answers can be spoken, and the
    message limit in force (`[limits] max_message_chars`, reloads included: the
    page refuses a longer message before sending it; the core still decides)."""
    name = roost.models.chat_model(key.tenant, key.channel, key.chat)
    backend = roost.models.backend(name)
    configured = backend.name != "offline"
    voice = roost.voice
    body: dict[str, Any] = {
        "model": {"name": name, "describe": backend.describe(), "configured": configured},
        "speech": {
            "configured": voice.speaker is not None,
            "on": voice.commands.is_on(key.tenant, key.channel, key.chat),
        },
        "limits": {"max_message_chars": roost.core.limits.max_message_chars},  # reloads too
    }
    if not configured:
        body["setup"] = {"toml": CONFIG_TOML, "env": CONFIG_ENV}
    return body


def spoken_handle(roost: Roost) -> ProgressHandle:
    def out_dir(inbound: Inbound) -> Path | None:
        tenant = roost.resolver.resolve(inbound)
        return roost.tenant_dirs(tenant).out if tenant is not None else None

    return speaking(roost.core.handle, roost.voice.speak_hook("web"), out_dir)


def unindexing(roost: Roost) -> Unindex | None:
    """How a deleted conversation's words leave the search index (none: no index)."""
    index = roost.exchanges
    if index is None:
        return None

    async def unindex(key: ChatKey, started: float, archived: float) -> int:
        dirs = roost.tenant_dirs(key.tenant)
        return await index.unindex(dirs, key.channel, key.chat, started, archived)

    return unindex


def mount_extras(web: WebChannel, roost: Roost, handle: ProgressHandle) -> None:
    home = roost.settings.home

    def inbox(tenant: str) -> Path:
        return TenantDirs.of(home, tenant).inbox

    archive = roost.sessions.archive
    running = roost.core.running
    masker = roost.loadout.vault.masker
    edits = ConversationEdits(
        roost.database, archive, lambda t: masker(roost.tenant_dirs(t)), unindexing(roost), inbox
    )
    WebChats(web.gate, archive, edits, running, handle, lambda key: page_status(roost, key)).mount(
        web.app
    )
    WebBranches(
        web.gate,
        roost.sessions,
        running,
        web.handle,  # an edited or regenerated answer keeps its offers, as a sent one
        web.turns.viewers,
        web.final_json,
        SECURITY_HEADERS,
        inbox,
    ).mount(web.app)
    limit = roost.settings.limits.attachment_bytes
    WebThumbs(web.gate, roost.database, inbox, limit, thumbnails(roost.senses)).mount(web.app)


def thumbnails(senses: SensePipeline) -> Thumbnail:
    """Thumbnails made in the senses' decoder processes (the tenant's fair slot, the
    same pixel, scan, memory and time limits as a photo for the model), never here."""

    async def thumbnail(tenant: str, fd: int) -> tuple[str, bytes] | None:
        job = dataclasses.replace(senses.limits.job("image"), max_side=SIDE)
        try:
            result = await senses.decoders.decode(tenant, job, fd)
        except DecodeFailed:
            return None
        if not result.reply.ok or not result.blob:
            return None
        return result.reply.mime, result.blob

    return thumbnail
