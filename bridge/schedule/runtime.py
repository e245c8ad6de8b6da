"""The scheduler's work inside the daemon: what a run does, where a message goes.

`JobRunner` is the scheduler's `run_job`: a `reminder` posts "⏰ " + its
text; a `turn` runs a full turn through the core's `handle` as if the person
had sent the prompt in that chat (access check, loadout, tools, session), and
posts the answer under a line naming the job ("🔁 /recall dentist (job
vks6fz)", `job_header`: a person with several jobs sees which one posted and
the id `/job rm` takes), its one-tap actions written out as commands (the outbox
carries text: "(reply /memory undo #… to ↩ undo deleting …)", `actions_hint`);
a `tool` runs a saved `me.*` tool through the personal-tools `ToolSource`
(the same sandbox, hash check and audit as in chat) and posts its result
under the same line always, or only when its digest differs from the job's `last_digest`.
What a run posts is cut at `max_post_chars` (the composition root passes
`limits.max_reply_chars`), visibly, as a model reply is (`cut_post`; the digest
is of the whole result). A tool job whose tool is gone is paused, and one whose
tool fails, or a turn job whose turn fails (the model backend down or timed out,
an error) or is refused (the token budget), is reported: the run raises
`scheduler.JobFailed` with a masked notice for the job's chat naming the job (id,
what it runs, when), why in the core's or the tool's words (never a trace) and
what to do (`tool_gone_notice`, `failed_notice`: it tries again at its next run,
`/job rm <id>` removes it); the scheduler posts a failure's notice on the first
failure only (again only after a run that worked). A failing turn job stays on
its schedule (paused only, as any recurring job, after `PAUSE_AFTER` failures in a
row); the same notice tells a run the scheduler stopped at its deadline
(`failure_notice`).
A run whose chat no longer resolves to the job's tenant is skipped, never run
as someone else. What a run posts goes through the tenant's masker (`masks`)
before it is stored, whatever its kind: the outbox takes only `Masked` text.
Its `masker_for(tenant)` (the same masker, of now) is what the scheduler masks
each delivery with once more (`scheduler.TenantMasks`): the composition root
hands the vault's masker to the runner only.

`Deliveries` is the scheduler's `deliver`: the outbox entry goes to the
channel of its row (`telegram`, `web`); a channel that is not running now is a
retryable failure. `audit_observer` turns scheduler events into the audited
`job.ran`, `outbox.delivered` and `outbox.failed` (ids, kinds and times only).
`reply_to_outbox` stores a final reply a channel could not deliver under the
key `reply:<msg_id>` (or the key the channel names, e.g. a notice about a
file; masked again: the outbox's type), with what of it the person already
sees (`OutboxPart`s, recorded before it can be claimed); `watch` wakes the
scheduler at every notify of the stores' `WAKE_TOPIC`, whatever process made it
(`roost send --to`, a job made in `roost chat`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from bridge.core.agent import MAX_REPLY_CHARS, cut_note
from bridge.core.post_window import POST_WINDOW, post_window
from bridge.core.tenants import LOOPBACK_CHANNELS
from bridge.schedule.commands import preview, recurrence
from bridge.schedule.jobs import Job
from bridge.schedule.outbox import WAKE_TOPIC, DeliveryError, OutboxEntry, OutboxStore
from bridge.schedule.outbox_parts import OutboxPart
from bridge.schedule.scheduler import (
    JobFailed,
    JobSkipped,
    Post,
    ScheduleEvent,
    SchedulerConfig,
)
from bridge.storage.protocol import Database
from bridge.types.audit_sink import AuditSink
from bridge.types.masked import Masked, TextMask
from bridge.types.messages import Handle, Inbound, actions_hint
from bridge.types.tenant_dirs import TenantDirs
from bridge.types.tools import ToolError, ToolSource, TurnContext
from forge.names import PREFIX, to_wire

REMINDER_MARK: Final = "⏰ "
JOB_MARK: Final = "🔁 "  # a recurring answer's or tool's post opens with the job it is
ERROR_KINDS: Final = frozenset(
    {
        "network",
        "rate_limited",
        "rejected",
        "forbidden",
        "not_found",
        "timeout",
        "window",
        "unknown",
    }
)
TOOL_MODES: Final = ("change", "always")
PAUSE_AFTER: Final = SchedulerConfig().pause_after_failures  # the daemon's (not configurable)
ONE_SHOT_TRIES: Final = SchedulerConfig().one_shot_attempts

Resolve = Callable[[Inbound], str | None]
ChannelDeliver = Callable[[OutboxEntry], Awaitable[None]]
PersonOf = Callable[[str, str], str | None]  # (channel, chat) -> the chat's person, if declared


def job_inbounds(
    job: Job, slot_ms: int, person_of: PersonOf = lambda channel, chat: None
) -> tuple[Inbound, ...]:
    """The messages a job's run may stand for: from the person of the job's chat.

    A Telegram group chat is "<group>:<user>" (the user speaks); a private one
    is the user's id. The web page speaks as the local person or, signed in
    with a tenant's own token, as `tenant:<tid>`: the chat does not say which,
    so both are offered and the one that resolves to the job's tenant speaks.
    The terminal speaks as the local person.
    """
    msg_id = f"job:{job.id}:{slot_ms}"
    if job.channel in LOOPBACK_CHANNELS:
        identities = ["local"] + ([f"tenant:{job.tenant}"] if job.channel == "web" else [])
        return tuple(
            Inbound(job.channel, who, job.chat, job.payload, msg_id, scheduled=True)
            for who in identities
        )
    return (job_inbound(job, slot_ms, person_of),)


def job_inbound(
    job: Job, slot_ms: int, person_of: PersonOf = lambda channel, chat: None
) -> Inbound:
    """The message a job's run stands for in a chat of one person (Telegram, ...).

    `person_of(channel, chat)`: the person a chat belongs to, as the channel's
    platform declares it (`Platform.identity_of_chat`); where it says nothing,
    a chat "<group>:<user>" is a group's and any other a private one."""
    msg_id = f"job:{job.id}:{slot_ms}"
    if job.channel in LOOPBACK_CHANNELS:
        return Inbound(job.channel, "local", job.chat, job.payload, msg_id, scheduled=True)
    declared = person_of(job.channel, job.chat)
    if declared is not None:
        private = declared == job.chat
        return Inbound(
            job.channel, declared, job.chat, job.payload, msg_id, is_private=private, scheduled=True
        )
    group, _, user = job.chat.partition(":")
    identity = user or group
    return Inbound(
        job.channel, identity, job.chat, job.payload, msg_id, is_private=not user, scheduled=True
    )


