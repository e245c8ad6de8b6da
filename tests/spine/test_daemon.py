"""The real daemon and terminal commands as subprocesses, with a fake model server.

`roost serve` is started as a process, talked to over HTTP, stopped with
SIGTERM and started again: the conversation must survive. `roost send` and
`roost chat` run through real stdin/stdout.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.grading.judge_fake import is_judge
from tests.waits import HANG_S

ROOST = [sys.executable, "-m", "bridge.cli.main"]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        yield server


PEOPLE = "[tenants.alice]\n\n[tenants.bob]\n"  # a test's config, unless it writes its own


def env_for(home: Path, fake: FakeOpenAI) -> dict[str, str]:
    """The fake model; an empty config file gets tenants alice and bob beside the local
    one (`roost send`/`import --tenant` refuse a tenant roost does not know). In the
    file, not the environment: a test that writes its own config has exactly that."""
    config = Path(os.environ["ROOST_CONFIG"])
    if not config.exists() or not config.read_text().strip():
        config.write_text(PEOPLE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOST_")}
    env.update(
        ROOST_HOME=str(home),
        ROOST_CONFIG=os.environ["ROOST_CONFIG"],
        ROOST_WEB__PORT="0",
        ROOST_LLM__BASE_URL=fake.base_url,
        ROOST_LLM__API_KEY="sk-test-key-000000000000",
        ROOST_LLM__MODEL="m1",
        ROOST_LIMITS__SHUTDOWN_GRACE_S="1",
        # no spare sandbox helper at the ready line (~0.2 s of CPU a daemon): a tool call
        # starts its own; the spare itself: tests/spine/test_serve_sandbox.py
        ROOST_FORGE__SPARE_HELPER="false",
    )
    return env


class Daemon:
    def __init__(self, proc: asyncio.subprocess.Process, port: int, lines: list[str]) -> None:
        self.proc, self.port, self.lines = proc, port, lines

    async def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(self.proc.communicate(), HANG_S)
        return self.proc.returncode or 0, err.decode()


async def start_daemon(env: dict[str, str]) -> Daemon:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "serve", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    lines: list[str] = []
    while True:
        raw = await asyncio.wait_for(proc.stdout.readline(), HANG_S)
        if not raw:
            _, err = await proc.communicate()
            raise AssertionError(f"daemon exited early: {err.decode()}")
        lines.append(raw.decode())
        match = re.search(r"web chat at http://127\.0\.0\.1:(\d+)/", lines[-1])
        if match:
            port = int(match.group(1))
        if lines[-1].startswith("roost: model"):
            return Daemon(proc, port, lines)


async def test_serve_restart_keeps_the_conversation(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    daemon = await start_daemon(env)
    first_start = "".join(daemon.lines)
    assert "#token=" not in first_start  # stdout is no terminal: the token stays in its file
    auth = {"Authorization": f"Bearer {(home / 'web-token').read_text().strip()}"}
    assert (home / "web-token").stat().st_mode & 0o077 == 0
    url = f"http://127.0.0.1:{daemon.port}"
    async with aiohttp.ClientSession(url) as http:
        r = await http.post("/api/chat", json={"text": "my secret word is kiwi"}, headers=auth)
        assert (await r.json())["reply"] == "echo: my secret word is kiwi"
        r = await http.post("/api/chat", json={"text": "/status"}, headers=auth)
        status = (await r.json())["reply"]
    assert "openai" in status and "1 turn," in status
    code, stderr = await daemon.stop()
    assert code == 0
    assert "kiwi" not in stderr  # nothing a user typed is logged

    daemon = await start_daemon(env)
    assert "#token=" not in "".join(daemon.lines)  # printed on the first start only
    async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
        r = await http.post("/api/chat", json={"text": "what was it?"}, headers=auth)
        assert (await r.json())["reply"] == "echo: what was it?"
    code, _ = await daemon.stop()
    assert code == 0
    last = [b for b in fake.requests if not is_judge(b)][-1]  # the outcome judge may ask after it
    sent = [m["content"] for m in last["messages"] if m["content"][:6] != "[Now: "]
    assert sent[1:] == [
        "my secret word is kiwi",
        "echo: my secret word is kiwi",
        "what was it?",
    ]
    assert last["messages"][0]["role"] == "system"


async def test_sigterm_during_a_slow_turn_exits_cleanly(home: Path, fake: FakeOpenAI) -> None:
    """The turns still running when the drain's grace ends are cancelled; the web's waiting
    request and open stream are told why (a 503, a `final` event), not cut off."""
    from tests.fakes.fake_openai import Hang

    env = env_for(home, fake)
    daemon = await start_daemon(env)
    auth = {"Authorization": f"Bearer {(home / 'web-token').read_text().strip()}"}
    fake.script(Hang(), Hang())

    async def asked(http: aiohttp.ClientSession) -> tuple[int, dict[str, Any]]:
        async with http.post("/api/chat", json={"text": "slow"}, headers=auth) as r:
            return r.status, await r.json()

    async def streamed(http: aiohttp.ClientSession) -> str:
        body = {"text": "slow too", "chat": "other"}
        async with http.post("/api/chat/stream", json=body, headers=auth) as r:
            return (await r.read()).decode()

    async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
        pending = asyncio.gather(asked(http), streamed(http))
        async with asyncio.timeout(HANG_S):  # a safety net against a hung run, not a speed check
            while len(fake.requests) < 2:
                await asyncio.sleep(0.05)
        code, _ = await daemon.stop()
        assert code == 0
        (status, body), events = await pending
    assert status == 503 and "roost is stopping" in body["error"]
    assert "event: final" in events and "roost is stopping" in events


async def test_a_web_message_sent_while_roost_stops_is_answered_503_not_run(
    home: Path, fake: FakeOpenAI
) -> None:
    """While the drain waits for a slow turn, a new `POST /api/chat` gets the 503 at once:
    it is not run (its turn would be cut off when the listener stops) and not stored; a new
    chat gets the same 503 and an answer asked again the stream's `final` saying so, with
    the turn it would have replaced kept, and the chat's conversation is not deleted; a
    typed `/stop` still stops the slow turn and is answered."""
    from tests.fakes.fake_openai import Hang, Response, echo_responder, last_user_text

    def slow_one(body: dict[str, Any]) -> Response:  # only the slow turn's model goes silent
        return Hang() if last_user_text(body) == "slow" else echo_responder(body)

    fake.responder = slow_one
    env = {**env_for(home, fake), "ROOST_LIMITS__SHUTDOWN_GRACE_S": "600"}
    daemon = await start_daemon(env)
    auth = {"Authorization": f"Bearer {(home / 'web-token').read_text().strip()}"}

    async def asked(http: aiohttp.ClientSession, text: str) -> tuple[int, dict[str, Any]]:
        async with http.post("/api/chat", json={"text": text, "chat": text}, headers=auth) as r:
            return r.status, await r.json()

    answers: list[tuple[str, int, dict[str, Any]]] = []
    async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
        r = await http.post("/api/chat", json={"text": "keep me", "chat": "kept"}, headers=auth)
        assert (await r.json())["reply"] == "echo: keep me"
        r = await http.get("/api/history?chat=kept", headers=auth)
        page = await r.json()
        kept, conversation = page["messages"], page["conversation"]
        slow = asyncio.ensure_future(asked(http, "slow"))
        async with asyncio.timeout(HANG_S):  # a safety net against a hung run, not a speed check
            while not any(last_user_text(body) == "slow" for body in fake.requests):
                await asyncio.sleep(0.05)
            daemon.proc.send_signal(signal.SIGTERM)
            # until one is refused: one the daemon read before its loop ran the signal's
            # handler is answered as usual (the handler runs at the loop's next pass, and a
            # turn takes many: 20 is far more than can come first)
            while len(answers) < 20 and (not answers or answers[-1][1] == 200):
                text = f"late{len(answers)}"
                answers.append((text, *await asked(http, text)))
            r = await http.post("/api/chat/new", json={"chat": "kept"}, headers=auth)
            assert r.status == 503 and "roost is stopping" in (await r.json())["error"]
            again = {"chat": "kept", "seq": kept[0]["seq"]}
            async with http.post("/api/chat/regenerate", json=again, headers=auth) as r:
                events = (await r.read()).decode()
            assert "event: final" in events and "roost is stopping" in events
            gone = {"chat": "kept", "conversation": conversation}
            r = await http.post("/api/conversations/delete", json=gone, headers=auth)
            assert r.status == 503 and "roost is stopping" in (await r.json())["error"]
        assert not slow.done()  # the drain still waits for the slow turn
        # a typed /stop still runs: it stops the slow turn, the drain ends, the daemon
        # stops its listener, and the /stop is answered all the same
        stop = await http.post("/api/chat", json={"text": "/stop", "chat": "slow"}, headers=auth)
        assert stop.status == 200, await stop.text()
        assert (await slow)[1]["kind"] == "stopped"
        _, err = await asyncio.wait_for(daemon.proc.communicate(), HANG_S)
    assert daemon.proc.returncode == 0, err.decode()
    text, status, body = answers[-1]
    assert status == 503 and "roost is stopping" in body["error"]
    assert [b for b in fake.requests if last_user_text(b) == text] == []  # never asked

    daemon = await start_daemon(env)
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{daemon.port}") as http:
            r = await http.get(f"/api/history?chat={text}", headers=auth)
            assert text not in await r.text()  # not stored
            r = await http.get("/api/history?chat=kept", headers=auth)
            shown = [(m["role"], m["text"], m["status"]) for m in (await r.json())["messages"]]
            assert shown == [(m["role"], m["text"], m["status"]) for m in kept]  # all kept
    finally:
        await daemon.stop()


async def run(args: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        *args,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), HANG_S)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_send_runs_one_turn(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    code, out, _ = await run(["send", "--tenant", "bob", "hello", "world"], env)
    assert (code, out) == (0, "echo: hello world\n")
    assert (home / "tenants" / "bob" / "global" / "workspace").is_dir()
    code, out, _ = await run(["send", "--tenant", "bob", "/whoami"], env)
    assert "Tenant: bob" in out
    code, _, err = await run(["send", "--tenant", "../etc", "x"], env)
    assert code == 2 and "tenant id" in err


async def test_chat_through_stdin_and_stdout(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    code, out, _ = await run(["chat"], env, b"first line\n/status\nsecond\n")
    assert code == 0
    replies = [block for block in out.split("\n\n") if block.strip()]
    assert replies[0] == "echo: first line"
    assert "Tenant: local" in replies[1] and "1 turn," in replies[1]
    assert replies[2] == "echo: second"
    messages = fake.requests[-1]["messages"]  # system + first exchange + now + second
    assert len(messages) == 5 and messages[3]["content"].startswith("[Now: ")


async def test_model_server_down_gets_a_useful_reply(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake) | {"ROOST_LLM__BASE_URL": "http://127.0.0.1:9/v1"}
    env["ROOST_LLM__MAX_RETRIES"] = "0"
    code, out, _ = await run(["send", "hello"], env)
    assert code == 1
    assert "127.0.0.1:9" in out or "reach" in out.lower()
    code, out, _ = await run(["send", "/status"], env)
    assert code == 0 and "Tenant: local" in out


async def test_a_port_in_use_is_a_clear_error(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    daemon = await start_daemon(env)
    # another home: one home is one daemon (bridge.app.instance)
    second = {**env, "ROOST_WEB__PORT": str(daemon.port), "ROOST_HOME": str(home) + "-second"}
    code, _, err = await run(["serve"], second)
    await daemon.stop()
    assert code == 1
    assert "cannot listen on 127.0.0.1" in err and "ROOST_WEB__PORT" in err
    assert (  # the setting by its file key too (a newcomer's roost.toml has [web] port)
        "Another roost (or program) may use it: stop it or set [web] port (ROOST_WEB__PORT) "
        "to a free one." in err
    ), err
    assert "Traceback" not in err


# `roost chat` in a terminal (a pty, the line editor, rendering): tests/spine/test_terminal.py
