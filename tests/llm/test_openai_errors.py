"""OpenAIBackend failure handling: retries, status codes, garbage, timeouts."""

from __future__ import annotations

import logging
import re
import socket
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from bridge.llm.http_retry import retry_after_seconds, retry_reason
from bridge.types.backend import BackendError, TextDelta
from tests.fakes.fake_openai import Garbage, Hang, Status, Text
from tests.llm.support import KEY, MODEL, collect

INTERNAL = re.compile(
    r"https?://|\b\d{1,3}(\.\d{1,3}){3}\b|localhost|\[::1?\]|:\d{2,5}\b|"
    r"(^|[\s(\'\"])/[\w.-]+"
)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def failure(backend) -> BackendError:
    """The error a person sees; `error.logged` is the operator's log line with its ref."""
    handler = Lines()
    logger = logging.getLogger("bridge.llm")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with pytest.raises(BackendError) as info:
            await collect(backend)
    finally:
        logger.removeHandler(handler)
    error = info.value
    text = error.user_message
    assert KEY not in str(error) and KEY not in text
    assert KEY[:12] not in text
    assert not INTERNAL.search(text), text  # no host, port, URL or path for the person
    ref = re.search(r"\(ref ([0-9a-f]{6})\)", text)
    assert ref is not None and "operator" in text, text
    logged = [line for line in handler.lines if ref.group(1) in line]
    assert len(logged) == 1, handler.lines
    assert KEY not in "\n".join(handler.lines)
    error.logged = logged[0]  # type: ignore[attr-defined]
    return error


async def test_429_honours_retry_after_then_succeeds(fake, make_backend, sleeps, caplog):
    caplog.set_level(logging.DEBUG)
    fake.script(Status(429, retry_after=7), Text("ok"))
    events = await collect(make_backend())
    assert TextDelta("ok") in events
    assert sleeps.delays == [7.0]
    assert len(fake.requests) == 2
    assert "retry 1/3" in caplog.text
    assert KEY not in caplog.text


async def test_retry_after_is_capped_by_max_backoff(fake, make_backend, sleeps):
    fake.script(Status(503, retry_after=120), Text("ok"))
    await collect(make_backend(max_backoff_s=5))
    assert sleeps.delays == [5.0]


def test_retry_after_accepts_seconds_and_http_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC).timestamp()
    later = format_datetime(datetime(2026, 1, 1, 12, 0, 42, tzinfo=UTC), usegmt=True)
    assert retry_after_seconds(later, now=now) == pytest.approx(42)
    assert retry_after_seconds("3", now=now) == 3
    assert retry_after_seconds("1.5") == 1.5
    assert retry_after_seconds("-4") is None  # not delta-seconds: the own backoff applies
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


async def test_500_then_success_backs_off_with_jitter(fake, make_backend, sleeps):
    fake.script(Status(500), Status(502), Text("recovered"))
    events = await collect(make_backend(backoff_base_s=0.4))
    assert TextDelta("recovered") in events
    assert len(sleeps.delays) == 2
    assert 0.2 <= sleeps.delays[0] <= 0.4
    assert 0.4 <= sleeps.delays[1] <= 0.8


async def test_server_errors_exhaust_retries(fake, make_backend, sleeps):
    fake.script(*[Status(503)] * 4, Text("too late"))
    error = await failure(make_backend(max_retries=3))
    assert error.kind == "unavailable"
    assert "HTTP 503" in error.user_message and "4 attempts" in error.user_message
    assert "127.0.0.1:" in error.logged
    assert len(fake.requests) == 4
    assert len(sleeps.delays) == 3
    assert fake.pending == 1


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_the_log_line_of_the_ref_has_what_the_server_said(fake, make_backend, sleeps, status):
    """README's Troubleshoot: the log line with the ref names the server, the status and
    its message; for 5xx and 429 the message was nowhere (newcomer37 F3)."""
    said = "CUDA out of memory on GPU 0"
    fake.script(*[Status(status, said, retry_after=0)] * 2)
    error = await failure(make_backend(max_retries=1))
    assert said in error.logged and f"HTTP {status}" in error.logged
    assert "CUDA" not in error.user_message  # the person gets roost's words only


