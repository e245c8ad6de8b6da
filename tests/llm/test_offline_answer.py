"""The offline answer says how to connect a model, as the daemon does it, in code blocks.

A newcomer (s35 N9) read "restart roost" for the `[llm]` table, which a running
daemon applies on its own, and saw the TOML re-flowed into paragraphs, its URL
made a link: it was indented by two spaces, which Markdown reads as text.
"""

from __future__ import annotations

from markdown_it import MarkdownIt

from bridge.llm.offline import CONFIG_ENV, CONFIG_TOML, OFFLINE_ANSWER


def test_the_settings_are_code_blocks_and_the_file_needs_no_restart() -> None:
    fences = [t for t in MarkdownIt("commonmark").parse(OFFLINE_ANSWER) if t.type == "fence"]
    assert [(t.info, t.content.strip()) for t in fences] == [
        ("toml", CONFIG_TOML),
        ("", CONFIG_ENV),
    ]
    before_toml = OFFLINE_ANSWER.split("```toml")[0]
    assert "roost.toml" in before_toml and "on its own, no restart" in before_toml
    assert "environment variables and restart roost" in OFFLINE_ANSWER
