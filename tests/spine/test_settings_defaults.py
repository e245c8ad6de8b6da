"""The settings' defaults come from plain functions (`config_sections.new`, `empty_list`):
building the models asks no builtin for its signature (which `inspect` parses with
`tokenize`, ~4 ms of CPU in every process), and each settings object still gets tables
and lists of its own, equal to a table made with every default."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from bridge.core import config_sections as sections
from bridge.core.config import Settings, load_settings
from tests.fresh import python_c

PROBE = """
import inspect, json
parsed = []
original = inspect._signature_fromstr
def fromstr(cls, obj, *args, **kw):
    parsed.append(repr(obj))
    return original(cls, obj, *args, **kw)
inspect._signature_fromstr = fromstr
from bridge.core import config
config.load_settings()
print(json.dumps(parsed))
"""


def test_building_the_settings_parses_no_builtin_signature(home: Path) -> None:
    assert json.loads(python_c(PROBE).stdout) == []


def test_each_load_has_its_own_tables_and_lists(home: Path) -> None:
    one, two = load_settings(), load_settings()
    assert one.web == sections.WebSettings() and one.llm == sections.DefaultLLMSettings()
    assert one.llm.transcribe == sections.TranscribeSettings()
    assert one.web is not two.web and one.llm.speech is not two.llm.speech
    assert one.web.allowed_hosts == [] and one.web.allowed_hosts is not two.web.allowed_hosts
    one.web.allowed_hosts.append("example.org")  # a section is not frozen
    assert two.web.allowed_hosts == [] and sections.WebSettings().allowed_hosts == []
    assert sections.McpServerSettings(command=["x"]).allow == []


def test_every_section_defaults_to_a_table_with_every_default() -> None:
    made = Settings()
    for name, field in Settings.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            assert getattr(made, name) == kind(), name
