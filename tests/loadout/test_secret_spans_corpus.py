"""A refused secret is masked as a whole, never a word around it (bridge/loadout/refused.py).

`secret_spans` names what the turn's masker hides once the screen refused a
text. The span must be the VALUE: passwords hold `, ; : =` and spaces, a
quoted passphrase is one value, and neither the trigger word (`password`,
`is`, `Passwort`, `lautet`) nor a setting's name (`DB_PASSWORD`) is ever
the thing masked in its place.

The phrasings: the public screening corpora (`tests/screening/corpus/secrets.jsonl`:
gitleaks and trufflehog rule examples; `tests/loadout/corpus/secrets.jsonl`:
provider token formats as .env, YAML, JSON, INI lines and sentences), and
below the delimiter, quoted and connection-string shapes of .env files,
Docker/Spring/libpq settings, URLs (RFC 3986 userinfo), ADO.NET connection
strings, "my password is ...", "pw: ...", and German phrasings.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost
from bridge.loadout.mask import REFUSED_MARK, Masker
from bridge.loadout.refused import secret_spans
from bridge.screening.screen import secret_kinds
from tests.conftest import web_msg
from tests.fakes.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.fakes.roost_on_fake import roost_on_fake
from tests.stored_rows import table_texts

TESTS = Path(__file__).resolve().parents[1]

# (text, the secret value, the words that must stay readable)
PHRASINGS = [
    ("my wifi password is Sommer,2024;Regen!", "Sommer,2024;Regen!", "password is"),
    ("DB_PASSWORD=abc=def=ghi123", "abc=def=ghi123", "DB_PASSWORD="),
    ('router password: "Blau Haus 77 Tor"', "Blau Haus 77 Tor", "router password:"),
    ('password="p@ss:w0rd"', "p@ss:w0rd", "password="),
    ("password='Tr0ub4dor&3'", "Tr0ub4dor&3", "password="),
    ("pw: hunter2;x", "hunter2;x", "pw:"),
    ("pwd: Kx9:mP2,qL", "Kx9:mP2,qL", "pwd:"),
    ('the admin password is "Zebra Lamp 9 Sky" for now', "Zebra Lamp 9 Sky", "password is"),
    ("Passwort ist Sommer,2024;Regen!", "Sommer,2024;Regen!", "Passwort ist"),
    ("mein WLAN-Passwort lautet Kaffee:Tasse=42", "Kaffee:Tasse=42", "Passwort lautet"),
    ("Das Kennwort für den Router: Blau;Haus;77", "Blau;Haus;77", "Kennwort"),
    ("Routerpasswort: x7,Gh;9kP", "x7,Gh;9kP", "Routerpasswort:"),
    ("MYSQL_ROOT_PASSWORD=r00t:pa=ss", "r00t:pa=ss", "MYSQL_ROOT_PASSWORD="),
    ("export PGPASSWORD='s3cr:t=v4l'", "s3cr:t=v4l", "PGPASSWORD="),
    ("password: 'Blau Haus 77 Tor'", "Blau Haus 77 Tor", "password:"),
    ("postgres://admin:S3cr3t,pw;9@db.example.com:5432/app", "S3cr3t,pw;9", "postgres://admin:"),
    ("mongodb+srv://app:Xy7=Qz:9w@cluster0.example.net/db", "Xy7=Qz:9w", "mongodb+srv://app:"),
    ("redis://:Rd5=Pw:x9@cache:6379/0", "Rd5=Pw:x9", "redis://:"),
    (
        "Server=tcp:db.example.com;Database=app;User Id=sa;Password=Pa55w0rd!x;",
        "Pa55w0rd!x",
        "Password=",
    ),
    ('{"password": "Blau Haus 77 Tor", "user": "ann"}', "Blau Haus 77 Tor", '"password": "'),
    ("spring.datasource.password=K9:xQ,2v=w", "K9:xQ,2v=w", "spring.datasource.password="),
    ("--password=Hx9;Lm2,Q", "Hx9;Lm2,Q", "--password="),
    ("my password is Sonnenschein", "Sonnenschein", "password is"),
    ("WIFI_PASS=Gast,Netz;2024", "Gast,Netz;2024", "WIFI_PASS="),
    # curl's `user:password` is one credential: masked as one
    (
        "curl -u developer:yqDVtkqPECriaLRi https://api.example.com",
        "developer:yqDVtkqPECriaLRi",
        "curl -u",
    ),
]


@pytest.mark.parametrize(("text", "value", "kept"), PHRASINGS)
def test_the_value_is_masked_and_the_words_around_it_stay(text: str, value: str, kept: str) -> None:
    assert secret_kinds(text), "the screen refuses the phrasing first"
    spans = secret_spans(text)
    assert spans and all(span in value for span in spans), spans
    masked = Masker({}).also([text]).mask(text)
    assert value not in masked and REFUSED_MARK in masked
    assert kept in masked  # never the trigger word or the setting's name instead


# Rows of the public corpora where the screen's own reading makes another token the
# secret: the masker hides what the screen needs hidden, and that is not the value.
NOT_THE_VALUE = {
    # the screen reads the user name as the password once the password is hidden
    "Meine Anmeldedaten sind max.mustermann und Berlin9331%",
    # three digits: shorter than anything the masker hides (MIN_SECRET_CHARS)
    "the CVC on the back is 454",
}


def _corpus() -> list[dict[str, str]]:
    rows = []
    for path in (
        TESTS / "screening" / "corpus" / "secrets.jsonl",
        TESTS / "loadout" / "corpus" / "secrets.jsonl",
    ):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["value"] and r["text"] not in NOT_THE_VALUE]


def test_every_refused_value_of_the_public_corpora_is_masked() -> None:
    leaks = []
    checked = 0
    for row in _corpus():
        text, value = row["text"], row["value"]
        kinds = secret_kinds(text)
        if not kinds or kinds == ["private-key"]:  # a key block is masked whole, not its id
            continue
        checked += 1
        masked = Masker({}).also([text]).mask(text)
        if value in masked:
            leaks.append((text, secret_spans(text)))
    assert checked > 800
    assert leaks == []


KEY = "sk-test-key-000000000000"
PASSWORD = "Sommer,2024;Regen!"


def _respond(body: dict[str, Any]) -> Any:
    if body["messages"][-1]["role"] == "tool":
        return Text("I cannot keep passwords in memory.")
    save = {
        "name": "wifi",
        "type": "reference",
        "description": "home wifi",
        "content": f"wifi: my wifi password is {PASSWORD}",
    }
    return ToolCalls([Call("memory_save", save)])


@pytest.fixture
async def roost_with_model(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Roost, FakeOpenAI]]:
    async with roost_on_fake(monkeypatch, KEY, _respond) as built:
        yield built


async def test_a_refused_password_with_delimiters_is_stored_nowhere(
    roost_with_model: tuple[Roost, FakeOpenAI], home: Path
) -> None:
    roost, fake = roost_with_model
    await roost.core.handle(web_msg(f"remember: my wifi password is {PASSWORD}", 1))
    tool = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "Not saved" in tool  # the screen refused the memory
    stored = {
        table: [v for v in values if "Sommer" in v or "Regen" in v]
        for table, values in table_texts(home / "roost.db").items()
    }
    assert {t: v for t, v in stored.items() if v} == {}
    texts = table_texts(home / "roost.db")["session_messages"]
    assert any(f"password is {REFUSED_MARK}" in v for v in texts)
