"""Files of a reply on the web page: short-lived, one-time, signed download links.

`FileLinks` serves one tenant's directory tree (`tenants/<tid>`, the web
page's tenant), and with `tree_of` each web tenant's own (a `[tenants.X]
web_token` page): `offer(files, tenant)` checks each file against the tree
of the tenant whose reply it is and turns each `OutFile` under that tree into
`{"name", "mime", "size", "url"}` with `url` = `/files/<token>`: the token
is the file's path relative to the tree (and, with `tree_of`, the tenant
whose tree it is), its name and type, an expiry
(`ttl_s`, default 10 minutes) and a random id, signed with HMAC-SHA256 under
a key that lives only in this process (a restart ends every link). The link
is the credential (a browser follows it without the bearer header), so it
works once: the first download spends it. `GET /files/<token>` checks the
signature (404 otherwise), the expiry and whether it was used (410), then
opens the file the checked way (`bridge.core.outfiles.open_out_file`: under
the tree, no symbolic link, a regular file; 404 otherwise) and sends it as
an attachment (`Content-Disposition: attachment`, `nosniff`), so a file is
never shown inline on the page's origin. A file of another tenant is never
offered and no token reaches outside the tree.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from bridge.core.outfiles import OutFileError, open_out_file
from bridge.types.messages import OutFile

log = logging.getLogger(__name__)
CHUNK = 256 * 1024
MIME_OK = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.+-/")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _error(status: int, message: str, headers: dict[str, str]) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)


class FileLinks:
    """Signs and serves download links for the files under `top` (one tenant's tree)."""

    def __init__(
        self,
        top: Path,
        ttl_s: float = 600.0,
        clock: Callable[[], float] = time.time,
        key: bytes | None = None,
        tree_of: Callable[[str], Path] | None = None,  # a web tenant's own tree
    ) -> None:
        self.top = top
        self._tree_of = tree_of
        self._ttl, self._clock = ttl_s, clock
        self._key = key or secrets.token_bytes(32)
        self._spent: dict[str, float] = {}  # link id -> its expiry (forgotten after it)

    def _tree(self, tenant: str | None) -> Path:
        """The tree `tenant`'s links reach (the page's own without `tree_of`)."""
        return self._tree_of(tenant) if tenant and self._tree_of else self.top

    def offer(self, files: Sequence[OutFile], tenant: str | None = None) -> list[dict[str, Any]]:
        """A link for each file `tenant`'s tree may hand out; the others are left out
        (logged)."""
        offered = []
        top = self._tree(tenant)
        for out in files:
            try:
                fd = open_out_file(top, out.path)
            except OutFileError as exc:
                log.warning("web: a reply's file is not offered: %s", exc)
                continue
            size = os.fstat(fd).st_size
            os.close(fd)
            rel = Path(os.path.abspath(out.path)).relative_to(os.path.abspath(top))
            mime = out.mime if set(out.mime) <= MIME_OK else "application/octet-stream"
            token = self.sign(rel.as_posix(), out.name, mime, tenant if self._tree_of else None)
            offered.append({"name": out.name, "mime": mime, "size": size, "url": f"/files/{token}"})
        return offered

    def sign(self, rel: str, name: str, mime: str, tenant: str | None = None) -> str:
        until = int((self._clock() + self._ttl) * 1000)
        body = {"p": rel, "n": name, "m": mime, "e": until, "i": secrets.token_hex(8)}
        if tenant:
            body["t"] = tenant  # the tree the link reaches
        payload = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
        mac = hmac.digest(self._key, payload, hashlib.sha256)
        return f"{_b64(payload)}.{_b64(mac)}"

    def _claims(self, token: str) -> dict[str, Any] | None:
        """The signed claims of `token`, or None when it is not one of ours."""
        if len(token) > 2048:
            return None
        encoded, _, mac = token.partition(".")
        try:
            payload, given = _unb64(encoded), _unb64(mac)
        except ValueError:
            return None
        if not hmac.compare_digest(given, hmac.digest(self._key, payload, hashlib.sha256)):
            return None
        claims = json.loads(payload)
        return claims if isinstance(claims, dict) else None

    def _spend(self, claims: dict[str, Any]) -> str | None:
        """Why the link cannot be used now (expired, used), or None after spending it."""
        now_ms = int(self._clock() * 1000)
        self._spent = {k: e for k, e in self._spent.items() if e > now_ms}
        if int(claims["e"]) <= now_ms:
            return "this download link has expired; ask again for the file"
        if claims["i"] in self._spent:
            return "this download link was already used; ask again for the file"
        self._spent[claims["i"]] = int(claims["e"])
        return None

    async def download(self, request: web.Request, headers: dict[str, str]) -> web.StreamResponse:
        """`GET /files/<token>`: the file as an attachment, once, before the link expires."""
        claims = self._claims(request.match_info["token"])
        if claims is None:
            return _error(404, "no such download link", headers)
        why = self._spend(claims)
        if why is not None:
            return _error(410, why, headers)
        try:
            top = self._tree(str(claims["t"]) if "t" in claims else None)
            fd = open_out_file(top, top / str(claims["p"]))
        except (OutFileError, ValueError):
            return _error(404, "the file is no longer there; ask again for it", headers)
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            name = quote(str(claims["n"]), safe="")
            response = web.StreamResponse(
                headers={
                    **headers,
                    "Content-Type": str(claims["m"]),
                    "Content-Length": str(size),
                    "Content-Disposition": f"attachment; filename*=UTF-8''{name}",
                }
            )
            await response.prepare(request)
            while chunk := await asyncio.to_thread(fh.read, CHUNK):
                await response.write(chunk)
            await response.write_eof()
        return response
