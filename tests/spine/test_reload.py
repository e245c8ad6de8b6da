"""Reload without restart: the real daemon, a fake Bot API, a fake model, a notify socket.

`roost serve` runs as a subprocess with Telegram polling the fake Bot API and
`NOTIFY_SOCKET` pointing at a datagram socket the test owns. The config file
is rewritten: after SIGHUP (or, without a signal, after watchfiles sees the
change) a newly mapped Telegram user is answered, a removed one is refused,
and a broken file is refused with one ERROR line while the old mapping goes
on working. systemd hears RELOADING=1 then READY=1 around each reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.fakes.fake_openai import FakeOpenAI, Response, last_user_text
from tests.spine.test_daemon import ROOST, env_for
from tests.spine.test_notify import next_message, until
from tests.telegram.conftest import ALICE, GROUP, TOKEN
from tests.telegram.fake_bot_api import BOT_USERNAME, FakeBotAPI
from tests.waits import HANG_S

BOB = 222222
WAIT_S = HANG_S  # a safety net against a hung run, not a speed check


def config(*bob: int, extra: str = "") -> str:
    alice = f"[tenants.alice]\ntelegram_ids = [{ALICE}]\n"
    return f"{alice}[tenants.bob]\ntelegram_ids = {list(bob)}\n{extra}"


def write_config(text: str) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(text)


class GatedOpenAI(FakeOpenAI):
    """The fake model; a message "slow" is answered only once `gate` is set."""

    gate = asyncio.Event()

    async def _respond(
        self, request: web.Request, body: dict[str, Any], response: Response
    ) -> web.StreamResponse:
        if last_user_text(body) == "slow":
            await self.gate.wait()
        return await super()._respond(request, body, response)


@pytest.fixture
async def model() -> AsyncIterator[GatedOpenAI]:
    async with GatedOpenAI(api_key="sk-test-key-000000000000", models=["m1"]) as server:
        server.gate = asyncio.Event()
        yield server


@pytest.fixture
async def bot() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(TOKEN, max_poll_s=1.0) as server:
        yield server


@pytest.fixture
def notify(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    where = str(tmp_path / "notify.sock")
    sock.bind(where)
    sock.setblocking(False)
    yield sock, where
    sock.close()


class Daemon:
    """The daemon process and every stderr line it has written so far."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.log: list[str] = []
        assert proc.stderr is not None
        self._reader = asyncio.create_task(self._read(proc.stderr))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        while raw := await stream.readline():
            self.log.append(raw.decode())

    def lines(self, word: str) -> list[str]:
        return [line for line in self.log if word in line]

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(self.proc.wait(), WAIT_S)
        await self._reader
        return code


