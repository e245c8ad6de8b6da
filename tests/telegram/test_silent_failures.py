"""Every failed delivery tells the person something, or goes to the outbox (issue #22 item 9).

The send paths besides the answer's text, each failed at the fake Bot API:
the `/export` document, a file gone from disk, a spoken answer, the reply's
buttons; and the line that reports one of them failing too, which then
waits in the outbox and arrives once Telegram takes it. (Typing indicators,
draft edits and callback answers are cosmetic: the final text follows them.)
"""

from __future__ import annotations

from pathlib import Path

from bridge.channels.telegram.files import send_files
from bridge.channels.telegram.voice import NOT_SPOKEN
from bridge.core.commands import Command, CommandContext
from bridge.types.messages import Action, Final, Inbound, OutFile
from tests.fakes.ogg_opus import ogg_opus
from tests.telegram.conftest import ALICE, FAST, running, tg_settings
from tests.telegram.durable import Gate, durable, outbox_rows, until
from tests.telegram.fake_bot_api import Failure, FakeBotAPI


def texts(fake: FakeBotAPI) -> list[str]:
    return [m.text for m in fake.sent_to(ALICE)]


def a_file(home: Path, name: str = "report.csv") -> Path:
    path = home / "tenants" / "alice" / "workspace" / "outputs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a,b\n1,2\n")
    return path


def files_command(*files: OutFile) -> Command:
    async def handler(ctx: CommandContext, args: str) -> Final:
        return Final("your files", files=files)

    return Command("files", "/files", "files out", handler)


async def test_an_export_that_telegram_does_not_take_is_reported(
    home: Path, fake: FakeBotAPI
) -> None:
    fake.fail("sendDocument", *[Failure.server_error()] * 6)  # every retry of the sender
    async with running(tg_settings(home, fake), fake, options=FAST):
        fake.push_text(ALICE, "/export")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
    assert fake.documents_to(ALICE) == []
    told = texts(fake)[1]
    assert told.startswith("📎 roost-export-alice-") and "could not be sent" in told
    assert "Ask me for it again later" in told


async def test_a_refused_file_and_a_file_gone_from_disk_are_both_reported(
    home: Path, fake: FakeBotAPI
) -> None:
    kept, gone = a_file(home, "kept.csv"), a_file(home, "gone.csv")
    files = (OutFile(kept, "kept.csv", "text/csv"), OutFile(gone, "gone.csv", "text/csv"))
    gone.unlink()  # between the reply and its upload
    fake.fail("sendDocument", Failure(400, "Bad Request: file must be non-empty"))
    async with running(tg_settings(home, fake), fake, options=FAST) as r:
        problems = await send_files(r.channel.sender, ALICE, files)
    assert problems == [
        "📎 kept.csv could not be sent (Telegram refused it). Ask me for it again later.",
        "📎 gone.csv could not be sent (it is no longer there). Ask me for it again later.",
    ]


async def test_a_voice_answer_that_fails_to_upload_is_reported(
    home: Path, fake: FakeBotAPI
) -> None:
    voice = ogg_opus(seconds=1.0)

    async def speak(inbound: Inbound, text: str) -> bytes:
        return voice

    fake.fail("sendVoice", *[Failure.server_error()] * 6)
    async with running(tg_settings(home, fake), fake, options=FAST) as r:
        r.channel.speak = speak
        fake.push_text(ALICE, "say it")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
    assert texts(fake) == ["ok", NOT_SPOKEN] and fake.voices_to(ALICE) == []


async def test_buttons_telegram_refuses_become_commands_to_type(
    home: Path, fake: FakeBotAPI
) -> None:
    async def offer(ctx: CommandContext, args: str) -> Final:
        return Final("keep this?", actions=(Action("Keep", "/yes k3f9"), Action("No", "/no k3f9")))

    fake.fail("editMessageReplyMarkup", Failure(400, "Bad Request: BUTTON_DATA_INVALID"))
    async with running(tg_settings(home, fake), fake, options=FAST) as r:
        r.roost.core.commands.add(Command("offer", "/offer", "an offer", offer))
        fake.push_text(ALICE, "/offer")
        await fake.wait_until(lambda: len(fake.sent_to(ALICE)) == 2)
    assert texts(fake)[1] == (
        "The buttons could not be shown; type instead:\n/yes k3f9 (Keep)\n/no k3f9 (No)"
    )


async def test_a_report_that_cannot_be_sent_either_waits_in_the_outbox(
    home: Path, fake: FakeBotAPI
) -> None:
    path = a_file(home)
    fake.fail("sendDocument", Failure(400, "Bad Request: file must be non-empty"))
    fake.fail("sendMessage", Failure.bad_gateway(), Failure.bad_gateway())  # answer, report
    settings = tg_settings(home, fake)
    async with durable(settings, fake, Gate(is_open=True), options=FAST, deliver=False) as r:
        r.roost.core.commands.add(files_command(OutFile(path, "report.csv", "text/csv")))
        fake.push_text(ALICE, "/files", message_id=77)
        await until(lambda: len(outbox_rows(home)) == 2)
        assert fake.sent_to(ALICE) == []
        r.deliver_outbox()  # Telegram takes messages again
        await until(lambda: [s for _, s, _ in outbox_rows(home)] == ["delivered", "delivered"])
    assert [k for k, _, _ in outbox_rows(home)] == ["reply:77", "reply:77:files"]
    assert texts(fake) == [
        "your files",
        "📎 report.csv could not be sent (Telegram refused it). Ask me for it again later.",
    ]
