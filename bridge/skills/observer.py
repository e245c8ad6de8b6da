"""Grading around each turn: outcome grading before, auto-grading after.

Before a turn, the person's new message grades the previous reply
(`outcome.graded`), and the skills that reply used get that signal
(`skill.outcome_graded` with signal, skills and `prev_run_id` = the graded
turn's message id — the user-style learner reads exactly this). Skills the
graded turn's *request* named or described but its reply did not use (one
graded down to 0 is never offered, so never used) travel as `relevant`: they
gain or lose no grade, but the learner counts the turn for their bullets. After a
turn, skills the reply used gain `AUTO_STEP` each (`skill.graded`). A turn
is outcome-graded at most once, even when the next message fails and is
sent again: the chat's last turn is read before the model, and marked graded in the
turn's end unit, or alone when the turn ends without it (`before_turn` returns the
mark as an `EndWrite`; no write waits on the turn's path before the model). In the end
unit the mark is dropped once the turn's own row follows it (`after_turn`): the turn log
holds one row per chat, and that upsert rewrites all of it (graded = 0), so the UPDATE
would change nothing the same transaction keeps; written alone, the mark always runs. With an
outcome judge, a follow-up the lexical stage left neutral is handed to it before the
turn and released after it; a late label moves the graded turn's skills from neutral
to that label (`revise`) and is audited as another `skill.outcome_graded` for the same
`prev_run_id` (the learner keeps the last grade of a turn).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from bridge.core.agent import AgentResult
from bridge.core.end_writes import EndWrite
from bridge.core.filecache import FileCache
from bridge.core.sessions import Session
from bridge.grading.classify import Label, classify
from bridge.grading.judge import FollowUp, OutcomeJudge
from bridge.grading.judge_prompt import JudgeItem
from bridge.grading.text import LastRead
from bridge.skills.files import kept_skills
from bridge.skills.grades import (
    Applied,
    LastTurn,
    SkillGrades,
    TurnLog,
    turn_graded,
    turn_recorded,
)
from bridge.skills.usage import skills_asked, skills_used
from bridge.storage.units import Unit
from bridge.types.audit_sink import TurnEvents
from bridge.types.backend import ChatMessage
from bridge.types.tools import TurnContext


class _Mark:
    """The graded mark of the chat's last turn, left for the turn's end: in the end's unit
    it writes nothing once the turn's own row is recorded after it there (`replaced`)."""

    __slots__ = ("replaced", "row")

    def __init__(self, row: tuple[str, str, str, str]) -> None:
        self.row, self.replaced = row, False

    def unit(self) -> Unit[int]:
        """Made again alike each time (`replaced` is set before the end's unit is made)."""
        if self.replaced:
            return 0
        changed: int = yield from turn_graded(*self.row)
        return changed


