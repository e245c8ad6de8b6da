"""A send whose outcome is unknown is never repeated (issue #22 item 8).

The fake Bot API takes the call (the message is shown) and holds its answer
until the test ends, as a slow Telegram does: the client's timeout fires
after the request has reached the server. A new message (text, document,
an outbox part) is then not sent again, so the person never sees it twice;
the chat gets one line saying Telegram did not confirm it. A send that
failed before it left (a refused connection, a connect or pool timeout) is
still retried (`outcome_unknown` says which is which).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import httpx
from telegram.error import NetworkError, TimedOut

from bridge.channels.telegram.outbox import UNCONFIRMED_PART, OutboxSender
from bridge.channels.telegram.reply import UNCONFIRMED
from bridge.channels.telegram.send import outcome_unknown
from bridge.core.commands import Command, CommandContext
from bridge.schedule.outbox import OutboxStore
from bridge.types.messages import Final, OutFile
from tests.conftest import ScriptedBackend
from tests.masking import m
from tests.telegram.conftest import ALICE, NO_DRAFTS, running, tg_settings
from tests.telegram.fake_bot_api import FakeBotAPI

# a new message waits this long for Telegram's answer; the stalled call never gets one
IMPATIENT = replace(NO_DRAFTS, send=replace(NO_DRAFTS.send, send_timeout_s=2.0))


async def test_a_slow_send_that_timed_out_is_not_sent_again(home: Path, fake: FakeBotAPI) -> None:
    fake.stall("sendMessage")  # the answer is shown; Telegram's reply never comes back
    async with running(tg_settings(home, fake), fake, ScriptedBackend("the answer"), IMPATIENT):
        fake.push_text(ALICE, "question")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
    shown = [m.text for m in fake.sent_to(ALICE)]
    assert shown == ["the answer", UNCONFIRMED]
    sends = [c.params["text"] for c in fake.calls_of("sendMessage")]
    assert sends.count("the answer") == 1


async def test_an_upload_that_timed_out_is_not_uploaded_again(home: Path, fake: FakeBotAPI) -> None:
    path = home / "tenants" / "alice" / "workspace" / "outputs" / "report.txt"
    path.parent.mkdir(parents=True)
    path.write_text("numbers\n")

    async def report(ctx: CommandContext, args: str) -> Final:
        return Final("here it is", files=(OutFile(path, "report.txt", "text/plain"),))

    fake.stall("sendDocument")
    async with running(tg_settings(home, fake), fake, options=IMPATIENT) as r:
        r.roost.core.commands.add(Command("report", "/report", "a file", report))
        fake.push_text(ALICE, "/report")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
    assert len(fake.documents_to(ALICE)) == 1 == len(fake.calls_of("sendDocument"))
    assert fake.sent_to(ALICE)[1].text.startswith("📎 Telegram did not confirm that report.txt")


async def test_an_outbox_part_whose_send_timed_out_is_never_sent_again(
    home: Path, fake: FakeBotAPI
) -> None:
    text = "\n\n".join(f"paragraph {n} " + "x" * 300 for n in range(20))  # two parts or more
    async with running(tg_settings(home, fake), fake, options=IMPATIENT) as r:
        outbox = OutboxStore(r.roost.database)
        entry = await outbox.enqueue("alice", "telegram", str(ALICE), m(text), "job:x:1", now_ms=1)
        entry_id = entry.id
        deliver = OutboxSender(r.channel.sender, outbox.parts)
        fake.stall("sendMessage")  # part 1 is shown, its answer never comes
        (claimed,) = await outbox.claim(2, 1)
        await deliver(claimed)
        first = [m.text for m in fake.sent_to(ALICE)]
        await deliver(claimed)  # delivered again (a retry, a restart): nothing is repeated
        assert (await outbox.parts.parts(entry_id))[0].state == "unknown"
    assert [m.text for m in fake.sent_to(ALICE)] == first
    assert first[-1] == UNCONFIRMED_PART and first[0].startswith("paragraph 0")
    assert len(fake.calls_of("sendMessage")) == len(first)


def test_only_errors_after_the_request_left_are_unconfirmed() -> None:
    def chained(exc: NetworkError, cause: Exception) -> NetworkError:
        exc.__cause__ = cause
        return exc

    request = httpx.Request("POST", "http://127.0.0.1/")
    after = [httpx.ReadTimeout("r", request=request), httpx.RemoteProtocolError("gone")]
    before = [httpx.ConnectTimeout("c"), httpx.PoolTimeout("p"), httpx.ConnectError("refused")]
    assert all(outcome_unknown(chained(TimedOut(), c)) for c in after)
    assert not any(outcome_unknown(chained(NetworkError("x"), c)) for c in before)
    assert outcome_unknown(TimedOut())  # a timeout of unknown kind: assume it arrived