@dataclass(frozen=True, slots=True)
class ToolOrder:
    name: str  # bare name, without "me."
    mode: str  # change | always
    args: Mapping[str, Any] = field(default_factory=dict)  # checked when the job was made


def parse_tool_payload(payload: str) -> ToolOrder:
    """`{"tool": "me.<name>", "mode": "change"|"always", "args"?: {...}}` (ValueError when
    malformed)."""
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise ValueError("a tool job's payload is not JSON") from exc
    if not isinstance(data, dict):
        raise ValueError("a tool job's payload is not a JSON object")
    tool, mode, args = data.get("tool"), data.get("mode", "change"), data.get("args", {})
    if not isinstance(tool, str) or not tool.startswith(PREFIX) or mode not in TOOL_MODES:
        raise ValueError("a tool job needs {'tool': 'me.<name>', 'mode': 'change'|'always'}")
    if not isinstance(args, dict):
        raise ValueError("a tool job's args are not a JSON object")
    return ToolOrder(tool[len(PREFIX) :], mode, args)


def cut_post(text: Masked, limit: int, mask: TextMask) -> Masked:
    """A run's post within `limit` characters, cut visibly as a model reply is
    (`cut_note`). Cut after masking (a vaulted value is never half-posted), then
    through the masker again: the outbox takes only what the masker made."""
    if len(text) <= limit:
        return text
    return mask.mask(text[:limit] + "\n" + cut_note(limit))


