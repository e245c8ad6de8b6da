"""The channel table: which chat platforms a running roost starts, and how.

`CHANNELS` has one row per platform (name, enabled(settings), factory, and
the platform's declaration, `bridge.types.platform.Platform`); a factory
makes the channel from the settings and the roost and returns it as
`Launched` (the channel, what to print once it is up, its port, and the
outbox's `deliver` for it). `PLATFORMS` is the registry of the table (the
declarations shared code reads: audit channels, `<platform>_ids`, `send
--to`, speech, the base prompt). A new platform is one package, one config
section and one row (`tests/spine/test_channel_table.py` registers a toy one
in one file).
`serve()` makes the enabled rows' channels, starts them in order and stops
them in reverse.
"""

from __future__ import annotations

import logging
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from bridge.app.home import chain_instance
from bridge.app.platforms import platforms_of
from bridge.app.web_token import store_web_token, web_token
from bridge.channels.matrix.platform import PLATFORM as MATRIX
from bridge.channels.telegram.platform import PLATFORM as TELEGRAM
from bridge.channels.web.platform import PLATFORM as WEB
from bridge.channels.whatsapp.platform import PLATFORM as WHATSAPP
from bridge.core.config import ConfigError, Settings, tenant_web_tokens
from bridge.types.messages import Inbound
from bridge.types.platform import Platform
from bridge.types.tenant_dirs import TenantDirs

if TYPE_CHECKING:  # the roost and the channels are imported by the rows that run:
    # the operator commands that read `PLATFORMS` only (access, export, ...) stay lean
    from bridge.app.reload import OnReload
    from bridge.app.roost import Roost
    from bridge.channels.common.shared import Cluster
    from bridge.channels.telegram.files_in import FilesIn
    from bridge.schedule.runtime import ChannelDeliver, Undelivered

log = logging.getLogger(__name__)


EVERY_ADDRESS = (
    "roost: the page listens on every address; a browser on another machine is refused "
    "(421) until [web] allowed_hosts names the host it uses (ROOST_WEB__ALLOWED_HOSTS)"
)


def page_url(host: str, port: int) -> str:
    """The page's address as a browser here can open it: a wildcard bind (0.0.0.0) is no
    address to browse to (and not a Host the page serves), so it is shown as 127.0.0.1;
    an IPv6 literal gets its brackets (the Host names the page serves are made alike)."""
    from bridge.channels.web.input import WILDCARD_BINDS, bracketed

    return f"http://{'127.0.0.1' if host in WILDCARD_BINDS else bracketed(host)}:{port}/"


def web_start_line(
    url: str,
    token: str,
    created: bool,
    stored: Path | None,
    every_address: bool = False,
    tty: bool = False,
) -> str:
    """What `serve` prints once the page is up: where, and where its token is.

    `stored` is the `web-token` file, None when the token is configured
    (`web.token`, from the file or ROOST_WEB__TOKEN): then no file is named.
    A new token's `#token=` link is printed only when stdout is a terminal (`tty`):
    under systemd stdout is the journal, kept and readable by the `adm` group, so
    the line names the file and `roost web-token` instead (a secret never reaches a log).
    `every_address`: bound to a wildcard with no `[web] allowed_hosts`: one more line
    says what a browser elsewhere needs.
    """
    if stored is None:
        line = f"roost: web chat at {url} (token: the configured web.token)"
    elif created and tty:
        where = f"roost: the access token is stored in {stored}"
        line = f"roost: web chat at {url}#token={token}\n{where}"
    elif created:
        line = (
            f"roost: web chat at {url} (a new access token is stored in {stored}; "
            "`roost web-token --link` prints the link with it)"
        )
    else:
        line = f"roost: web chat at {url} (token in {stored})"
    return f"{line}\n{EVERY_ADDRESS}" if every_address else line


def web_hosts(settings: Settings) -> list[str]:
    """Extra Host names the web server answers: configured ones and the webhook's."""
    hosts = list(settings.web.allowed_hosts)
    if settings.telegram.token is not None and settings.telegram.mode == "webhook":
        netloc = urlsplit(settings.telegram.webhook_url or "").netloc.rpartition("@")[2]
        if netloc:
            hosts.append(netloc.lower())
    return hosts