@contextlib.asynccontextmanager
async def started(
    env: dict[str, str], notify: tuple[socket.socket, str], channels: str
) -> AsyncIterator[Daemon]:
    """`roost serve` with `env`, from its READY=1 (whose status names `channels`) until
    it stopped cleanly."""
    proc = await asyncio.create_subprocess_exec(
        *ROOST,
        "serve",
        env=env | {"NOTIFY_SOCKET": notify[1]},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    running = Daemon(proc)
    try:
        ready, _ = await until(notify[0], "READY")
        assert ready["STATUS"].startswith(f"channels: {channels};"), running.log
        yield running
    finally:
        assert await running.stop() == 0, "".join(running.log)


@pytest.fixture
async def daemon(
    home: Path, model: FakeOpenAI, bot: FakeBotAPI, notify: tuple[socket.socket, str]
) -> AsyncIterator[Daemon]:
    write_config(config())
    env = env_for(home, model) | {
        "ROOST_TELEGRAM__TOKEN": TOKEN,
        "ROOST_TELEGRAM__API_BASE_URL": bot.base_url,
    }
    async with started(env, notify, "web, telegram") as running:
        yield running


async def answered(bot: FakeBotAPI, user: int, text: str) -> list[str]:
    """Send `text` as `user`; wait for the replies to it (one, whatever it says)."""
    before = len(bot.sent_to(user))
    bot.push_text(user, text)
    await bot.wait_until(lambda: len(bot.sent_to(user)) > before, WAIT_S)
    await bot.wait_until(lambda: not bot.sent_to(user)[-1].text.endswith("…"), WAIT_S)
    return [sent.text for sent in bot.sent_to(user)[before:]]


async def reloaded(sock: socket.socket) -> dict[str, str]:
    """RELOADING=1, then the READY=1 that ends the reload (returned)."""
    reloading, _ = await until(sock, "RELOADING")
    assert reloading["RELOADING"] == "1" and int(reloading["MONOTONIC_USEC"]) > 0
    done = await next_message(sock)
    while "READY" not in done:  # a STATUS= refresh may come in between
        done = await next_message(sock)
    return done


def served(daemon: Daemon) -> int:
    """Reloads served so far (done, refused or unchanged). Requests that come while one
    waits are served together (`Reloader.request`), so this may be fewer than asked."""
    words = ("reloaded the configuration", "reload refused", "configuration is unchanged")
    return sum(len(daemon.lines(word)) for word in words)


async def logged(daemon: Daemon, word: str, times: int = 1) -> None:
    """Wait until the daemon logged `word` on `times` lines."""
    async with asyncio.timeout(WAIT_S):
        while len(daemon.lines(word)) < times:
            await asyncio.sleep(0.05)


async def settled(daemon: Daemon) -> None:
    """Wait until every reload asked so far was served: a SIGHUP sent now is served
    after (or together with) any request still waiting, and its outcome is logged."""
    before = served(daemon)
    daemon.proc.send_signal(signal.SIGHUP)
    async with asyncio.timeout(WAIT_S):
        while served(daemon) <= before:
            await asyncio.sleep(0.05)


async def test_sighup_maps_and_unmaps_a_telegram_user_without_restart(
    daemon: Daemon, bot: FakeBotAPI, notify: tuple[socket.socket, str]
) -> None:
    sock = notify[0]
    assert await answered(bot, ALICE, "hi") == ["echo: hi"]
    write_config(config(BOB))
    daemon.proc.send_signal(signal.SIGHUP)
    done = await reloaded(sock)
    assert done == {"READY": "1", "STATUS": "reloaded"}
    assert await answered(bot, BOB, "hello from bob") == ["echo: hello from bob"]

    write_config(config())
    daemon.proc.send_signal(signal.SIGHUP)
    assert (await reloaded(sock))["STATUS"] == "reloaded"
    (refusal,) = await answered(bot, BOB, "still there?")
    assert "I don't know you" in refusal and str(BOB) in refusal
    assert await answered(bot, ALICE, "and me?") == ["echo: and me?"]
    assert daemon.proc.returncode is None  # the same process all along


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        ("[tenants.bob\ntelegram_ids = [1]\n", "cannot read"),  # invalid TOML
        (config(BOB, ALICE), f"telegram id {ALICE} is mapped to 'alice' and 'bob'"),
        (config(BOB) + "[limits]\nmax_message_chars = 0\n", "limits.max_message_chars"),
    ],
)
async def test_a_broken_config_is_refused_and_the_old_one_stays(
    daemon: Daemon, bot: FakeBotAPI, notify: tuple[socket.socket, str], broken: str, reason: str
) -> None:
    write_config(broken)
    daemon.proc.send_signal(signal.SIGHUP)
    done = await reloaded(notify[0])
    assert done["STATUS"].startswith("reload refused")
    # The write also wakes the file watcher: a second request for the same file. It is
    # served after the signal's, or together with it when both came before the reload
    # ran; either way the bad file is refused once (one ERROR line naming the reason).
    await logged(daemon, "changed: reloading")
    await settled(daemon)  # asked again, the same bad file: not refused again
    (error,) = daemon.lines("reload refused")
    assert "ERROR" in error and reason in error, error
    assert daemon.lines("unchanged since the last one (refused)")
    assert await answered(bot, ALICE, "still mine") == ["echo: still mine"]
    (refusal,) = await answered(bot, BOB, "let me in")  # bob's id never got in force
    assert "I don't know you" in refusal


