"""The audio endpoints of the fake OpenAI server (`FakeOpenAI.audio`).

`POST /v1/audio/transcriptions` takes multipart/form-data as OpenAI does:
`file` (its file name's extension names the format: flac, mp3, mp4, mpeg,
mpga, m4a, ogg, oga, wav, webm), `model`, optional `response_format`
(`json` default: `{"text", "usage"}`; `text`: text/plain; `verbose_json`),
`language`, `prompt`. Errors as OpenAI sends them: 401 without the key, 400
for a body that is not multipart, a missing file or model, an unsupported
extension, or audio it cannot read ("might be corrupted or unsupported"),
413 over 25 MB (before the body is read), 404 for a model not in
`models` (when set). What it "hears" in an OGG/Opus upload is the stream's
`TRANSCRIPT` comment (tests/fakes/ogg_opus.py); other formats are heard as
silence ("").

`POST /v1/audio/speech` takes JSON (`model`, `input` of 1-4096 characters,
`voice`, `response_format` default mp3) and answers the raw audio: for `opus`
an OGG/Opus stream whose `SPOKEN` comment is the input and whose length is
about 0.4 s a word; `wav` is a silent RIFF/WAVE; other formats get 400 here.

`script(...)` queues `Status`/`Garbage` failures for the next audio
requests; `requests` records each one (`AudioRequest`: the form fields or
JSON body, the uploaded file's name, type and bytes, the headers).
"""

from __future__ import annotations

import json
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from aiohttp import web

from tests.fakes.ogg_opus import NotOggOpus, ogg_opus, read_ogg_opus

FORMATS = ("flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "oga", "wav", "webm")
VOICES = frozenset(
    {
        "alloy",
        "ash",
        "ballad",
        "coral",
        "echo",
        "fable",
        "onyx",
        "nova",
        "sage",
        "shimmer",
        "verse",
        "marin",
        "cedar",
    }
)
MAX_UPLOAD = 25 * 1024 * 1024


@dataclass
class AudioRequest:
    path: str
    fields: dict[str, Any]
    filename: str = ""
    content_type: str = ""
    data: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def _error(status: int, message: str, code: str | None = None) -> web.Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return web.json_response(body, status=status)


def silent_wav(seconds: float) -> bytes:
    frames = int(16_000 * seconds)
    data = b"\0\0" * frames
    fmt = struct.pack("<HHIIHH", 1, 1, 16_000, 32_000, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVEfmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


class FakeAudio:
    def __init__(self, owner: Any) -> None:
        self._owner = owner  # FakeOpenAI: api_key, models
        self.models: list[str] | None = None  # audio model names it knows (None: any)
        self.requests: list[AudioRequest] = []
        self._script: deque[Any] = deque()

    def mount(self, app: web.Application) -> None:
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        app.router.add_post("/v1/audio/speech", self._speech)

    def script(self, *responses: Any) -> None:
        """Failures (`Status`, `Garbage`) for the next audio requests, in order."""
        self._script.extend(responses)

    def of(self, path: str) -> list[AudioRequest]:
        return [r for r in self.requests if r.path == path]

    def _denied(self, request: web.Request) -> web.Response | None:
        key = self._owner.api_key
        if key is not None and request.headers.get("Authorization") != f"Bearer {key}":
            return _error(401, "Incorrect API key provided.", "invalid_api_key")
        return None

    def _scripted(self) -> web.Response | None:
        if not self._script:
            return None
        return self._owner._respond_failure(self._script.popleft())

    def _unknown_model(self, model: str) -> web.Response | None:
        if not model:
            return _error(400, "you must provide a model parameter")
        if self.models is not None and model not in self.models:
            msg = f"The model `{model}` does not exist or you do not have access to it."
            return _error(404, msg, "model_not_found")
        return None

    async def _transcribe(self, request: web.Request) -> web.Response:
        if (request.content_length or 0) > MAX_UPLOAD:
            return _error(413, f"Maximum content size limit ({MAX_UPLOAD}) exceeded.")
        if not request.content_type.startswith("multipart/"):
            return _error(400, "Invalid Content-Type header; expected multipart/form-data")
        form = await request.post()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        upload = form.get("file")
        rec = AudioRequest("transcriptions", fields, headers=dict(request.headers))
        if isinstance(upload, web.FileField):
            rec.filename, rec.content_type = upload.filename, upload.content_type
            rec.data = upload.file.read()
        self.requests.append(rec)
        failure = self._denied(request) or self._scripted()
        failure = failure or self._unknown_model(str(fields.get("model", "")))
        if failure is not None:
            return failure
        if not isinstance(upload, web.FileField):
            return _error(400, "1 validation error: 'file' is a required property")
        ext = PurePosixPath(rec.filename).suffix.lower().lstrip(".")
        if ext not in FORMATS:
            return _error(400, f"Invalid file format. Supported formats: {list(FORMATS)}")
        heard, seconds = "", 0.0
        if ext in ("ogg", "oga"):
            try:
                info = read_ogg_opus(rec.data)
            except (NotOggOpus, UnicodeDecodeError, struct.error):
                return _error(400, "Audio file might be corrupted or unsupported")
            heard, seconds = info.comments.get("TRANSCRIPT", ""), info.duration_s
        return self._transcript(str(fields.get("response_format", "json")), heard, seconds)

    def _transcript(self, fmt: str, text: str, seconds: float) -> web.Response:
        if fmt == "text":
            return web.Response(text=text + "\n", content_type="text/plain")
        if fmt == "verbose_json":
            body = {"task": "transcribe", "language": "english", "duration": seconds}
            return web.json_response({**body, "text": text, "segments": []})
        if fmt != "json":
            return _error(400, f"response_format {fmt!r} is not supported by this fake")
        usage = {"type": "duration", "seconds": max(1, round(seconds))}
        return web.json_response({"text": text, "usage": usage})

    async def _speech(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "We could not parse the JSON body.")
        self.requests.append(AudioRequest("speech", dict(body), headers=dict(request.headers)))
        failure = self._denied(request) or self._scripted()
        failure = failure or self._unknown_model(str(body.get("model", "")))
        if failure is not None:
            return failure
        text, voice = body.get("input"), body.get("voice")
        if not isinstance(text, str) or not text:
            return _error(400, "1 validation error: 'input' is a required property")
        if len(text) > 4096:
            return _error(400, "'input' is too long: at most 4096 characters", "string_above_max")
        if voice not in VOICES:
            return _error(400, f"Invalid value for 'voice': {json.dumps(voice)}")
        seconds = 0.4 * max(1, len(text.split()))
        fmt = body.get("response_format", "mp3")
        if fmt == "opus":
            audio = ogg_opus({"SPOKEN": text, "VOICE": str(voice)}, seconds, seed=len(text))
            return web.Response(body=audio, content_type="audio/ogg")
        if fmt == "wav":
            return web.Response(body=silent_wav(seconds), content_type="audio/wav")
        return _error(400, f"response_format {fmt!r} is not supported by this fake")
