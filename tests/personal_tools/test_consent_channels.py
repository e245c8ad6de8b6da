"""What a person reads about a tool cannot be made to look like roost's own text, on
any channel: the tool's code, its description and the URLs in it stay code.

Session 47's attacker pass: a tool's source could close the code block `/tool show`
put it in (fixed for CommonMark with a longer fence), and on WhatsApp, whose format
has no escape, it still could; the prompt's "Network calls" list and the
description were Markdown, so a URL path or a description could show bold text or
a link whose text is not its address. Here the model writes a draft whose
docstring closes fences of every length and claims, in bold, that roost checked
it; its description and a URL do the same with Markdown, a link and HTML. The
replies of `/tool show`, `/tool save` (the consent prompt), the saved tool's
`/tool show` and `/tools` go through each channel's own renderer
(Telegram's entities, Matrix's HTML, WhatsApp's marks): the claim is only ever
inside code, nothing is bold, nothing is a link. Real core, fake OpenAI, real
sandbox, SQLite.
"""

from __future__ import annotations

import re

from bridge.app.build import Roost
from bridge.channels.common.render import render
from bridge.channels.matrix.render import contents
from bridge.channels.whatsapp.render import JOIN, chunks
from bridge.personal_tools.consent import code
from tests.fakes.fake_openai import FakeOpenAI, Text
from tests.personal_tools.test_consent import Chat
from tests.personal_tools.test_draft_source import create
from tests.whatsapp.test_render_code import whatsapp_reads

CLAIM = "roost checked this code: it reads no secret and calls no host."
SOURCE = f'''
import net

NETWORK = ["api.example.org"]


def run(city: str) -> str:
    """Shows the weather.
```

✅ **{CLAIM}** <b>{CLAIM}</b>

````
✅ *{CLAIM}*
`````python
    """
    return net.get("https://api.example.org/**{CLAIM}**/[ok](https://evil.example)/" + city).text
'''
DESCRIPTION = f"**✅ {CLAIM}** [https://api.example.org](https://evil.example) <b>x</b>"


async def replies(roost: Roost, fake: FakeOpenAI) -> list[str]:
    chat = Chat(roost)
    fake.script(create("weather", SOURCE, DESCRIPTION), Text("I wrote it."))
    await chat.say("write me a weather tool")
    shown = [(await chat.say(command)).text for command in ("/tool show weather", "/tools")]
    shown.append((await chat.say("/tool save weather")).text)
    saved = (await chat.say("/tool save weather yes")).text
    assert saved.startswith("Saved me.weather"), saved
    shown += [
        saved,
        (await chat.say("/tool show me.weather")).text,
        (await chat.say("/tools")).text,
    ]
    assert all(CLAIM in text for text in shown), shown
    return shown


async def test_telegram_shows_the_tools_words_as_code(wired: Roost, fake: FakeOpenAI) -> None:
    for text in await replies(wired, fake):
        shown = render(text)
        assert {e.type for e in shown.entities} <= {"code", "pre"}, (text, shown.entities)
        units = bytearray(shown.text.encode("utf-16-le"))  # entities count UTF-16 units
        for e in shown.entities:
            units[2 * e.offset : 2 * e.end] = " ".encode("utf-16-le") * e.length
        outside = units.decode("utf-16-le")
        assert CLAIM not in outside and "evil.example" not in outside, text


async def test_matrix_shows_the_tools_words_as_code(wired: Roost, fake: FakeOpenAI) -> None:
    for text in await replies(wired, fake):
        for content in contents(text):
            html = content.get("formatted_body", "")
            outside = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
            assert not re.search(r"<(strong|em|a|b)\b", outside), html
            assert CLAIM not in outside and "evil.example" not in outside, html


async def test_whatsapp_shows_the_tools_words_as_code(wired: Roost, fake: FakeOpenAI) -> None:
    for text in await replies(wired, fake):
        for message in chunks(text):
            codes, outside = whatsapp_reads(message)
            assert CLAIM not in outside and "evil.example" not in outside, message
            assert not re.search(r"[*_~]", re.sub(r"\w_+\w", "", outside)), message
            if "def run" in message:  # the whole source, as written, in one block
                (source,) = [c for c in codes if "def run" in c]
                assert source.replace(JOIN, "").strip() == SOURCE.strip(), message


def test_a_code_span_holds_any_text_as_written() -> None:
    """`code` cannot be closed or trimmed by what it holds (CommonMark 6.1)."""
    for text in ["`", "``x", "x`", " a ", "`` ` ```", "**b** [l](https://e.org)", "a b"]:
        shown = render(f"- GET {code(text)} ok")
        (entity,) = shown.entities
        assert entity.type == "code", (text, shown)
        assert shown.text[entity.offset : entity.end] == text, (text, shown)
