"""The dialectic judge: one separate model call per candidate, no conversation context.

The model sees only the proposed bullet and the counts behind it, and must
answer FAITHFUL (the data justifies the rule) or OVERFIT (noise). Anything else
— a BackendError, a timeout, an answer naming neither or both — is an
"error" verdict: the candidate stays pending and is judged again at the next
sweep. An outage never counts as overfit.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from bridge.style.rules import Counts
from bridge.types.backend import Backend, BackendError, ChatMessage, ModelRequest, TextDelta

Verdict = Literal["faithful", "overfit", "error"]
MAX_ANSWER_CHARS = 4000

SYSTEM = (
    "You review rules an assistant wants to adopt from feedback statistics. "
    "You have no stake in the rule. Decide whether the data justifies it or "
    "whether it overfits to noise (too few signals, one bad day, a mixed picture). "
    "Answer with exactly one word: FAITHFUL or OVERFIT."
)

_WORD = re.compile(r"\b(FAITHFUL|OVERFIT)\b")


@dataclass(frozen=True, slots=True)
class JudgeResult:
    verdict: Verdict
    ms: int
    error_kind: str = ""  # BackendError kind, "timeout" or "unparseable"


def judge_prompt(
    skill: str, text: str, c: Counts, approvals: int, days_with_signals: int, window_days: int
) -> str:
    return (
        f"Proposed rule: {text}\n"
        f"Data (last {window_days} days, one person): skill {skill} was graded after "
        f"{c.total} replies: {c.negative} corrections (rejections or rephrases), "
        f"{approvals} approvals; signals fell on {days_with_signals} different days.\n"
        "Is this rule justified by the data, or does it overfit to noise? "
        "Answer FAITHFUL or OVERFIT."
    )


def parse_verdict(answer: str) -> Verdict:
    found = set(_WORD.findall(answer.upper()))
    if found == {"FAITHFUL"}:
        return "faithful"
    if found == {"OVERFIT"}:
        return "overfit"
    return "error"


class Judge:
    """Asks `backend` for a verdict, with an overall timeout."""

    def __init__(
        self,
        backend: Backend,
        timeout_s: float = 120.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._backend, self._timeout_s, self._monotonic = backend, timeout_s, monotonic

    @property
    def available(self) -> bool:
        """False for the offline backend: no model is configured, nothing to ask."""
        return self._backend.name != "offline"

    async def judge(self, prompt: str) -> JudgeResult:
        start = self._monotonic()
        request = ModelRequest(system=SYSTEM, messages=(ChatMessage("user", prompt),))
        try:
            async with asyncio.timeout(self._timeout_s):
                answer = await self._collect(request)
        except TimeoutError:
            return JudgeResult("error", self._ms(start), "timeout")
        except BackendError as exc:
            return JudgeResult("error", self._ms(start), exc.kind)
        except Exception:  # a backend bug must not stop the sweep; retried next time
            return JudgeResult("error", self._ms(start), "unexpected")
        verdict = parse_verdict(answer)
        return JudgeResult(verdict, self._ms(start), "" if verdict != "error" else "unparseable")

    async def _collect(self, request: ModelRequest) -> str:
        parts: list[str] = []
        size = 0
        async for event in self._backend.stream(request):
            if isinstance(event, TextDelta) and size <= MAX_ANSWER_CHARS:
                parts.append(event.text)
                size += len(event.text)
        return "".join(parts)

    def _ms(self, start: float) -> int:
        return max(0, round((self._monotonic() - start) * 1000))
