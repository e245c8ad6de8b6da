"""Drafts run before they are saved, through the core with the real sandbox.

The model writes a tool with forge_create and calls it as `draft__<name>`
in the same turn; a draft gets no vault secrets and counts no usage; a
saved draft is no longer offered as one; drafts stay in their chat and
tenant; `/tool save` answers with what the person consented to.
"""

from __future__ import annotations

import json

from bridge.app.build import Roost
from bridge.personal_tools.consent import capabilities
from bridge.personal_tools.source import ForgeTools
from bridge.types.messages import Inbound
from bridge.types.tools import TurnContext
from forge.library import ToolSpec
from tests.conftest import ScriptedBackend, web_msg
from tests.consent import keep

COUNT = '''
def run(path: str, word: str) -> dict:
    """Count a word in a text file of the workspace."""
    with open(path) as fh:
        text = fh.read()
    return {"word": word, "count": text.lower().split().count(word.lower())}
'''
SECRET_TOOL = '''
SECRETS = ["poke_api_key"]

def run(word: str) -> str:
    """Use the private key."""
    key = secret("poke_api_key")
    return word + ":" + str(key)  # a handle: its text is [vault:poke_api_key]
'''


def create(name: str, source: str, description: str = "") -> tuple[str, str]:
    args = {"name": name, "description": description, "source": source}
    return ("forge_create", json.dumps(args))


def script(roost: Roost, *steps: object) -> ScriptedBackend:
    backend = roost.backend  # the model passed in
    assert isinstance(backend, ScriptedBackend)
    backend.steps.extend(steps)
    return backend


def tool_results(backend: ScriptedBackend, request: int = -1) -> list[str]:
    return [m.content for m in backend.requests[request].messages if m.role == "tool"]


def offered(backend: ScriptedBackend, request: int = -1) -> list[str]:
    return [t.name for t in backend.requests[request].tools]


async def test_the_model_tests_its_tool_in_the_turn_that_wrote_it(roost: Roost) -> None:
    dirs = roost.tenant_dirs("local")
    dirs.ensure()
    (dirs.workspace / "notes.txt").write_text("Tea and cake. More tea!\ntea time\n")
    backend = script(
        roost,
        [create("count_word", COUNT, "Count a word")],
        [("draft__count_word", json.dumps({"path": "notes.txt", "word": "tea"}))],
        [("draft__count_word", json.dumps({"path": "notes.txt"}))],
        [("draft__count_word", json.dumps({"path": "/etc/passwd", "word": "root"}))],
        "It works: tea appears 2 times. Keep it with /tool save count_word",
    )
    answer = await roost.core.handle(web_msg("write a word counter and try it", 1))
    assert answer.text.startswith("It works")
    assert "draft__count_word" not in offered(backend, 0)
    assert "draft__count_word" in offered(backend, 1)
    draft = next(t for t in backend.requests[1].tools if t.name == "draft__count_word")
    assert "not saved" in draft.description and draft.parameters["required"] == ["path", "word"]
    assert "draft__count_word" in tool_results(backend, 1)[0]  # forge_create names it
    assert json.loads(tool_results(backend, 2)[-1]) == {"word": "tea", "count": 2}
    missing = tool_results(backend, 3)[-1]
    assert missing.startswith("error: draft me.count_word failed") and "word" in missing
    escaped = tool_results(backend, 4)[-1]
    assert escaped.startswith("error: draft me.count_word failed") and "root:" not in escaped
    # no usage counted for a draft: once saved, it starts at zero calls
    assert not (dirs.tools / "usage.sqlite").exists()
    saved = await keep(lambda t: roost.core.handle(web_msg(t, 2)), "count_word")
    assert saved.text.startswith("Saved me.count_word(path: string, word: string)")
    assert "0 calls" in (await roost.core.handle(web_msg("/tool show me.count_word", 3))).text
    called = [e[2] for e in roost.audit.events if e[0] == "tool.called"]
    assert [c["outcome"] for c in called] == ["ok", "error", "error"]
    assert not any("notes.txt" in json.dumps(e[2]) for e in roost.audit.events)
    # saved as it is: offered as me__count_word, no longer as a draft
    backend = script(roost, "ok")
    await roost.core.handle(web_msg("anything", 4))
    assert "me__count_word" in offered(backend) and "draft__count_word" not in offered(backend)


async def test_a_changed_draft_is_offered_again_and_runs_its_new_source(roost: Roost) -> None:
    one = 'def run() -> int:\n    """One."""\n    return 1\n'
    two = 'def run() -> int:\n    """Two."""\n    return 2\n'
    script(roost, [create("num", one)], "made")
    await roost.core.handle(web_msg("make num", 1))
    await keep(lambda t: roost.core.handle(web_msg(t, 2)), "num")
    backend = script(roost, [create("num", two)], [("draft__num", "{}")], "two now")
    await roost.core.handle(web_msg("make it two", 3))
    assert "me__num" in offered(backend) and "draft__num" in offered(backend)
    assert tool_results(backend)[-1] == "2"


