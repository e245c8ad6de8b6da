"""The dialectic judge: one separate model call per candidate, no conversation context.

The model sees only the proposed bullet and the counts behind it, and must
answer FAITHFUL (the data justifies the rule) or OVERFIT (noise). Anything else
— a BackendError, a timeout, an answer naming neither or both — is an
"error" verdict: the candidate stays pending and is judged again at the next
sweep. An outage never counts as overfit.

The judge may run on its own model (`[style] judge_model`). Its calls count
against the tenant's token budget like turns (`meter`): a tenant over budget
is not judged ("budget" error, retried at the next sweep), and each call's
tokens are recorded under the judge's model name.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from bridge.core.ask import read_answer
from bridge.core.budgets import UsageMeter
from bridge.core.usage import Tokens
from bridge.style.rules import Counts
from bridge.types.backend import (
    Backend,
    BackendError,
    ChatMessage,
    Finish,
    ModelRequest,
)

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
    error_kind: str = ""  # BackendError kind, "timeout", "unparseable" or "budget"


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
        *,
        meter: UsageMeter | None = None,
        model: str = "default",
    ) -> None:
        self._backend, self._timeout_s, self._monotonic = backend, timeout_s, monotonic
        self._meter, self._model = meter, model

    @property
    def available(self) -> bool:
        """False for the offline backend: no model is configured, nothing to ask."""
        return self._backend.name != "offline"

    async def judge(self, prompt: str, tenant: str = "") -> JudgeResult:
        """A verdict on one candidate of `tenant` (whose budget the call counts against)."""
        start = self._monotonic()
        if self._meter is not None and tenant and await self._meter.reached(tenant) is not None:
            return JudgeResult("error", 0, "budget")
        request = ModelRequest(
            system=SYSTEM, messages=(ChatMessage("user", prompt),), tenant=tenant
        )
        tokens: list[Tokens] = []
        try:
            async with asyncio.timeout(self._timeout_s):
                answer = await self._collect(request, tokens)
        except TimeoutError:
            return JudgeResult("error", self._ms(start), "timeout")
        except BackendError as exc:
            return JudgeResult("error", self._ms(start), exc.kind)
        except Exception:  # a backend bug must not stop the sweep; retried next time
            return JudgeResult("error", self._ms(start), "unexpected")
        finally:
            if self._meter is not None and tenant and tokens:
                await self._meter.record(tenant, self._model, tokens[-1])
        verdict = parse_verdict(answer)
        return JudgeResult(verdict, self._ms(start), "" if verdict != "error" else "unparseable")

    async def _collect(self, request: ModelRequest, tokens: list[Tokens]) -> str:
        def used(event: Finish) -> None:
            tokens.append(Tokens(event.prompt_tokens, event.completion_tokens, event.cached_tokens))

        return await read_answer(self._backend, request, MAX_ANSWER_CHARS, used)

    def _ms(self, start: float) -> int:
        return max(0, round((self._monotonic() - start) * 1000))
