"""A WhatsApp or Matrix section partly written is named by `roost serve` and `roost doctor`.

A `[whatsapp]` section with a token but no phone number id, or a `[matrix]`
one with a homeserver but no account, left that channel off without a word:
`roost serve` started as if all were well, `roost doctor` said nothing. Now
the daemon's start-up output has one line per such channel saying what is
missing, and the doctor fails it. Through the real processes.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import PEOPLE, env_for, fake, start_daemon
from tests.spine.test_doctor import lines, roost

__all__ = ["fake"]  # the fixture, imported for the tests below

HALF = """
[whatsapp]
access_token = "EAAG-not-a-real-token"

[matrix]
homeserver = "https://matrix.example.org"
user_id = "@roost:example.org"
"""
WHATSAPP_OFF = (
    "[whatsapp] is missing app_secret and phone_number_id "
    "(ROOST_WHATSAPP__APP_SECRET, ROOST_WHATSAPP__PHONE_NUMBER_ID)"
)
MATRIX_OFF = "[matrix] is missing access_token (ROOST_MATRIX__ACCESS_TOKEN)"


def configure(text: str) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(text)


async def test_serve_names_each_channel_left_off_and_what_it_misses(
    home: Path, fake: FakeOpenAI
) -> None:
    configure(PEOPLE + HALF)
    daemon = await start_daemon(env_for(home, fake))
    try:
        said = [line for line in daemon.lines if " is off: " in line]
    finally:
        code, _ = await daemon.stop()
    assert said == [
        f"roost: whatsapp is off: {WHATSAPP_OFF}\n",
        f"roost: matrix is off: {MATRIX_OFF}\n",
    ]
    assert code == 0


async def test_serve_says_nothing_of_channels_never_configured(
    home: Path, fake: FakeOpenAI
) -> None:
    daemon = await start_daemon(env_for(home, fake))
    code, _ = await daemon.stop()
    assert [line for line in daemon.lines if " is off: " in line] == [] and code == 0


async def test_doctor_fails_a_half_configured_channel(home: Path, fake: FakeOpenAI) -> None:
    configure(PEOPLE + HALF)
    env = env_for(home, fake)
    code, out = await roost("doctor", **env)
    found = lines(out)
    assert found["whatsapp"] == ("FAIL", f"off: {WHATSAPP_OFF}"), out
    assert found["matrix"] == ("FAIL", f"off: {MATRIX_OFF}"), out
    assert code == 1
    configure(PEOPLE)
    _, out = await roost("doctor", **env)
    assert "whatsapp" not in lines(out) and "matrix" not in lines(out), out
