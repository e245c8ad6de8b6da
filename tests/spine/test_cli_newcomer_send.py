"""`roost send --to` says when nothing delivers the message yet, or nobody can read it (s35 N11).

A newcomer's `roost send --to web:w1 …` with the daemon stopped printed only "outbox entry
13 for web:w1: queued" (a `/remind` in the same situation says `roost serve` is not
running), and `--to web:w1 --tenant alice` for a tenant without a `web_token` said
"queued", then "delivered", though no page signs in as alice. Both are still queued
(exit 0, as README says), with a warning line on stderr naming what to do. Through the
real CLI; a held instance lock stands for a running `roost serve` (as in test_export.py).
"""

from __future__ import annotations

from pathlib import Path

from bridge.app.instance import hold
from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_daemon import env_for, fake, run
from tests.spine.test_send_tenant_check import outbox_rows
from tests.spine.test_send_to_unconfigured import configure

__all__ = ["fake"]  # the fixture, imported for the tests below


def made(folder: Path) -> None:
    """A folder of the home, as a daemon that ran leaves it."""
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)


NOT_RUNNING = "`roost serve` is not running now"
TOKEN = "alice-web-token-0123456789"


async def test_with_the_daemon_stopped_the_message_is_queued_with_a_warning(
    home: Path, fake: FakeOpenAI
) -> None:
    env = env_for(home, fake)
    code, out, err = await run(["send", "--to", "web:w1", "for the page"], env)
    assert (code, out) == (0, "outbox entry 1 for web:w1: queued\n"), err
    assert err == (
        "roost send: warning: `roost serve` is not running now, so nothing delivers this yet: "
        "start it (`make run`, or `systemctl start roost`); the message waits in the outbox "
        "until then\n"
    )
    daemon = hold(home)  # as a running `roost serve` holds it
    try:
        code, out, err = await run(["send", "--to", "web:w1", "and now"], env)
    finally:
        daemon.release()
    assert (code, out, err) == (0, "outbox entry 2 for web:w1: queued\n", "")
    assert outbox_rows(home) == 2


async def test_a_web_message_for_a_tenant_without_a_web_token_is_said_unreadable(
    home: Path, fake: FakeOpenAI
) -> None:
    configure(f'[tenants.alice]\n\n[tenants.bob]\nweb_token = "{TOKEN}"\n')
    env = env_for(home, fake)
    made(home)
    daemon = hold(home)
    try:
        code, out, err = await run(["send", "--to", "web:w1", "--tenant", "alice", "hi"], env)
        assert (code, out) == (0, "outbox entry 1 for web:w1: queued\n"), err
        assert err == (
            "roost send: warning: tenant alice has no web_token, so no web page signs in as "
            "alice and nobody reads this there: set [tenants.alice] web_token in the config "
            "(it then shows in alice's web chat), or send it without --tenant (the local "
            "tenant's page)\n"
        )
        for tenant in ("bob", "local"):  # bob's token signs in as bob; the page is local's
            code, out, err = await run(["send", "--to", "web:w1", "--tenant", tenant, "hi"], env)
            assert (code, err) == (0, ""), (tenant, out)
    finally:
        daemon.release()
    code, _, err = await run(["send", "--to", "telegram:1", "--tenant", "alice", "x"], env)
    assert code == 2 and "web_token" not in err  # not queued: no warning about the page
    assert outbox_rows(home) == 3
