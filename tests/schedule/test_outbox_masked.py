"""The web page's proactive messages pass the tenant's masker of now on their way out.

An outbox entry is stored masked with the masker of when it was enqueued. A
value the operator puts in the vault afterwards must not stay readable in
`GET /api/outbox` (listed on every page load for the entry's retention) nor
in a push of an entry delivered later: both mask once more with the vault of
now, as the history, search, export and recall do. The web channel is wired
as `bridge.app.channels_up` wires it (`masks=` the vault's masker).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from bridge.app.build import Roost
from bridge.app.schedule_loop import ScheduleLoop
from bridge.channels.web.channel import WebChannel
from bridge.channels.web.push import WebPush
from bridge.loadout import vault
from bridge.loadout.mask import Masker
from bridge.schedule.outbox import OutboxEntry
from bridge.schedule.runtime import recent_messages
from tests.schedule.test_e2e_web import AUTH, TOKEN, remind
from tests.waits import until

VALUE = "Q7x9-Lmn2-Door"


@contextlib.asynccontextmanager
async def wired_page_server(roost: Roost) -> AsyncIterator[WebChannel]:
    local = roost.settings.local_tenant
    web = WebChannel(
        roost.core.handle,
        roost.command_list,
        TOKEN,
        "127.0.0.1",
        0,
        recent=lambda chat, after: recent_messages(roost.database, local, "web", chat, after),
        masks=lambda tenant: roost.loadout.vault.masker(roost.tenant_dirs(tenant)),
    )
    loop = ScheduleLoop(roost)
    await web.start()
    loop.deliveries.add("web", web.deliver)
    loop.start()
    try:
        yield web
    finally:
        await loop.stop()
        await web.stop()


async def test_a_value_vaulted_after_the_reminder_is_not_listed(roost: Roost) -> None:
    async with wired_page_server(roost) as web, aiohttp.ClientSession() as http:
        url = f"http://127.0.0.1:{web.port}/api/outbox?chat=default"

        async def listed() -> list[dict[str, Any]]:
            async with http.get(url, headers=AUTH) as response:
                return list((await response.json())["messages"])

        await remind(roost, f"door code {VALUE}")
        await until(listed, "the reminder listed")
        assert [m["text"] for m in await listed()] == [f"⏰ door code {VALUE}"]
        vault.set_value(roost.tenant_dirs(roost.settings.local_tenant), "door", VALUE)
        again = await listed()
    assert [m["text"] for m in again] == ["⏰ door code [vault:door]"]


async def test_a_push_of_an_entry_stored_before_the_vault_changed_is_masked() -> None:
    masks = {"local": {"door": VALUE}}

    def masker(tenant: str) -> Masker:
        return Masker(masks[tenant])

    push = WebPush(masks=masker)
    entry = OutboxEntry(
        id=7, tenant="local", channel="web", chat="default", key="job:1",
        text=f"⏰ door code {VALUE}", state="queued", created_ms=0, due_ms=0,
        attempts=1, last_error="", done_ms=None,
    )  # fmt: skip
    async with push.listen("local", "default") as queue:
        await push(entry)
        message = queue.get_nowait()
    assert message["text"] == "⏰ door code [vault:door]" and message["id"] == 7
