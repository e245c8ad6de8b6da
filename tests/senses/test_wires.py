"""Image parts on the wire: OpenAI `image_url` data URLs, Anthropic base64 `image` blocks;
a message without images is unchanged."""

from __future__ import annotations

import base64

from bridge.llm import anthropic_wire, openai_wire
from bridge.types.backend import ChatMessage, ImagePart, ModelRequest

PNG = ImagePart("image/png", b"\x89PNG fake bytes")


def test_openai_user_message_with_an_image() -> None:
    msg = ChatMessage("user", "[image: 1 photo]\n\nwhat is it?", images=(PNG,))
    body = openai_wire.build_body("m", ModelRequest("sys", [msg]))
    url = "data:image/png;base64," + base64.b64encode(PNG.data).decode()
    assert body["messages"][1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "[image: 1 photo]\n\nwhat is it?"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }
    plain = openai_wire.message_json(ChatMessage("user", "hi"))
    assert plain == {"role": "user", "content": "hi"}


def test_anthropic_user_message_with_an_image() -> None:
    msgs = anthropic_wire.messages_json([ChatMessage("user", "what is it?", images=(PNG,))])
    data = base64.b64encode(PNG.data).decode()
    assert msgs == [
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": data},
                },
                {"type": "text", "text": "what is it?"},
            ],
        }
    ]
