"""README's table of `[llm]` keys is the settings' (s46 newcomer, finding 5).

`[llm]` was documented as environment variables only (`ROOST_LLM__MODEL`); a newcomer
writing roost.toml had to guess the file's keys. The README now has one row per key
of `[llm]`: its environment variable and its default. This test holds the table to
`DefaultLLMSettings`, so a key added, renamed or given another default fails here
until the README says so too.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from bridge.core.config_sections import DefaultLLMSettings

README = Path(__file__).resolve().parents[2] / "README.md"
HEADER = "| `[llm]` key | environment | default | meaning |"


def rows() -> dict[str, tuple[str, str]]:
    """{key: (environment, default)} of the README's `[llm]` table."""
    lines = README.read_text().splitlines()
    start = lines.index(HEADER) + 2  # the header, then |---|
    found = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        key, env, default = (cell.strip() for cell in line.strip("|").split("|")[:3])
        found[key.strip("`")] = (env.strip("`"), default)
    return found


def shown(value: object) -> str:
    """A default as the table writes it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


def test_the_readme_lists_every_llm_key_with_its_variable_and_default() -> None:
    table = rows()
    fields = DefaultLLMSettings.model_fields
    assert list(table) and set(table) == set(fields), set(table) ^ set(fields)
    for key, field in fields.items():
        env, default = table[key]
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):  # [llm.transcribe] ...
            assert (env, default) == (f"ROOST_LLM__{key.upper()}__<KEY>", "table"), key
        else:
            assert env == f"ROOST_LLM__{key.upper()}", key
            assert default == shown(field.default), (key, default, field.default)
