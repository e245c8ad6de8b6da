"""Both stages over a labelled set: the lexical grader, then the judge where it is silent.

`judge_outcomes(cases, client, batch)` labels every case lexically; the
cases it leaves neutral whose follow-up is itself a request go to the judge
in requests of at most `batch` follow-ups (the same inputs asked once). A
valid judge label replaces the neutral one; an ignored answer or a failed
request leaves it. `JudgeTally` says what the judge did, for the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bridge.core.words import count
from bridge.grading.classify import Outcome, classify
from bridge.grading.evaluate import Case, Report, evaluate
from bridge.grading.judge_client import JudgeClient
from bridge.grading.judge_prompt import JudgeItem, cache_key
from bridge.grading.requests import is_request

Triple = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class JudgeTally:
    eligible: int = 0  # lexically neutral follow-ups that are requests
    asked: int = 0  # distinct follow-ups sent to the judge
    requests: int = 0  # model requests
    ignored: int = 0  # answers that were not one known label
    failed: int = 0  # follow-ups of requests that failed (no answer)
    changed: int = 0  # cases whose label the judge changed

    def line(self) -> str:
        return (
            f"judge: {self.eligible} follow-ups eligible, {self.asked} asked in "
            f"{count(self.requests, 'request')}, {count(self.ignored, 'answer')} ignored "
            f"(not one label), {self.failed} without an answer, "
            f"{count(self.changed, 'label')} changed"
        )


async def judge_outcomes(
    cases: Sequence[Case], client: JudgeClient, batch: int
) -> tuple[dict[Triple, Outcome], JudgeTally]:
    """The outcome of every case after both stages, and the judge's tally."""
    outcomes: dict[Triple, Outcome] = {}
    todo: dict[str, list[Triple]] = {}
    for c in cases:
        key = (c.previous, c.reply, c.next)
        outcomes[key] = classify(*key)
        if outcomes[key].label == "neutral" and is_request(c.next):
            todo.setdefault(cache_key(JudgeItem(*key)), []).append(key)
    eligible = sum(len(v) for v in todo.values())
    keys = list(todo)
    requests = ignored = failed = changed = 0
    for start in range(0, len(keys), batch):
        chunk = keys[start : start + batch]
        asked = await client.ask([JudgeItem(*todo[k][0]) for k in chunk])
        requests += 1
        if asked.error:
            failed += len(chunk)
            continue
        ignored += asked.ignored
        for k, label in zip(chunk, asked.labels, strict=True):
            if label is None or label == "neutral":
                continue
            for triple in todo[k]:
                outcomes[triple] = Outcome(label, 0.7, "judge")
                changed += 1
    return outcomes, JudgeTally(eligible, len(keys), requests, ignored, failed, changed)


def report_of(cases: Sequence[Case], outcomes: dict[Triple, Outcome]) -> Report:
    """The usual report over outcomes decided beforehand."""
    return evaluate(cases, lambda p, r, n: outcomes[(p, r, n)])
