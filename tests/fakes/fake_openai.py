"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

It speaks the real protocol: `POST /v1/chat/completions` streamed as
Server-Sent Events (`data: {chat.completion.chunk}` lines, the role first,
content pieces, tool-call fragments split across chunks, `finish_reason` on
the last choice chunk, a usage chunk when `stream_options.include_usage` is
set, then `data: [DONE]`), a plain `chat.completion` JSON object when the
request says `stream: false`, and `GET /v1/models`.

Usage::

    async with FakeOpenAI(api_key="sk-test", models=["m"]) as fake:
        fake.script(
            Status(429, retry_after=0),            # first request
            Text("Hello there"),                   # second request
            ToolCalls([Call("get_time", {"tz": "UTC"})]),
        )
        backend = OpenAIBackend(fake.base_url, "sk-test", "m")
        ...
        assert fake.requests[1]["messages"][0]["role"] == "system"

Each request takes the next scripted response; when the script is empty the
`responder` function is called with the request body (default
`echo_responder`: "echo: <last user message>"), which suits load tests.
Responses: `Text`, `ToolCalls`, `Json` (non-streaming even when streaming was
asked for), `Status` (an OpenAI-style JSON error, optional `Retry-After`),
`Garbage` (any raw body; `Garbage("data: [DONE]\\n\\n")` is an empty stream),
`Hang` (go silent, before or after the headers). `Text`/`ToolCalls` take
`cut_after=N` to drop the connection after N chunks. With `api_key` set,
requests need `Authorization: Bearer <key>` (401 otherwise); with `models`
set, other model names get 404; `list_models=False` leaves `GET /v1/models`
unrouted (404), as several OpenAI-compatible servers do. `fake.requests` holds every JSON body
received, `fake.request_headers` the matching headers. `fake.audio` serves
`/v1/audio/transcriptions` and `/v1/audio/speech`
(tests/fakes/fake_openai_audio.py). User messages may
carry content arrays of `text` and `image_url` parts (base64 `data:` URLs);
each image is decoded with Pillow and recorded in `fake.images` (size,
type, whether EXIF is left); a malformed part or image is a 400.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from PIL import Image, UnidentifiedImageError

from tests.fakes.fake_openai_audio import FakeAudio


