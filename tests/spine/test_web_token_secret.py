"""The page's token never reaches a log: its link is printed only to a terminal.

Under systemd `roost serve`'s stdout is the journal (kept, readable by the `adm`
group): the first start used to print `#token=...` there. Now a first start whose
stdout is no terminal names the `web-token` file and `roost web-token`, which prints
the token (or `--link`, the address with it) to whoever may read the file; on a
terminal (`make run`) the link is printed as before.
"""

from __future__ import annotations

import asyncio
import os
import pty
import signal
from pathlib import Path

from tests.schedule.test_terminal_reminders import offline_env
from tests.spine.test_daemon import ROOST, run, start_daemon
from tests.waits import HANG_S


async def test_a_first_start_off_a_terminal_logs_no_token(home: Path) -> None:
    env = offline_env(home)
    daemon = await start_daemon(env)  # stdout and stderr are pipes, as under systemd
    code, err = await daemon.stop()
    assert code == 0
    token = (home / "web-token").read_text().strip()
    said = "".join(daemon.lines) + err
    assert token not in said and "#token=" not in said
    line = next(x for x in daemon.lines if "web chat at" in x)
    assert f"a new access token is stored in {home / 'web-token'}" in line
    assert "`roost web-token --link`" in line

    code, out, err = await run(["web-token"], env)
    assert (code, out, err) == (0, f"{token}\n", "")
    env["ROOST_WEB__PORT"] = "8790"
    code, out, _ = await run(["web-token", "--link"], env)
    assert (code, out) == (0, f"http://127.0.0.1:8790/#token={token}\n")


async def test_web_token_before_any_start_says_none_is_made_yet(home: Path) -> None:
    code, out, err = await run(["web-token"], offline_env(home))
    assert (code, out) == (1, "")
    assert err == (
        "roost: no web token yet: the first `roost serve` makes one and keeps it in "
        f"{home / 'web-token'}\n"
    )
    assert not (home / "web-token").exists()


async def test_a_first_start_on_a_terminal_prints_the_link(home: Path) -> None:
    leader, follower = pty.openpty()
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "serve", env=offline_env(home), stdout=follower, stderr=asyncio.subprocess.PIPE
    )
    os.close(follower)
    seen = b""

    def read() -> bytes:
        return os.read(leader, 4096)

    try:
        while b"roost: model" not in seen:
            chunk = await asyncio.wait_for(asyncio.to_thread(read), HANG_S)
            assert chunk, seen
            seen += chunk
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), HANG_S)
        os.close(leader)
    token = (home / "web-token").read_text().strip()
    assert f"/#token={token}" in seen.decode()


def loose_token(home: Path) -> Path:
    """A home whose `web-token` is 0644."""
    home.mkdir(mode=0o700)
    stored = home / "web-token"
    stored.write_text("loose-token-0123456789abcdef\n")
    stored.chmod(0o644)
    return stored


async def test_a_loose_token_file_is_made_owner_only_at_start_with_one_warning(
    home: Path,
) -> None:
    """A `web-token` others may read (0644: copied in by hand) was left so without a word
    while `roost doctor` FAILs it; a start now makes it 0600 and says so once."""
    stored = loose_token(home)
    daemon = await start_daemon(offline_env(home))
    code, err = await daemon.stop()
    assert code == 0
    assert stored.stat().st_mode & 0o777 == 0o600
    said = [line for line in err.splitlines() if str(stored) in line]
    assert len(said) == 1 and "WARNING" in said[0], err
    assert "mode 0644); changed to 0600" in said[0]
    assert "loose-token" not in err + "".join(daemon.lines)

    code, out, _ = await run(["doctor", "--timeout", "1"], offline_env(home))
    assert "FAIL  home" not in out and "ok    home" in out, out
