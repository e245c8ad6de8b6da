"""From a request to a stored job: what `/remind`, `/every` and `schedule_create` share.

`Planner` reads the time phrase in the person's zone (`zone.tenant_zone`),
checks the limits, stores the job for the chat the request came from, wakes
the scheduler and records `job.created` (ids, kind, channel, who; never the
text). Whatever it refuses comes back as `Refused` with a message fit to show
the person (or the model): the parser's own (what it understood and an
example), a per-tenant limit, an unknown tool, a `turn` whose text is a command a
scheduled run may not run (`unschedulable`: it would be refused at every run).

The confirmation says where the message will arrive when that is not simply
this chat (`arrival`): a terminal shows it while `roost chat` is open or the
next time it opens (run as the job's tenant), and only a running daemon runs
jobs at all.

Payload conventions the runtime relies on: a `reminder` carries its text, a
`turn` its prompt, a `tool` job `{"tool": "me.<name>", "mode": "change"|"always"}`.
`spec` is `Every.spec` ('' for a one-shot), `tz` the zone name used.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from zoneinfo import ZoneInfo

from bridge.core.commands import SCHEDULED_MAY_RUN, parse_command
from bridge.schedule.jobs import Job, LimitError
from bridge.schedule.recur import Every, check_min_interval, parse_every
from bridge.schedule.service import ScheduleService, next_slot, to_ms
from bridge.schedule.tool_args import ArgsRefused, read_tool_args, split_words
from bridge.schedule.when import When, WhenError, parse_when
from bridge.schedule.when_echo import stamp
from bridge.schedule.zone import tenant_zone
from bridge.types.audit_sink import AuditSink
from bridge.types.masked import TextMask
from bridge.types.tenant_dirs import TenantDirs
from forge import toolmeta
from forge.names import BadName, bare_name

ALWAYS: Final = frozenset({"always", "immer", "every time", "jedes mal"})
ON_CHANGE: Final = frozenset(
    {"", "on change", "change", "changed", "when changed", "bei änderung", "wenn geändert"}
)


class Refused(Exception):
    """Not scheduled; `message` says why. `usage`: the text part was missing."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


@dataclass(frozen=True, slots=True)
class Target:
    """Whose job, delivered where, asked by whom (`user` or `model`)."""

    dirs: TenantDirs
    channel: str
    chat: str
    by: str


@dataclass(frozen=True, slots=True)
class Scheduled:
    job: Job
    reply: str  # the confirmation, with the job id


TERMINAL_CHAT: Final = "terminal"  # `roost chat`'s default --chat
LOCAL_TENANT: Final = "local"  # the default `local_tenant`: whom a plain `roost chat` runs as


def arrival(
    channel: str, chat: str, serving: bool | None, tenant: str = "", local: str = LOCAL_TENANT
) -> str:
    """What to add to a confirmation about where and when it shows ('' for a push chat).

    The terminal is not a push channel: an open `roost chat` on this chat name
    prints what the daemon delivered, and one opened later prints what it missed.
    `roost chat` has no `--tenant`: it runs as the local tenant (`local`), so a job
    of another `tenant` (`roost send --tenant alice`) names the variable that makes
    `roost chat` run as it (s35 N10). The command is one a person may paste into a
    shell: each name is quoted for it (a chat name is any text), and shown as code
    whatever backticks it holds (`code_span`).
    """
    if channel != "cli":
        return ""
    command = "roost chat" if chat == TERMINAL_CHAT else f"roost chat --chat {shlex.quote(chat)}"
    if tenant and tenant != local:
        command = f"ROOST_LOCAL_TENANT={shlex.quote(tenant)} {command}"
    note = f" It will show in {code_span(command)} (while it is open, or the next time it starts)."
    if serving is False:
        note += (
            " Jobs run in the daemon, and `roost serve` is not running now: start it"
            " (`make run`, or `systemctl start roost`); a time missed meanwhile runs once"
            " when it starts."
        )
    return note


