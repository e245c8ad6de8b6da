"""The one front-matter reader, as memory topics and skills see it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.core import frontmatter
from bridge.core.filecache import FileCache
from bridge.memory.files import Topic, parse_topic, render_topic
from bridge.skills.files import read_skills
from bridge.types.tenant_dirs import TenantDirs


@pytest.mark.parametrize(
    ("text", "fields", "body"),
    [
        ("---\na: 1\nb: x: y\n---\nbody\n", {"a": "1", "b": "x: y"}, "body\n"),
        ("---\n---\nbody", {}, "body"),
        ("---\na: 1\n---", {"a": "1"}, ""),
        ("---\na: 1\n----\nb: 2\n---\nrest\n---\nmore", {"a": "1", "b": "2"}, "rest\n---\nmore"),
        ("---\nno colon line\nk:v\n---\n", {"k": "v"}, ""),
    ],
)
def test_split_fields_and_body(text: str, fields: dict[str, str], body: str) -> None:
    found = frontmatter.split(text)
    assert found is not None
    assert found.fields == fields and found.body == body


@pytest.mark.parametrize("text", ["", "plain text", "---\na: 1\n", "---\n", " ---\na: 1\n---\n"])
def test_no_front_matter_without_both_fences(text: str) -> None:
    assert frontmatter.split(text) is None
    assert frontmatter.fields(text) == {}


def test_quotes_are_dropped_only_when_asked() -> None:
    text = "---\ndescription: \"brew tea\"\nwhen: 'mornings'\n---\n"
    found = frontmatter.split(text)
    assert found is not None and found.fields["description"] == '"brew tea"'
    assert frontmatter.fields(text) == {"description": "brew tea", "when": "mornings"}


def test_memory_topic_round_trips_through_the_reader() -> None:
    topic = Topic(
        "coding style",
        "feedback",
        'prefers "tabs"',
        "line one\n---\nline after a rule",
        {"created": "2026-01-15T09:30:00Z", "by": "model"},
    )
    assert parse_topic(render_topic(topic)) == topic


def test_a_skill_without_closing_fence_is_all_body(tmp_path: Path) -> None:
    dirs = TenantDirs.of(tmp_path, "t1").ensure()
    (dirs.skills / "half.md").write_text("---\ndescription: never closed\nsteps\n")
    (dirs.skills / "ok.md").write_text("---\ndescription: 'tidy'\nwhen: csv\n---\n\nsteps\n")
    half, ok = read_skills(dirs, FileCache())
    assert (half.description, half.body) == ("", "---\ndescription: never closed\nsteps")
    assert (ok.description, ok.when, ok.body) == ("tidy", "csv", "steps")
