"""A declared host that echoes a vault value back hands the tool only
`[vault:name]` (atk3 F1), whatever the spelling an ordinary server gives it
and whatever charset the response is labelled with: a real HTTPS server on
127.0.0.1 echoes the Authorization header it received (a) as UTF-8 bytes
under `charset=utf-16-le` (decoding that and re-encoding it gave the value
back), (b) inside a JSON document, with and without `ensure_ascii` (a value
holding `"`, `\\`, `/` or a non-ASCII letter came back JSON-escaped, and
`json.loads` gave it back), (c) form-encoded, (d) in a response header, and
(e) through an httpbin-style `/response-headers` endpoint on which the TOOL
chooses the charset. Before the fix only the plain and `quote()` spellings
of the decoded text were masked.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote_plus

import pytest
import pytest_asyncio
from aiohttp import web

from forge.net_call import NetScope
from forge.net_rules import mask, parse_hosts
from forge.protocol.net import NetAnswer, NetRequest
from forge.runner import SandboxRunner
from tests.forge.tls_server import tls_server, trusting_broker
from tests.waits import HANG_S

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI"),
]
PLAIN = "s3cr3t-TOKEN-value"
ODD = 'pa"ss\\w\u00f6rd/42 x'  # needs escaping in JSON, URLs and PHP's json_encode


def _auth(request: web.Request) -> str:
    return request.headers["Authorization"]


async def _utf16(request: web.Request) -> web.Response:
    body = ("AUTH=" + _auth(request)).encode("utf-8")
    return web.Response(body=body, headers={"Content-Type": "text/plain; charset=utf-16-le"})


async def _json(request: web.Request) -> web.Response:
    doc = {"auth": _auth(request)}
    if request.query.get("ascii") == "0":
        return web.Response(
            text=json.dumps(doc, ensure_ascii=False), content_type="application/json"
        )
    if request.query.get("php") == "1":  # json_encode writes "/" as "\/"
        text = json.dumps(doc).replace("/", "\\/")
        return web.Response(text=text, content_type="application/json")
    return web.Response(text=json.dumps(doc), content_type="application/json")


async def _form(request: web.Request) -> web.Response:
    return web.Response(text="auth=" + quote_plus(_auth(request)))


async def _header(request: web.Request) -> web.Response:
    return web.Response(text="ok", headers={"X-Echo": json.dumps(_auth(request))})


async def _response_headers(request: web.Request) -> web.Response:
    """httpbin's /response-headers: each query item is a response header, and the
    query is the JSON body."""
    query = dict(request.query)
    resp = web.Response(body=json.dumps(query).encode("utf-8"))
    for key, value in query.items():
        resp.headers[key] = value
    return resp


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[int, Path]]:
    routes = (
        ("/utf16", _utf16),
        ("/json", _json),
        ("/form", _form),
        ("/header", _header),
        ("/response-headers", _response_headers),
    )
    async with tls_server(tmp_path_factory.mktemp("tls"), routes) as served:
        yield served


_broker = trusting_broker


async def _fetch(server: tuple[int, Path], path: str, value: str) -> NetAnswer:
    port, crt = server
    broker = _broker(port, crt)
    call = broker.open_call(
        tool="me.t",
        network=parse_hosts([f"127.0.0.1:{port}"]),
        secrets={"tok": value},
        deadline=time.monotonic() + HANG_S,
        rate_key="t",
        on_http=None,
    )
    request = NetRequest(
        "GET", f"https://127.0.0.1:{port}{path}", headers=(("Authorization", (("v", "tok"),)),)
    )
    try:
        answer = await broker.fetch(call, request)
    finally:
        await broker.close_call(call)
    assert answer.ok, answer.error
    return answer


def _recoverable(answer: NetAnswer) -> str:
    """Every field the tool receives, and the body as the tool could re-read it."""
    body = answer.text
    readings = [body, body.encode("utf-16-le", "surrogatepass").decode("utf-8", "replace")]
    with contextlib.suppress(ValueError):
        readings.append(json.dumps(json.loads(body), ensure_ascii=False))
    headers = [f"{k}: {v}" for k, v in answer.headers]
    headers += [json.loads(v) for k, v in answer.headers if k == "x-echo"]
    return "\n".join([*readings, *headers, answer.url])


@pytest.mark.parametrize("value", [PLAIN, ODD])
async def test_a_value_echoed_under_another_charset_label_is_masked(
    server: tuple[int, Path], value: str
) -> None:
    answer = await _fetch(server, "/utf16", value)
    seen = _recoverable(answer)
    assert value.lower() not in seen.lower(), seen
    assert "AUTH=[vault:tok]" in seen, seen


@pytest.mark.parametrize("query", ["", "?ascii=0", "?php=1"])
@pytest.mark.parametrize("value", [PLAIN, ODD])
async def test_a_value_echoed_in_json_is_masked(
    server: tuple[int, Path], value: str, query: str
) -> None:
    answer = await _fetch(server, "/json" + query, value)
    assert json.loads(answer.text) == {"auth": "[vault:tok]"}, answer.text
    assert value.lower() not in _recoverable(answer).lower()


async def test_a_value_echoed_form_encoded_is_masked(server: tuple[int, Path]) -> None:
    answer = await _fetch(server, "/form", ODD)
    assert answer.text == "auth=[vault:tok]", answer.text


async def test_a_value_echoed_json_escaped_in_a_header_is_masked(
    server: tuple[int, Path],
) -> None:
    answer = await _fetch(server, "/header", ODD)
    assert ("x-echo", '"[vault:tok]"') in answer.headers, answer.headers
    assert ODD.lower() not in _recoverable(answer).lower()


async def test_a_value_that_holds_another_is_masked_whole() -> None:
    """One pass, longest first: masking the shorter value first left the rest of the
    longer one in the clear."""
    secrets = {"short": "abcd1234", "long": "abcd1234-and-more"}
    assert mask("x abcd1234-and-more y abcd1234", secrets) == "x [vault:long] y [vault:short]"


async def test_a_tool_choosing_the_charset_gets_no_value(
    server: tuple[int, Path], workspace: Path
) -> None:
    """End to end, as atk3 showed it: the tool asks a reflecting endpoint (httpbin's
    /response-headers) for `charset=utf-16-le` and re-encodes the text."""
    port, crt = server
    runner = SandboxRunner(default_timeout_s=HANG_S, broker=_broker(port, crt))
    await runner.start()
    try:
        src = (
            f'import net\nSECRETS = ["tok"]\nNETWORK = ["127.0.0.1:{port}"]\n\n'
            "def run():\n"
            '    """Echo a secret under a charset of our choice."""\n'
            f'    r = net.get("https://127.0.0.1:{port}/response-headers", params='
            '{"Content-Type": "text/plain; charset=utf-16-le", "x": secret("tok")})\n'
            '    return r.text.encode("utf-16-le").decode("utf-8", "replace")\n'
        )
        res = await runner.run(src, {}, workspace, {"tok": PLAIN}, net=NetScope("me.t", None))
    finally:
        await runner.aclose()
    assert res.ok, res
    assert PLAIN.lower() not in json.dumps(res.result).lower(), res.result
    assert '"x": "[vault:tok]"' in res.result, res.result
