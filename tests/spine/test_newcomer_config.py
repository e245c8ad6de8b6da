"""A misspelt key or table is refused with the nearest known one (s46 newcomer, finding 6).

`[lm]` or `modle = ...` was "unknown setting" and nothing more; the newcomer had to
find the spelling in the README. The refusal now names the nearest key of the same
table ("did you mean llm.model?"), for the file and the environment alike, and our own
validators' sentences come without pydantic's "Value error, " in front.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.core.config import ConfigError, known_keys, load_settings


def refusal(toml: str, monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    Path(os.environ["ROOST_CONFIG"]).write_text(toml)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    return str(err.value)


@pytest.mark.parametrize(
    ("toml", "env", "line"),
    [
        ('[lm]\nmodel = "x"\n', {}, "lm: unknown setting; did you mean llm?"),
        ('[llm]\nmodle = "x"\n', {}, "llm.modle: unknown setting; did you mean llm.model?"),
        ("", {"ROOST_LLM__BASEURL": "http://h/v1"}, "did you mean llm.base_url?"),
        ("[web]\nprot = 1\n", {}, "web.prot: unknown setting; did you mean web.port?"),
        (
            '[models.smart]\nbase_url = "http://h/v1"\nmodle = "x"\n',
            {},
            "models.smart.modle: unknown setting; did you mean models.smart.model?",
        ),
        ('[llm.speech]\nvoise = "x"\n', {}, "did you mean llm.speech.voice?"),
        (
            '[tenants.alice]\nweb_tokne = "x"\n',
            {},
            "web_tokne: unknown setting; did you mean web_token?",
        ),
    ],
)
def test_a_misspelt_key_names_the_nearest_known_one(
    home: Path, monkeypatch: pytest.MonkeyPatch, toml: str, env: dict[str, str], line: str
) -> None:
    assert line in refusal(toml, monkeypatch, **env)


def test_a_key_like_no_other_gets_no_guess(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said = refusal("[web]\nzzzz = 1\n", monkeypatch)
    assert "web.zzzz: unknown setting  [file key" in said and "did you mean" not in said


def test_our_own_reasons_come_without_pydantics_prefix(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said = refusal("[llm]\nbase_url = 'ftp://x'\n", monkeypatch)
    assert "llm.base_url: must start with http:// or https://" in said
    assert "Value error" not in said


def test_the_known_keys_are_the_settings_tables() -> None:
    assert "model" in known_keys(("llm",)) and "transcribe" in known_keys(("llm",))
    assert "max_steps" in known_keys(("models", "any"))
    assert "web_token" in known_keys(("tenants", "bob"))
    assert known_keys(()) and "llm" in known_keys(())
    assert known_keys(("llm", "model")) == [] and known_keys(("nothing",)) == []


@pytest.mark.parametrize(
    ("toml", "hint"),
    [
        ("[llm]\nbase_url = http://127.0.0.1:11434/v1\n", 'text goes in quotes: base_url = "..."'),
        ("[llm]\nmodel = llama3.2  # Ollama's\n", 'text goes in quotes: model = "..."'),
        ("[web]\nmetrics = True\n", "TOML writes true in lowercase: metrics = true"),
    ],
)
def test_a_bare_word_in_the_file_is_told_to_be_quoted(
    home: Path, monkeypatch: pytest.MonkeyPatch, toml: str, hint: str
) -> None:
    """s47 as a newcomer: tomllib's "Invalid value (at line 2, column 12)" said nothing
    of the quotes a URL or a model name needs."""
    said = refusal(toml, monkeypatch)
    assert said.endswith(f"Invalid value (at line 2, column {toml.index('=') - 3}); {hint}")


def test_the_hint_never_shows_the_value(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said = refusal("[llm]\napi_key = sk-s3cr3t-value\n", monkeypatch)
    assert said.endswith('; text goes in quotes: api_key = "..."') and "s3cr3t" not in said
    said = refusal('[web]\nport = "8080\n', monkeypatch)  # another fault: tomllib's words alone
    assert "quotes" not in said
