"""Past conversations in three shapes, read one item at a time: roost JSONL, ChatGPT, Claude.

Each reader takes a binary stream and yields `Message`s and `Skipped` notes
(where: "line 17" or "conversation 4"; why), never holding the whole file:
- `jsonl`: one message a line, the DESIGN contract's `{"conversation", "id",
  "role": "user"|"assistant", "name"?, "text", "time": ISO-8601}`;
- `chatgpt`: the export's `conversations.json`, an array of conversations
  whose `mapping` is a tree of nodes; the branch shown last (from
  `current_node` up through `parent`) is read, user and assistant text parts
  only (system, tool and hidden messages left out);
- `claude`: the export's `conversations.json`, an array of conversations with
  `chat_messages` (`sender` human | assistant, `text` or `content` blocks).
A time without a zone is read as UTC; a time a date cannot show (before the
year 1 or after 9999, UTC), not finite, or not a time at all skips its line or
conversation, as does text that is not valid Unicode (a lone surrogate).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

from bridge.recall.index import Message
from bridge.recall.jsonstream import iter_array

FORMATS = ("jsonl", "chatgpt", "claude")
SOURCE = "import"
MAX_LINE = 4 << 20  # a longer JSONL line is skipped (and named), not read into memory
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
# The times a date can show (years 1 to 9999, UTC), in ms since the epoch: well
# inside SQLite's 64-bit integer, and what recall renders without an error.
MIN_MS = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // _MS
MAX_MS = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // _MS
# What a malformed item may raise while it is read: it is skipped and named.
ITEM_ERRORS = (ValueError, TypeError, AttributeError, ArithmeticError)


@dataclass(frozen=True, slots=True)
class Skipped:
    where: str
    why: str


@dataclass(frozen=True, slots=True)
class Started:
    """A new conversation begins (counted in the summary)."""

    conversation: str


Item = Message | Skipped | Started
Progress = Callable[[int], None]  # bytes read so far


def parse_time(value: object) -> int:
    """Milliseconds since the epoch from ISO-8601 text or epoch seconds; ValueError else
    (also for a time outside the years 1 to 9999, UTC, or not finite)."""
    if isinstance(value, bool):
        raise ValueError("time must be ISO-8601 text or epoch seconds")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("time is not a finite number")
        ms = int(value * 1000) if isinstance(value, float) else value * 1000
    elif isinstance(value, str):
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        ms = (at - _EPOCH) // _MS
    else:
        raise ValueError("time must be ISO-8601 text or epoch seconds")
    if not MIN_MS <= ms <= MAX_MS:
        raise ValueError("time out of range (years 1 to 9999)")
    return ms


def utc(at_ms: int) -> datetime | None:
    """The UTC time of a stored `at_ms`; None for one no date can show (stored before
    `roost import` refused them): a reader shows it some other way, never fails."""
    try:
        return _EPOCH + timedelta(milliseconds=at_ms)
    except OverflowError:
        return None


def _unicode(*texts: str) -> None:
    """ValueError when a text cannot be stored (a lone surrogate from a JSON escape)."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("text is not valid Unicode (a lone surrogate)") from None


def _message(
    conversation: str, mid: str, role: str, text: str, at_ms: int, name: str = ""
) -> Message:
    _unicode(conversation, mid, text, name)
    return Message(conversation, mid, role, text, at_ms, SOURCE, name)


def _jsonl_message(obj: object) -> Message:
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    for key in ("conversation", "id", "text"):
        if not isinstance(obj.get(key), str) or (key != "text" and not obj[key]):
            raise ValueError(f"{key!r} must be a non-empty string")
    role = obj.get("role")
    if role not in ("user", "assistant"):
        raise ValueError("'role' must be 'user' or 'assistant'")
    name = obj.get("name", "")
    if not isinstance(name, str):
        raise ValueError("'name' must be a string")
    text: str = obj["text"]
    return _message(obj["conversation"], obj["id"], role, text, parse_time(obj.get("time")), name)


