"""Pure aggregation over audit records: graded skill turns, per-skill counts, cohorts.

Input is a list of chain records (dicts as written by AuditChain); nothing here
reads files or the clock. A graded turn is one `skill.outcome_graded` event:
its signal applies to every skill named, and `prev_run_id` names the graded
turn, whose time is taken from that turn's `message.received` when present.

Its `skills` are the ones the graded reply used; its `relevant` ones are those
the request was about that the reply did not use (a skill graded down to 0 is
not offered, so never used). Candidates count only used skills (what the
grades count); live and shadow bullets count both (`exposed`): a bullet in
block 8 could affect every turn about its skill, offered or not, so its
experiment never starves when its skill stops being offered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bridge.style.rules import SKILL_NAME, Counts, cohort_bit


@dataclass(frozen=True, slots=True)
class GradedTurn:
    tenant: str
    msg_id: str  # the graded turn (prev_run_id)
    turn_ms: int  # when that turn happened (else when it was graded)
    graded_ms: int
    signal: str
    skills: tuple[str, ...]
    relevant: tuple[str, ...] = ()

    def exposed(self, skill: str) -> bool:
        """The turn was about `skill`: its reply used it or its request asked for it."""
        return skill in self.skills or skill in self.relevant


def graded_turns(records: Iterable[Mapping[str, Any]]) -> list[GradedTurn]:
    """Every well-formed graded turn, once per (tenant, prev_run_id) (the last grade wins)."""
    received: dict[tuple[str, str], int] = {}
    turns: dict[tuple[str, str], GradedTurn] = {}
    for rec in records:
        tenant, ts, details = rec.get("tenant"), rec.get("ts"), rec.get("details")
        if not isinstance(tenant, str) or not isinstance(ts, int) or not isinstance(details, dict):
            continue
        event = rec.get("event")
        if event == "message.received":
            msg_id = details.get("msg_id")
            if isinstance(msg_id, str):
                received[(tenant, msg_id)] = ts
            continue
        if event != "skill.outcome_graded":
            continue
        prev, signal, skills = (
            details.get("prev_run_id"),
            details.get("signal"),
            details.get("skills"),
        )
        if not isinstance(prev, str) or not isinstance(signal, str) or not isinstance(skills, list):
            continue
        names, about = _names(skills), _names(details.get("relevant"))
        if names or about:
            turn_ms = min(received.get((tenant, prev), ts), ts)
            turns[(tenant, prev)] = GradedTurn(
                tenant, prev, turn_ms, ts, signal, names, tuple(n for n in about if n not in names)
            )
    return list(turns.values())


def _names(raw: object) -> tuple[str, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(sorted({s for s in raw if isinstance(s, str) and SKILL_NAME.fullmatch(s)}))


def skill_counts(
    turns: Iterable[GradedTurn], since_ms: int, until_ms: int
) -> dict[tuple[str, str], Counts]:
    """Signals per (tenant, skill) of turns graded in [since_ms, until_ms]."""
    out: dict[tuple[str, str], Counts] = {}
    for t in turns:
        if since_ms <= t.graded_ms <= until_ms:
            for skill in t.skills:
                key = (t.tenant, skill)
                out[key] = out.get(key, Counts()).add(t.signal)
    return out


def turn_counts(
    turns: Iterable[GradedTurn], tenant: str, skill: str, since_ms: int, until_ms: int
) -> Counts:
    """Signals of the turns about one tenant's skill that happened in [since_ms, until_ms)."""
    c = Counts()
    for t in turns:
        if t.tenant == tenant and t.exposed(skill) and since_ms <= t.turn_ms < until_ms:
            c = c.add(t.signal)
    return c


def cohorts(
    turns: Iterable[GradedTurn],
    tenant: str,
    skill: str,
    bullet: str,
    since_ms: int,
    until_ms: int,
) -> tuple[Counts, Counts]:
    """(with-bullet, without-bullet) signals of a shadow bullet's skill during its A/B.

    Every graded turn about the skill counts, whether the skill was offered or not;
    its cohort is recomputed from its msg_id and the bullet's id.
    """
    with_, without = Counts(), Counts()
    for t in turns:
        if t.tenant == tenant and t.exposed(skill) and since_ms <= t.turn_ms < until_ms:
            if cohort_bit(t.msg_id, bullet):
                with_ = with_.add(t.signal)
            else:
                without = without.add(t.signal)
    return with_, without
