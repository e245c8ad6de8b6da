"""The web channel's body checks keep their answers while doing less work.

`_too_deep` does not walk a body that holds too few brackets to nest past the
limit (a long message without brackets cost 0.4 ms per 16 KB); the
lone-surrogate walk runs only when the text has a `\\u` escape. Both must
answer as the full passes did (the depth pass's copy here is the oracle) on
any text, JSON or not.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.channels.web.input import BodyError, _too_deep, decode_json_object


def char_by_char(text: str, limit: int) -> bool:
    """The check as it was: every character of the body, one at a time."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet='[]{}"\\ux\n', max_size=60), st.integers(0, 6))
def test_too_deep_answers_as_the_char_by_char_pass(text: str, limit: int) -> None:
    assert _too_deep(text, limit) == char_by_char(text, limit)


def test_too_deep_cases() -> None:
    cases = [
        ("[" * 33 + "]" * 33, 32, True),
        ("[" * 32 + "]" * 32, 32, False),
        ('{"a": "' + "[" * 40 + '"}', 32, False),  # brackets in a string do not nest
        ('{"a": "\\"' + "[" * 40 + '"}', 32, False),  # an escaped quote does not end it
        ('{"a": "\\\\"' + "[" * 40, 32, True),  # an escaped backslash does not escape
        ('\\"' + "[" * 40, 32, False),  # outside a string: the quote still opens one
        ("\\[" * 40, 32, True),  # and a backslash escapes nothing
    ]
    for text, limit, deep in cases:
        assert _too_deep(text, limit) is deep is char_by_char(text, limit), text


def test_lone_surrogates_are_refused_only_from_escapes() -> None:
    for raw in (b'{"text": "\\ud800"}', b'{"k\\udfff": 1}', b'{"a": ["\\uDBFF"]}'):
        try:
            decode_json_object(raw)
        except BodyError as exc:
            assert "surrogate" in str(exc)
        else:
            raise AssertionError(raw)
    pair = json.dumps({"text": "😀"}).encode()  # ASCII: \ud83d\ude00, a valid pair
    assert decode_json_object(pair) == {"text": "😀"}
    assert decode_json_object('{"text": "😀 \\\\ud800"}'.encode()) == {"text": "😀 \\ud800"}


def _as_before(raw: bytes) -> tuple[str, object]:
    """What the body decoded to with `json.loads` and its option (a decoder per call), or
    why it was refused: the oracle of the decoder made once."""
    text = raw.decode("utf-8")

    def constant(name: str) -> object:
        raise BodyError(f"{name} is not JSON")

    try:
        value = json.loads(text, parse_constant=constant)
    except BodyError as exc:
        return "refused", str(exc)
    except (ValueError, RecursionError):
        return "refused", "not JSON"
    if not isinstance(value, dict):
        return "refused", "the body must be a JSON object"
    return "value", value


def _now(raw: bytes) -> tuple[str, object]:
    try:
        return "value", decode_json_object(raw)
    except BodyError as exc:
        return "refused", str(exc)


_json_bits = st.sampled_from(
    ['{"text": ', '"x"', "1", "NaN", "-Infinity", "Infinity", "}", "{", "[", "]", ",", ":",
     "\ufeff", " ", "\n", '"a"', "true", "null", '"\\u00e9"', "1e999", "-0", "{}"]
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(_json_bits, max_size=12).map("".join) | st.text(max_size=40))
def test_the_decoder_made_once_answers_as_json_loads_did(text: str) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    if not text.strip() or "\\u" in text or any("\ud800" <= c <= "\udfff" for c in text):
        return  # an empty body, or the surrogate and UTF-8 checks: not the decoder's
    assert _now(raw) == _as_before(raw), text


def test_a_byte_order_mark_and_the_constants_are_still_not_json() -> None:
    for raw in (b'\xef\xbb\xbf{"text": "hi"}', b'{"text": NaN}', b'{"a": -Infinity}'):
        try:
            decode_json_object(raw)
        except BodyError as exc:
            assert "not JSON" in str(exc), raw
        else:
            raise AssertionError(raw)
