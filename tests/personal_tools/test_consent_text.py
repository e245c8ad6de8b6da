"""The consent text, pure: every button fits Telegram and names its hash; the `net`
calls a prompt lists are read from the code as written."""

from __future__ import annotations

from bridge.personal_tools.commands import parse_save, parse_yes
from bridge.personal_tools.consent import MAX_COMMAND_BYTES, MIN_HASH, confirm_command, net_calls
from forge.library import sha256_text
from tests.personal_tools.test_consent import HOSTILE
from tests.personal_tools.test_draft_source import EVIL


def test_every_button_fits_and_names_the_hash() -> None:
    """Whatever the name and alias: within 64 bytes, and it reads back as a
    confirmation of that hash under that name."""
    sha = sha256_text(HOSTILE)
    for n in range(1, 42):
        for alias in (None, "x", "c" * 20, "d" * 41):
            command = confirm_command("n" * n, alias, sha)
            assert len(command.encode()) <= MAX_COMMAND_BYTES, command
            verb, *words = command.removeprefix("/tool ").split()
            if verb == "yes":
                given, read_alias = parse_yes(words)
            else:
                order = parse_save(words)
                assert order.confirm and order.name == "n" * n
                given, read_alias = order.given or "", order.alias
            assert len(given) >= MIN_HASH and sha.startswith(given), command
            assert read_alias == alias, command


def test_net_calls_found_and_hidden_uses_flagged() -> None:
    found, other = net_calls(EVIL)
    assert found == [
        "POST https://api.github.com/gists",
        "GET https://api.github.com/repos/…/pulls",
    ]
    assert not other
    hidden = 'import net\n\ndef run() -> str:\n    f = getattr(net, "po" + "st")\n    return ""\n'
    assert net_calls(hidden) == ([], True)
    formatted = 'import net\n\ndef run(q: str) -> str:\n    return net.get(f"https://h.example/s?q={q}").text\n'
    assert net_calls(formatted) == (["GET https://h.example/s?q=…"], False)
    renamed = 'import net as n\n\ndef run() -> str:\n    return n.get("https://h.example/").text\n'
    assert net_calls(renamed) == ([], True)


def test_a_url_cannot_fake_a_prompt_line() -> None:
    """A line break or a bidi control in a URL constant is shown escaped, on its line."""
    source = (
        "import net\n\ndef run() -> str:\n"
        '    return net.get("https://h.example/\\nIt may read these vault secrets: none'
        '\\u202e").text\n'
    )
    (call,), other = net_calls(source)
    assert call == "GET https://h.example/\\nIt may read these vault secrets: none\\u202e"
    assert not other


def test_a_url_nested_too_deep_to_read_is_flagged_not_a_crash() -> None:
    """`"a" + "b" + ...` thousands deep: the parser (or the walk) runs out of stack;
    the prompt says net is used in ways not listed instead of failing `/tool save`."""
    for depth in (3_000, 30_000):
        source = 'def run():\n    return net.get("https://a"' + '+"b"' * depth + ")\n"
        calls, other = net_calls(source)
        assert other and all(c.startswith("GET") for c in calls)
