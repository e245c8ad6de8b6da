"""`roost send --to telegram:ID` from a shell without the bot token, when the daemon has it.

`roost send --to` refuses a channel that is not configured (nothing would
ever deliver it: tests/spine/test_send_to_unconfigured.py). The daemon may
hold a secret the operator's shell does not (a systemd credential, the unit's
`roost.env`): a channel the last `roost serve` of the home started is still
queued, and the daemon delivers it. The real daemon, the fake Bot API.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.schedule.test_e2e_daemon import ROOST, start, stop, texts, until
from tests.telegram.conftest import ALICE, fake
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.test_logs import daemon_env
from tests.waits import HANG_S

__all__ = ["fake"]  # the fixture, imported for the tests below


async def send_to(env: dict[str, str], target: str, text: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "send", "--to", target, text, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), HANG_S)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_a_channel_the_daemon_serves_with_its_own_token_is_queued(
    home: Path, fake: FakeBotAPI
) -> None:
    daemon_has = daemon_env(home, fake)
    shell_has = {k: v for k, v in daemon_has.items() if k != "ROOST_TELEGRAM__TOKEN"}
    code, _, err = await send_to(shell_has, f"telegram:{ALICE}", "before any start")
    assert code == 2 and "telegram is not configured" in err  # nothing serves it yet

    await stop(await start(home, fake))  # the daemon started Telegram with its token
    code, out, err = await send_to(shell_has, f"telegram:{ALICE}", "the backup is done")
    assert (code, out) == (0, f"outbox entry 1 for telegram:{ALICE}: queued\n"), err

    daemon = await start(home, fake)
    try:
        await until(lambda: "the backup is done" in texts(fake), HANG_S)
    finally:
        await stop(daemon)
