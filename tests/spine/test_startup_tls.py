"""aiohttp's default TLS contexts get their CA certificates at the first HTTPS request
(bridge/aiohttp_tls.py), asserted in a fresh interpreter that imports `bridge` first, as
every `roost` command does: none at import or after a plain-HTTP request; the system's
at the first HTTPS request, which verifies (a self-signed server is refused); and
`ssl=False` still connects. Never a time."""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.fresh import python_c
from tests.waits import HANG_S

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import asyncio, json, ssl, sys
import bridge  # installs the finder, as `python -m bridge.cli.main` does first
import aiohttp
from aiohttp import connector, web

def cas():
    return [getattr(connector, n).cert_store_stats()["x509_ca"]
            for n in ("_SSL_CONTEXT_VERIFIED", "_SSL_CONTEXT_UNVERIFIED")]

report = {"at_import": cas()}

async def main():
    app = web.Application()
    app.router.add_get("/", lambda request: web.Response(text="ok"))
    runner = web.AppRunner(app)
    await runner.setup()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[1], sys.argv[2])
    plain_site = web.TCPSite(runner, "127.0.0.1", 0)
    tls_site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await plain_site.start()
    await tls_site.start()
    plain = plain_site._server.sockets[0].getsockname()[1]
    secure = tls_site._server.sockets[0].getsockname()[1]
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{plain}/") as r:
            report["plain"] = [r.status, cas()]
        try:
            await session.get(f"https://127.0.0.1:{secure}/")
            report["refused"] = False
        except aiohttp.ClientConnectorCertificateError:
            report["refused"] = True
        report["after_https"] = cas()
        async with session.get(f"https://127.0.0.1:{secure}/", ssl=False) as r:
            report["unverified"] = r.status
    await runner.cleanup()

asyncio.run(main())
print(json.dumps(report))
"""


def self_signed(tmp: Path) -> tuple[Path, Path]:
    crt, key = tmp / "crt.pem", tmp / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-keyout", str(key), "-out", str(crt), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=HANG_S,
    )  # fmt: skip
    return crt, key


def test_certificates_load_at_the_first_https_request_and_it_verifies(tmp_path: Path) -> None:
    system = ssl.create_default_context().cert_store_stats()["x509_ca"]
    if system == 0:
        pytest.skip("no CA certificates on this machine: nothing to defer")
    crt, key = self_signed(tmp_path)
    done = python_c(PROBE, str(crt), str(key), check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["at_import"] == [0, 0]
    assert report["plain"] == [200, [0, 0]]  # plain HTTP hands out no TLS context
    assert report["refused"] is True  # the trust store was there for the handshake
    assert report["after_https"] == [system, system]
    assert report["unverified"] == 200


def test_a_process_that_imported_aiohttp_first_is_untouched() -> None:
    code = (
        "import aiohttp.connector as c, bridge\n"
        "print(c._SSL_CONTEXT_VERIFIED.cert_store_stats()['x509_ca'] > 0,"
        " 'bridge.aiohttp_tls' in c.TCPConnector._get_ssl_context.__module__)"
    )
    done = python_c(code, check=False)
    assert done.stdout.split() == ["True", "False"], done.stderr


def test_only_aiohttps_own_maker_is_deferred() -> None:
    """A context made by any other code while aiohttp.connector runs loads at once."""
    from bridge import aiohttp_tls

    code = "import sys\ndef _make_ssl_context(probe):\n    return probe(sys._getframe(0))\n"
    for module, deferred in (("aiohttp.connector", True), ("somebody.else", False)):
        namespace: dict[str, object] = {"__name__": module}
        exec(code, namespace)
        maker = namespace["_make_ssl_context"]
        assert callable(maker)
        assert maker(aiohttp_tls._called_by_maker) is deferred
    assert aiohttp_tls._called_by_maker(None) is False