def code_span(text: str) -> str:
    """`text` as one Markdown code span: fenced by one more backtick than its longest run
    of them, with a space inside when it starts or ends with one (CommonMark 6.1)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def local(ms: int, tz: str) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC).astimezone(ZoneInfo(tz))


def tool_payload(rest: str, dirs: TenantDirs) -> tuple[str, str]:
    """`me.name [key=value ...] [always|on change]` -> (payload JSON, reply phrase).

    Refused if the tool is not saved, or its arguments do not fit its schema
    (checked now: a run has nobody to ask).
    """
    word, _, option = rest.partition(" ")
    try:
        name = bare_name(word)
    except BadName as exc:
        raise Refused(str(exc)) from None
    schema = saved_schema(dirs, name)
    if schema is None:
        raise Refused(f"You have no saved tool me.{name}; /tools lists yours.")
    try:
        args, words = read_tool_args(split_words(option), schema, f"me.{name}")
    except ArgsRefused as exc:
        raise Refused(str(exc)) from None
    option = " ".join(" ".join(words).lower().split())
    if option in ALWAYS:
        mode, phrase = "always", "posting its result every time"
    elif option in ON_CHANGE:
        mode, phrase = "change", "posting its result only when it changes"
    else:
        raise Refused(
            f"After me.{name} give its arguments as key=value, then `always` or "
            "`on change` (the default)."
        )
    order: dict[str, object] = {"tool": f"me.{name}", "mode": mode}
    if args:
        order["args"] = args
    shown = "".join(f" {k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return json.dumps(order, ensure_ascii=False), f"me.{name}{shown}, {phrase}"


def saved_schema(dirs: TenantDirs, name: str) -> dict[str, Any] | None:
    """The parameter schema of the saved tool `me.<name>`, or None when there is none."""
    try:
        return toolmeta.loads((dirs.tools / toolmeta.filename(name)).read_bytes(), name).schema
    except (OSError, toolmeta.BadMeta):
        return None


def unschedulable(text: str) -> str | None:
    """Why a `turn` job's text may not be scheduled, or None: a command that a scheduled
    run refuses every time (bridge.core.router: only `SCHEDULED_MAY_RUN` run from a job,
    the others need the person to send them) is refused now, when it is scheduled,
    rather than accepted and then refused at each run."""
    parsed = parse_command(text.strip())
    if parsed is None or parsed.name in SCHEDULED_MAY_RUN:
        return None
    allowed = ", ".join(f"/{name}" for name in sorted(SCHEDULED_MAY_RUN))
    return (
        f"Not scheduled: /{parsed.name} runs only when you send it yourself, never from a "
        f"scheduled job. A job can run these commands: {allowed}; or give it a prompt "
        "to answer."
    )


class Planner:
    def __init__(
        self,
        service: ScheduleService,
        audit: AuditSink,
        masks: Callable[[TenantDirs], TextMask],
        local_tenant: str = LOCAL_TENANT,
    ) -> None:
        self.service = service
        # whom a plain `roost chat` runs as: the configured local tenant, never the one a
        # `roost send --tenant T` ran as (`with_roost` makes T the local one of its roost)
        self.local_tenant = local_tenant
        self._audit = audit
        self._masks = masks  # a job's text is stored masked, as it will be posted

    def zone(self, dirs: TenantDirs) -> str:
        return tenant_zone(dirs, self.service.default_tz)

    def read_when(self, text: str, now: float, tz: str) -> When:
        got = parse_when(text, datetime.fromtimestamp(now, UTC), ZoneInfo(tz))
        if isinstance(got, WhenError):
            raise Refused(got.message)
        return got

    def read_every(self, text: str, tz: str) -> Every:
        every = parse_every(text, ZoneInfo(tz))
        if isinstance(every, WhenError):
            raise Refused(every.message)
        minimum = timedelta(milliseconds=self.service.jobs.limits.min_interval_ms)
        too_often = check_min_interval(every, minimum)
        if too_often is not None:
            raise Refused(too_often.message)
        return every

    async def once(
        self, target: Target, when: When, text: str, now: float, kind: str = "reminder"
    ) -> Scheduled:
        """A one-shot job at `when` (already read in the person's zone)."""
        if not text.strip():
            raise Refused("What should it say? Give the text after the time.", usage=True)
        refusal = unschedulable(text) if kind == "turn" else None
        if refusal is not None:
            raise Refused(refusal)
        tz = when.at.tzinfo.key if isinstance(when.at.tzinfo, ZoneInfo) else "UTC"
        job = await self._store(target, kind, "", text.strip(), tz, to_ms(when.at), now)
        if kind == "reminder":
            head = "⏰ Ich erinnere dich" if when.lang == "de" else "⏰ I'll remind you"
            reply = f"{head} {when.echo}: {job.payload} (id {job.id})"
        else:
            reply = f"⏰ {when.echo} I'll answer: {job.payload} (id {job.id})"
        return Scheduled(job, reply + self._arrival(target))

    async def recurring(
        self, target: Target, every: Every, payload: str, kind: str, what: str, now: float
    ) -> Scheduled:
        """A recurring job from a parsed `Every`; `what` names it in the reply."""
        if not payload.strip():
            raise Refused("What should run? Give a prompt or me.<tool> after the time.", usage=True)
        refusal = unschedulable(payload) if kind == "turn" else None
        if refusal is not None:
            raise Refused(refusal)
        first = to_ms(next_slot(every, int(now * 1000)))
        job = await self._store(target, kind, every.spec, payload.strip(), every.tz.key, first, now)
        nxt = stamp(local(first, every.tz.key), local(int(now * 1000), every.tz.key), "en")
        reply = f"🔁 {every.echo}: {what}. Next run {nxt}. (id {job.id})"
        return Scheduled(job, reply + self._arrival(target))

    def _arrival(self, target: Target) -> str:
        serving = self.service.serving() if target.channel == "cli" else None
        return arrival(target.channel, target.chat, serving, target.dirs.tenant, self.local_tenant)

    async def _store(
        self, t: Target, kind: str, spec: str, payload: str, tz: str, first_ms: int, now: float
    ) -> Job:
        try:
            job = await self.service.jobs.create(
                tenant=t.dirs.tenant,
                channel=t.channel,
                chat=t.chat,
                kind=kind,
                spec=spec,
                payload=self._masks(t.dirs).mask(payload),
                tz=tz,
                next_run_ms=first_ms,
                created_ms=int(now * 1000),
            )
        except LimitError as exc:
            raise Refused(exc.message) from None
        self.service.changed()
        details = {"id": job.id, "kind": kind, "recurring": job.recurring, "channel": t.channel}
        await self._audit.emit("job.created", t.dirs.tenant, {**details, "by": t.by})
        return job
