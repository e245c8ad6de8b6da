"""Named models in the configuration: [models.X] tables like [llm], checked at load."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.core.config import ConfigError, load_settings


def load(text: str) -> object:
    Path(os.environ["ROOST_CONFIG"]).write_text(text)
    return load_settings()


def test_an_existing_config_without_models_loads_unchanged(home: Path) -> None:
    settings = load('[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n')
    assert settings.llm.name == "default" and settings.models == {}  # type: ignore[attr-defined]
    assert settings.style.judge_model is None  # type: ignore[attr-defined]


def test_models_take_the_llm_keys_and_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOST_MODELS__FAST__API_KEY", "sk-from-env-000000")
    settings = load(
        '[models.fast]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "tiny"\ntimeout_s = 5\n'
        '[style]\njudge_model = "fast"\n'
    )
    fast = settings.models["fast"]  # type: ignore[attr-defined]
    assert (fast.model, fast.timeout_s) == ("tiny", 5)
    assert fast.api_key.get_secret_value() == "sk-from-env-000000"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[models.Fast]\nprovider = "offline"\n', "models.Fast: a model name is a-z, 0-9"),
        ('[models.default]\nprovider = "offline"\n', "'default' is the name of the [llm] model"),
        ('[style]\njudge_model = "smart"\n', "style.judge_model 'smart' is not a configured model"),
        (
            '[models.x]\nprovider = "openai"\n',
            "models.x.base_url: ROOST_MODELS__X__PROVIDER is openai",
        ),
        ('[models.x]\nbase_url = "ftp://h"\n', "models.x.base_url: must start with"),
        ('[models.x]\nprovider = "offline"\nname = "y"\n', "models.x.name: leave it out"),
        ("[limits]\ndaily_tokens = 0\n", "limits.daily_tokens"),
        ("[tenants.al]\nmonthly_tokens = -1\n", "tenants.al.monthly_tokens"),
    ],
)
def test_bad_model_tables_name_the_key(home: Path, text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(text)
    assert reason in str(caught.value)


def test_a_forced_openai_model_without_a_server_names_its_table_and_variable(home: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load('[models.fast]\nprovider = "openai"\n')
    text = str(caught.value)
    assert "models.fast.base_url" in text and "ROOST_MODELS__FAST__BASE_URL" in text
    assert " llm." not in text