async def test_no_quota_left_is_said_at_once_and_not_retried(fake, make_backend, sleeps):
    """OpenAI answers 429 `insufficient_quota` to an account without credit: the person
    was told "try again in a minute" after every retry (newcomer37 F4)."""
    body = (
        '{"error": {"message": "You exceeded your current quota, please check your plan and '
        'billing details.", "type": "insufficient_quota", "param": null, '
        '"code": "insufficient_quota"}}'
    )
    fake.script(Garbage(body, "application/json", 429), Text("never"))
    error = await failure(make_backend(max_retries=3))
    assert len(fake.requests) == 1 and sleeps.delays == []
    assert "no quota left" in error.user_message and "plan and billing" in error.user_message
    assert "try again" not in error.user_message
    assert "You exceeded your current quota" in error.logged


async def test_rate_limit_exhausts_retries(fake, make_backend, sleeps):
    fake.script(*[Status(429, retry_after=0)] * 3)
    error = await failure(make_backend(max_retries=2))
    assert error.kind == "rate_limited"
    assert sleeps.delays == [0.0, 0.0]


async def test_401_is_an_auth_error_without_retry(fake, make_backend, sleeps):
    error = await failure(make_backend(api_key="sk-wrong-key-999"))
    assert error.kind == "auth"
    assert "ROOST_LLM__API_KEY" in error.user_message
    assert "sk-wrong-key-999" not in error.user_message
    assert len(fake.requests) == 1 and sleeps.delays == []


async def test_a_named_models_errors_name_its_own_table(fake, make_backend):
    """ops38 M4: a [models.smart] model's 401 or 404 told the operator to check
    ROOST_LLM__API_KEY / ROOST_LLM__MODEL (the [llm] settings, which were fine), and the
    log named only the host (several models may share one server)."""
    error = await failure(make_backend(api_key="sk-wrong-key-999", table="smart"))
    assert "[models.smart] api_key" in error.user_message
    assert "ROOST_LLM__" not in error.user_message
    assert f"model {MODEL!r} of [models.smart]" in error.logged
    error = await failure(make_backend(model="no-such-model", table="smart"))
    assert "[models.smart] model and [models.smart] base_url" in error.user_message
    assert "ROOST_LLM__" not in error.user_message + error.logged
    error = await failure(make_backend(api_key="sk-wrong-key-999"))
    assert "ROOST_LLM__API_KEY" in error.user_message and "of [llm]" in error.logged


async def test_404_names_the_model_and_the_server(fake, make_backend):
    error = await failure(make_backend(model="no-such-model"))
    assert error.kind == "not_found"
    assert "no-such-model" in error.user_message
    assert fake.base_url in error.logged
    assert len(fake.requests) == 1


async def test_404_for_a_base_url_without_v1(fake, make_backend):
    error = await failure(make_backend(base_url=fake.base_url.removesuffix("/v1")))
    assert error.kind == "not_found"
    assert "/v1" in error.logged and "ROOST_LLM__BASE_URL" in error.logged
    assert fake.requests == []


async def test_400_logs_the_server_message_with_the_key_redacted(fake, make_backend):
    fake.script(Status(400, message=f"context too long for key {KEY} at /srv/models/x.gguf"))
    error = await failure(make_backend())
    assert error.kind == "bad_response"
    assert "HTTP 400" in error.user_message
    assert "context too long" not in error.user_message
    assert "context too long for key *** at /srv/models/x.gguf" in error.logged


@pytest.mark.parametrize(
    "garbage",
    [
        Garbage(),
        Garbage('data: {"choices": "nope"}\n\n'),
        Garbage("data: [1, 2]\n\n"),
        Garbage(b"data: \xff\xfe\n\n"),
    ],
)
async def test_bad_json_in_the_stream(fake, make_backend, garbage):
    fake.script(garbage)
    error = await failure(make_backend())
    assert error.kind == "bad_response"
    assert len(fake.requests) == 1


