"""The model's schedule tools: `schedule_create` and `schedule_list` (a ToolSource).

`schedule_create` validates exactly as `/remind` and `/every` do (same parser,
zone, limits; `Planner`) and schedules for the chat of the current turn. Its
result is the confirmation with the job id, which the model is told to pass
on, so the person always hears what was scheduled; the reply also ends with a
marker ("⏰ Scheduled: … (id …)") and an "↩ Undo job" action (`/job rm <id>`).
The marker shows the job's whole text (up to the job text's own maximum, its
control and invisible characters made visible), not the 40-character preview
of `/jobs`: a prompt the model wrote runs later as if the person had sent it,
so the person reads all of it now. Refusals come back as tool errors that say
what to change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bridge.schedule.commands import full_text, next_and_state, preview, recurrence
from bridge.schedule.jobs import Job
from bridge.schedule.planning import Planner, Refused, Target
from bridge.types.backend import ToolSchema
from bridge.types.messages import Action
from bridge.types.tools import FunctionTool, Tool, ToolError, TurnContext

CREATE = ToolSchema(
    "schedule_create",
    "Schedule a reminder or a later answer in this chat. Always tell the person what was "
    "scheduled (the result says it, with the job id); /jobs lists jobs, /job rm <id> "
    "removes one. One-time: give `when`; recurring: give `every` instead.",
    {
        "type": "object",
        "properties": {
            "when": {
                "type": "string",
                "description": "one-time: 'in 20m', 'tomorrow 9:00', '2026-12-24 18:00', "
                "'morgen 9 Uhr' (read in the person's time zone)",
            },
            "text": {
                "type": "string",
                "description": "reminder: the text to send; turn: the prompt to answer then",
            },
            "kind": {"type": "string", "enum": ["reminder", "turn"], "default": "reminder"},
            "every": {
                "type": "string",
                "description": "recurring instead of `when`: 'weekdays 7:30', 'daily 8:00', "
                "'2h', or a cron expression '0 7 * * 1-5'",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    },
)

LIST = ToolSchema(
    "schedule_list",
    "List the reminders and recurring jobs of this chat with their next run.",
    {"type": "object", "properties": {}, "additionalProperties": False},
)


def _opt_str(args: Mapping[str, Any], key: str) -> str:
    value = args.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ToolError(f"argument {key!r} must be a string")
    return value.strip()


class ScheduleTools:
    def __init__(self, planner: Planner) -> None:
        self._planner = planner
        self._tools: tuple[Tool, ...] = (
            FunctionTool(CREATE, self.create),
            FunctionTool(LIST, self.list_jobs),
        )

    def tools_for(self, turn: TurnContext) -> Sequence[Tool]:
        return self._tools

    async def create(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        when, every, text = _opt_str(args, "when"), _opt_str(args, "every"), _opt_str(args, "text")
        kind = _opt_str(args, "kind") or "reminder"
        if kind not in ("reminder", "turn"):
            raise ToolError("kind must be 'reminder' or 'turn'")
        if not text:
            raise ToolError("give the text (reminder) or the prompt (turn)")
        if bool(when) == bool(every):
            raise ToolError("give exactly one of `when` (one-time) or `every` (recurring)")
        i = turn.inbound
        target = Target(turn.dirs, i.channel, i.chat, "model")
        planner, now = self._planner, turn.now()
        tz = planner.zone(turn.dirs)
        try:
            if every:
                rule = planner.read_every(every, tz)
                if rule.rest:
                    raise Refused(f"could not read {rule.rest!r} as part of `every`")
                what = f"reminder “{text}”" if kind == "reminder" else f"I'll answer “{text}”"
                done = await planner.recurring(target, rule, text, kind, what, now)
            else:
                at = planner.read_when(when, now, tz)
                if at.rest:
                    raise Refused(f"could not read {at.rest!r} as part of `when`")
                done = await planner.once(target, at, text, now, kind)
        except Refused as exc:
            raise ToolError(exc.message) from None
        job = done.job  # a marker under the answer, with a one-tap undo
        turn.notices.append(f"⏰ Scheduled: {self._shown(job)} (id {job.id})")
        turn.actions.append(Action(f"↩ Undo job {job.id}", f"/job rm {job.id}"))
        return f"Scheduled. Tell the person: {done.reply}"

    def _shown(self, job: Job) -> str:
        """The job's text for its marker: the preview when that is all of it, else the
        whole text (a `turn` job's prompt runs as the person's message: nothing hidden)."""
        short = preview(job)
        whole = full_text(job, self._planner.service.jobs.limits.max_payload_chars)
        return short if short == whole else whole

    async def list_jobs(self, args: Mapping[str, Any], turn: TurnContext) -> str:
        i = turn.inbound
        tz = self._planner.zone(turn.dirs)
        now_ms = int(turn.now() * 1000)
        jobs = await self._planner.service.jobs.list_jobs(turn.tenant, i.channel, i.chat)
        if not jobs:
            return "No jobs in this chat."
        lines = [f"Jobs in this chat (times in {tz}):"]
        for job in jobs:
            lines.append(
                f"- {job.id}: {job.kind}, {recurrence(job)}, "
                f"{next_and_state(job, tz, now_ms, ', ')}: {preview(job)}"
            )
        return "\n".join(lines)
