"""aiohttp's two default TLS contexts get their CA certificates at the first HTTPS request.

`aiohttp.connector` makes two `ssl.SSLContext`s when it is imported (one that
verifies, one that does not) and loads the system's CA bundle into each
(`set_default_verify_paths`): about 150 certificates parsed twice, 70-95 ms of
CPU in every process that imports aiohttp (aiohttp's share of `roost serve`'s
imports went from 128-151 to 52-55 ms of CPU without it). `roost serve`
imports aiohttp for the web channel's server, which needs no client TLS at
all, and `aiohttp.web` cannot be had without `aiohttp.connector` (the
package's `__init__` imports the client). The daemon's clients (a model over
HTTPS) need the certificates later, if ever.

`install()` (run by `bridge/__init__.py`, before anything imports aiohttp)
puts a finder on `sys.meta_path` for that one module. While the module runs,
a `set_default_verify_paths` called from aiohttp's own `_make_ssl_context` is
noted instead of done; any other caller (another thread, another module) gets
the real method. The contexts are the same objects with the same options;
`TCPConnector._get_ssl_context` is wrapped so that the certificates are loaded
(once, under a lock) just before it first hands out one of the two contexts,
so no TLS handshake ever runs with an empty trust store. That first HTTPS
request pays the load (tens of ms, blocking its event loop once; aiohttp does
it at import for that reason).

It stays out of the way when it cannot be exact: if the module does not look
as expected (another aiohttp version: the two contexts are not the ones noted,
or `TCPConnector._get_ssl_context` is missing), the noted contexts get their
certificates at once, as aiohttp would have done. A process that imported
aiohttp before `bridge` is untouched.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # ssl and importlib.abc are imported when aiohttp is: `roost send` needs neither
    import ssl
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec

_MODULE = "aiohttp.connector"
_MAKER = "_make_ssl_context"
_CONTEXTS = ("_SSL_CONTEXT_VERIFIED", "_SSL_CONTEXT_UNVERIFIED")


class _Pending:
    """The contexts whose certificates are not loaded yet; `load()` loads them once
    (with `real`, the unpatched `SSLContext.set_default_verify_paths`)."""

    def __init__(self, real: Callable[[ssl.SSLContext], None]) -> None:
        self.real = real
        self.contexts: list[ssl.SSLContext] = []
        self.lock = threading.Lock()

    def load(self) -> None:
        with self.lock:  # emptied only once all are loaded: no caller gets one half-made
            for context in self.contexts:
                self.real(context)
            self.contexts.clear()


def _called_by_maker(frame: FrameType | None) -> bool:
    """A frame among the few above is aiohttp.connector's `_make_ssl_context`
    (directly, or through `ssl.create_default_context` → `load_default_certs`)."""
    for _ in range(4):
        if frame is None:
            return False
        if frame.f_code.co_name == _MAKER and frame.f_globals.get("__name__") == _MODULE:
            return True
        frame = frame.f_back
    return False


class _Loader:
    """Runs aiohttp.connector with its import-time certificate loads noted, then wraps
    `TCPConnector._get_ssl_context` to do them on first use."""

    def __init__(self, inner: Loader) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ...: the inner loader's
        return getattr(self.inner, name)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        import ssl  # aiohttp.connector imports it next

        real = ssl.SSLContext.set_default_verify_paths
        pending = _Pending(real)
        importer = threading.get_ident()

        def set_default_verify_paths(context: ssl.SSLContext) -> None:
            if threading.get_ident() == importer and _called_by_maker(sys._getframe(1)):
                pending.contexts.append(context)
            else:
                real(context)

        ssl.SSLContext.set_default_verify_paths = set_default_verify_paths  # type: ignore[method-assign,assignment]
        try:
            self.inner.exec_module(module)
        finally:
            ssl.SSLContext.set_default_verify_paths = real  # type: ignore[method-assign]
        if not _defer(module, pending):
            pending.load()  # not the module we know: as aiohttp would have done


def _defer(module: ModuleType, pending: _Pending) -> bool:
    """Wrap the connector's context getter to load `pending` first; False (nothing
    wrapped) unless the noted contexts are exactly the module's two defaults."""
    contexts = [getattr(module, name, None) for name in _CONTEXTS]
    connector = getattr(module, "TCPConnector", None)
    original = getattr(connector, "_get_ssl_context", None)
    noted = {id(c) for c in pending.contexts}
    if original is None or len(noted) != 2 or {id(c) for c in contexts} != noted:
        return False
    deferred = frozenset(noted)

    def _get_ssl_context(self: Any, req: Any) -> Any:
        context = original(self, req)
        if id(context) in deferred and pending.contexts:
            pending.load()
        return context

    connector._get_ssl_context = _get_ssl_context  # type: ignore[union-attr]
    return True


class _Finder:
    """Finds aiohttp.connector through the other finders and wraps its loader."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != _MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)  # type: ignore[assignment]
                return spec
        return None


def install() -> bool:
    """Put the finder first on `sys.meta_path`; False when aiohttp.connector is
    already imported (nothing to defer) or the finder is there."""
    if _MODULE in sys.modules or any(isinstance(f, _Finder) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, _Finder())
    return True
