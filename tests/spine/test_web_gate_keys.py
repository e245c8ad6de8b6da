"""The web gate names a caller's token by its `token_key`, hashed once per (re)load of the
tokens: each configured token gets its own key, a reloaded table answers with the new
tokens' keys from the next request on, and a removed token is refused."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from bridge.channels.web.gate import WebGate, token_key


def _asking(token: str) -> web.Request:
    return make_mocked_request("GET", "/api/commands", headers={"Authorization": f"Bearer {token}"})


def test_each_token_is_named_by_its_key_and_a_reload_moves_them() -> None:
    gate = WebGate({"tok-local-0123456789": "local", "tok-anna-0123456789": "anna"}, "local")
    assert gate.caller(_asking("tok-local-0123456789")) == (
        "local",
        token_key(b"tok-local-0123456789"),
    )
    assert gate.caller(_asking("tok-anna-0123456789")) == (
        "anna",
        token_key(b"tok-anna-0123456789"),
    )
    assert sorted(gate.keys()) == sorted(
        [token_key(b"tok-local-0123456789"), token_key(b"tok-anna-0123456789")]
    )
    gate.replace({"tok-local-0123456789": "local", "tok-bert-0123456789": "bert"})
    assert gate.caller(_asking("tok-anna-0123456789")) is None  # removed: refused
    assert gate.caller(_asking("tok-bert-0123456789")) == (
        "bert",
        token_key(b"tok-bert-0123456789"),
    )
    known = gate.keys()
    assert token_key(b"tok-anna-0123456789") not in known
    assert gate.tenant(_asking("tok-bert-0123456789")) == "bert"