class Channel(Protocol):
    """What serve needs of a channel: start it, stop it."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Launched:
    """A channel made by its row, and what to print once it has started."""

    channel: Channel
    announce: Callable[[], str]
    port: Callable[[], int] | None = None  # the local port it listens on, if any
    deliver: ChannelDeliver | None = None  # takes outbox entries (proactive messages)
    live: tuple[OnReload, ...] = ()  # what a config reload changes in this channel


Factory = Callable[[Settings, "Roost", Mapping[str, Launched]], Launched]


@dataclass(frozen=True, slots=True)
class ChannelRow:
    """One chat platform: its name, whether the settings turn it on, how to make it.

    The factory sees the channels made by the rows above it (by name), so a
    channel can mount itself on another (Telegram's webhook on the web app).
    """

    name: str
    enabled: Callable[[Settings], bool]
    factory: Factory
    platform: Platform | None = None  # what shared code knows of it (None: nothing)


def web_channel(settings: Settings, roost: Roost, made: Mapping[str, Launched]) -> Launched:
    from bridge.app.descriptors import web_limits
    from bridge.app.readiness import database_ready
    from bridge.app.reload import OnReload
    from bridge.app.web_extras import mount_extras, spoken_handle
    from bridge.channels.web.channel import WebChannel
    from bridge.channels.web.files import FileLinks
    from bridge.channels.web.input import WILDCARD_BINDS

    token, created = web_token(settings)
    from bridge.schedule.runtime import recent_messages

    budget = web_limits(settings.web)  # measured now: after the roost and its sandbox started
    log.info("web: %s", budget.describe())
    handle = spoken_handle(roost)  # answers spoken in the page after /voice on
    cluster = cluster_of(settings, roost)
    relay = follow = None
    if cluster is not None:  # instances share the home: a web chat's turns under its lease
        from bridge.channels.web.follow import Follow
        from bridge.channels.web.leased import leased
        from bridge.channels.web.relay import StopRelay
        from bridge.core.dispatch import lease_name
        from bridge.core.lease_hold import LeaseHold

        owner = inbox_owner(settings)
        relay = StopRelay(roost.database, cluster.leases, owner)  # Stop reaches the turn
        follow = Follow(cluster.leases, owner)  # a reload on another instance follows it
        hold = LeaseHold(cluster.leases, owner, cluster.ttl_ms, lease_name)
        handle = leased(handle, hold, relay=relay)
    web = WebChannel(
        handle,
        roost.command_list,
        token,
        settings.web.host,
        settings.web.port,
        allowed_hosts=web_hosts(settings),
        recent=lambda chat, after: recent_messages(
            roost.database, settings.local_tenant, "web", chat, after
        ),
        metrics=roost.metrics.render if settings.web.metrics else None,
        files=FileLinks(
            TenantDirs.of(settings.home, settings.local_tenant).root.parent,
            tree_of=lambda tenant: TenantDirs.of(settings.home, tenant).root.parent,
        ),
        turns=roost.core.running,
        archive=roost.sessions.archive,
        masks=lambda tenant: roost.loadout.vault.masker(roost.tenant_dirs(tenant)),
        local_tenant=settings.local_tenant,
        tenant_tokens=tenant_web_tokens(settings, token),
        detach_grace_s=settings.web.detach_grace_s,
        inbox=lambda tenant: TenantDirs.of(settings.home, tenant).inbox,
        attachment_bytes=settings.limits.attachment_bytes,
        limits=budget.limits,
        barred=lambda tenant: roost.resolver.barred(tenant),  # `ForgetMarks`
        quota=roost.quota,
        ready=lambda: database_ready(roost.database),
        relay=relay,
        follow=follow,
        database=roost.database,  # the history's posts and job runs
        commands=lambda tenant: TenantDirs.of(settings.home, tenant).web_commands,
    )
    mount_extras(web, roost, handle)  # rename/delete/search, edit/regenerate, thumbnails
    stored = None if settings.web.token is not None else settings.home / "web-token"

    every_address = settings.web.host in WILDCARD_BINDS and not settings.web.allowed_hosts

    def announce() -> str:
        if created and stored is not None:  # kept once the page listens: its link shown once
            store_web_token(stored, token)
        url = page_url(settings.web.host, web.port)
        tty = sys.stdout.isatty()  # a terminal: the operator's eyes only, not a journal
        return web_start_line(url, token, created, stored, every_address, tty)

    def tokens(new: Settings) -> None:  # a removed tenant's page is refused at once
        web.set_tenant_tokens(tenant_web_tokens(new, token))

    live = (OnReload.of(("tenants",), tokens),)
    return Launched(web, announce, lambda: web.port, web.deliver, live=live)


def telegram_channel(settings: Settings, roost: Roost, made: Mapping[str, Launched]) -> Launched:
    """The Telegram channel; telegram is imported only when it is configured."""
    webhook = settings.telegram.mode == "webhook"
    if webhook and "web" not in made:
        raise ConfigError("telegram.mode 'webhook' needs the web server (web.enabled = true)")
    from bridge.app.reload import OnReload
    from bridge.channels.telegram.channel import TelegramChannel, TelegramOptions
    from bridge.channels.telegram.health import Backoff
    from bridge.channels.telegram.inbox import UpdateInbox
    from bridge.channels.web.channel import WebChannel

    token = settings.telegram.token.get_secret_value() if settings.telegram.token else ""
    bot_id = token.partition(":")[0]  # the bot's id: a new token for the same bot keeps it
    inbox = UpdateInbox(roost.database, f"telegram:{bot_id}", inbox_owner(settings))
    telegram = TelegramChannel(
        settings.telegram,
        roost.core.answer,
        roost.command_list,
        TelegramOptions(reconnect=Backoff(first_s=settings.telegram.reconnect_first_s)),
        undelivered=undelivered_hook(roost),
        send_failed=roost.metrics.telegram_failed,
        voice_inbox=roost.voice.gate("telegram"),
        speak=roost.voice.speak_hook("telegram", settings.telegram.reply_voice_to_voice),
        files_in=telegram_files_in(settings, roost),
        inbox=inbox,  # every update stored before it is confirmed
        parts=roost.schedule.outbox.parts,  # outbox entries delivered part by part
        cluster=cluster_of(settings, roost),  # a chat is answered by its lease's holder
    )
    if webhook:
        web = made["web"].channel
        assert isinstance(web, WebChannel)
        telegram.mount(web.app)

    roost.channel_lines["telegram"] = telegram.status_line  # /status: up, or reconnecting and why

    def announce() -> str:
        if not telegram.connection.connected:  # it retries in the background; the rest runs
            return f"roost: {telegram.status_line()}"
        return f"roost: telegram bot @{telegram.app.bot.username} ({settings.telegram.mode})"

    def groups(new: Settings) -> None:
        telegram.allowed_groups = frozenset(new.telegram.allowed_groups)

    live = (OnReload.of(("telegram.allowed_groups",), groups),)
    return Launched(telegram, announce, deliver=telegram.deliver, live=live)


def inbox_owner(settings: Settings) -> str:
    """This process start in a channel's durable inbox; with instances, named by its
    instance (`[cluster] instance`), so its leases and rows say whose they are."""
    owner = secrets.token_hex(6)
    instance = chain_instance(settings)
    return owner if instance is None else f"{instance}:{owner}"


def cluster_of(settings: Settings, roost: Roost) -> Cluster | None:
    """Several instances may serve this home's bot and number (PostgreSQL): the per-chat
    leases; None on SQLite (one process per home)."""
    from bridge.channels.common.shared import Cluster
    from bridge.storage.leases import Leases

    if roost.database.dialect.name != "postgresql":
        return None
    return Cluster(Leases(roost.database), int(settings.cluster.lease_s * 1000))


def telegram_files_in(settings: Settings, roost: Roost) -> FilesIn:
    """Photos and documents from Telegram: a known person's go into their tenant's inbox."""
    from bridge.channels.telegram.files_in import FilesIn, file_base_url

    def dirs_of(inbound: Inbound) -> TenantDirs | None:
        tenant = roost.resolver.resolve(inbound)
        return roost.tenant_dirs(tenant) if tenant is not None else None

    return FilesIn(
        dirs_of,
        lambda: roost.senses.limits.attachment_bytes,
        file_base_url(settings.telegram.api_base_url),
        quota=roost.quota,
    )


def whatsapp_channel(settings: Settings, roost: Roost, made: Mapping[str, Launched]) -> Launched:
    """WhatsApp on the Cloud API: Meta posts to the web server's /whatsapp/webhook."""
    if "web" not in made:
        raise ConfigError("whatsapp needs the web server (web.enabled = true) for its webhook")
    from bridge.channels.web.channel import WebChannel
    from bridge.channels.whatsapp.channel import PATH
    from bridge.channels.whatsapp.make import make_whatsapp
    from bridge.channels.whatsapp.media import Receiving

    wa, voice = settings.whatsapp, roost.voice
    receiving = Receiving(
        roost.resolver.resolve,
        lambda tenant: roost.tenant_dirs(tenant).inbox,
        lambda: roost.senses.limits.attachment_bytes,
        voice.limits.max_bytes,
        voice.transcriber is not None,
    )
    whatsapp = make_whatsapp(
        wa,
        roost.core.answer,
        roost.database,
        roost.schedule,
        receiving=receiving,
        undelivered=undelivered_hook(roost),
        speak=voice.speak_hook("whatsapp", wa.reply_voice_to_voice),
        ignored=lambda kind, n: roost.metrics.ignored("whatsapp", kind, n),
        cluster=cluster_of(settings, roost),  # a person is answered by their lease's holder
        owner=inbox_owner(settings),
    )
    web = made["web"].channel
    assert isinstance(web, WebChannel)
    whatsapp.channel.mount(web.app)
    roost.chat_notes["whatsapp"] = whatsapp.outbox.notes  # /jobs: the 24-hour window

    def announce() -> str:
        return f"roost: whatsapp webhook at {PATH} (phone number id {wa.phone_number_id})"

    return Launched(whatsapp.channel, announce, deliver=whatsapp.outbox)


def matrix_channel(settings: Settings, roost: Roost, made: Mapping[str, Launched]) -> Launched:
    """Matrix: a bot account syncing with its homeserver (mautrix is imported only now)."""
    from bridge.app.reload import OnReload
    from bridge.channels.matrix.make import make_matrix
    from bridge.channels.matrix.media import Receiving

    mx, voice = settings.matrix, roost.voice
    receiving = Receiving(
        roost.resolver.resolve,
        lambda tenant: roost.tenant_dirs(tenant).inbox,
        lambda: roost.senses.limits.attachment_bytes,
        voice.limits.max_bytes,
        voice.transcriber is not None,
    )
    matrix = make_matrix(
        mx,
        roost.core.answer,
        roost.database,
        receiving=receiving,
        undelivered=undelivered_hook(roost),
        speak=voice.speak_hook("matrix", mx.reply_voice_to_voice),
        ignored=lambda kind, n: roost.metrics.ignored("matrix", kind, n),
        cluster=cluster_of(settings, roost),  # instances: one of them syncs
        owner=inbox_owner(settings),
    )
    roost.channel_lines["matrix"] = matrix.channel.status_line

    def announce() -> str:
        return f"roost: {matrix.channel.status_line()} on {mx.homeserver}"

    def rooms(new: Settings) -> None:
        matrix.channel.allowed_rooms = frozenset(new.matrix.allowed_rooms)

    live = (OnReload.of(("matrix.allowed_rooms",), rooms),)
    return Launched(matrix.channel, announce, deliver=matrix.outbox, live=live)


def undelivered_hook(roost: Roost) -> Undelivered:
    """A channel's failed final reply goes to the outbox (the scheduler retries it)."""
    from bridge.schedule.runtime import reply_to_outbox

    schedule = roost.schedule
    return reply_to_outbox(
        schedule.outbox,
        roost.resolver.resolve,
        schedule.changed,
        lambda: int(time.time() * 1000),
        lambda tenant: roost.loadout.vault.masker(roost.tenant_dirs(tenant)),
    )


CHANNELS: tuple[ChannelRow, ...] = (
    ChannelRow("web", lambda s: s.web.enabled, web_channel, WEB),
    ChannelRow("telegram", lambda s: s.telegram.token is not None, telegram_channel, TELEGRAM),
    ChannelRow("whatsapp", lambda s: s.whatsapp.enabled, whatsapp_channel, WHATSAPP),
    ChannelRow("matrix", lambda s: s.matrix.enabled, matrix_channel, MATRIX),
)
"""Every chat platform, in start order (a new platform is one more row)."""

PLATFORMS = platforms_of(CHANNELS)
"""The declarations of the table's platforms (+ the terminal and `roost mcp`)."""


def make_channels(
    settings: Settings, roost: Roost, rows: Sequence[ChannelRow]
) -> dict[str, Launched]:
    """Make the channels of the enabled rows, in order (nothing starts yet)."""
    made: dict[str, Launched] = {}
    for row in rows:
        if row.enabled(settings):
            made[row.name] = row.factory(settings, roost, made)
    return made


async def start_channels(made: Mapping[str, Launched], started: list[Launched]) -> None:
    """Start each channel in order, appending it to `started` (stopped in reverse)."""
    for launched in made.values():
        started.append(launched)
        await launched.channel.start()
        print(launched.announce(), flush=True)


async def stop_channels(started: list[Launched]) -> None:
    for launched in reversed(started):
        await launched.channel.stop()
