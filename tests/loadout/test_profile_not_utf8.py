"""A hand-edited USER.md that is not UTF-8: `/profile` says which file and which byte.

The README invites editing `USER.md` by hand; a stray Latin-1 byte once made
`/profile`, `/profile set` and `/profile rm` answer "Something went wrong ...
please try again" forever, with a traceback on `roost send`'s stderr. Now each
names the file and the byte, changes nothing, and the file stays as written.
Through the real `roost send` process.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.schedule.test_terminal_reminders import GUARD_S, ROOST, offline_env

BAD = b"# Profile\n- name: Bob \xff\xfe bad\n- city: Paris\n"


async def offline_send(home: Path, text: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *ROOST, "send", text, env=offline_env(home),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), GUARD_S)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_profile_commands_name_the_undecodable_byte(home: Path) -> None:
    user_md = home / "tenants" / "local" / "global" / "USER.md"
    user_md.parent.mkdir(parents=True)
    user_md.write_bytes(BAD)
    for command in ("/profile", "/profile set city Berlin", "/profile rm name"):
        code, out, err = await offline_send(home, command)
        assert code == 1, (command, err)  # refused: `roost send` exits 1
        assert "USER.md (tenants/local/global/USER.md in roost's home) is not UTF-8" in out
        assert "byte 0xff at position 22 (line 2)" in out, out
        assert "Something went wrong" not in out and "Traceback" not in err, err
    assert user_md.read_bytes() == BAD  # nothing rewritten
    user_md.write_text("- city: Paris\n")  # mended: the commands work again
    code, out, _ = await offline_send(home, "/profile set city Berlin")
    assert code == 0 and "Profile: city set" in out
    assert (await offline_send(home, "/profile"))[1].endswith("- city: Berlin\n")
