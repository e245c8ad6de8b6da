"""`roost pair` with no chat bot configured says so, and still prints the code (s35 N19).

A newcomer's `roost pair alice`, with neither Telegram, WhatsApp nor Matrix configured,
printed a code and "The person sends this to the bot in a private chat" without saying
there was no bot to send it to. Now stderr names what to set; the code is printed and
kept all the same, and a bot configured here, or started by the last `roost serve` (its
secret may be the daemon's own), gets no warning. Through the real CLI.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, fake, run

__all__ = ["fake"]  # the fixture, imported for the tests below

NO_BOT = (
    "roost pair: warning: no chat bot is configured, so nobody can send this code yet (it "
    "stays valid for 60 minutes): telegram is not configured: set [telegram] token "
    "(ROOST_TELEGRAM__TOKEN); whatsapp is not configured: set [whatsapp] access_token, "
    "app_secret and phone_number_id (ROOST_WHATSAPP__ACCESS_TOKEN, "
    "ROOST_WHATSAPP__APP_SECRET, ROOST_WHATSAPP__PHONE_NUMBER_ID); matrix is not "
    "configured: set [matrix] homeserver, user_id and access_token (ROOST_MATRIX__HOMESERVER, "
    "ROOST_MATRIX__USER_ID, ROOST_MATRIX__ACCESS_TOKEN)\n"
)


def codes(home: Path) -> int:
    with sqlite3.connect(home / "roost.db") as conn:
        return int(conn.execute("SELECT COUNT(*) FROM pairing_codes").fetchone()[0])


def served(home: Path, *channels: str) -> None:
    """What the last `roost serve` of the home recorded it started."""
    (home / "channels").write_text("".join(f"{c}\n" for c in channels))


async def test_pair_without_a_bot_warns_and_keeps_the_code(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake)
    code, out, err = await run(["pair", "alice"], env)
    assert code == 0 and re.search(r"^Pairing code for tenant alice: \S{8}$", out, re.M), out
    assert "/pair " in out
    assert err == NO_BOT
    assert codes(home) == 1

    code, out, err = await run(["pair", "alice"], env | {"ROOST_TELEGRAM__TOKEN": "123:abc"})
    assert (code, err) == (0, "") and "Pairing code" in out
    served(home, "matrix", "web")  # the daemon started Matrix with secrets of its own
    code, out, err = await run(["pair", "alice"], env)
    assert (code, err) == (0, "") and "Pairing code" in out
    assert codes(home) == 3
