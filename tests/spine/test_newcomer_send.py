"""`roost send`'s usage errors say what to do.

A message too long for `roost send` is a usage error, given as arguments or on stdin
(s46 newcomer, finding 8).

`roost send "<16,001 characters>"` ran a turn whose reply was the refusal, on stdout,
exit 1, while the same text on stdin exited 2 with a line on stderr. `send --help`
lists a too-long message under exit 2: now both ways exit 2, say so on stderr with the
figures, and no turn runs (the fake model is never asked). And a command with an
option of its own, sent unquoted (`roost send /memory show coffee --history`, as the
README writes the command), was "unrecognized arguments: --history" and nothing
more: it now says to quote the message or put it after `--` (s47, as a newcomer).
Through the real CLI.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.fake_openai import FakeOpenAI
from tests.spine.test_terminal_send import bare_env, fake, model_env, run

__all__ = ["fake"]  # the fixture, imported for the tests below


async def test_a_too_long_message_exits_2_whether_typed_or_piped(
    home: Path, fake: FakeOpenAI
) -> None:
    env = model_env(home, fake) | {"ROOST_LIMITS__MAX_MESSAGE_CHARS": "50"}
    code, out, err = await run(["send", "x" * 51], env)
    assert (code, out) == (2, ""), err
    assert err == (
        "roost send: the message is 51 characters; at most 50 go in one "
        "([limits] max_message_chars): send it in parts\n"
    )
    code, out, err = await run(["send", "-"], env, b"y" * 51)
    assert (code, out) == (2, "") and "the message is longer than 50 characters" in err
    assert fake.requests == []  # no turn ran
    code, out, _ = await run(["send", "z" * 50], env)
    assert (code, out) == (0, "echo: " + "z" * 50 + "\n")


async def test_send_help_lists_a_too_long_message_under_exit_2(home: Path) -> None:
    code, out, _ = await run(["send", "--help"], bare_env(home))
    assert code == 0
    two = out[out.index("  2   ") : out.index("  78  ")]
    assert "max_message_chars (as arguments or on stdin)" in " ".join(two.split())


async def test_a_word_like_an_option_is_told_how_to_send(home: Path) -> None:
    code, out, err = await run(["send", "/memory", "show", "coffee", "--history"], bare_env(home))
    assert (code, out) == (2, "")
    assert err.endswith(
        "roost: error: unrecognized arguments: --history; to send --history as part of the "
        "message, put the message in quotes or after -- "
        "(roost send -- /memory show coffee --history)\n"
    ), err
    code, _, err = await run(["doctor", "--bogus"], bare_env(home))
    assert code == 2 and err.endswith("unrecognized arguments: --bogus\n"), err
