"""N12 at consent: a tool (e.g. a draft kept from before the linter's F048) whose
code calls a literal host its NETWORK does not declare is not shown as if that
host were allowed: the prompt warns that those calls will be refused."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.app.build import build
from bridge.core.config import Settings
from bridge.personal_tools.consent import prompt
from bridge.types.audit_sink import MemoryAudit
from forge.library import ToolSpec, sha256_text
from tests.conftest import Clock, ScriptedBackend, web_msg

SOURCE = (
    'import net\nNETWORK = ["example.com"]\n\n'
    "def run() -> str:\n"
    '    """Fetch."""\n'
    '    a = net.get("https://example.com/")\n'
    '    return net.get("https://evil.example/").text + a.text\n'
)


def spec(source: str, network: tuple[str, ...]) -> ToolSpec:
    return ToolSpec("other", "fetch", source, {}, (), sha256_text(source), network)


def test_the_prompt_warns_about_an_undeclared_literal_host() -> None:
    text = prompt(spec(SOURCE, ("example.com",)), 1, "other", None, False)
    lines = text.splitlines()
    assert "It may call these network hosts: example.com" in lines
    (warning,) = [line for line in lines if line.startswith("⚠️ Its code calls")]
    assert "evil.example" in warning and "will be refused" in warning, warning
    assert "example.com," not in warning  # the declared host is not warned about


def test_no_warning_when_every_literal_host_is_declared() -> None:
    both = 'NETWORK = ["example.com", "evil.example"]'
    source = SOURCE.replace('NETWORK = ["example.com"]', both)
    text = prompt(spec(source, ("example.com", "evil.example")), 1, "other", None, False)
    assert "⚠️" not in text, text


async def test_a_new_draft_calling_an_undeclared_host_is_not_accepted(
    settings: Settings, clock: Clock, home: Path
) -> None:
    """Through the real path: the model is told the host, what is declared and how
    to declare it; the person is told the draft was not accepted."""
    backend = ScriptedBackend()
    roost = await build(settings, backend=backend, audit=MemoryAudit(), clock=clock)
    try:
        create = {"name": "other", "description": "fetch", "source": SOURCE}
        backend.steps += [[("forge_create", json.dumps(create))], "made"]
        reply = await roost.core.handle(web_msg("make it", 1))
        told = [m.content for m in backend.requests[-1].messages if m.role == "tool"][-1]
        assert "[F048]" in told and "'evil.example'" in told, told
        assert "NETWORK = ['example.com', 'evil.example']" in told, told
        assert "other was not accepted" in reply.text, reply.text
    finally:
        await roost.aclose()
