"""Export fixtures in the documented public shapes of ChatGPT's and Claude's `conversations.json`.

ChatGPT: an array of conversations with `mapping` (node id -> {id, message,
parent, children}), `current_node`, `conversation_id`; messages carry
`author.role`, `create_time` (epoch seconds), `content.content_type` and
`content.parts`, `metadata.is_visually_hidden_from_conversation` for the
hidden system prompt. Claude: an array of {uuid, name, created_at,
chat_messages: [{uuid, sender: human|assistant, text, content: [{type, text}],
created_at}]}. Shapes as described by public parsers of both exports.
"""

from __future__ import annotations

from typing import Any


def _node(nid: str, parent: str | None, children: list[str], message: Any) -> dict[str, Any]:
    return {"id": nid, "message": message, "parent": parent, "children": children}


def _msg(mid: str, role: str, parts: list[Any], t: float, **extra: Any) -> dict[str, Any]:
    kind = extra.pop("content_type", "text")
    return {
        "id": mid,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": t,
        "content": {"content_type": kind, "parts": parts},
        "metadata": extra.pop("metadata", {}),
        "status": "finished_successfully",
        **extra,
    }


def chatgpt_conversation(cid: str, topic: str, t0: float = 1_700_000_000.0) -> dict[str, Any]:
    """root -> hidden system -> user -> (old answer | regenerated answer) -> user; the current
    branch runs through the regenerated answer."""
    hidden = {"is_visually_hidden_from_conversation": True}
    mapping = {
        "root": _node("root", None, ["sys"], None),
        "sys": _node("sys", "root", ["u1"], _msg("sys", "system", [""], t0, metadata=hidden)),
        "u1": _node(
            "u1", "sys", ["a1", "a2"], _msg("u1", "user", [f"Tell me about {topic}"], t0 + 1)
        ),
        "a1": _node("a1", "u1", [], _msg("a1", "assistant", ["OLD DISCARDED ANSWER"], t0 + 2)),
        "a2": _node("a2", "u1", ["t1"], _msg("a2", "assistant", [f"{topic} is lovely."], t0 + 3)),
        "t1": _node("t1", "a2", ["u2"], _msg("t1", "tool", ["tool output"], t0 + 4)),
        "u2": _node(
            "u2",
            "t1",
            [],
            _msg(
                "u2",
                "user",
                [{"content_type": "image_asset_pointer"}, f"and a photo of {topic}"],
                t0 + 5,
                content_type="multimodal_text",
            ),
        ),
    }
    return {
        "title": topic,
        "create_time": t0,
        "update_time": t0 + 5,
        "mapping": mapping,
        "current_node": "u2",
        "conversation_id": cid,
        "id": cid,
    }


def claude_conversation(cid: str, topic: str) -> dict[str, Any]:
    return {
        "uuid": cid,
        "name": topic,
        "created_at": "2024-03-01T10:00:00.000000Z",
        "updated_at": "2024-03-01T10:05:00.000000Z",
        "account": {"uuid": "acc-1"},
        "chat_messages": [
            {
                "uuid": f"{cid}-1",
                "sender": "human",
                "text": f"What do you know about {topic}?",
                "content": [{"type": "text", "text": f"What do you know about {topic}?"}],
                "created_at": "2024-03-01T10:00:00.000000Z",
                "attachments": [],
                "files": [],
            },
            {
                "uuid": f"{cid}-2",
                "sender": "assistant",
                "text": "",
                "content": [
                    {"type": "text", "text": f"{topic} has a long history."},
                    {"type": "tool_use", "name": "web_search", "input": {}},
                ],
                "created_at": "2024-03-01T10:00:05.000000Z",
            },
        ],
    }
