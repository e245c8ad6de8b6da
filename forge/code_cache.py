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

    def compile(self, source: str) -> bytes:
        """The marshalled code object of `source`, compiled once per source text
        (raises CompileFailed)."""
        key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        code = self._codes.get(key)
        if code is None:
            code = marshal.dumps(compile_tool(source, self.restricted))
            self._codes[key] = code
            if len(self._codes) > self.size:
                self._codes.popitem(last=False)
        else:
            self._codes.move_to_end(key)
        return code
