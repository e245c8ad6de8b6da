"""`timeout_s` is an inactivity timeout: a slow answer that keeps coming is never cut.

A fake server sends a chunk every 0.2 s for longer than the timeout (the
answer arrives whole), or goes silent after the first chunk (the timeout
reply). The Anthropic and Claude Code backends have the same tests in their
own files.
"""

from __future__ import annotations

import time

import pytest

from bridge.types.backend import BackendError, Finish, TextDelta
from tests.fakes.fake_openai import FakeOpenAI, Hang, Text
from tests.llm.support import KEY, MODEL, collect

PIECES = [f"w{i} " for i in range(12)]


async def test_a_slow_stream_longer_than_the_timeout_is_not_cut(make_backend):
    async with FakeOpenAI(api_key=KEY, models=[MODEL], chunk_delay_s=0.2) as slow:
        slow.script(Text("".join(PIECES), pieces=PIECES))
        backend = make_backend(base_url=slow.base_url, timeout_s=1.0)
        started = time.monotonic()
        events = await collect(backend)
        took = time.monotonic() - started
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text == "".join(PIECES)
    assert isinstance(events[-1], Finish) and events[-1].reason == "stop"
    assert took > 1.0  # the whole answer took longer than the timeout (12 x 0.2 s)


async def test_a_silent_stream_fails_with_the_timeout_reply(fake, make_backend):
    fake.script(Hang())
    with pytest.raises(BackendError) as info:
        await collect(make_backend(timeout_s=0.3))
    assert info.value.kind == "timeout"
    assert "sent nothing for 0.3s mid-answer" in info.value.user_message
    assert "operator's log has details" in info.value.user_message