def read_jsonl(stream: BinaryIO, progress: Progress | None = None) -> Iterator[Item]:
    seen: set[str] = set()
    done = 0
    for number, raw in enumerate(_lines(stream), start=1):
        done += len(raw)
        if progress is not None and number % 1000 == 0:
            progress(done)
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE:
            yield Skipped(f"line {number}", "longer than 4 MiB")
            continue
        try:
            message = _jsonl_message(json.loads(raw))
        except RecursionError:
            yield Skipped(f"line {number}", "nested too deeply")
            continue
        except ITEM_ERRORS as exc:  # UnicodeDecodeError is a ValueError
            yield Skipped(f"line {number}", str(exc).split("\n")[0][:120])
            continue
        if message.conversation not in seen:
            seen.add(message.conversation)
            yield Started(message.conversation)
        yield message
    if progress is not None:
        progress(done)


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    """Lines of at most MAX_LINE + 1 bytes (a longer line's rest is dropped unread)."""
    while True:
        line = stream.readline(MAX_LINE + 1)
        if not line:
            return
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while True:  # drain the rest of the overlong line
                rest = stream.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
        yield line


def _text_parts(parts: object) -> str:
    if not isinstance(parts, list):
        return ""
    return "\n".join(p for p in parts if isinstance(p, str)).strip()


def _chatgpt_branch(conv: dict[str, Any]) -> list[dict[str, Any]]:
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("no 'mapping'")
    node_id = conv.get("current_node")
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        chain.append(node)
        node_id = node.get("parent")
    if not chain:  # no current node: the mapping's own order
        chain = [n for n in reversed(list(mapping.values())) if isinstance(n, dict)]
    return list(reversed(chain))


def _chatgpt_messages(conv: dict[str, Any]) -> Iterator[Message]:
    cid = conv.get("conversation_id") or conv.get("id")
    if not isinstance(cid, str) or not cid:
        raise ValueError("no conversation id")
    fallback = conv.get("create_time") or 0
    for node in _chatgpt_branch(conv):
        msg = node.get("message")
        if not isinstance(msg, dict):
            continue
        role = (msg.get("author") or {}).get("role")
        meta = msg.get("metadata") or {}
        if role not in ("user", "assistant") or meta.get("is_visually_hidden_from_conversation"):
            continue
        content = msg.get("content") or {}
        if content.get("content_type") not in ("text", "multimodal_text"):
            continue
        text = _text_parts(content.get("parts"))
        mid = msg.get("id") or node.get("id")
        if text and isinstance(mid, str):
            at = parse_time(msg.get("create_time") or fallback)
            yield _message(f"chatgpt:{cid}", mid, role, text, at)


def _claude_text(msg: dict[str, Any]) -> str:
    blocks = msg.get("content")
    if isinstance(blocks, list):
        texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
        joined = "\n".join(t for t in texts if isinstance(t, str)).strip()
        if joined:
            return joined
    text = msg.get("text")
    return text.strip() if isinstance(text, str) else ""


def _claude_messages(conv: dict[str, Any]) -> Iterator[Message]:
    cid = conv.get("uuid")
    messages = conv.get("chat_messages")
    if not isinstance(cid, str) or not cid or not isinstance(messages, list):
        raise ValueError("no 'uuid' or 'chat_messages'")
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        sender = str(msg.get("sender", "")).lower()
        role = {"human": "user", "user": "user", "assistant": "assistant"}.get(sender)
        text, mid = _claude_text(msg), msg.get("uuid")
        if role and text and isinstance(mid, str):
            at = parse_time(msg.get("created_at") or conv.get("created_at") or 0)
            yield _message(f"claude:{cid}", mid, role, text, at)


def _read_array(
    stream: BinaryIO,
    progress: Progress | None,
    messages: Callable[[dict[str, Any]], Iterator[Message]],
) -> Iterator[Item]:
    for element in iter_array(stream):
        where = f"conversation {element.index + 1}"
        if progress is not None:
            progress(element.offset)
        if not isinstance(element.value, dict):
            yield Skipped(where, "not a JSON object")
            continue
        try:
            found = list(messages(element.value))
        except RecursionError:
            yield Skipped(where, "nested too deeply")
            continue
        except ITEM_ERRORS as exc:
            yield Skipped(where, str(exc).split("\n")[0][:120])
            continue
        if found:
            yield Started(found[0].conversation)
            yield from found


def read(fmt: str, stream: BinaryIO, progress: Progress | None = None) -> Iterator[Item]:
    """The items of `stream` in format `fmt` (one of FORMATS)."""
    if fmt == "jsonl":
        return read_jsonl(stream, progress)
    if fmt == "chatgpt":
        return _read_array(stream, progress, _chatgpt_messages)
    if fmt == "claude":
        return _read_array(stream, progress, _claude_messages)
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
