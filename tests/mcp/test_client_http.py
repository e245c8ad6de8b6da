"""roost's MCP client over streamable HTTP (`[tenants.T.mcp.NAME] url = ...`), against a
real server: `roost mcp --tenant alice --http 127.0.0.1:0` as a subprocess, with the
bearer token in `headers`. Each server's session has an HTTP client of its own, and
httpx2 reads the whole certificate bundle for every client it makes (about 29 ms of
CPU); the sessions share one verifying context a process (`bridge.mcp.client.verified`),
which must verify exactly as httpx2's default does."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import mcp_types as types
import pytest

from bridge.core.config_sections import McpServerSettings
from bridge.mcp.client import LinkError, ServerLink, verified
from tests.mcp.conftest import CSV_SUM, save_tool
from tests.mcp.test_server_http import serving, token
from tests.tls_checks import assert_verifies


@pytest.fixture
def bundle_reads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every certificate bundle read into a TLS context from now on (this process's
    shared context is made first)."""
    verified()
    reads: list[object] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        reads.append(args)
        load(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    return reads


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_the_shared_context_verifies_like_httpx2() -> None:
    assert verified() is verified()  # made once
    assert_verifies(verified())


async def test_two_sessions_list_and_call_and_read_no_bundle(
    home: Path, config: Path, tmp_path: Path, bundle_reads: list[object]
) -> None:
    save_tool(home, "alice", "csv_sum", CSV_SUM)
    workspace = home / "tenants" / "alice" / "global" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "spend.csv").write_text("item,amount\ntea,3.5\ncake,4\n")
    secret = token(home, config, "alice")
    with serving(home, config, "alice") as url:
        settings = McpServerSettings(url=url, headers={"Authorization": f"Bearer {secret}"})
        links = [ServerLink(t, "mine", settings, tmp_path / "mcp") for t in ("one", "two")]
        try:
            for link in links:  # two sessions, each with an HTTP client of its own
                await link.ready()
                assert [t.name for t in link.tools] == ["me__csv_sum"]
                result = await link.call("me__csv_sum", {"path": "spend.csv"})
                assert json.loads(_text(result)) == {"total": 7.5}
        finally:
            for link in links:
                await link.aclose()
    assert bundle_reads == []


async def test_a_wrong_token_is_a_start_failure_the_model_can_read(
    home: Path, config: Path, tmp_path: Path
) -> None:
    token(home, config, "alice")
    with serving(home, config, "alice") as url:
        settings = McpServerSettings(
            url=url, headers={"Authorization": "Bearer nope"}, start_timeout_s=30
        )
        link = ServerLink("alice", "mine", settings, tmp_path / "mcp")
        try:
            with pytest.raises(LinkError) as failed:
                await link.ready()
        finally:
            await link.aclose()
    assert failed.value.kind == "start"
    assert "'mine' is not available" in str(failed.value)
    assert "nope" not in str(failed.value)
