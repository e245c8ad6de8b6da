"""The offline answer says how to connect a model, as the daemon does it, in code blocks.

A newcomer (s35 N9) read "restart roost" for the `[llm]` table, which a running
daemon applies on its own, and saw the TOML re-flowed into paragraphs, its URL
made a link: it was indented by two spaces, which Markdown reads as text.
"""

from __future__ import annotations

from markdown_it import MarkdownIt

from bridge.llm.offline import CHOSEN_ANSWER, CONFIG_ENV, CONFIG_TOML, OFFLINE_ANSWER
from bridge.llm.select import select_backend
from bridge.types.backend import ModelRequest, TextDelta


def test_the_settings_are_code_blocks_and_the_file_needs_no_restart() -> None:
    fences = [t for t in MarkdownIt("commonmark").parse(OFFLINE_ANSWER) if t.type == "fence"]
    assert [(t.info, t.content.strip()) for t in fences] == [
        ("toml", CONFIG_TOML),
        ("", CONFIG_ENV),
    ]
    before_toml = OFFLINE_ANSWER.split("```toml")[0]
    assert "roost.toml" in before_toml and "on its own, no restart" in before_toml
    assert "environment variables and restart roost" in OFFLINE_ANSWER


async def answer(provider: str, base_url: str | None = None) -> str:
    backend, _ = select_backend(provider, base_url, None, "m")
    said = [e.text async for e in backend.stream(ModelRequest("", [])) if isinstance(e, TextDelta)]
    await backend.aclose()
    return "".join(said)


async def test_a_model_set_to_offline_says_so_and_how_to_pick_another() -> None:
    """A named model (`[models.off] provider = "offline"`, picked with `/model off`), or the
    default set so: "No model is configured" and the [llm] table alone were misleading
    where a model is configured (session 36's attacker F8)."""
    chosen = await answer("offline")
    assert chosen == CHOSEN_ANSWER and not chosen.startswith("No model is configured")
    assert 'set to `provider = "offline"`' in chosen and "`/model NAME`" in chosen
    assert "[llm]" in chosen  # how to connect one is still there
    assert await answer("auto") == OFFLINE_ANSWER  # nothing configured at all