@dataclass(frozen=True)
class Call:
    """One tool call; `arguments` is a JSON string or an object to encode."""

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None

    def args_text(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Text:
    """A text answer, streamed in `pieces` (default: word by word)."""

    text: str
    pieces: Sequence[str] | None = None
    finish_reason: str = "stop"
    # (prompt_tokens, completion_tokens[, cached_tokens]); cached goes to
    # usage.prompt_tokens_details.cached_tokens, part of prompt_tokens as OpenAI counts it
    usage: tuple[int, ...] | None = None
    cut_after: int | None = None  # drop the connection after this many chunks
    # reasoning sent apart before the text, a piece a chunk, in `reasoning_content` (vLLM
    # or SGLang with a reasoning parser, DeepSeek's API) or another field (`reasoning`)
    reasoning: Sequence[str] = ()
    reasoning_field: str = "reasoning_content"


@dataclass(frozen=True)
class ToolCalls:
    """Tool calls (optionally after some text); arguments go in small pieces."""

    calls: Sequence[Call]
    text: str = ""
    interleave: bool = False  # fragments of parallel calls alternate by index
    piece_size: int = 7
    usage: tuple[int, ...] | None = None
    cut_after: int | None = None


@dataclass(frozen=True)
class Json:
    """A non-streaming `chat.completion` object, or `body` verbatim."""

    text: str = ""
    calls: Sequence[Call] = ()
    finish_reason: str | None = None
    body: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Status:
    """An HTTP error with an OpenAI-style JSON error body."""

    status: int
    message: str = ""
    retry_after: float | str | None = None


@dataclass(frozen=True)
class Garbage:
    """Any raw body; by default a stream chunk that is not valid JSON."""

    body: bytes | str = b'data: {"id": "chatcmpl-x", "choices": [{\n\n'
    content_type: str = "text/event-stream"
    status: int = 200


@dataclass(frozen=True)
class Hang:
    """Go silent until the client gives up (after the role chunk if `headers`)."""

    headers: bool = True


Response = Text | ToolCalls | Json | Status | Garbage | Hang
Responder = Callable[[dict[str, Any]], Response]


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a content array."""
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return str(content or "")


def last_user_text(body: Mapping[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


@dataclass(frozen=True)
class SeenImage:
    """An `image_url` part as the server decoded it (request index, type, pixel size)."""

    request: int
    mime: str
    width: int
    height: int
    size: int  # bytes of the decoded image
    exif: bool  # the image still carried EXIF data


def _decode_image(url: str) -> tuple[str, bytes]:
    """`data:<mime>;base64,<data>` -> (mime, bytes); ValueError as OpenAI's 400."""
    head, sep, data = url.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        raise ValueError("Invalid image URL: expected a base64 data URL.")
    mime = head[5:-7]
    if mime not in ("image/jpeg", "image/png", "image/webp", "image/gif"):
        raise ValueError(f"Invalid MIME type {mime}: use image/jpeg, png, webp or gif.")
    try:
        return mime, base64.b64decode(data, validate=True)
    except binascii.Error:
        raise ValueError("Invalid base64 image data.") from None


def echo_responder(body: dict[str, Any]) -> Response:
    return Text(f"echo: {last_user_text(body)}")


def _error(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _chunker(model: str, include_usage: bool) -> Callable[..., dict[str, Any]]:
    """Build `chat.completion.chunk` objects sharing one id, as OpenAI does."""
    cid, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        out: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [choice],
        }
        if include_usage:
            out["usage"] = None
        return out

    return chunk


def _words(text: str) -> list[str]:
    pieces = [w + " " for w in text.split(" ")]
    pieces[-1] = pieces[-1][:-1]
    return [p for p in pieces if p]


class FakeOpenAI:
    """The server; use as `async with FakeOpenAI() as fake:`."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        models: Sequence[str] | None = None,
        responder: Responder = echo_responder,
        chunk_delay_s: float = 0.0,
        keepalive: bool = False,
        split_writes: bool = False,
        list_models: bool = True,
    ) -> None:
        self.api_key = api_key
        self.list_models = list_models  # False: no GET /v1/models route (404), as some servers
        self.models = list(models) if models is not None else None
        self.responder = responder
        self.chunk_delay_s = chunk_delay_s
        self.keepalive = keepalive  # send ": keep-alive" comments between chunks
        self.split_writes = split_writes  # write every chunk in two halves
        self.requests: list[dict[str, Any]] = []
        self.images: list[SeenImage] = []  # every image part received, decoded
        self.request_headers: list[dict[str, str]] = []
        self._script: deque[Response] = deque()
        self.audio = FakeAudio(self)  # /v1/audio/*
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def script(self, *responses: Response) -> None:
        """Queue responses for the next requests, in order."""
        self._script.extend(responses)

    @property
    def pending(self) -> int:
        """How many scripted responses are still unused."""
        return len(self._script)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        if self.list_models:
            app.router.add_get("/v1/models", self._models)
        self.audio.mount(app)
        self._runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=1.0, access_log=None
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def release(self) -> None:
        """End every `Hang` now: its connection is closed (the client sees a broken stream)."""
        self._closing.set()

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _models(self, request: web.Request) -> web.Response:
        names = self.models if self.models is not None else ["fake-model"]
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "fake"} for n in names]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response(_error(400, "We could not parse the JSON body."), status=400)
        self.requests.append(body)
        self.request_headers.append(dict(request.headers))
        auth = request.headers.get("Authorization")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            msg = "Incorrect API key provided."
            return web.json_response(_error(401, msg, "invalid_api_key"), status=401)
        model = str(body.get("model", ""))
        if self.models is not None and model not in self.models:
            msg = f"The model `{model}` does not exist or you do not have access to it."
            return web.json_response(_error(404, msg, "model_not_found"), status=404)
        try:
            self._see_images(body)
        except ValueError as exc:
            return web.json_response(_error(400, str(exc), "invalid_image_format"), status=400)
        response = self._script.popleft() if self._script else self.responder(body)
        return await self._respond(request, body, response)

    def _see_images(self, body: Mapping[str, Any]) -> None:
        """Check every content array as OpenAI does and decode its images."""
        index = len(self.requests) - 1
        for message in body.get("messages") or []:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            if message.get("role") != "user":
                raise ValueError("Image content parts are only allowed in user messages.")
            for part in content:
                if part.get("type") == "text" and isinstance(part.get("text"), str):
                    continue
                if part.get("type") != "image_url":
                    raise ValueError(f"Invalid content part type: {part.get('type')!r}.")
                mime, data = _decode_image(str((part.get("image_url") or {}).get("url", "")))
                try:
                    with Image.open(io.BytesIO(data)) as img:
                        img.load()
                        seen = SeenImage(index, mime, *img.size, len(data), bool(img.getexif()))
                except (UnidentifiedImageError, OSError):
                    raise ValueError("The image data is not a valid image.") from None
                self.images.append(seen)

    def _respond_failure(self, response: Status | Garbage) -> web.Response:
        """A scripted `Status` or `Garbage` as a plain (non-streamed) response."""
        if isinstance(response, Garbage):
            raw = response.body.encode() if isinstance(response.body, str) else response.body
            return web.Response(
                body=raw, status=response.status, headers={"Content-Type": response.content_type}
            )
        headers = {}
        if response.retry_after is not None:
            headers["Retry-After"] = str(response.retry_after)
        message = response.message or f"fake error {response.status}"
        return web.json_response(
            _error(response.status, message), status=response.status, headers=headers
        )

    async def _respond(
        self, request: web.Request, body: dict[str, Any], response: Response
    ) -> web.StreamResponse:
        if isinstance(response, Status | Garbage):
            return self._respond_failure(response)
        if isinstance(response, Hang):
            return await self._hang(request, body, response)
        if isinstance(response, Json):
            return web.json_response(dict(response.body or self._completion(body, response)))
        if not body.get("stream"):
            as_json = Json(response.text, getattr(response, "calls", ()), None)
            return web.json_response(self._completion(body, as_json))
        return await self._stream(request, body, response)

    def _completion(self, body: Mapping[str, Any], r: Json) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": r.text or None}
        if r.calls:
            message["tool_calls"] = [
                {
                    "id": c.id or f"call_{uuid.uuid4().hex[:24]}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.args_text()},
                }
                for c in r.calls
            ]
        reason = r.finish_reason or ("tool_calls" if r.calls else "stop")
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": reason}
            ],
            "usage": self._usage(body, None, len(_words(r.text)) + len(r.calls)),
        }

    def _usage(
        self, body: Mapping[str, Any], given: tuple[int, ...] | None, pieces: int
    ) -> dict[str, Any]:
        if given is None:
            chars = sum(len(text_of(m.get("content"))) for m in body.get("messages") or [])
            given = (max(1, chars // 4), pieces)
        usage: dict[str, Any] = {
            "prompt_tokens": given[0],
            "completion_tokens": given[1],
            "total_tokens": given[0] + given[1],
        }
        if len(given) > 2:
            usage["prompt_tokens_details"] = {"cached_tokens": given[2], "audio_tokens": 0}
        return usage

    def _deltas(self, response: Text | ToolCalls) -> list[tuple[dict[str, Any], str | None]]:
        """(delta, finish_reason) of every choice chunk, in order."""
        if isinstance(response, Text):
            pieces = list(response.pieces) if response.pieces is not None else _words(response.text)
            out = [({"role": "assistant", "content": ""}, None)]
            out += [
                ({response.reasoning_field: r, "content": None}, None) for r in response.reasoning
            ]
            out += [({"content": p}, None) for p in pieces]
            return [*out, ({}, response.finish_reason)]
        out = [({"role": "assistant", "content": None}, None)]
        out += [({"content": p}, None) for p in _words(response.text) if response.text]
        heads, tails = [], []
        for i, call in enumerate(response.calls):
            call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
            fn = {"name": call.name, "arguments": ""}
            heads.append([{"index": i, "id": call_id, "type": "function", "function": fn}])
            args, n = call.args_text(), response.piece_size
            tails.append(
                [
                    {"index": i, "function": {"arguments": args[j : j + n]}}
                    for j in range(0, len(args), n)
                ]
            )
        if response.interleave:
            frags = [f for h in heads for f in h]
            for k in range(max((len(t) for t in tails), default=0)):
                frags += [t[k] for t in tails if k < len(t)]
        else:
            frags = [f for h, t in zip(heads, tails, strict=True) for f in (*h, *t)]
        out += [({"tool_calls": [f]}, None) for f in frags]
        return [*out, ({}, "tool_calls")]

    async def _stream(
        self, request: web.Request, body: Mapping[str, Any], response: Text | ToolCalls
    ) -> web.StreamResponse:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunk = _chunker(str(body.get("model", "")), include_usage)
        frames = [chunk(delta, finish) for delta, finish in self._deltas(response)]
        if include_usage:
            usage = self._usage(body, response.usage, len(frames) - 2)
            frames.append({**frames[-1], "choices": [], "usage": usage})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        resp.headers["Cache-Control"] = "no-cache"
        await resp.prepare(request)
        lines = [f"data: {_compact(f)}\n\n".encode() for f in frames] + [b"data: [DONE]\n\n"]
        for n, line in enumerate(lines):
            if response.cut_after is not None and n >= response.cut_after:
                assert request.transport is not None
                request.transport.close()
                return resp
            await self._write(resp, line)
        await resp.write_eof()
        return resp

    async def _write(self, resp: web.StreamResponse, data: bytes) -> None:
        if self.keepalive:
            await resp.write(b": keep-alive\n\n")
        if self.split_writes:
            half = len(data) // 2
            await resp.write(data[:half])
            await asyncio.sleep(0)
            data = data[half:]
        await resp.write(data)
        if self.chunk_delay_s:
            await asyncio.sleep(self.chunk_delay_s)

    async def _hang(
        self, request: web.Request, body: Mapping[str, Any], response: Hang
    ) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        if response.headers:
            await resp.prepare(request)
            role = _chunker(str(body.get("model", "")), False)({"role": "assistant"}, None)
            await resp.write(f"data: {_compact(role)}\n\n".encode())
        await self._closing.wait()  # cancelled when the client disconnects
        if request.transport is not None:
            request.transport.close()
        return resp
