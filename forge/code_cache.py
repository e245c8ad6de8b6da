"""The helper's cache of compiled tools: marshalled code objects by source hash.

It lives in the helper, which serves one workspace (one tenant), so it holds
only that tenant's tools; a child receives only its own call's code.
"""

from __future__ import annotations

import hashlib
import marshal
from collections import OrderedDict

from forge.policy.compile import compile_tool

CACHE_SIZE = 256


class CodeCache:
    def __init__(self, restricted: bool, size: int = CACHE_SIZE) -> None:
        self.restricted = restricted
        self.size = size
        self._codes: OrderedDict[str, bytes] = OrderedDict()

    @staticmethod
    def digest(source: str) -> bytes:
        """The cache's key of `source` (its sha256), as bytes."""
        return hashlib.sha256(source.encode("utf-8", "surrogatepass")).digest()

    def known(self, key: str) -> bytes | None:
        """The code cached under `key` (hex sha256 of its source), if it is."""
        return self._codes.get(key)

    def compile(self, source: str) -> bytes:
        """The marshalled code object of `source`, compiled once per source text
        (raises CompileFailed)."""
        key = self.digest(source).hex()
        code = self._codes.get(key)
        if code is None:
            code = marshal.dumps(compile_tool(source, self.restricted))
            self._codes[key] = code
            if len(self._codes) > self.size:
                self._codes.popitem(last=False)
        else:
            self._codes.move_to_end(key)
        return code