async def test_a_file_change_without_a_signal_is_picked_up(
    daemon: Daemon, bot: FakeBotAPI, notify: tuple[socket.socket, str]
) -> None:
    path = Path(os.environ["ROOST_CONFIG"])
    fresh = path.with_suffix(".new")  # as editors save: write aside, rename over
    fresh.write_text(config(BOB, extra='[web]\nhost = "127.0.0.2"\n'))
    fresh.replace(path)
    assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
    (seen,) = daemon.lines("changed: reloading")
    assert str(path) in seen  # the watcher did it: no signal was sent
    assert await answered(bot, BOB, "no signal") == ["echo: no signal"]
    (warning,) = daemon.lines("applied only after a restart")
    assert "WARNING" in warning and warning.rstrip().endswith("web.host"), warning


async def test_a_file_saved_the_moment_a_web_only_daemon_is_ready_is_picked_up(
    home: Path, model: FakeOpenAI, notify: tuple[socket.socket, str]
) -> None:
    """The watch is in place before READY=1: with the web channel alone nothing else
    gives the watcher's task its first step before the daemon says it is ready."""
    write_config(config())
    async with started(env_for(home, model), notify, "web") as running:
        path = Path(os.environ["ROOST_CONFIG"])
        fresh = path.with_suffix(".new")  # as editors save: write aside, rename over
        fresh.write_text(config(BOB))
        fresh.replace(path)
        assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
        (seen,) = running.lines("changed: reloading")
        assert str(path) in seen  # the watcher did it: no signal was sent


async def test_a_turn_in_flight_finishes_across_a_reload_that_unmaps_its_user(
    daemon: Daemon, bot: FakeBotAPI, model: GatedOpenAI, notify: tuple[socket.socket, str]
) -> None:
    bot.push_text(ALICE, "slow")
    async with asyncio.timeout(WAIT_S):
        while not any(last_user_text(body) == "slow" for body in model.requests):
            await asyncio.sleep(0.05)
    write_config(config().replace(f"[{ALICE}]", "[]"))  # alice is no longer mapped
    daemon.proc.send_signal(signal.SIGHUP)
    assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
    model.gate.set()
    await bot.wait_until(
        lambda: bot.sent_to(ALICE)[-1:] and bot.sent_to(ALICE)[-1].text == "echo: slow", WAIT_S
    )
    (refusal,) = await answered(bot, ALICE, "next")  # the reload applies from the next message
    assert "I don't know you" in refusal


async def test_message_and_reply_limits_change_live(
    daemon: Daemon, bot: FakeBotAPI, notify: tuple[socket.socket, str]
) -> None:
    long = "x" * 60
    assert await answered(bot, ALICE, long) == [f"echo: {long}"]
    write_config(config(extra="[limits]\nmax_message_chars = 50\n"))
    daemon.proc.send_signal(signal.SIGHUP)
    assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
    (refusal,) = await answered(bot, ALICE, long)
    assert "60 characters; the limit is 50" in refusal
    assert not any("max_message_chars" in line for line in daemon.lines("after a restart"))


