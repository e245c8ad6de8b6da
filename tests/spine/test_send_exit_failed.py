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


@pytest.mark.parametrize(
    "text",
    [
        "/yes",  # no offer of a correction waits
        "/yes z9",
        "/no",
        "/persona nosuch",  # a persona or model that is not there
        "/model nosuch",
        "/profile rm nokey",  # s35 newcomer N4
        "/memory tidy zz",
        "/memory undo #zz",
        "/memory list --bogus",
        "/skill show nosuch",
        "/remember my token is ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",  # screened
    ],
)
async def test_a_command_that_changed_nothing_exits_1(roost: Roost, text: str) -> None:
    out = io.StringIO()
    assert await send_once(roost.core.handle, text, "t1", out) == 1, out.getvalue()
    assert "ghp_" not in out.getvalue() and out.getvalue().strip()


async def test_a_remember_that_meets_a_full_memory_exits_1(roost: Roost) -> None:
    for n in range(100):  # the 2,200-character index fills long before 100 topics
        out = io.StringIO()
        text = f"/remember fact {n}: " + f"word{n} " * 20  # each its own text
        code = await send_once(roost.core.handle, text, "t1", out)
        if "memory is full" in out.getvalue():
            assert code == 1, out.getvalue()
            break
        assert code == 0, out.getvalue()
    else:
        raise AssertionError("the memory never filled")
    assert n > 5


async def test_an_undo_that_cannot_revert_what_it_names_exits_1(roost: Roost) -> None:
    """`/memory undo NAME` pressed after a later change, or a `#ref` that is no
    reference: refused, saying why (before: '#zz' "is not the latest change")."""
    out = io.StringIO()
    assert await send_once(roost.core.handle, "/remember gym on mondays", "t1", out) == 0
    assert await send_once(roost.core.handle, "/remember tea: green", "t1", out) == 0
    out = io.StringIO()
    assert await send_once(roost.core.handle, "/memory undo gym on mondays", "t1", out) == 1
    assert "is not the latest memory change" in out.getvalue()
    out = io.StringIO()
    assert await send_once(roost.core.handle, "/memory undo #zz", "t1", out) == 1
    assert "No memory change '#zz'" in out.getvalue()
    assert "not the latest" not in out.getvalue()
    out = io.StringIO()
    assert await send_once(roost.core.handle, "/tool rm me.nothere", "t1", out) == 1
    assert "There is no personal tool me.nothere" in out.getvalue()
    assert "Usage" not in out.getvalue()  # a tool that is not there, not a usage error