def what_runs(job: Job) -> str:
    """'job rd38db (me.wc text="a b" (always), every 5m (Etc/UTC))': which job, what it runs."""
    return f"job {job.id} ({preview(job)}, {recurrence(job)})"


def tool_gone_notice(job: Job, tool: str) -> str:
    return (
        f"⚠️ {what_runs(job)} is paused: {tool} is no longer one of your saved tools, so it "
        f"cannot run. Save {tool} again and send /job resume {job.id}, or remove the job: "
        f"/job rm {job.id}"
    )


def failed_notice(job: Job, reason: str) -> str:
    """What a job's chat is told of its failure (a turn's or a tool's, `reason` in plain
    words, masked by the caller): which job, why, what happens next, how to stop it."""
    if job.recurring:
        then = (
            f"It tries again at its next run; after {PAUSE_AFTER} failures in a row it is "
            f"paused (/job resume {job.id} starts it again). This chat hears of it again only "
            "if it works and then fails again."
        )
    else:
        then = f"It is tried again in a few minutes, {ONE_SHOT_TRIES} tries in all."
    return (
        f"⚠️ {what_runs(job)} failed: {reason}\n"
        f"{then} /jobs shows its state, /job rm {job.id} removes it."
    )


def first_line(text: str, limit: int = 200) -> str:
    """A failure's first line, within `limit` characters: what a job's record keeps
    (`/jobs` shows it)."""
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 1] + "…"


def job_header(job: Job) -> str:
    """The line a job's post opens with, naming the job on every channel: what it runs
    and its id (`/job rm <id>` removes it), e.g. '🔁 /recall dentist (job vks6fz)'."""
    return f"{JOB_MARK}{preview(job)} (job {job.id})"


