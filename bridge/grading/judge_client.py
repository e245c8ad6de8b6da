"""One request to the judge model: render the items, stream the answer, parse it strictly.

`JudgeClient.ask(items)` sends the fixed system prompt and one user message
listing the items, collects the text (cut at `MAX_ANSWER_CHARS`) and the
token counts, and parses one label per item. A backend error, a timeout or
an unexpected failure gives no labels and an error kind; it never raises,
so a judge outage leaves the lexical labels as they were. The offline
backend is "no model configured": `available` is False and nothing is sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bridge.core.ask import read_answer
from bridge.core.usage import Tokens
from bridge.grading.classify import Label
from bridge.grading.judge_prompt import SYSTEM, JudgeItem, parse, render
from bridge.types.backend import (
    Backend,
    BackendError,
    ChatMessage,
    Finish,
    ModelRequest,
    offline,
)

log = logging.getLogger(__name__)
MAX_ANSWER_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Asked:
    labels: tuple[Label | None, ...]  # one per item
    ignored: int  # items left without a valid label
    tokens: Tokens | None = None
    error: str = ""  # BackendError kind, "timeout" or "unexpected"; "" when answered


class JudgeClient:
    def __init__(self, backend: Backend, timeout_s: float = 60.0) -> None:
        self._backend, self._timeout_s = backend, timeout_s

    @property
    def available(self) -> bool:
        return not offline(self._backend)

    async def ask(self, items: Sequence[JudgeItem], tenant: str = "") -> Asked:
        """Labels for `items` from one model request (none on any failure)."""
        none: tuple[Label | None, ...] = (None,) * len(items)
        if not items:
            return Asked((), 0)
        request = ModelRequest(
            system=SYSTEM, messages=(ChatMessage("user", render(items)),), tenant=tenant
        )
        tokens: list[Tokens] = []
        try:
            async with asyncio.timeout(self._timeout_s):
                answer = await self._collect(request, tokens)
        except TimeoutError:
            return Asked(none, 0, _last(tokens), "timeout")
        except BackendError as exc:
            return Asked(none, 0, _last(tokens), exc.kind)
        except Exception:  # a backend bug must not stop grading; the lexical label stays
            log.exception("grading judge: the model request failed")
            return Asked(none, 0, _last(tokens), "unexpected")
        parsed = parse(answer, len(items))
        return Asked(parsed.labels, parsed.ignored, _last(tokens))

    async def _collect(self, request: ModelRequest, tokens: list[Tokens]) -> str:
        def used(event: Finish) -> None:
            tokens.append(Tokens(event.prompt_tokens, event.completion_tokens, event.cached_tokens))

        return await read_answer(self._backend, request, MAX_ANSWER_CHARS, used)


def _last(tokens: list[Tokens]) -> Tokens | None:
    return tokens[-1] if tokens else None
