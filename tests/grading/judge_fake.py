"""A scripted judge on the fake OpenAI server: labels by follow-up text, a gate to hold answers.

The same server answers the chat (the assistant's replies) and the judge
(requests whose system prompt is the judge's). The judge's answer lists one
`N: label` line per item, the label looked up by the item's "Next message"
text in `labels` (default `neutral`), or a fixed raw answer (`raw`). While
`gate` is cleared, judge requests wait before they are answered.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from aiohttp import web

from bridge.grading.judge_prompt import SYSTEM
from tests.fakes.fake_openai import FakeOpenAI, Response, Text, last_user_text

NEXT = re.compile(r"^Next message: (.*)$", re.MULTILINE)


def is_judge(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("content") == SYSTEM


def items_of(body: dict[str, Any]) -> list[str]:
    """The follow-ups a judge request asked about, in order."""
    return NEXT.findall(last_user_text(body))


class ScriptedJudge(FakeOpenAI):
    def __init__(self, replies: dict[str, str] | None = None, **kw: Any) -> None:
        super().__init__(responder=self._answer, **kw)
        self.labels: dict[str, str] = {}
        self.raw: str | None = None
        self.replies = replies or {}
        self.gate = asyncio.Event()
        self.gate.set()
        self.waiting = 0
        self.arrivals: list[str] = []  # "chat" / "judge", in the order requests arrived
        self.hold_chat: set[str] = set()  # chat requests with this last message wait at chat_gate
        self.chat_gate = asyncio.Event()
        self.chat_waiting = 0

    @property
    def judge_requests(self) -> list[dict[str, Any]]:
        return [b for b in self.requests if is_judge(b)]

    def _answer(self, body: dict[str, Any]) -> Response:
        if not is_judge(body):
            text = last_user_text(body)
            return Text(self.replies.get(text, "ok"), usage=(10, 2))
        if self.raw is not None:
            return Text(self.raw, usage=(50, 3))
        lines = [f"{n}: {self.labels.get(t, 'neutral')}" for n, t in enumerate(items_of(body), 1)]
        return Text("\n".join(lines), usage=(50, 3))

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()  # aiohttp keeps the body: the base class reads it again
        self.arrivals.append("judge" if is_judge(body) else "chat")
        if is_judge(body) and not self.gate.is_set():
            self.waiting += 1
            await self.gate.wait()
        if not is_judge(body) and last_user_text(body) in self.hold_chat:
            self.chat_waiting += 1
            await self.chat_gate.wait()
        return await super()._chat(request)
