"""Vault values never leave in a reply: whole texts and streams split anywhere."""

from __future__ import annotations

from bridge.loadout.mask import Masker, mask

SECRETS = {"GITHUB_TOKEN": "ghp_SECRETVALUE123", "DB": "hunter2hunter2", "SHORT": "abc"}


def test_mask_replaces_every_value_with_its_name() -> None:
    text = "token ghp_SECRETVALUE123 and hunter2hunter2, again ghp_SECRETVALUE123"
    out = mask(text, SECRETS)
    assert "SECRETVALUE" not in out and "hunter2" not in out
    assert out.count("[vault:GITHUB_TOKEN]") == 2 and "[vault:DB]" in out
    assert mask("abc stays (too short to mask)", SECRETS) == "abc stays (too short to mask)"


def test_stream_masker_never_emits_a_secret_at_any_split() -> None:
    text = "before ghp_SECRETVALUE123 middle ghp_SECRE partial hunter2hunter2 end ghp_"
    expected = mask(text, SECRETS)
    masker = Masker(SECRETS)
    for size in range(1, 12):
        for offset in range(size):
            pieces = [text[:offset]] + [text[i : i + size] for i in range(offset, len(text), size)]
            stream = masker.stream()
            sent = [stream.feed(p) for p in pieces] + [stream.flush()]
            joined = "".join(sent)
            assert joined == expected, (size, offset)
            # no single emitted prefix ever contains a whole secret
            so_far = ""
            for part in sent:
                so_far += part
                assert "ghp_SECRETVALUE123" not in so_far and "hunter2hunter2" not in so_far


def test_stream_holds_back_only_possible_prefixes() -> None:
    stream = Masker(SECRETS).stream()
    assert stream.feed("hello gh") == "hello "
    assert stream.feed("ost") == "ghost"
    assert stream.feed(" hunter2hun") == " "
    assert stream.flush() == "hunter2hun"


def test_no_secrets_passes_through() -> None:
    stream = Masker({}).stream()
    assert stream.feed("anything") == "anything" and stream.flush() == ""


def test_masked_text_is_valid_unicode() -> None:
    """A lone surrogate (an MCP server's JSON `"\\ud800"`, a tool's result) failed every
    store downstream (UnicodeEncodeError): masked text is valid Unicode."""
    for masker in (Masker({}), Masker({"token": "s3cr3t-value-123"})):
        text = masker.mask("half \ud83d emoji, s3cr3t-value-123 \udfff")
        text.encode("utf-8")
        assert "\ufffd emoji" in text and text.endswith("\ufffd")
        stream = masker.stream()
        sent = stream.feed("a \ud800 b ") + stream.feed("c\udc00") + stream.flush()
        assert sent == "a \ufffd b c\ufffd"
    assert Masker({}).mask("smile \ud83d\ude00") == "smile \U0001f600"  # a pair: its one char