def job_post(job: Job, body: str) -> str:
    """A turn's or tool's run as posted: the job's header line, then what it said."""
    return f"{job_header(job)}\n{body}"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class JobRunner:
    """`run_job` for the scheduler: reminder, turn or tool, by the job's kind."""

    def __init__(
        self,
        *,
        handle: Handle,
        resolve: Resolve,
        tool_sources: Sequence[ToolSource],
        tenant_dirs: Callable[[str], TenantDirs],
        now: Callable[[], float],
        masks: Callable[[TenantDirs], TextMask],
        person_of: PersonOf = lambda channel, chat: None,
        max_post_chars: Callable[[], int] = lambda: MAX_REPLY_CHARS,
    ) -> None:
        self._handle, self._resolve = handle, resolve
        self._person_of = person_of
        self._sources = tuple(tool_sources)
        self._dirs, self._now = tenant_dirs, now
        self._masks = masks
        self._max_post_chars = max_post_chars  # `limits.max_reply_chars` (of now: reloadable)

    def masker_for(self, tenant: str) -> TextMask:
        """The tenant's masker of now (the vault as it is): the scheduler's `TenantMasks`."""
        return self._masks(self._dirs(tenant))

    async def __call__(self, job: Job, slot_ms: int) -> Masked | Post | None:
        mask = self.masker_for(job.tenant)
        if job.kind == "reminder":
            return mask.mask(REMINDER_MARK + job.payload)
        inbound = next(
            (
                i
                for i in job_inbounds(job, slot_ms, self._person_of)
                if self._resolve(i) == job.tenant
            ),
            None,
        )
        if inbound is None:
            raise JobSkipped("the chat no longer belongs to the job's tenant")
        if job.kind == "turn":
            post = mask.mask(job_post(job, await self._turn(job, inbound, mask)))
            return cut_post(post, self._max_post_chars(), mask)
        if job.kind == "tool":
            return await self._tool(job, inbound, mask)
        raise ValueError(f"unknown job kind {job.kind!r}")

    def failure_notice(self, job: Job, reason: str) -> Masked | None:
        """What the job's chat is told of a failure (`failed_notice`, masked, cut as a post);
        None for a reminder (it only posts its text). The scheduler's `FailureNotices`:
        it tells a run past its deadline so too."""
        if job.kind == "reminder":
            return None
        mask = self.masker_for(job.tenant)
        return cut_post(mask.mask(failed_notice(job, reason)), self._max_post_chars(), mask)

    async def _turn(self, job: Job, inbound: Inbound, mask: TextMask) -> str:
        """The turn's answer; a turn that fails (the model backend down or timed out, an
        error) or is refused (the budget) raises `JobFailed` with the core's words for it
        (already safe to show: no trace, masked) as its notice."""
        final = await self._handle(inbound, None)
        hint = actions_hint(final.actions, final.text)  # an undo the person can still send
        said = f"{final.text}\n{hint}" if hint else final.text
        if final.kind in ("answer", "command", "stopped"):
            return said
        if final.kind == "silent" or self._resolve(inbound) != job.tenant:
            raise JobSkipped(f"the turn was refused ({final.kind})")  # no one to tell
        reason = mask.mask(said.strip() or "the turn gave no answer")
        notice = self.failure_notice(job, reason)
        if final.kind == "refusal":
            raise JobSkipped(reason, notice, cause=f"TurnRefused: {first_line(reason)}")
        raise JobFailed(reason, notice, cause=f"TurnFailed: {first_line(reason)}")

    async def _tool(self, job: Job, inbound: Inbound, mask: TextMask) -> Post | None:
        order = parse_tool_payload(job.payload)
        ctx = TurnContext(self._dirs(job.tenant), inbound, self._now)
        wire = to_wire(order.name)
        tool = next(
            (t for s in self._sources for t in s.tools_for(ctx) if t.schema.name == wire), None
        )
        if tool is None:  # it can never run again as it is: paused, the person told
            gone = mask.mask(tool_gone_notice(job, f"{PREFIX}{order.name}"))
            raise JobSkipped(f"{PREFIX}{order.name} is not a saved tool", gone, pause=True)
        try:
            result = await tool(dict(order.args), ctx)  # a ToolError is the run's failure
        except ToolError as exc:  # its text is kept on the job (/jobs shows it): masked
            error = mask.mask(str(exc))
            notice = self.failure_notice(job, error)
            raise JobFailed(error, notice, cause=f"ToolError: {error}") from None
        said = mask.mask(f"{PREFIX}{order.name}: {result}")
        seen = digest(said)  # of the whole result (as before: a stored digest still matches)
        if order.mode == "change" and seen == job.last_digest:
            return None
        post = mask.mask(job_post(job, said))
        return Post(cut_post(post, self._max_post_chars(), mask), seen)


class Deliveries:
    """`deliver` for the scheduler: each entry to the running channel of its name."""

    def __init__(self, channels: Mapping[str, ChannelDeliver] | None = None) -> None:
        self._channels: dict[str, ChannelDeliver] = dict(channels or {})

    def add(self, channel: str, deliver: ChannelDeliver) -> None:
        self._channels[channel] = deliver

    async def __call__(self, entry: OutboxEntry) -> None:
        deliver = self._channels.get(entry.channel)
        if deliver is None:  # not running now (not configured): retried, then dead
            raise DeliveryError("unknown")
        await deliver(entry)


def audit_observer(audit: AuditSink) -> Callable[[ScheduleEvent], Awaitable[None]]:
    """The scheduler's `observe`: its events as the audited schedule events."""

    async def observe(event: ScheduleEvent) -> None:
        name, details = audit_event(event)
        await audit.emit(name, event.tenant, details)

    return observe


def audit_event(event: ScheduleEvent) -> tuple[str, dict[str, object]]:
    """(name, details) of the audit record for one scheduler event (pure)."""
    if event.name in ("job.run", "job.failed"):
        outcome = "skipped" if event.skipped else ("ok" if event.name == "job.run" else "failed")
        return "job.ran", {
            "id": event.ref,
            "kind": event.kind,
            "outcome": outcome,
            "ms": event.ms,
            "late_ms": event.late_ms,
        }
    entry = int(event.ref)
    if event.name == "outbox.delivered":
        return "outbox.delivered", {
            "entry": entry,
            "channel": event.kind,
            "attempts": event.attempts,
            "late_ms": event.late_ms,
        }
    return "outbox.failed", {
        "entry": entry,
        "channel": event.kind,
        "attempts": event.attempts,
        "error": event.detail if event.detail in ERROR_KINDS else "unknown",
        "dead": event.name == "outbox.dead",
    }


