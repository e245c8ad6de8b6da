"""Files for the fake Bot API: incoming photos and documents, getFile, downloads, sendPhoto.

Like Telegram: a file a person sends is described in the update (`photo`:
several `PhotoSize`s, the largest last; `document`: name, MIME type, size)
and fetched by the bot in two steps, `getFile` (which answers 400 "Bad
Request: file is too big" over the 20 MB bot download limit and "invalid
file_id" for an unknown id) and `GET /file/bot<token>/<file_path>` (404 for
an unknown path, 401 for a wrong token). `sendPhoto` takes a multipart
upload and refuses, as Telegram does, more than 10 MB, bytes that are not
an image, and sides whose sum passes 10,000 or whose ratio passes 20.
`downloads` counts fetched bytes per file path, so a test sees what was
never fetched.
"""

from __future__ import annotations

import io
import itertools
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web
from PIL import Image, UnidentifiedImageError

if TYPE_CHECKING:
    from tests.telegram.fake_bot_api import FakeBotAPI, Upload

DOWNLOAD_LIMIT = 20_000_000  # "bots can download files of up to 20 MB"
PHOTO_LIMIT = 10_000_000  # "the photo must be at most 10 MB in size"


@dataclass
class Stored:
    file_id: str
    unique_id: str
    path: str
    data: bytes


@dataclass
class Photo:
    chat_id: int
    message_id: int
    upload: Upload
    width: int
    height: int


class FakeFiles:
    def __init__(self, fake: FakeBotAPI) -> None:
        self._fake = fake
        self.stored: dict[str, Stored] = {}
        self.by_path: dict[str, Stored] = {}
        self.downloads: dict[str, int] = defaultdict(int)  # file_path -> bytes served
        self.photos: list[Photo] = []  # sendPhoto uploads, in order
        self._ids = itertools.count(1)

    def add(self, data: bytes, folder: str, suffix: str) -> Stored:
        n = next(self._ids)
        stored = Stored(f"FILE{n:04d}", f"U{n:04d}", f"{folder}/file_{n}{suffix}", data)
        self.stored[stored.file_id] = stored
        self.by_path[stored.path] = stored
        return stored

    # -- what a person sends ---------------------------------------------------------------

    def push_photo(
        self, user_id: int, data: bytes, *, caption: str | None = None, claimed: int | None = None
    ) -> int:
        """A photo message: the full image plus two thumbnails, as Telegram sends it."""
        sizes = []
        with Image.open(io.BytesIO(data)) as img:
            full = img.size
            for side in (90, 320):
                small = img.convert("RGB")
                small.thumbnail((side, side))
                out = io.BytesIO()
                small.save(out, "JPEG")
                sizes.append(self._size(self.add(out.getvalue(), "photos", ".jpg"), small.size))
        big = self._size(self.add(data, "photos", ".jpg"), full)
        if claimed is not None:
            big["file_size"] = claimed
        sizes.append(big)
        extra: dict[str, Any] = {"photo": sizes}
        if caption is not None:
            extra["caption"] = caption
        return self._fake.push({"message": self._fake.message(user_id, None, extra=extra)})

    def push_document(
        self,
        user_id: int,
        data: bytes,
        file_name: str,
        mime_type: str,
        *,
        caption: str | None = None,
        claimed: int | None = None,
    ) -> int:
        stored = self.add(data, "documents", "")
        doc = {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "file_name": file_name,
            "mime_type": mime_type,
            "file_size": len(data) if claimed is None else claimed,
        }
        extra: dict[str, Any] = {"document": doc}
        if caption is not None:
            extra["caption"] = caption
        return self._fake.push({"message": self._fake.message(user_id, None, extra=extra)})

    @staticmethod
    def _size(stored: Stored, size: tuple[int, int]) -> dict[str, Any]:
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "width": size[0],
            "height": size[1],
            "file_size": len(stored.data),
        }

    # -- the protocol ------------------------------------------------------------------------

    def handler(self, method: str) -> Any:
        return {"getFile": self._get_file, "sendPhoto": self._send_photo}.get(method)

    async def _get_file(self, p: dict[str, Any]) -> dict[str, Any]:
        from tests.telegram.fake_bot_api import ApiError, Failure

        stored = self.stored.get(str(p.get("file_id", "")))
        if stored is None:
            raise ApiError(Failure(400, "Bad Request: invalid file_id"))
        if len(stored.data) > DOWNLOAD_LIMIT:
            raise ApiError(Failure(400, "Bad Request: file is too big"))
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.unique_id,
            "file_size": len(stored.data),
            "file_path": stored.path,
        }

    async def download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self._fake.token:
            return web.Response(status=401, text="Unauthorized")
        from tests.telegram.fake_bot_api import Call  # a cycle at import time otherwise

        self._fake.calls.append(
            Call("download", {"path": request.match_info["path"]}, time.monotonic())
        )
        stored = self.by_path.get(request.match_info["path"])
        if stored is None:
            return web.Response(status=404, text="Not Found")
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        resp.content_length = len(stored.data)
        await resp.prepare(request)
        for start in range(0, len(stored.data), 64 * 1024):
            chunk = stored.data[start : start + 64 * 1024]
            await resp.write(chunk)
            self.downloads[stored.path] += len(chunk)
        await resp.write_eof()
        return resp

    async def _send_photo(self, p: dict[str, Any]) -> dict[str, Any]:
        from tests.telegram.fake_bot_api import BOT_ID, ApiError, Failure, Upload

        chat_id = int(p["chat_id"])
        upload = p.get("photo")
        if not isinstance(upload, Upload):
            raise ApiError(Failure(400, "Bad Request: wrong file identifier/HTTP URL specified"))
        if len(upload.data) > PHOTO_LIMIT:
            raise ApiError(Failure(400, "Bad Request: PHOTO_SAVE_FILE_INVALID"))
        try:
            with Image.open(io.BytesIO(upload.data)) as img:
                width, height = img.size
        except (UnidentifiedImageError, OSError):
            raise ApiError(Failure(400, "Bad Request: IMAGE_PROCESS_FAILED")) from None
        if width + height > 10_000 or max(width, height) > 20 * min(width, height):
            raise ApiError(Failure(400, "Bad Request: PHOTO_INVALID_DIMENSIONS"))
        message_id = self._fake.next_message_id(chat_id)
        self.photos.append(Photo(chat_id, message_id, upload, width, height))
        return {
            "message_id": message_id,
            "date": int(time.time()),
            "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "roost"},
            "photo": [
                {
                    "file_id": f"sent-{message_id}",
                    "file_unique_id": f"su-{message_id}",
                    "width": width,
                    "height": height,
                    "file_size": len(upload.data),
                }
            ],
        }