class SkillsObserver:
    def __init__(
        self,
        grades: SkillGrades,
        log: TurnLog,
        cache: FileCache,
        clock: Callable[[], float],
        judge: OutcomeJudge | None = None,
    ) -> None:
        self._grades, self._log = grades, log
        self._cache, self._clock = cache, clock
        self._judge = judge
        self._read = LastRead()  # the last messages' words: the next turn's previous message
        self._marks: dict[int, tuple[TurnContext, _Mark]] = {}  # a turn's mark, by id(turn)
        if judge is not None:
            judge.listen(self._judged)

    async def before_turn(
        self, turn: TurnContext, session: Session, events: TurnEvents
    ) -> EndWrite | None:
        """Grades the chat's last turn, when not graded yet, by this message; its graded mark
        is returned for the turn's end (graded at most once, whichever way the turn ends)."""
        inbound = turn.inbound
        if inbound.scheduled:
            return None  # a job's prompt is not the person reacting to the previous answer
        exchange = session.last_exchange()  # the tool-call steps between are skipped
        if exchange is None:
            return None
        last = await self._log.last(turn.tenant, inbound.channel, inbound.chat)
        if last is None or last.graded:
            return None
        row = (turn.tenant, inbound.channel, inbound.chat, last.msg_id)
        try:
            await self._grade(turn, last, exchange, events)
        except BaseException:  # what was applied of it must not be applied again
            await self._log.mark_graded(*row)
            raise
        mark = _Mark(row)
        self._marks[id(turn)] = (turn, mark)  # the turn is held: its id is not reused
        return EndWrite(mark.unit, partial(self._mark_alone, turn, row))

    async def _mark_alone(self, turn: TurnContext, row: tuple[str, str, str, str]) -> None:
        """The mark of a turn that ends without its end's unit, in its own transaction;
        the follow-up it handed the judge is released (its reply went out, failed or
        unstored: the message still says how the previous answer landed)."""
        self._marks.pop(id(turn), None)
        if self._judge is not None:
            self._judge.release(turn.tenant, turn.inbound.msg_id)
        await self._log.mark_graded(*row)

    async def _grade(
        self,
        turn: TurnContext,
        last: LastTurn,
        exchange: tuple[ChatMessage, ChatMessage],
        events: TurnEvents,
    ) -> None:
        """The previous turn's outcome by this message, applied to the skills it used."""
        inbound = turn.inbound
        prev_id, skills = last.msg_id, last.skills
        prev_user, reply = exchange
        outcome = classify(prev_user.content, reply.content, inbound.text, self._read)
        events.add(
            "outcome.graded",
            turn.tenant,
            {
                "label": outcome.label,
                "confidence_pct": round(outcome.confidence * 100),
                "prev_run_id": prev_id,
                "msg_id": inbound.msg_id,
                "channel": inbound.channel,
            },
        )
        if outcome.label == "neutral" and self._judge is not None:
            item = JudgeItem(prev_user.content, reply.content, inbound.text)
            f = FollowUp(
                turn.tenant,
                inbound.channel,
                prev_id,
                inbound.msg_id,
                item,
                tuple(skills),
                tuple(last.relevant),
            )
            self._judge.submit(f, turn.dirs)
        if not skills and not last.relevant:
            return
        now = self._clock()
        # only a skill the reply used earns or loses grade
        await self._grades.apply_all(turn.tenant, skills, outcome.label, now)
        details: dict[str, object] = {
            "signal": outcome.label,
            "skills": skills,
            "prev_run_id": prev_id,
        }
        if last.relevant:
            details["relevant"] = list(last.relevant)
        events.add("skill.outcome_graded", turn.tenant, details)

    async def after_turn(
        self, turn: TurnContext, result: AgentResult, events: TurnEvents
    ) -> EndWrite:
        """Auto-grades the skills the reply used; the turn-log row is left to the turn's end
        (written with the session append, one commit: `EndWrite`)."""
        held = self._marks.pop(id(turn), None)  # taken first: kept by no failure below
        skills = kept_skills(turn.dirs, self._cache)  # parsed once per change
        used: list[str] = []
        relevant: list[str] = []
        if skills:  # no skill files: nothing to grade, no need to read the grades
            grades = await self._grades.all(turn.tenant)
            offered = [s for s in skills if (grades[s.name].grade if s.name in grades else 1) > 0]
            used = skills_used(result.text, offered)
            # what the request was about, offered or not: turns a style bullet could affect
            relevant = [n for n in skills_asked(turn.inbound.text, skills) if n not in used]
        now = self._clock()

        def graded(name: str, applied: Applied) -> None:
            step, after = applied
            events.add(
                "skill.graded",
                turn.tenant,
                {"name": name, "signal": "auto", "step_milli": step, "grade_milli": after},
            )

        await self._grades.apply_all(turn.tenant, used, "auto", now, graded)
        inbound = turn.inbound
        if self._judge is not None:
            self._judge.release(turn.tenant, inbound.msg_id)
        row = (turn.tenant, inbound.channel, inbound.chat, inbound.msg_id, used, now, relevant)
        if held is not None:  # this row replaces the graded one in the same unit, after it
            held[1].replaced = True
        return EndWrite(partial(turn_recorded, *row), partial(self._log.record, *row))

    async def _judged(self, f: FollowUp, label: Label, events: TurnEvents) -> None:
        """A late label from the judge: the graded turn's skills move from neutral to it."""
        if label == "neutral" or not (f.skills or f.relevant):
            return
        now = self._clock()
        for name in f.skills:
            await self._grades.revise(f.tenant, name, "neutral", label, now)
        details: dict[str, object] = {
            "signal": label,
            "skills": list(f.skills),
            "prev_run_id": f.prev_run_id,
        }
        if f.relevant:  # the learner keeps a turn's last grade: it must name them again
            details["relevant"] = list(f.relevant)
        events.add("skill.outcome_graded", f.tenant, details)
