"""What a person reads when the model server fails: no host, port, URL or path.

A roost built in process with the real OpenAI backend, talking to the fake
OpenAI server (or to a closed port); the reply text is what Telegram or the
web page would show.
"""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.llm.openai import OpenAIBackend
from bridge.types.audit_sink import MemoryAudit
from tests.conftest import Clock, web_msg
from tests.fakes.fake_openai import FakeOpenAI, Garbage, Hang, Status, Text
from tests.llm.support import KEY, MODEL

INTERNAL = re.compile(
    r"https?://|\b\d{1,3}(\.\d{1,3}){3}\b|localhost|\[[0-9a-f:]+\]|:\d{2,5}\b|"
    r"(^|[\s('\"])/[\w.-]+"
)


async def _nothing(seconds: float) -> None:
    return None


@pytest.fixture
async def served(settings: Settings, clock: Clock) -> AsyncIterator[Any]:
    async with FakeOpenAI(api_key=KEY, models=[MODEL]) as fake:
        made: list[Any] = []

        async def roost_for(base_url: str, **kw: Any) -> Any:
            backend = OpenAIBackend(base_url, KEY, MODEL, sleep=_nothing, **kw)
            roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
            made.append(roost)
            return roost

        yield fake, roost_for
        for roost in made:
            await roost.aclose()


SCRIPTS = [
    [Status(503, message="upstream 10.0.0.5:8000 refused")] * 4,
    [Status(429, retry_after=0)] * 4,
    [Status(400, message="bad prompt; see /var/lib/vllm/logs/x.log")],
    [Status(500, message="http://gpu-7.internal:9000/v1 down")] * 4,
    [Garbage("<html>nginx at 172.16.0.3</html>", content_type="text/html")],
    [Garbage('data: {"error": {"message": "oom on node gpu-7.internal:9000"}}\n\n')],
    [Hang()],
]


@pytest.mark.parametrize("script", SCRIPTS)
async def test_failure_replies_name_no_internal_address(
    served: Any, script: list[Any], caplog: pytest.LogCaptureFixture
) -> None:
    fake, roost_for = served
    fake.script(*script)
    roost = await roost_for(fake.base_url, timeout_s=0.3, max_retries=3)
    final = await roost.core.handle(web_msg("hello", 1), None)
    assert final.kind == "error"
    assert not INTERNAL.search(final.text), final.text
    for leaked in ("10.0.0.5", "gpu-7", "vllm", "172.16", "nginx", "upstream", "oom"):
        assert leaked not in final.text
    ref = re.search(r"\(ref ([0-9a-f]{6})\)", final.text)
    assert ref is not None and "operator" in final.text
    logged = [r.getMessage() for r in caplog.records if ref.group(1) in r.getMessage()]
    assert logged and fake.base_url.split("//")[1].split("/")[0] in logged[0]
    status = (await roost.core.handle(web_msg("/status", 2), None)).text
    assert not INTERNAL.search(status), status


async def test_a_closed_port_cannot_be_reached(served: Any) -> None:
    _, roost_for = served
    with socket.socket() as sock:  # bound, never listening: refused, and no one else gets it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        roost = await roost_for(f"http://127.0.0.1:{port}/v1", max_retries=1)
        final = await roost.core.handle(web_msg("hello", 1), None)
    assert "cannot be reached" in final.text
    assert str(port) not in final.text and "127.0.0.1" not in final.text


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_a_server_error_is_not_called_unreachable(served: Any, status: int) -> None:
    """The server was reached and answered with an error status: say that."""
    fake, roost_for = served
    fake.script(*[Status(status, message="upstream down")] * 2)
    roost = await roost_for(fake.base_url, max_retries=1)
    final = await roost.core.handle(web_msg("hello", 1), None)
    assert f"answered with an error (HTTP {status}, 2 attempts)" in final.text, final.text
    assert "cannot be reached" not in final.text and "upstream" not in final.text


async def test_a_connection_dropped_before_the_answer_is_said_so(served: Any) -> None:
    fake, roost_for = served
    fake.script(*[Text("never seen", cut_after=0)] * 2)
    roost = await roost_for(fake.base_url, max_retries=1)
    final = await roost.core.handle(web_msg("hello", 1), None)
    assert "The connection to the model server broke before it answered" in final.text
    assert "cannot be reached" not in final.text
