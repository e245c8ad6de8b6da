"""httpx's command-line client is kept out of roost's processes.

`import httpx` runs `from ._main import main`: the module of the `httpx` command,
which imports click, pygments and rich's console at its top (about 60 modules; half
of httpx's import, 100-120 ms of CPU a process on a busy 2-core machine). rich and
click are installed here (the terminal channel; uvicorn, through the MCP SDK), so
httpx finds them, and every process that imports httpx pays it: a daemon with
Telegram (python-telegram-bot's requests are httpx clients), and every test process.
roost never runs httpx's command line.

`install()` (run by `bridge/__init__.py`, before anything imports httpx) marks
`httpx._main` as absent (`sys.modules[name] = None`, the import system's own way to
say so: importing it raises `ImportError`). httpx then defines the `main` it defines
when its command-line extras are not installed, which only prints how to install
them. Nothing else of httpx imports `_main`. A process that imported httpx before
`bridge` is left as it is.
"""

from __future__ import annotations

import sys

_MODULE = "httpx._main"


def install() -> None:
    if "httpx" not in sys.modules and _MODULE not in sys.modules:
        sys.modules[_MODULE] = None  # type: ignore[assignment]  # the import system's "absent"
