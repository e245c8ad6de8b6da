"""Start-up: the web channel's request models are built at their first request.

`defer_build=True` moves each model's schema build (pydantic) from the import of
the web channel, which every `roost serve` pays, to the first body it validates
(edit, regenerate and version requests are rare). Asserted: no model is built by
the import (in a fresh interpreter, as a daemon starts), and a deferred model says
what an eagerly built copy of it says, for valid and invalid bodies alike (the
400 responses quote the first message: tests/spine/test_web_*.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from bridge.channels.web import branch, chats, gate
from bridge.channels.web import input as web_input
from tests.fresh import env_without, python_c

REPO = Path(__file__).resolve().parents[2]
MODELS: dict[str, type[BaseModel]] = {
    "input.ChatRequest": web_input.ChatRequest,
    "gate.ChatOnly": gate.ChatOnly,
    "chats.DeleteBody": chats.DeleteBody,
    "chats.RenameBody": chats.RenameBody,
    "branch.RegenerateBody": branch.RegenerateBody,
    "branch.EditBody": branch.EditBody,
    "branch.VersionBody": branch.VersionBody,
}
BODIES: list[dict[str, Any]] = [
    {},
    {"text": "hello"},
    {"chat": "default", "conversation": 12, "seq": 3, "title": "t", "text": "x"},
    {"chat": "bad chat!", "text": "x"},
    {"chat": "c", "conversation": 0, "seq": 0},
    {"chat": "c", "seq": "12", "conversation": "x"},
    {"chat": 5, "text": None, "extra": 1},
    {"text": "x", "attachments": ["0" * 32, "not-hex"]},
    {"text": "x", "quote": "q" * 100_000, "title": "t" * 2000},
]


def test_the_web_channel_imports_no_built_request_model() -> None:
    probe = (
        "import json, bridge.channels.web.channel\n"
        "from bridge.channels.web import branch, chats, gate, input\n"
        f"names = {sorted(MODELS)!r}\n"
        "mods = {'input': input, 'gate': gate, 'chats': chats, 'branch': branch}\n"
        "print(json.dumps({n: getattr(mods[n.split('.')[0]], n.split('.')[1])"
        ".__pydantic_complete__ for n in names}))\n"
    )
    env = env_without(*(k for k in os.environ if k.startswith("ROOST_")))
    done = python_c(probe, env=env | {"PYTHONPATH": str(REPO)})
    assert json.loads(done.stdout) == dict.fromkeys(MODELS, False)


def _eager(model: type[BaseModel]) -> type[BaseModel]:
    """A copy of `model` built at its definition, as the models were before."""
    eager = type(
        model.__name__, (model,), {"model_config": ConfigDict(defer_build=False), "__module__": "x"}
    )
    assert eager.__pydantic_complete__
    return eager


def _outcome(model: type[BaseModel], body: dict[str, Any]) -> object:
    try:
        return model.model_validate(body).model_dump()
    except ValidationError as exc:
        return [(e["type"], e["loc"], e["msg"]) for e in exc.errors()]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_deferred_model_validates_as_an_eager_one(name: str) -> None:
    model = MODELS[name]
    assert model.model_config.get("defer_build") is True
    eager = _eager(model)
    outcomes = [(_outcome(model, body), _outcome(eager, body)) for body in BODIES]
    for deferred, built in outcomes:
        assert deferred == built
    assert any(isinstance(d, list) for d, _ in outcomes)  # some bodies were refused
    assert model.__pydantic_complete__
