"""httpx's command-line client stays out of roost's processes (bridge/httpx_cli.py),
asserted in fresh interpreters: with `bridge` imported first, as every `roost` command
does, `import httpx` loads none of click, pygments or rich's console and httpx still
makes a client; without it, the same import loads them (why the module exists)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fresh import python_c

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
if sys.argv[1] == "bridge":
    import bridge
import httpx
client = httpx.Client()
client.close()
print(json.dumps({m: m in sys.modules for m in ("click", "pygments", "rich.console")}))
"""


def loaded(first: str) -> dict[str, bool]:
    done = python_c(PROBE, first)
    return dict(json.loads(done.stdout))


def test_httpx_imported_after_bridge_leaves_its_command_line_out() -> None:
    assert loaded("bridge") == {"click": False, "pygments": False, "rich.console": False}


def test_httpx_alone_would_load_it() -> None:
    assert loaded("httpx") == {"click": True, "pygments": True, "rich.console": True}
