"""The 429 gate knows a `tools/call` however its JSON spells the method.

The attacker pass of session 33 sent `"method": "tools\\u002fcall"`: the SDK
reads it as `tools/call`, but the gate searched the raw bytes for
`tools/call` and let it past without a slot (the server's own count of
running calls still held). The gate parses the body instead.
"""

from __future__ import annotations

import json

import pytest

from bridge.mcp.http import _calls_a_tool

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "me__x"}}


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(CALL).encode(),
        json.dumps(CALL).replace("tools/call", "tools\\u002fcall").encode(),
        json.dumps(CALL).replace("tools/call", "\\u0074ools\\/call").encode(),
        json.dumps([{"jsonrpc": "2.0", "id": 0, "method": "ping"}, CALL]).encode(),
    ],
)
def test_a_tool_call_is_seen_however_it_is_spelled(body: bytes) -> None:
    assert _calls_a_tool(body)


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "tools/call"}}',
        b"not json",
    ],
)
def test_other_requests_take_no_slot(body: bytes) -> None:
    assert not _calls_a_tool(body)
