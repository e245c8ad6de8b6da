"""The chat page itself: `GET /` (js/index.html) and `GET /static/<name>` (its ES modules,
styles and icons; `vendor/<name>` for the vendored libraries). Only names of the
allowed shape and type, only files, never a symbolic link, another folder, a
test or a dotfile.
"""

from __future__ import annotations

import re
from pathlib import Path

from aiohttp import web

JS_DIR = Path(__file__).resolve().parents[3] / "js"
STATIC_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,40}(\.[a-z0-9]{1,12}){0,2}\.(js|mjs|css|svg)$")
STATIC_TYPES = {
    "js": "text/javascript",
    "mjs": "text/javascript",
    "css": "text/css",
    "svg": "image/svg+xml",
}


class PageFiles:
    def __init__(self, folder: Path = JS_DIR) -> None:
        self._dir = folder

    async def index(self, request: web.Request) -> web.StreamResponse:
        page = self._dir / "index.html"
        if not page.is_file():
            return web.Response(text="roost: the web page is not installed", status=500)
        return web.FileResponse(page)

    async def static(self, request: web.Request) -> web.StreamResponse:
        """Top-level page files and `vendor/` ones only (no other directories, tests
        or dotfiles)."""
        name = request.match_info["name"]
        kind = STATIC_TYPES.get(name.rsplit(".", 1)[-1]) if STATIC_NAME.fullmatch(name) else None
        vendor = request.path.startswith("/static/vendor/")
        path = self._dir / "vendor" / name if vendor else self._dir / name
        if kind is None or not path.is_file() or path.is_symlink():
            raise web.HTTPNotFound()
        return web.Response(body=path.read_bytes(), content_type=kind, charset="utf-8")
