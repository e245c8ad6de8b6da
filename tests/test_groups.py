"""The xdist groups of tests/conftest.py: every test of a shared server is in its group."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.conftest import _group, misgrouped


@dataclass
class _Item:
    nodeid: str
    fixturenames: list[str]


def test_a_browser_test_outside_the_browser_group_is_named() -> None:
    items = [
        _Item("tests/spine/test_browser.py::test_a", ["browsers", "home"]),
        _Item("tests/spine/test_web_new_page.py::test_b", ["home", "browsers"]),
        _Item("tests/matrix/test_chat.py::test_c", ["synapse"]),
        _Item("tests/spine/test_mx.py::test_d", ["synapse"]),
        _Item("tests/spine/test_web.py::test_e", ["home"]),
    ]
    assert misgrouped(items) == [
        "tests/spine/test_web_new_page.py::test_b (takes `browsers`)",
        "tests/spine/test_mx.py::test_d (takes `synapse`)",
    ]


def test_the_web_pages_browser_files_are_in_the_browser_group() -> None:
    for path in (
        "tests/spine/test_web_account_switch.py",
        "tests/spine/test_web_page_chat_name_limit.py",
        "tests/spine/test_web_transcript_account.py",
        "tests/spine/test_web_transcript_jobs.py",
        "tests/spine/test_browser_look.py",
    ):
        assert _group(f"{path}::test_x") == "browser"


def test_the_files_starting_roost_in_an_mcp_clients_environment_are_one_group() -> None:
    """Each worker that runs one starts a sibling fork server for that environment: a file
    that uses `roost_env` (itself, through `stdio_params`, or through test_server_http's
    `serving`/`token`) outside the group costs a roost import more."""
    tests = Path(__file__).parent
    uses = ("roost_env(", "stdio_params(", "from tests.mcp.test_server_http import")
    found = sorted(
        path.relative_to(tests.parent).as_posix()
        for path in tests.rglob("test_*.py")
        if path != Path(__file__) and any(use in path.read_text(encoding="utf-8") for use in uses)
    )
    assert len(found) >= 5, found
    assert {path: _group(f"{path}::test_x") for path in found} == dict.fromkeys(
        found, "mcp-minimal-env"
    )
