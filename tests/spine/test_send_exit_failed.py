"""`roost send` exits 1 when a slash command did not run as asked, 0 when it did.

A newcomer's script checked `roost send "/remind at 25:00 x"` and got 0: the
README promises 1 when the reply is an error, but a command's reply was always
an ordinary command answer. The router now marks a command that is unknown,
whose usage it showed, or that a job may not run (`Final.failed`), and so do
commands that refuse what they were asked (a time that does not exist, a job
that is not there; a memory, draft, removed tool or proposal that is not there:
`Refused`). Through `send_once`, what `roost send` runs, on a real roost.
"""

from __future__ import annotations

import io

import pytest

from bridge.app.build import Roost
from bridge.channels.terminal.channel import send_once


@pytest.mark.parametrize(
    "text",
    [
        "/remind at 25:00 call mum",
        "/job rm zzz999",
        "/nosuchcommand",
        "/remind",
        "/every 1h /tool save x",
        "/memory show nosuch",  # a memory, draft, tool or proposal that is not there
        "/memory rm nosuch",
        "/memory keep p404",
        "/memory decline p404",
        "/tool drop nosuch",
        "/tool save nosuch",
        "/tool undo me.nosuch",
        "/skill save nosuch",
    ],
)
async def test_a_command_that_did_not_run_exits_1(roost: Roost, text: str) -> None:
    out = io.StringIO()
    assert await send_once(roost.core.handle, text, "t1", out) == 1, out.getvalue()
    assert out.getvalue().strip()  # and says why


@pytest.mark.parametrize("text", ["/help", "/remind in 1h tea", "/jobs", "/memory"])
async def test_a_command_that_ran_exits_0(roost: Roost, text: str) -> None:
    out = io.StringIO()
    assert await send_once(roost.core.handle, text, "t1", out) == 0, out.getvalue()
