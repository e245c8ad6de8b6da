"""Shared fixtures: a temporary ROOST_HOME and a scripted in-process backend."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bridge.app.build import Roost
from bridge.core.config import Settings, load_settings
from bridge.types.backend import (
    BackendError,
    Finish,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolCallRequest,
)
from bridge.types.messages import Inbound

# Folders whose tests share one server started per session (a real PostgreSQL, a real
# Synapse): under pytest-xdist (`make test`) each folder's tests go to one worker, so
# each server starts once, not once per worker. xdist's own `xdist_group` marks cannot
# do it with pytest 9.2 (xdist 3.8 renames a grouped item's node id, which is now
# read-only), so the grouping is a scheduler: every other test is its own unit.
# tests/storage/ is split in STORAGE_SHARDS groups by file (each starts its own
# PostgreSQL, about a second): as one group it had become the run's longest worker.
# The browser tests (tests/spine/test_browser*.py and the web page's files below: every
# test that takes `browsers`) share one chromium per worker (tests/spine/conftest.py,
# about 2 s of CPU to launch): one group, one launch. A test that takes a group's server
# (GROUP_FIXTURES) from a file outside the group stops the run at collection.
# tests/mcp's files that start roost in an MCP client's minimal environment (no LANG, no
# SSL_CERT_*: tests/mcp/conftest.py's `roost_env`) are one group too: such a start forks
# from a sibling fork server of that environment (tests/forkserver.py), an import of roost
# (about 1.5 s of CPU) on every worker that got one of them.
SERVER_GROUPS = {
    "tests/storage/": "postgres",
    "tests/matrix/": "synapse",
    "tests/mcp/test_server_": "mcp-minimal-env",
    "tests/mcp/test_partial_tree.py": "mcp-minimal-env",
    "tests/mcp/test_client_http.py": "mcp-minimal-env",
    "tests/spine/test_browser": "browser",
    "tests/spine/test_web_account_switch.py": "browser",
    "tests/spine/test_web_page_chat_name_limit.py": "browser",
    "tests/spine/test_web_transcript_account.py": "browser",
    "tests/spine/test_web_transcript_jobs.py": "browser",
}
STORAGE_SHARDS = 2
# Files whose tests share a module-scoped process that is dear to start: each such file
# is one unit, so that process starts once, not once on every worker that got one of its
# tests (each worker starts a module's fixture for its first test of that module).
# tests/forge/: a sandbox helper per module (conftest.py, a `python -I` start-up and its
# zygote); test_readyz: a PostgreSQL; test_decoders: a decoder pool (its spare imports
# Pillow and pypdf).
FILE_GROUPS = ("tests/forge/", "tests/spine/test_readyz.py", "tests/senses/test_decoders.py")


def _group(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    for folder, group in SERVER_GROUPS.items():
        if nodeid.startswith(folder):
            if group == "postgres":
                return f"{group}-{zlib.crc32(path.encode()) % STORAGE_SHARDS}"
            return group
    if nodeid.startswith(FILE_GROUPS):
        return path
    return nodeid


def _rewrite(config: pytest.Config, files: list[Path]) -> None:
    """Write the assertion-rewritten byte code of `files` where pytest's import hook reads
    it (`__pycache__/*.cpython-311-pytest-<version>.pyc`), those already there left alone.
    Each file is read, rewritten and compiled by pytest's own functions, exactly as its
    import would: only who does it, and when, differ."""
    from _pytest.assertion import rewrite

    state = config.stash[rewrite.assertstate_key]
    for fn in files:
        cache = rewrite.get_cache_dir(fn)
        pyc = cache / (fn.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(fn, pyc) is None and rewrite.try_makedirs(cache):
            source_hash, code = rewrite._rewrite_test(fn, config)
            rewrite._write_pyc(state, code, source_hash, pyc)


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, the controller rewrites every test module before the workers
    start, in two processes (the machine's two cores). Otherwise, in a fresh clone, the
    four workers, which each collect every test module at the same moment, each rewrote
    all 500 of them (about 5 s of CPU a worker, 22 s of the two cores in all). A module
    changed later is rewritten by its import, as before; nothing is written when byte
    code is not (PYTHONDONTWRITEBYTECODE)."""
    import os
    import sys

    config.addinivalue_line(
        "markers",
        "fresh_roost: every roost process the test starts is a fresh interpreter, never one "
        "forked from the pre-imported server (tests/forkserver.py)",
    )
    if (
        sys.dont_write_bytecode
        or hasattr(config, "workerinput")
        or not config.getoption("numprocesses", None)
        or config.getoption("assertmode") != "rewrite"
    ):
        return
    files = sorted(Path(__file__).parent.rglob("test_*.py"))
    files += sorted(Path(__file__).parent.rglob("conftest.py"))
    children = []
    for share in range(2):
        pid = os.fork()
        if pid == 0:  # a child: its share, then out, whatever happened
            code = 1
            try:
                _rewrite(config, files[share::2])
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)  # a failed child costs only speed: the workers rewrite its share


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ServerGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    return ServerGroups(config, log)