async def test_html_instead_of_a_stream_hints_at_the_base_url(fake, make_backend):
    fake.script(Garbage("<html><body>Welcome to nginx!</body></html>", content_type="text/html"))
    error = await failure(make_backend())
    assert error.kind == "bad_response"
    assert "text/html" in error.logged and "/v1" in error.logged


async def test_bad_json_body_in_a_json_reply(fake, make_backend):
    fake.script(Garbage("{'not': json", content_type="application/json"))
    error = await failure(make_backend())
    assert error.kind == "bad_response"


async def test_error_object_inside_the_stream(fake, make_backend):
    fake.script(Garbage('data: {"error": {"message": "model overloaded"}}\n\n'))
    error = await failure(make_backend())
    assert error.kind == "bad_response"
    assert "model overloaded" in error.logged


@pytest.mark.parametrize("body", ["data: [DONE]\n\n", "", ": ping\n\n"])
async def test_empty_stream_is_a_bad_response(fake, make_backend, body):
    fake.script(Garbage(body), Text("not asked for"))
    error = await failure(make_backend())
    assert error.kind == "bad_response"
    assert len(fake.requests) == 1


async def test_inactivity_timeout_when_the_server_goes_silent_mid_answer(
    fake, make_backend, sleeps
):
    fake.script(Hang())
    error = await failure(make_backend(timeout_s=0.2))
    assert error.kind == "timeout"
    assert "sent nothing for 0.2s mid-answer" in error.user_message
    assert "127.0.0.1:" in error.logged
    assert sleeps.delays == []


async def test_inactivity_timeout_when_no_headers_arrive(fake, make_backend):
    fake.script(Hang(headers=False))
    error = await failure(make_backend(timeout_s=0.2))
    assert error.kind == "timeout"
    assert "sent nothing for 0.2s before answering" in error.user_message


async def test_unreachable_server_is_retried_then_unavailable(make_backend, sleeps):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = await failure(make_backend(base_url=f"http://127.0.0.1:{port}/v1", max_retries=2))
    assert error.kind == "unavailable"
    assert "cannot be reached" in error.user_message
    assert f"127.0.0.1:{port}" in error.logged and "cannot connect" in error.logged
    assert len(sleeps.delays) == 2


async def test_owned_session_is_closed_and_reopened(fake, make_backend):
    backend = make_backend()
    fake.script(Text("a"), Text("b"))
    await collect(backend)
    await backend.aclose()
    events = await collect(backend)
    assert TextDelta("b") in events
    assert fake.requests[1]["model"] == MODEL


@pytest.mark.parametrize(
    "base_url",
    [
        "http://192.0.2.10:8000/v1",
        "http://llm-gpu-3.internal.corp:11434/v1",
        "http://[fd00::7]:8080/v1",
        "http://localhost:1/v1",
    ],
)
async def test_an_internal_model_server_is_never_named_to_the_person(make_backend, base_url):
    error = await failure(
        make_backend(base_url=base_url, max_retries=0, connect_timeout_s=0.5, timeout_s=2)
    )
    assert error.kind in ("unavailable", "timeout")
    host = base_url.split("//")[1].split("/")[0]
    assert host not in error.user_message and host in error.logged


def test_a_retry_says_whether_the_server_answered() -> None:
    """A 500 was "did not answer (HTTP 500)" while retrying and "answered with an error
    (HTTP 500, 4 attempts)" at the end (s35 newcomer N22): both say it answered now."""
    assert retry_reason("unavailable", "HTTP 500") == (
        "the model server answered with an error (HTTP 500)"
    )
    assert retry_reason("rate_limited", "HTTP 429") == "the model server is busy (HTTP 429)"
    assert retry_reason("timeout", "no answer in 60 s") == "the model server did not answer"
    assert retry_reason("unavailable", "cannot connect") == "the model server did not answer"
