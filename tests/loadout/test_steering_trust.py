"""A tenant's steering includes only files the person controls.

"Standing instructions (always follow)" must be the person's own words:
`workspace/` (tools' outputs, attachments), `memory/` (the model's
`memory_save`, no consent) and `forge/` (tools' code) are written without
the person's say, so an `@path` into them is refused with a note saying why
(`roost prompt` shows it), also through a link the person made. Their own
files (`USER.md`, `skills/`, a file beside `STEERING.md`) still arrive. A
line kept from chat is written with its `@paths` as plain text
(`kept_form`), never an include (attacker pass atk4, F1b).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from bridge.cli.loadout import print_prompt
from bridge.core.config import Settings
from bridge.core.filecache import FileCache
from bridge.loadout.steering import (
    _refs,
    kept_form,
    kept_lines,
    resolve,
    tenant_confinement,
    with_kept_line,
)
from bridge.types.tenant_dirs import TenantDirs
from tests.conftest import Clock

WORKSPACE = "workspace/ holds what tools and attachments write, not your instructions"
MEMORY = "memory/ is written by the assistant without asking you, not your instructions"
FORGE = "forge/ holds your tools' code and counters, not your instructions"


def _files(dirs: TenantDirs) -> None:
    dirs.outputs.mkdir(parents=True, exist_ok=True)
    (dirs.outputs / "style.md").write_text("FROM A TOOL")
    (dirs.memory / "feedback_style.md").write_text("FROM MEMORY_SAVE")
    (dirs.tools / "me.x.py").write_text("FROM A DRAFT")
    (dirs.root / "notes.md").write_text("MY OWN NOTES")
    (dirs.skills / "tone.md").write_text("MY SKILL")
    dirs.user_md.write_text("- name: Alice")


async def test_roost_prompt_refuses_workspace_memory_and_forge_and_says_why(
    settings: Settings, clock: Clock
) -> None:
    dirs = TenantDirs.of(settings.home, "local").ensure()
    _files(dirs)
    dirs.steering.write_text(
        "Be brief. @workspace/outputs/style.md @memory/feedback_style.md "
        "@forge/tools/me.x.py @notes.md @skills/tone.md @USER.md\n"
    )
    out = io.StringIO()
    await print_prompt(settings, "local", "web", "c1", "m1", False, out, clock.now)
    shown = out.getvalue()
    assert f"[steering: @workspace/outputs/style.md not included — {WORKSPACE}]" in shown
    assert f"[steering: @memory/feedback_style.md not included — {MEMORY}]" in shown
    assert f"[steering: @forge/tools/me.x.py not included — {FORGE}]" in shown
    assert "FROM A TOOL" not in shown and "FROM MEMORY_SAVE" not in shown
    assert "FROM A DRAFT" not in shown
    assert "MY OWN NOTES" in shown and "MY SKILL" in shown and "- name: Alice" in shown


def test_a_link_into_the_workspace_is_refused_as_the_workspace(home: Path) -> None:
    dirs = TenantDirs.of(home, "alice").ensure()
    _files(dirs)
    os.symlink(dirs.outputs / "style.md", dirs.root / "style.md")
    os.symlink(dirs.memory, dirs.root / "mem")
    dirs.steering.write_text("@style.md @mem/feedback_style.md @notes.md")
    text = resolve(dirs.steering, tenant_confinement(dirs), 45_000, FileCache().read)[0]
    assert f"[steering: @style.md not included — {WORKSPACE}]" in text
    assert f"[steering: @mem/feedback_style.md not included — {MEMORY}]" in text
    assert "FROM A TOOL" not in text and "FROM MEMORY_SAVE" not in text
    assert "MY OWN NOTES" in text


def test_a_kept_line_names_files_as_plain_text(home: Path) -> None:
    dirs = TenantDirs.of(home, "alice").ensure()
    _files(dirs)
    line = "Always follow @notes.md, @skills/tone.md and @USER.md."
    text, _ = with_kept_line("Be brief.\n", line, lambda old: False)
    dirs.steering.write_text(text)
    assert kept_lines(text) == ["Always follow `@notes.md`, `@skills/tone.md` and `@USER.md`."]
    got = resolve(dirs.steering, tenant_confinement(dirs), 45_000, FileCache().read)[0]
    assert "MY OWN NOTES" not in got and "MY SKILL" not in got and "Alice" not in got
    assert "[steering:" not in got  # nothing named, nothing refused: plain text


_TEXT = st.text(alphabet="@`/.~_-:,;!?) \nab1", max_size=40)


@given(_TEXT)
def test_kept_form_leaves_no_include_and_drops_no_character(line: str) -> None:
    kept = kept_form(line)
    assert _refs(kept) == ()
    assert kept.replace("`", "") == " ".join(line.split()).replace("`", "")