async def test_personas_follow_a_reload_of_their_directory(
    daemon: Daemon,
    bot: FakeBotAPI,
    model: GatedOpenAI,
    notify: tuple[socket.socket, str],
    tmp_path: Path,
) -> None:
    """`[loadout] personas_dir` applies live; a persona file added later is read without one."""
    shelf = tmp_path / "personas"
    shelf.mkdir()
    pirate = {"name": "pirate", "description": "talks like a pirate", "append_system": "ARR-7781"}
    (shelf / "pirate.json").write_text(json.dumps(pirate))
    (refused,) = await answered(bot, ALICE, "/persona pirate")
    assert "There is no persona 'pirate'" in refused
    write_config(config(extra=f'[loadout]\npersonas_dir = "{shelf}"\n'))
    daemon.proc.send_signal(signal.SIGHUP)
    assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
    (chosen,) = await answered(bot, ALICE, "/persona pirate")
    assert "now uses the pirate persona" in chosen
    assert await answered(bot, ALICE, "ahoy") == ["echo: ahoy"]
    assert "ARR-7781" in model.requests[-1]["messages"][0]["content"]
    assert not any("personas_dir" in line for line in daemon.lines("after a restart"))
    parrot = {"name": "parrot", "description": "repeats", "append_system": "SQUAWK-1"}
    (shelf / "parrot.json").write_text(json.dumps(parrot))  # no reload: files are watched
    (listing,) = await answered(bot, ALICE, "/persona")
    assert "parrot — repeats" in listing and "pirate — talks like a pirate" in listing


async def test_allowed_groups_follow_a_reload(
    daemon: Daemon, bot: FakeBotAPI, notify: tuple[socket.socket, str]
) -> None:
    mention = f"@{BOT_USERNAME} hello group"
    entities = [{"type": "mention", "offset": 0, "length": len(BOT_USERNAME) + 1}]

    def in_group() -> None:
        bot.push_text(ALICE, mention, chat_id=GROUP, chat_type="supergroup", entities=entities)

    in_group()
    assert await answered(bot, ALICE, "private") == ["echo: private"]
    assert bot.sent_to(GROUP) == []  # not an allowed group: ignored
    write_config(config(extra=f"[telegram]\nallowed_groups = [{GROUP}]\n"))
    daemon.proc.send_signal(signal.SIGHUP)
    assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
    in_group()
    await bot.wait_until(lambda: len(bot.sent_to(GROUP)) == 1, WAIT_S)
    assert bot.sent_to(GROUP)[0].text == "echo: hello group"
    assert not any("allowed_groups" in line for line in daemon.lines("after a restart"))


async def test_a_tenants_web_token_follows_a_reload(
    daemon: Daemon, notify: tuple[socket.socket, str]
) -> None:
    """`[tenants.X] web_token` is live: added, it signs in; removed, it is refused at once
    (a removed person's page reads no more history)."""
    (line,) = daemon.lines("web bridge listening on")
    base = line.split("listening on ")[1].strip().rstrip("/")
    bob_token = "bob-page-token-7f3a9c21"
    url = f"{base}/api/history?chat=default"
    headers = {"Authorization": f"Bearer {bob_token}"}

    async def status() -> int:
        async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as resp:
            return resp.status

    assert await status() == 401
    write_config(config(BOB, extra=f'web_token = "{bob_token}"\n'))
    daemon.proc.send_signal(signal.SIGHUP)
    assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
    assert await status() == 200
    write_config(config(BOB))
    daemon.proc.send_signal(signal.SIGHUP)
    assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
    assert await status() == 401


async def test_a_config_folder_made_after_the_start_is_waited_for_and_read(
    home: Path, tmp_path: Path, model: FakeOpenAI, notify: tuple[socket.socket, str]
) -> None:
    """The first run: no `~/.config/roost` yet, so no file to watch. The README says
    saving roost.toml needs no restart; the daemon waits for the folder (and the folders
    above it) to appear and reads a file already in it."""
    user = tmp_path / "user-home"
    user.mkdir()
    env = {k: v for k, v in env_for(home, model).items() if k != "ROOST_CONFIG"}
    env["HOME"] = str(user)
    async with started(env, notify, "web") as running:
        folder = user / ".config" / "roost"
        folder.mkdir(parents=True)  # `mkdir -p`, then the file, as a newcomer does
        (folder / "roost.toml").write_text(config(BOB))
        assert (await reloaded(notify[0]))["STATUS"] == "reloaded"
        assert running.lines("does not exist yet; waiting for it")
        seen = running.lines("appeared: reloading") + running.lines("changed: reloading")
        assert seen and str(folder / "roost.toml") in seen[0], running.log