# Folders whose tests are long (real servers, daemons, browsers), run first: the workers
# hand out tests in collection order, and a long test among the last would leave the
# other workers idle at the end. Everything else keeps its order, after these.
LONG_FIRST = (
    "tests/matrix/",
    "tests/storage/",
    "tests/spine/",
    "tests/mcp/",
    "tests/telegram/",
    "tests/whatsapp/",
    "tests/senses/",
    "tests/recall/",
    "tests/schedule/",
)


def _long_rank(item: pytest.Item) -> int:
    for rank, folder in enumerate(LONG_FIRST):
        if item.nodeid.startswith(folder):
            return rank
    return len(LONG_FIRST)


# Each shared server's fixture and its group: a test that takes one must be in that group,
# or its worker starts the server again for it (a browser per stray file took ~2 s of CPU).
GROUP_FIXTURES = {"browsers": "browser", "synapse": "synapse"}


def misgrouped(items: list[Any]) -> list[str]:
    """The node ids of `items` (each with `nodeid` and `fixturenames`) that take a shared
    server's fixture but are not in its group, each with the fixture's name."""
    out = []
    for item in items:
        for fixture, group in GROUP_FIXTURES.items():
            if fixture in item.fixturenames and _group(item.nodeid) != group:
                out.append(f"{item.nodeid} (takes `{fixture}`)")
    return out


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_long_rank)  # stable: within a folder, the order is unchanged
    stray = misgrouped(items)
    if stray:
        raise pytest.UsageError(
            "tests outside their server's group (add their file to SERVER_GROUPS in "
            "tests/conftest.py): " + ", ".join(stray)
        )


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection left (every test module, roost and its libraries imported, 8,000
    items: about 200,000 objects a worker) is moved out of the garbage collector's reach
    (`gc.freeze`), after one collection of what is garbage already: it lives to the end
    of the session anyway, and each full collection during the tests scanned all of it
    again (about 0.1 s of CPU each; the collector's CPU fell from 2.3 to 1.6 s in a
    1,224-test run in one process). Objects the tests make are collected as before."""
    import gc

    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def roost_fork_server() -> Iterator[Any]:
    """The `roost` processes of this worker's tests fork from one pre-imported server
    (tests/forkserver.py: started at the first such process, stopped here); none with
    ROOST_TEST_FRESH=1."""
    import os

    from tests import forkserver

    if os.environ.get("ROOST_TEST_FRESH") == "1":
        yield None
        return
    # the session's environment, not the one a test has changed when the first start comes
    log = os.environ.get("ROOST_TEST_FORKSERVER_LOG")
    server = forkserver.ForkServer(log=log, env=dict(os.environ))
    forkserver.install()
    forkserver.current = server
    try:
        yield server
    finally:
        forkserver.current = None
        forkserver.uninstall()
        server.stop()


@pytest.fixture(autouse=True)
def fresh_roost(request: pytest.FixtureRequest, roost_fork_server: Any) -> Iterator[None]:
    """A test marked `fresh_roost` starts every roost process as a fresh interpreter."""
    from tests import forkserver

    if roost_fork_server is None or request.node.get_closest_marker("fresh_roost") is None:
        yield
        return
    forkserver.current = None
    try:
        yield
    finally:
        forkserver.current = roost_fork_server


class ScriptedBackend:
    """A zero-latency model: each request pops the next step of a script.

    A step is a string (the answer, streamed in pieces), a list of
    (name, arguments-json) tool calls, a BackendError to raise, or a callable
    that receives the request and returns one of those.
    """

    name = "scripted"

    def __init__(self, *steps: object, delay: float = 0.0) -> None:
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []
        self.delay = delay

    def describe(self) -> str:
        return "scripted test model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        step: object = self.steps.pop(0) if self.steps else "ok"
        if callable(step):
            step = step(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        if isinstance(step, BackendError):
            raise step
        if isinstance(step, list):
            for i, (name, args) in enumerate(step):
                yield ToolCall(ToolCallRequest(f"call_{len(self.requests)}_{i}", name, args))
            yield Finish("tool_calls")
            return
        text = str(step)
        for start in range(0, len(text), 7):
            yield TextDelta(text[start : start + 7])
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ROOST_HOME; no config file and no ROOST_* variables leak in."""
    import os

    for key in list(os.environ):
        if key.startswith("ROOST_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("ROOST_CONFIG", str(tmp_path / "roost.toml"))
    # the outcome judge would ask the scripted model in the background: off unless a test
    # turns it on (tests/grading/test_judge_*.py)
    monkeypatch.setenv("ROOST_GRADING__JUDGE_DAILY_CAP", "0")
    (tmp_path / "roost.toml").write_text("")
    path = tmp_path / "home"
    monkeypatch.setenv("ROOST_HOME", str(path))
    return path


@pytest.fixture
def settings(home: Path) -> Settings:
    return load_settings()


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


Factory = Callable[..., object]


def web_msg(text: str, n: int, chat: str = "c1") -> Inbound:
    """A web message from the local person with message id `m<n>`."""
    return Inbound("web", "local", chat, text, f"m{n}")


@pytest.fixture
async def roost(settings: Settings, clock: Clock) -> AsyncIterator[Roost]:
    """A roost built in process with an empty ScriptedBackend and a MemoryAudit."""
    from bridge.app.build import build
    from bridge.types.audit_sink import MemoryAudit

    made = await build(settings, backend=ScriptedBackend(), audit=MemoryAudit(), clock=clock)
    yield made
    await made.aclose()


@pytest.fixture(autouse=True)
def audit_fields_agree(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[None]:
    """Every event a test makes roost emit names only fields the audit schema knows.

    The chain drops a field its schema does not know (and logs "refused fields
    [], N unknown"), so an emitter and the schema that disagree lose data
    silently. Every sink a test uses is watched: the in-memory one and the real
    chain's `sanitize`. A test that emits stray fields on purpose is marked
    `stray_audit_fields`.
    """
    from bridge.audit import chain as chain_module
    from bridge.audit.schema import SCHEMAS
    from bridge.types.audit_sink import MemoryAudit

    strays: list[tuple[str, list[str]]] = []

    def look(event: str, details: Mapping[object, object]) -> None:
        known = SCHEMAS.get(event)
        extra = sorted(str(k) for k in details if known is None or k not in known)
        if extra:
            strays.append((event, extra))

    remember = MemoryAudit.emit

    async def emit(
        self: MemoryAudit, event: str, tenant: str | None, details: Mapping[str, object]
    ) -> None:
        look(event, details)
        await remember(self, event, tenant, details)

    fit = chain_module.sanitize

    def sanitize(
        event: str, tenant: str | None, details: Any, namer: Any, schemas: Any = None
    ) -> dict[str, object]:
        look(event, details)
        return fit(event, tenant, details, namer, schemas)

    monkeypatch.setattr(MemoryAudit, "emit", emit)
    monkeypatch.setattr(chain_module, "sanitize", sanitize)
    yield
    if strays and request.node.get_closest_marker("stray_audit_fields") is None:
        pytest.fail(f"audit fields the schema does not know: {sorted(set(map(str, strays)))}")
