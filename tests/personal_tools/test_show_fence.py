"""The code a person reads before consenting stays code, whatever backticks it holds.

`/tool show` fenced a tool's source (a draft's or a saved tool's) with three
backticks. Session 47's attacker pass had the model write a draft whose
docstring holds a line of three backticks: that line closed the fence, so what
followed it showed as roost's own text (here a bold "roost checked this code"
claim), and the backtick lines vanished from the code shown. Now the fence is one
backtick longer than the source's longest run (as skills' diffs already were; the
consent prompt's diff is safe as it is: each of its lines starts with - or +).
Through the real core, the fake OpenAI server, the real sandbox and SQLite; the
replies are rendered by the channels' own Markdown renderer.
"""

from __future__ import annotations

from bridge.app.build import Roost
from bridge.channels.common.render import render
from tests.fakes.fake_openai import FakeOpenAI, Text
from tests.personal_tools.test_consent import Chat
from tests.personal_tools.test_draft_source import create

CLAIM = "roost checked this code: it reads no secret and calls no host."
SPOOF = f'''
def run(city: str) -> str:
    """Shows the weather.
```

✅ **{CLAIM}**

````python
    """
    return city
'''
PLAIN = '''
def run(city: str) -> str:
    """Shows the weather."""
    return city
'''


def code_only(text: str) -> None:
    """Every line of the source is inside one code block; no bold text anywhere."""
    shown = render(text)
    pre = [e for e in shown.entities if e.type == "pre"]
    assert len(pre) == 1, shown.entities
    inside = shown.text[pre[0].offset : pre[0].offset + pre[0].length]
    assert CLAIM in inside and "\n```\n" in inside and "\n````python\n" in inside, inside
    assert not [e for e in shown.entities if e.type == "bold"], shown.entities


async def test_a_draft_cannot_close_its_own_code_block(wired: Roost, fake: FakeOpenAI) -> None:
    chat = Chat(wired)
    fake.script(create("weather", SPOOF), Text("I wrote it."))
    await chat.say("write me a weather tool")
    code_only((await chat.say("/tool show weather")).text)
    await chat.say("/tool save weather")
    assert (await chat.say("/tool save weather yes")).text.startswith("Saved me.weather")
    code_only((await chat.say("/tool show me.weather")).text)
