"""The tool library: session scope, saved me.* tools, hashes, usage, call_saved."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from forge.calls import Reveal, call_saved
from forge.library import (
    MAX_DESCRIPTION,
    IntegrityError,
    SessionTools,
    ToolExists,
    ToolLibrary,
    ToolNotFound,
)
from forge.names import BadName
from forge.runner import SandboxRunner

aio = pytest.mark.asyncio(loop_scope="module")

SRC = '''
SECRETS = ["poke_api_key"]

def run(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b + (4 if str(secret("poke_api_key")) == "[vault:poke_api_key]" else 0)
'''


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def test_session_create_and_findings() -> None:
    tools = SessionTools()
    bad = tools.create("chat1", "adder", "", "import shutil\ndef run(): pass\n")
    assert not bad.ok and {f.code for f in bad.findings} >= {"F010", "F042"}
    assert tools.get("chat1", "adder") is None
    bad_name = tools.create("chat1", "Bad-Name", "", SRC)
    assert bad_name.findings[0].code == "N001"
    compile_fail = tools.create(
        "chat1", "cf", "", "def run() -> int:\n    '''d'''\n    printed = 1\n"
    )
    assert not compile_fail.ok and compile_fail.findings[0].code == "C001"
    good = tools.create("chat1", "adder", "", SRC)
    assert good.ok and good.tool is not None
    assert good.tool.description == "Add two numbers."
    assert good.tool.secrets == ("poke_api_key",)
    assert tools.get("chat1", "adder") == good.tool
    assert tools.list("chat2") == []


def test_save_list_show_remove(tmp_path: Path) -> None:
    clock = Clock()
    lib = ToolLibrary(tmp_path / "forge" / "tools", clock)
    spec = SessionTools().create("c", "adder", "Adds.", SRC).tool
    assert spec is not None
    saved = lib.save(spec, saved_from="telegram:1")
    assert saved.qualified_name == "me.adder"
    meta = json.loads((lib.directory / "me.adder.json").read_text())
    assert meta["sha256"] == spec.sha256 and meta["schema"]["required"] == ["a"]
    assert meta["secrets"] == ["poke_api_key"] and meta["saved_from"] == "telegram:1"
    assert (lib.directory / "me.adder.py").read_text() == SRC
    with pytest.raises(ToolExists):
        lib.save(spec)
    lib.save(spec, alias="plus", replace=False)
    lib.save(spec, replace=True)
    assert [t.qualified_name for t in lib.list()] == ["me.adder", "me.plus"]
    assert lib.show("me.plus").spec.description == "Adds."
    assert lib.remove("me.plus") and not lib.remove("me.plus")
    with pytest.raises(ToolNotFound):
        lib.show("plus")
    with pytest.raises(BadName):
        lib.show("../etc")
    assert not [p for p in os.listdir(lib.directory) if p.startswith(".tmp-")]


def test_usage_and_unused(tmp_path: Path) -> None:
    clock = Clock()
    lib = ToolLibrary(tmp_path, clock)
    spec = SessionTools().create("c", "adder", "", SRC).tool
    assert spec is not None
    lib.save(spec)
    tool = lib.show("adder")
    assert tool.usage.calls == 0 and not tool.unused(clock.now)
    assert tool.unused(clock.now + 90 * 86_400_000)
    clock.now += 10
    lib.record_use("me.adder", ok=True)
    lib.record_use("adder", ok=False)
    usage = lib.show("adder").usage
    assert (usage.calls, usage.errors, usage.last_used_ms) == (2, 1, clock.now)
    assert lib.list()[0].usage.calls == 2


def test_tampered_source_refused(tmp_path: Path) -> None:
    lib = ToolLibrary(tmp_path, Clock())
    spec = SessionTools().create("c", "adder", "", SRC).tool
    assert spec is not None
    lib.save(spec)
    lib.load_verified("adder")
    (tmp_path / "me.adder.py").write_text(SRC.replace("a + b", "a - b"))
    with pytest.raises(IntegrityError):
        lib.load_verified("adder")


@aio
async def test_call_saved(runner: SandboxRunner, tmp_path: Path, workspace: Path) -> None:
    lib = ToolLibrary(tmp_path / "tools", Clock())
    spec = SessionTools().create("c", "adder", "", SRC).tool
    assert spec is not None
    lib.save(spec)
    asked: list[tuple[str, ...]] = []

    def from_vault(vault: dict[str, str]) -> Reveal:
        async def reveal(names: tuple[str, ...]) -> dict[str, str]:
            asked.append(names)
            return {n: vault[n] for n in names if n in vault}

        return reveal

    full = from_vault({"poke_api_key": "abcd", "other": "never passed"})
    res = (await call_saved(runner, lib, "me.adder", {"a": 1}, workspace, full)).result
    assert res.ok and res.result == 7
    assert asked == [("poke_api_key",)]  # the vault is asked for declared names only
    res = (await call_saved(runner, lib, "me.adder", {"a": "x"}, workspace, full)).result
    assert res.error_kind == "runtime"
    assert lib.show("adder").usage.calls == 2 and lib.show("adder").usage.errors == 1
    empty = from_vault({})
    res = (await call_saved(runner, lib, "me.adder", {"a": 1}, workspace, empty)).result
    assert res.error_kind == "runtime" and "not available" in res.error_message
    (lib.directory / "me.adder.py").write_text(SRC + "\n# changed\n")
    res = (await call_saved(runner, lib, "me.adder", {"a": 1}, workspace, full)).result
    assert res.error_kind == "denied" and "hash" in res.error_message
    res = (await call_saved(runner, lib, "me.nothing", {}, workspace, full)).result
    assert res.error_kind == "denied"


@aio
async def test_undeclared_secret_is_not_passed(runner: SandboxRunner, workspace: Path) -> None:
    src = "def run() -> str:\n    '''d'''\n    return secret('other')\n"
    res = await runner.run(src, {}, workspace, secrets={"other": "x"})
    assert res.error_kind == "runtime" and "SECRETS" in res.error_message


def test_a_description_longer_than_a_line_is_refused_with_a_finding() -> None:
    """Every prompt's tool list shows it: a 5,000-character description is refused, as is
    a docstring whose first line is as long, and the model is told the bound."""
    tools = SessionTools()
    long = tools.create("chat1", "adder", "word " * 1000, SRC)
    assert not long.ok and long.findings[0].code == "N002"
    assert "the description has 4999 characters" in long.findings[0].message
    assert tools.get("chat1", "adder") is None
    by_doc = tools.create("chat1", "adder", "", SRC.replace("Add two numbers.", "a" * 400, 1))
    assert not by_doc.ok and "docstring" in by_doc.findings[0].message
    fits = tools.create("chat1", "adder", "x" * MAX_DESCRIPTION, SRC)
    assert fits.ok
