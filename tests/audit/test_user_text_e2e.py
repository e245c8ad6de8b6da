"""Through the real daemon and a real chain file: what people type stays out.

`/remember wifi password is ...` names its memory from the first words typed;
the model names memories and tools; a person types unknown `/commands`,
profile keys and web chat names. None of it may reach chain.jsonl, and the
catalogue's examples fit the schema table exactly.
"""

from __future__ import annotations

import json
import random
import re
import uuid

from bridge.app.build import build
from bridge.app.channels_up import PLATFORMS
from bridge.audit.catalogue import EVENTS
from bridge.audit.schema import SCHEMAS, keyed_namer, sanitize, schemas_for
from bridge.audit.verify import verify
from bridge.core.config import Settings
from bridge.types.messages import Inbound
from tests.conftest import Clock, ScriptedBackend

TOOL = 'def run(n: int) -> int:\n    """Double."""\n    return 2 * n\n'
SECRET_WORDS = ["hunter2", "4711", "Sertralin", "Brustkrebs", "Zx81kQpL0mWv", "Minka", "wifi"]


async def test_typed_names_never_reach_the_chain(settings: Settings, clock: Clock) -> None:
    memory = {
        "name": "wifi_pin_4711",
        "type": "user",
        "description": "Sertralin 50mg daily",
        "content": "Takes Sertralin 50mg daily.",
    }
    backend = ScriptedBackend(
        [("memory_save", json.dumps(memory))],
        "Noted.",
        [
            (
                "forge_create",
                json.dumps({"name": "minka_feeder", "description": "d", "source": TOOL}),
            )
        ],
        "made",
        "ok",
    )
    roost = await build(settings, backend=backend, clock=clock)  # the real chain
    try:
        for chat, text in (
            ("hunter2", "/remember wifi password is hunter2 and the PIN 4711"),
            ("hunter2", "/remember Arzttermin wegen Brustkrebs am Dienstag"),
            ("hunter2", "/remember Minka the cat gets Sertralin twice a day"),
            ("c", "/profile set wifi_hunter2 yes"),
            ("c", "/Zx81kQpL0mWv"),
            ("c", "/persona Brustkrebs"),
            ("Minka", "remember my medication"),
            ("Minka", "write a tool for Minka"),
            ("Minka", "/tool save minka_feeder"),
            ("Minka", "/tool save minka_feeder yes"),
        ):
            await roost.core.handle(Inbound("web", "local", chat, text, uuid.uuid4().hex))
    finally:
        await roost.aclose()
    path = settings.home / "audit" / "chain.jsonl"
    raw = path.read_text()
    events = [json.loads(line)["event"] for line in raw.splitlines()]
    # the password line is refused by the secret screen; two /remember and one by the model
    assert events.count("memory.refused") == 1, events
    assert events.count("memory.saved") == 3, events
    assert "tool.saved" in events and "profile.changed" in events
    # hashes and message ids are long hex runs: a short word such as "4711" may occur in
    # one by chance (about one run in twenty), so they are taken out before looking
    visible = re.sub(r"[0-9a-f]{12,}", "#", raw.lower())
    for word in SECRET_WORDS:
        assert word.lower() not in visible, word
    assert verify(path).ok


def test_catalogue_examples_fit_the_schema_exactly() -> None:
    assert set(EVENTS) == set(SCHEMAS)
    namer = keyed_namer(b"k" * 32)
    for event, example in EVENTS.items():
        assert set(example) == set(SCHEMAS[event]), event
        fitted = sanitize(event, "alice", example, namer, schemas_for(PLATFORMS))
        assert "_dropped" not in fitted and "_unknown" not in fitted, (event, fitted)


WORST = [
    "a" * 100_000,
    "0" * 100_000,
    "b-" + "0" * 99_998,
    "me." * 33_333,
    "\x00\n\r\t" * 25_000,
    "\u200d\ufe0f" * 50_000,
    "\ud800" * 100_000,  # lone surrogates
    "[" * 100_000,
    "ab" * 50_000,
]


def test_worst_shapes_of_100k_characters_keep_the_invariants() -> None:
    """Seeded fuzz: every field of every event gets 100k characters of bad shapes.

    Linear by construction (ids are length-checked before a pattern reads them,
    a name is hashed once); this checks it finishes and the invariants hold:
    nothing of the input survives, every kept string fits its field's kind.
    """
    rng = random.Random(9)
    namer = keyed_namer(b"k" * 32)
    alphabet = "aZ09-_.:/@ \n\u00e9\u200d\U0001f408[]{}\"'\\"
    inputs = list(WORST)
    for _ in range(8):
        inputs.append("".join(rng.choice(alphabet) for _ in range(100_000)))
    for text in inputs:
        for event, schema in SCHEMAS.items():
            details = {field: text for field in schema} | {text: text}
            fitted = sanitize(event, "alice", details, namer)
            assert fitted.get("_unknown") == 1
            for field, value in fitted.items():
                if field.startswith("_"):
                    continue
                assert value != text and len(json.dumps(value)) <= 80, (event, field)
                if isinstance(value, str):
                    assert schema[field].admits(value), (event, field, value)