async def test_a_draft_gets_no_secret_and_says_how_to_get_one(roost: Roost) -> None:
    from bridge.loadout.vault import set_value

    value = "pk_live_51HqDraftNeverSeen0000"
    set_value(roost.tenant_dirs("local"), "poke_api_key", value)
    backend = script(
        roost,
        [create("poke", SECRET_TOOL, "poke")],
        [("draft__poke", json.dumps({"word": "hi"}))],
        "It needs the key; save it first.",
    )
    await roost.core.handle(web_msg("make poke and try it", 1))
    result = tool_results(backend)[-1]
    assert "save the tool first (/tool save poke) to use secrets" in result
    assert "poke_api_key" in result
    assert not any(value in json.dumps(r.messages, default=str) for r in backend.requests)
    assert "secret.used" not in [e[0] for e in roost.audit.events]
    # once saved, the same source gets its secret
    await keep(lambda t: roost.core.handle(web_msg(t, 2)), "poke")
    backend = script(roost, [("me__poke", json.dumps({"word": "hi"}))], "done")
    await roost.core.handle(web_msg("poke", 3))
    assert "secret.used" in [e[0] for e in roost.audit.events]
    assert not tool_results(backend)[-1].startswith("error")


async def test_drafts_stay_in_their_chat_and_tenant(roost: Roost) -> None:
    one = 'def run() -> int:\n    """One."""\n    return 1\n'
    script(roost, [create("mine", one)], "made")
    await roost.core.handle(web_msg("make it", 1, chat="c1"))
    backend = script(roost, [("draft__mine", "{}")], "no")
    await roost.core.handle(web_msg("call it", 2, chat="c2"))
    assert "draft__mine" not in offered(backend, 0)
    assert "there is no tool named 'draft__mine'" in tool_results(backend)[-1]
    assert "mine" not in (await roost.core.handle(web_msg("/tools", 3, chat="c2"))).text
    assert "no tool 'mine'" in (await roost.core.handle(web_msg("/tool save mine", 4, "c2"))).text
    # another tenant in the same channel and chat id sees nothing either
    forge = next(s for s in roost.core._turns._sources if isinstance(s, ForgeTools))
    inbound = web_msg("x", 5, chat="c1")
    mine = TurnContext(roost.tenant_dirs("local"), inbound, lambda: 0.0)
    theirs = TurnContext(roost.tenant_dirs("bob"), inbound, lambda: 0.0)
    other = Inbound("telegram", "local", "c1", "x", "m6")
    on_telegram = TurnContext(roost.tenant_dirs("local"), other, lambda: 0.0)
    for turn in (mine, theirs, on_telegram):
        await forge.prepare(turn)  # as a turn does before its first step
    assert "draft__mine" in [t.schema.name for t in forge.tools_for(mine)]
    assert "draft__mine" not in [t.schema.name for t in forge.tools_for(theirs)]
    assert "draft__mine" not in [t.schema.name for t in forge.tools_for(on_telegram)]


def test_consent_lists_secrets_hosts_parameters_and_hash() -> None:
    spec = ToolSpec(
        "weather",
        "Weather for a city",
        "",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        ("owm_key",),
        "ab12cd34ef56" + "0" * 52,
        ("api.open-meteo.com", "api.github.com:443"),
    )
    text = "\n".join(capabilities(spec))
    assert "Parameters: city: string" in text
    assert "It may read these vault secrets: owm_key" in text
    assert "It may call these network hosts: api.open-meteo.com, api.github.com:443" in text
    assert "sha256 ab12cd34ef56…" in text


async def test_tool_save_shows_what_the_person_consents_to(roost: Roost) -> None:
    source = 'NETWORK = ["api.open-meteo.com"]\n' + SECRET_TOOL
    script(roost, [create("poke", source, "Poke it")], "ok")
    await roost.core.handle(web_msg("make poke", 1))
    saved = (await keep(lambda t: roost.core.handle(web_msg(t, 2)), "poke")).text
    assert saved.startswith("Saved me.poke(word: string) — `Poke it`")
    assert "It may read these vault secrets: poke_api_key" in saved
    hosts = "api.open-meteo.com"
    assert f"It may call these network hosts: {hosts}" in saved
    sha = json.loads((roost.tenant_dirs("local").tools / "me.poke.json").read_text())["sha256"]
    assert f"sha256 {sha[:12]}…" in saved
    shown = (await roost.core.handle(web_msg("/tool show me.poke", 3))).text
    assert "Secrets: poke_api_key" in shown and f"Network: {hosts}" in shown


async def test_a_rejected_tool_is_shown_to_the_person(roost: Roost) -> None:
    broken = "import socket\n\ndef run() -> str:\n    return socket.gethostname()\n"
    backend = script(roost, [create("netcat", broken)], "I could not write it.")
    answer = await roost.core.handle(web_msg("make netcat", 1))
    assert answer.text.startswith("I could not write it.")
    notice = answer.text.split("\n\n")[-1]
    assert notice.startswith("🔧 me.netcat was not accepted: ")
    assert "line 1:" in notice and "socket" in notice
    findings = tool_results(backend)[-1]
    assert "line 1, col 0" in findings and "socket" in findings
