"""What a conversation shows of a turn, beside what the model is given.

The stored user message is the model's view of it: a document's text, a
transcript or "[image: 1 photo]" before the person's words, a quoted message
above them. A page showing history wants what the person sent: the words
they typed, the quote, and one chip per file. `sent_meta` writes that as a
small JSON object (the user row's `meta` column, '' when the message had no
files and no quote: the stored text is then exactly what was typed);
`read_meta` reads it back, tolerating anything malformed. `tool_cards` turns
a turn's stored tool-call steps into the cards the page shows while a turn
runs (`bridge.types.progress.ToolStep`), so they survive a reload.
A scheduled job's run keeps its msg_id in its prompt row's `meta`
(`with_run`, read back by `run_of`): the conversation archive copies `meta`
and no msg_id, so an archived page tells a run by it, never by its text (a
person's message cannot carry the key: `sent_meta` writes only its own).
Pure functions; every text in here was masked by the caller.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from bridge.core.history import decode_calls
from bridge.types.messages import Attachment
from bridge.types.progress import shown

MAX_QUOTE_SHOWN = 1_000
MAX_FILES_SHOWN = 10
RUN_KEY = "run"  # in a job run's prompt row's meta: the run's msg_id
KIND_NAMES = {"photo": "image", "voice": "voice note", "audio": "audio", "document": "file"}


def _same(text: str) -> str:
    return text


def sent_meta(
    text: str,
    quote: str,
    attachments: Sequence[Attachment],
    mask: Callable[[str], str] = _same,
) -> str:
    """The person's message as sent ('' when the stored text is that already)."""
    if not attachments and not quote:
        return ""
    body: dict[str, Any] = {"text": mask(text)}
    if quote:
        body["quote"] = mask(quote[:MAX_QUOTE_SHOWN])
    if attachments:
        body["files"] = [_file(a, mask) for a in attachments[:MAX_FILES_SHOWN]]
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def with_run(meta: str, msg_id: str) -> str:
    """`meta` ('' or `sent_meta`'s JSON) with a job run's msg_id added under `RUN_KEY`."""
    body = {RUN_KEY: msg_id, **(json.loads(meta) if meta else {})}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def run_of(meta: str) -> str:
    """The msg_id (`job:<id>:<slot>`) of the job run whose prompt a stored person's row
    is, from its `meta` ('' for a message the person sent, or a row stored before the
    mark was kept)."""
    if RUN_KEY not in meta:
        return ""
    try:
        body = json.loads(meta)
    except ValueError:
        return ""
    run = body.get(RUN_KEY) if isinstance(body, dict) else None
    return run if isinstance(run, str) else ""


def _file(a: Attachment, mask: Callable[[str], str]) -> dict[str, Any]:
    return {
        "name": mask(a.name) if a.name else KIND_NAMES.get(a.kind, "file"),
        "kind": a.kind,
        "mime": a.mime,
        "size": a.size,
        "ref": os.path.basename(a.path),  # the inbox's generated name, never the sender's
    }


def read_meta(meta: str) -> dict[str, Any]:
    """A row's `meta` as a dict ({} when empty or unreadable); only known, well-typed keys."""
    if not meta:
        return {}
    try:
        raw = json.loads(meta)
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for key in ("text", "quote", "status"):
        if isinstance(raw.get(key), str):
            out[key] = raw[key]
    files = raw.get("files")
    if isinstance(files, list):
        out["files"] = [f for f in files if _is_file(f)]
    tools = raw.get("tools")
    if isinstance(tools, list):
        out["tools"] = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    return out


def _is_file(f: object) -> bool:
    return (
        isinstance(f, dict)
        and isinstance(f.get("name"), str)
        and isinstance(f.get("kind"), str)
        and isinstance(f.get("ref"), str)
    )


def page_files(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The file chips of a message for the page: name, kind, MIME type, size."""
    return [
        {"name": f["name"], "kind": f["kind"], "mime": str(f.get("mime", "")), "size": _int(f)}
        for f in meta.get("files", ())
    ]


def _int(f: dict[str, Any]) -> int:
    size = f.get("size")
    return size if isinstance(size, int) else 0


def tool_cards(steps: Iterable[tuple[str, str, str, str]]) -> list[dict[str, Any]]:
    """Cards of one turn's tool calls from its stored steps (role, content, tool_calls,
    tool_call_id), in call order: {"id", "name", "state", "args", "result"}. A result
    that starts "error:" (what the agent loop writes for a failed call) is an error."""
    cards: dict[str, dict[str, Any]] = {}
    for role, content, calls, call_id in steps:
        if role == "assistant":
            for call in decode_calls(calls):
                cards[call.id] = {
                    "id": call.id,
                    "name": call.name,
                    "state": "done",
                    "args": shown(call.arguments),
                    "result": "",
                }
        elif role == "tool" and call_id in cards:
            state = "error" if content.startswith("error:") else "done"
            cards[call_id] |= {"state": state, "result": shown(content)}
    return list(cards.values())
