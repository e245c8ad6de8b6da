"""`roost doctor` says when telegram.token is not shaped like a bot token (s46 newcomer,
finding 14).

`ROOST_TELEGRAM__TOKEN=bad` (a placeholder, a paste that lost its part after the colon)
was taken by the configuration, and the doctor said only "Bot API: unreachable" or
"the token was rejected". A failed check now adds that the token does not look like
one from @BotFather; a well-shaped token gets no such words, and the token itself is
never shown. A real `roost doctor` against a closed port.
"""

from __future__ import annotations

from pathlib import Path

from tests.spine.test_doctor import closed_port, lines, roost

SHAPE = "telegram.token does not look like a bot token"


async def test_a_token_of_the_wrong_shape_is_named_so(home: Path) -> None:
    api = f"http://127.0.0.1:{closed_port()}/bot"
    env = {"ROOST_LLM__PROVIDER": "offline", "ROOST_TELEGRAM__API_BASE_URL": api}
    _, out = await roost("doctor", ROOST_TELEGRAM__TOKEN="placeholder-t0ken", **env)
    status, reason = lines(out)["telegram"]
    assert status == "FAIL" and reason.endswith(
        f"; {SHAPE} (digits, a colon and about 35 letters, digits, - and _, as @BotFather gives it)"
    ), reason
    assert "placeholder-t0ken" not in out
    shaped = "123456789:AAF" + "x" * 32
    _, out = await roost("doctor", ROOST_TELEGRAM__TOKEN=shaped, **env)
    status, reason = lines(out)["telegram"]
    assert status == "FAIL" and SHAPE not in reason, reason
