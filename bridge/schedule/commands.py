"""/remind, /every, /jobs and /job show|rm|pause|resume: the schedule as chat commands.

Rows of small async functions returning text (no model involved). Times are
read and shown in the person's zone (`zone.py`), except a recurring job made
in another zone: its line reads in that zone, named, with the person's time
after it (`next_run`); a job belongs to the chat
the command came from. Creating goes through `Planner` (limits, `changed()`,
`job.created`); removing, pausing and resuming record `job.changed`.
A channel may add lines to `/jobs` for its chats (`notes`: how it delivers
now, e.g. WhatsApp's 24-hour window). `/jobs` shows the first 40 characters
of a job's text (`preview`); `/job show <id>` its whole text (a tool job's as
`preview` reads it, counted as shown), kind, schedule and next run (a paused job
has none: `NO_NEXT`). A job's text is shown with its control and invisible characters
made visible (`visible`: escaped as `\\n`, `\\u202e`), so what runs is what is read.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from zoneinfo import ZoneInfo

from bridge.core.commands import Command, CommandContext, UsageError
from bridge.core.words import count
from bridge.schedule.jobs import Job
from bridge.schedule.planning import Planner, Refused, Target, local, tool_payload
from bridge.schedule.recur import parse_every
from bridge.schedule.when_echo import EXAMPLES, stamp
from bridge.schedule.when_errors import WhenError
from bridge.types.audit_sink import AuditSink
from bridge.types.messages import Final

PREVIEW = 40
SHOWN_FAILURES = 3
JOB_USAGE = "/job show|rm|pause|resume <id>"
NO_NEXT = "no next run"


def visible(text: str, limit: int = 0) -> str:
    """`text` with every character that is not printable (line breaks, tabs, controls,
    bidirectional overrides, zero-width and other format characters) escaped as Python
    writes it (`\\n`, `\\x1b`, `\\u202e`); cut to `limit` characters ("…") when given."""
    if not text.isprintable():
        text = "".join(
            c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
        )
    return text if not limit or len(text) <= limit else text[: limit - 1] + "…"


def full_text(job: Job, limit: int = 0) -> str:
    """All of what a job does, made `visible` (a tool job: as `preview` shows it)."""
    return preview(job) if job.kind == "tool" else visible(job.payload, limit)


def preview(job: Job) -> str:
    """The first 40 characters of what a job does (a tool job: its tool, arguments, mode),
    white space runs as one space, other hidden characters `visible`."""
    if job.kind == "tool":
        try:
            data = json.loads(job.payload)
            args = "".join(
                f" {k}={json.dumps(v, ensure_ascii=False)}" for k, v in data.get("args", {}).items()
            )
            mode = "always" if data["mode"] == "always" else "on change"
            return visible(f"{data['tool']}{args} ({mode})")
        except (ValueError, KeyError, TypeError, AttributeError):
            return "(unreadable tool job)"
    return visible(" ".join(job.payload.split()), PREVIEW)


def next_and_state(job: Job, tz: str, now_ms: int, sep: str) -> str:
    """`next <time><sep><state>` for a listing line; a paused job: `no next run<sep>paused`."""
    nxt = next_run(job, tz, now_ms)
    when = nxt if nxt == NO_NEXT else f"next {nxt}"
    return f"{when}{sep}{job.state}"


def recurrence(job: Job) -> str:
    if not job.recurring:
        return "once"
    every = parse_every(job.spec, ZoneInfo(job.tz))
    return job.spec if isinstance(every, WhenError) else every.echo


def next_run(job: Job, tz: str, now_ms: int) -> str:
    """When a job runs next, for a listing in the person's zone `tz`: the time in `tz`,
    and for a recurring job made in another zone (`recurrence` names that zone) that
    zone's time first, named, so the schedule and the next run on one line read in one zone:
    `Sun 6 Dec 09:37 Etc/UTC (10:37 in Europe/Berlin)`. A paused job has none (the time
    it kept is not when it runs: `/job resume` sets a new one)."""
    if job.state == "paused":
        return NO_NEXT
    if not job.next_run_ms:
        return "—"
    here = stamp(local(job.next_run_ms, tz), local(now_ms, tz), "en")
    if job.tz == tz or not job.recurring:  # a one-shot names no zone: the listing's
        return here
    there = stamp(local(job.next_run_ms, job.tz), local(now_ms, job.tz), "en")
    if there.split()[:-1] == here.split()[:-1]:  # same day: the clock time is enough
        here = here.split()[-1]
    return f"{there} {job.tz} ({here} in {tz})"


ChatNotes = Callable[[str, str, float], Awaitable[Sequence[str]]]
"""(tenant, chat, now) -> what /jobs adds for a chat of that channel (how it delivers)."""


class ScheduleCommands:
    def __init__(
        self, planner: Planner, audit: AuditSink, notes: Mapping[str, ChatNotes] | None = None
    ) -> None:
        self._planner = planner
        self._jobs = planner.service.jobs
        self._audit = audit
        self._notes = notes if notes is not None else {}  # channel -> notes (filled by rows)

    def commands(self) -> Iterable[Command]:
        return (
            Command(
                "remind",
                "/remind <when> <text>",
                "a reminder in this chat",
                self.remind,
                common=True,
                examples=tuple(
                    f"/remind {EXAMPLES[lang][kind]}"
                    for lang, kind in (
                        ("en", "default"),
                        ("en", "past"),
                        ("en", "invalid_time"),
                        ("de", "past"),
                    )
                ),
            ),
            Command(
                "every",
                "/every <when> <prompt> | /every <when> me.<tool> [key=value …] [always|on change]",
                "a recurring answer or tool run in this chat",
                self.every,
                examples=(
                    f"/every {EXAMPLES['en']['every']}",
                    f"/every {EXAMPLES['en']['bad_cron']}",
                    f"/every {EXAMPLES['de']['every']}",
                ),
            ),
            Command(
                "jobs",
                "/jobs",
                "this chat's reminders and recurring jobs",
                self.list_jobs,
                common=True,
            ),
            Command(
                "job",
                JOB_USAGE,
                "show a job's whole text and schedule; remove, pause or resume it",
                self.job,
            ),
        )

    def _target(self, ctx: CommandContext) -> Target:
        return Target(ctx.dirs, ctx.inbound.channel, ctx.inbound.chat, "user")

    async def remind(self, ctx: CommandContext, args: str) -> str | Final:
        if not args.strip():
            raise UsageError()
        try:
            when = self._planner.read_when(args, ctx.now, self._planner.zone(ctx.dirs))
            done = await self._planner.once(self._target(ctx), when, when.rest, ctx.now)
        except Refused as exc:
            if exc.usage:
                raise UsageError(exc.message) from None
            return Final(exc.message, "command", failed=True)  # `roost send` exits 1
        return done.reply

    async def every(self, ctx: CommandContext, args: str) -> str | Final:
        if not args.strip():
            raise UsageError()
        planner = self._planner
        try:
            every = planner.read_every(args, planner.zone(ctx.dirs))
            if every.rest.startswith("me."):
                payload, what = tool_payload(every.rest, ctx.dirs)
                kind = "tool"
            else:
                payload, what, kind = every.rest, f"I'll answer “{every.rest}”", "turn"
            done = await planner.recurring(self._target(ctx), every, payload, kind, what, ctx.now)
        except Refused as exc:
            if exc.usage:
                raise UsageError(exc.message) from None
            return Final(exc.message, "command", failed=True)  # `roost send` exits 1
        return done.reply

    async def list_jobs(self, ctx: CommandContext, args: str) -> str:
        i = ctx.inbound
        tz = self._planner.zone(ctx.dirs)
        now_ms = int(ctx.now * 1000)
        jobs = await self._jobs.list_jobs(ctx.tenant, i.channel, i.chat)
        lines = [f"Jobs in this chat (times in {tz}):"] if jobs else ["No jobs in this chat."]
        for job in jobs:
            lines.append(
                f"• {job.id} · {job.kind} · {recurrence(job)} · "
                f"{next_and_state(job, tz, now_ms, ' · ')} — {preview(job)}"
            )
            if job.last_error:
                lines.append(f"  last run failed ({job.fail_count}×): {job.last_error}")
        lines += await self._failures(ctx)
        notes = self._notes.get(i.channel)
        if notes is not None:
            lines += await notes(ctx.tenant, i.chat, ctx.now)
        if not jobs:
            lines.append("/remind and /every add one.")
        elif any(preview(j) != full_text(j) for j in jobs):
            lines.append("/job show <id> shows a job's whole text.")
        return "\n".join(lines)

    async def _failures(self, ctx: CommandContext) -> list[str]:
        i = ctx.inbound
        failed = await self._planner.service.outbox.failures(ctx.tenant, i.channel, i.chat)
        if not failed:
            return []
        out = [f"Delivery problems ({len(failed)}):"]
        for entry in failed[:SHOWN_FAILURES]:
            state = "given up" if entry.state == "dead" else "retrying"
            out.append(
                f"  {state} after {count(entry.attempts, 'attempt')}: "
                f"{entry.last_error or 'failed'}"
            )
        return out

    async def job(self, ctx: CommandContext, args: str) -> str | Final:
        parts = args.lower().split()
        actions = ("show", "rm", "remove", "delete", "pause", "resume")
        if len(parts) != 2 or parts[0] not in actions:
            raise UsageError()
        action, job_id = parts
        job = await self._jobs.get(ctx.tenant, job_id)
        if job is None or job.state == "done":
            return Final(
                f"There is no job {job_id!r}; /jobs lists this chat's jobs.", "command", failed=True
            )
        if action == "show":
            return self._show(ctx, job)
        if action == "pause":
            ok, verb = await self._jobs.pause(ctx.tenant, job_id), "paused"
            fail = f"Job {job_id} is already paused; /job resume {job_id} restarts it."
        elif action == "resume":
            ok, verb = await self._jobs.resume(ctx.tenant, job_id, int(ctx.now * 1000)), "resumed"
            fail = f"Job {job_id} is not paused."
        else:
            ok, verb, fail = await self._jobs.remove(ctx.tenant, job_id), "removed", "Already gone."
        if not ok:
            return fail
        self._planner.service.changed()
        await self._audit.emit(
            "job.changed", ctx.tenant, {"id": job_id, "action": verb, "by": "user"}
        )
        return f"Job {job_id} {verb}: {preview(job)}"

    def _show(self, ctx: CommandContext, job: Job) -> str:
        """A job in full: kind, schedule, state, next run, then its whole text (last: a line
        of its text cannot pass for one of these)."""
        tz = self._planner.zone(ctx.dirs)
        nxt = next_run(job, tz, int(ctx.now * 1000))
        if nxt == NO_NEXT:
            nxt = f"none while it is paused (/job resume {job.id} restarts it)"
        elif job.tz == tz and job.next_run_ms:
            nxt = f"{nxt} ({tz})"
        payload = full_text(job, self._jobs.limits.max_payload_chars)
        # a tool job's stored text is JSON; what it shows (tool, arguments, mode) is counted
        size = len(payload) if job.kind == "tool" else len(job.payload)
        return (
            f"Job {job.id} · {job.kind} · {recurrence(job)} · {job.state}\n"
            f"Next run: {nxt}\n"
            f"Text ({count(size, 'character')}):\n{payload}"
        )
