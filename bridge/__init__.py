"""roost's daemon, in layers; each imports only from the layers below it
(checked by import-linter, `make lint`):

    cli           the `roost` command line
    app           the composition root: build, home, serve
    channels, llm adapters: chat platforms and model servers
    capabilities  audit, corrections, grading, loadout, memory, personal_tools, prompt,
                  screening, senses, skills, style
    core          config, tenants, access, pairing, routing, commands, turn, sessions
    types         messages, backend/tool interfaces, audit sink (import nothing)
"""

from bridge.aiohttp_tls import install as _install_aiohttp_tls
from bridge.dataclass_code import install as _install_dataclass_code
from bridge.forward_refs import install as _install_forward_refs
from bridge.httpx_cli import install as _install_httpx_cli
from bridge.regex_code import install as _install_regex_code

_install_dataclass_code()  # before any roost dataclass exists: see bridge/dataclass_code.py
_install_forward_refs()  # before pydantic makes its schema types: see bridge/forward_refs.py
_install_regex_code()  # before any roost module compiles a pattern: see bridge/regex_code.py
_install_aiohttp_tls()  # before anything imports aiohttp: see bridge/aiohttp_tls.py
_install_httpx_cli()  # before anything imports httpx: see bridge/httpx_cli.py