class Undelivered(Protocol):
    """A channel's hook for a message it could not deliver (see `reply_to_outbox`)."""

    async def __call__(
        self, inbound: Inbound, text: str, key: str = "", parts: Sequence[OutboxPart] = ()
    ) -> bool: ...


def reply_to_outbox(
    outbox: OutboxStore,
    resolve: Resolve,
    changed: Callable[[], None],
    now_ms: Callable[[], int],
    masks: Callable[[str], TextMask],
) -> Undelivered:
    """A channel's hook for a final reply it could not deliver: into the outbox
    (key `reply:<msg_id>` unless `key` names another, so a second failure of the
    same reply adds nothing), with `parts` (what the person already sees of it)
    recorded before it can be claimed. False when the sender resolves to no tenant
    (nothing is stored)."""

    async def undelivered(
        inbound: Inbound, text: str, key: str = "", parts: Sequence[OutboxPart] = ()
    ) -> bool:
        tenant = resolve(inbound)
        if tenant is None or not text:
            return False
        key = key or f"reply:{inbound.msg_id}"
        masked = masks(tenant).mask(text)
        await outbox.enqueue(
            tenant, inbound.channel, inbound.chat, masked, key, now_ms=now_ms(), parts=parts
        )
        changed()
        return True

    return undelivered


async def recent_messages(
    db: Database, tenant: str, channel: str, chat: str, after_id: int, limit: int = 50
) -> list[dict[str, Any]]:
    """A chat's outbox messages newer than `after_id` (not dead-lettered), oldest first:
    what a page that was closed missed."""
    rows = await db.fetch_all(
        "SELECT id, key, text, created_ms FROM outbox WHERE tenant = ? AND channel = ?"
        " AND chat = ? AND id > ? AND state != 'dead' ORDER BY id DESC LIMIT ?",
        (tenant, channel, chat, after_id, limit),
    )
    return [{"id": r[0], "key": r[1], "text": r[2], "at_ms": r[3]} for r in reversed(rows)]


async def chat_posts(
    db: Database,
    tenant: str,
    channel: str,
    chat: str,
    since_ms: float,
    until_ms: float | None = None,
    limit: int = 200,
) -> list[dict[str, Any]]:
    """A chat's outbox messages made after `since_ms` up to `until_ms` (`post_window`;
    not dead-lettered), oldest first, the newest `limit` of them: the proactive posts a
    page of a chat's history shows in their place (`bridge.channels.web.timeline`)."""
    rows = await db.fetch_all(
        "SELECT id, key, text, created_ms FROM outbox WHERE tenant = ? AND channel = ?"
        f" AND chat = ? AND {POST_WINDOW} AND state != 'dead' ORDER BY id DESC LIMIT ?",
        (tenant, channel, chat, *post_window(since_ms, until_ms), limit),
    )
    return [{"id": r[0], "key": r[1], "text": r[2], "at_ms": r[3]} for r in reversed(rows)]


async def newest_message_id(db: Database) -> int:
    """The id of the newest outbox entry (0 when there is none): where a new reader starts."""
    return int(await db.fetch_value("SELECT COALESCE(MAX(id), 0) FROM outbox"))


async def watch(db: Database, wake: Callable[[], None]) -> None:
    """Wake the scheduler at every notify of `WAKE_TOPIC` (a job created or resumed,
    an outbox entry enqueued) from any process on the database: `roost send --to`
    from a shell, a `/remind` in `roost chat`, another instance. SQLite polls `PRAGMA
    data_version` (`poll_s`), PostgreSQL LISTENs. Its first wake comes at once (the
    subscription's first look), so nothing notified before it is missed."""
    async with db.subscribe(WAKE_TOPIC) as notified:
        while True:
            await notified.wait()
            wake()
