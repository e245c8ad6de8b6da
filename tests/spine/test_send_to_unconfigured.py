"""`roost send --to CHANNEL:CHAT` refuses a channel that is not configured, naming what is missing.

A newcomer's `roost send --to telegram:ID "text"` without `[telegram] token`
was queued: no channel would ever deliver it, and `roost jobs` later showed
its cause as "unknown". Now it exits 2 at once, naming the missing keys, and
nothing is queued; a configured channel still queues. Through the real CLI.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import PEOPLE, env_for, fake, run
from tests.spine.test_send_tenant_check import outbox_rows

__all__ = ["fake"]  # the fixture, imported for the tests below


def configure(text: str) -> None:
    Path(os.environ["ROOST_CONFIG"]).write_text(text)


async def test_a_channel_that_is_not_configured_is_refused_at_once(
    home: Path, fake: FakeOpenAI
) -> None:
    configure(PEOPLE + '[whatsapp]\naccess_token = "t0k"\n')
    env = env_for(home, fake)
    said = {
        "telegram:123456": "telegram is not configured: set [telegram] token "
        "(ROOST_TELEGRAM__TOKEN)",
        "whatsapp:4915112345678": "whatsapp is not configured: set [whatsapp] app_secret and "
        "phone_number_id (ROOST_WHATSAPP__APP_SECRET, ROOST_WHATSAPP__PHONE_NUMBER_ID)",
        "matrix:@bob:example.org": "matrix is not configured: set [matrix] homeserver, user_id "
        "and access_token (ROOST_MATRIX__HOMESERVER, ROOST_MATRIX__USER_ID, "
        "ROOST_MATRIX__ACCESS_TOKEN)",
    }
    for target, why in said.items():
        code, out, err = await run(["send", "--to", target, "the backup is done"], env)
        assert (code, out) == (2, ""), (target, err)
        assert err == f"roost send: cannot send to {target}: {why}; nothing was queued\n"
    assert outbox_rows(home) == 0


async def test_a_configured_channel_still_queues(home: Path, fake: FakeOpenAI) -> None:
    env = env_for(home, fake) | {"ROOST_TELEGRAM__TOKEN": "123:abc"}
    code, out, err = await run(["send", "--to", "telegram:123456", "the backup is done"], env)
    assert (code, out) == (0, "outbox entry 1 for telegram:123456: queued\n"), err
    code, out, err = await run(["send", "--to", "web:default", "and the web page"], env)
    assert code == 0 and "queued" in out, err
    assert outbox_rows(home) == 2
