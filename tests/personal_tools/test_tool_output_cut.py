"""A personal tool's output is cut at one limit, after vault values are masked.

The cut used to happen twice: first in the personal-tools source at 8,000
characters (before masking), then in the agent loop. A tool that put a vault
value across the first cut handed the model the value's first half, which no
masker recognises. Now the whole output is masked first and then cut once,
so no prefix of the value survives, and the cut is the agent's one limit.
"""

from __future__ import annotations

import json

from bridge.app.build import Roost
from bridge.core.agent import MAX_TOOL_RESULT_CHARS
from bridge.loadout import vault
from tests.conftest import web_msg
from tests.consent import keep
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls

# A GitHub fine-grained PAT shape: github_pat_ + 22 + "_" + 59 base62 characters.
TOKEN = (
    "github_pat_11ABCDEFG0aBcDeFgHiJkL_"
    + "mN0pQrStUvWxYz1234567890aBcDeFgHiJkLmN0pQrStUvWxYz12345678"
)
SOURCE = '''
SECRETS = ["gh_token"]


def run(pad: int) -> str:
    """Return padding, then the token, then more padding."""
    return "x" * pad + str(secret("gh_token")) + "y" * 30000
'''


async def test_a_value_across_the_cut_never_reaches_the_model(
    wired: Roost, fake: FakeOpenAI
) -> None:
    dirs = wired.tenant_dirs("local").ensure()
    vault.set_value(dirs, "gh_token", TOKEN)
    create = {"name": "straddle", "description": "pad a token", "source": SOURCE}
    fake.script(ToolCalls([Call("forge_create", create)]), Text("made it"))
    await wired.core.handle(web_msg("write it", 1))
    saved = await keep(lambda t: wired.core.handle(web_msg(t, 2)), "straddle")
    assert saved.text.startswith("Saved me.straddle"), saved.text

    pad = 8_000 - 1 - len(TOKEN) // 2  # json.dumps adds a quote: the token spans 8,000
    fake.script(ToolCalls([Call("me__straddle", {"pad": pad})]), Text("done"))
    await wired.core.handle(web_msg("run it", 3))

    messages = fake.requests[-1]["messages"]
    (call,) = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")][-1][
        "tool_calls"
    ]  # the session also holds the forge_create step of turn 1
    sent = [m["content"] for m in messages if m.get("tool_call_id") == call["id"]]
    assert len(sent) == 1
    output = sent[0]
    assert "[vault:gh_token]" in output  # masked whole, before the one cut
    wire = json.dumps(fake.requests)
    for n in range(12, len(TOKEN) + 1):
        assert TOKEN[:n] not in wire
    assert len(output) <= MAX_TOOL_RESULT_CHARS + 40 and "[cut:" in output
