"""`tool.http` records as the audit writer stores them: a declared host by name
(declared at save = consent), any other host as a keyed id; never a URL."""

from __future__ import annotations

from bridge.audit.schema import NAME_ID_RE, keyed_namer, sanitize
from forge.net_call import HttpEvent, http_details


def test_declared_host_kept_other_host_hashed() -> None:
    namer = keyed_namer(b"k" * 32)
    ok = HttpEvent("me.weather", "api.open-meteo.com", True, "GET", 200, 5123, 180, "ok")
    stored = sanitize("tool.http", "alice", http_details(ok), namer)
    assert stored["host"] == "api.open-meteo.com" and "host_id" not in stored
    assert NAME_ID_RE.fullmatch(str(stored["tool"]))
    assert (stored["method"], stored["status"], stored["bytes"], stored["ms"]) == (
        "GET", 200, 5123, 180,
    )  # fmt: skip
    odd = HttpEvent(
        "me.weather", "secret-plans.example", False, "GET", 0, 0, 1, "refused", "undeclared"
    )
    stored = sanitize("tool.http", "alice", http_details(odd), namer)
    assert "host" not in stored and NAME_ID_RE.fullmatch(str(stored["host_id"]))
    assert "secret-plans" not in repr(stored)
    assert stored["rule"] == "undeclared" and "_dropped" not in stored
