"""N12: a `net` call to a host written in the code that NETWORK does not declare
is a lint error (F048): the broker would refuse it on every call. A host computed
at run time stays the broker's matter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from forge.lint import lint


def tool(network: str, call: str) -> str:
    return (
        "import net\n"
        f"{network}\n\n"
        "def run(q: str = 'x') -> str:\n"
        '    """Fetch a page."""\n'
        f"    return {call}.text\n"
    )


def f048(source: str) -> list[str]:
    return [f.message for f in lint(source) if f.code == "F048"]


def test_the_newcomers_tool_is_refused_naming_host_declared_and_fix(tmp_path: Path) -> None:
    source = tool('NETWORK = ["example.com"]', 'net.get("https://evil.example/")')
    (message,) = f048(source)
    assert "'evil.example'" in message
    assert "not in NETWORK (example.com)" in message  # what it declares now
    assert "NETWORK = ['example.com', 'evil.example']" in message  # how to declare it
    assert "refused" in message
    path = tmp_path / "other.py"
    path.write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "forge", "lint", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "[F048]" in done.stdout, done


@pytest.mark.parametrize(
    ("network", "call", "host"),
    [
        ("", 'net.get("https://api.example.com/v1")', "api.example.com"),
        ('NETWORK = ["example.com"]', 'net.post(url="https://EVIL.example?x=1")', "evil.example"),
        ('NETWORK = ["example.com"]', 'net.get(f"https://evil.example/s?q={q}")', "evil.example"),
        ('NETWORK = ["example.com"]', 'net.get("https://evil.example" + "/" + q)', "evil.example"),
        ('NETWORK = ["example.com"]', 'net.get("https://example.com:8443/")', "example.com:8443"),
        ('NETWORK = ["example.com:8443"]', 'net.get("https://example.com/")', "example.com"),
    ],
)
def test_a_literal_host_not_declared_is_found(network: str, call: str, host: str) -> None:
    (message,) = f048(tool(network, call))
    assert f"host {host!r}" in message, message
    if not network:
        assert "(none declared)" in message and f"NETWORK = [{host!r}]" in message


@pytest.mark.parametrize(
    ("network", "call"),
    [
        ('NETWORK = ["example.com"]', 'net.get("https://example.com/x")'),
        ('NETWORK = ["Example.com"]', 'net.get("https://EXAMPLE.com")'),
        ('NETWORK = ["example.com:8443"]', 'net.get(f"https://example.com:8443/{q}")'),
        ('NETWORK = ["example.com"]', 'net.get("http://example.com/")'),  # port 80: declared
        # computed hosts: judged when the tool runs, not here
        ('NETWORK = ["example.com"]', 'net.get(f"https://{q}/")'),
        ('NETWORK = ["example.com"]', 'net.get("https://" + q)'),
        ('NETWORK = ["example.com"]', 'net.get(f"https://evil.example:{q}/")'),
        ('NETWORK = ["example.com"]', "net.get(q)"),
    ],
)
def test_declared_or_computed_hosts_are_not_findings(network: str, call: str) -> None:
    assert f048(tool(network, call)) == []
