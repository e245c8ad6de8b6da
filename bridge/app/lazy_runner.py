"""The sandbox runner, made when something first uses it.

`forge.runner` brings the sandbox's whole client side with it (the helper pool and
its processes, the confinement probes, the linter: about 25 modules, 2-3 % of a
command's start-up), and most runs of `roost send` and `roost chat` never run a
tool. The composition root hands out this stand-in: the first attribute asked of
it (`run`, `start`, `limits`, ...) imports `forge.runner` and builds the real
`SandboxRunner` (`make`), and every later one is that instance's, so one runner
serves the roost as before. `aclose()` of a runner never made has nothing to close.
`roost serve` starts it at its ready line (`bridge.app.serve.start_sandbox`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bridge.app.lazy import Lazy

if TYPE_CHECKING:
    from forge.runner import SandboxRunner  # noqa: F401 - named in the base class below


class LazyRunner(Lazy["SandboxRunner"]):
    """Stands for a `SandboxRunner`: every attribute is the real one's, made on first use."""

    async def aclose(self) -> None:
        if self.made:
            await self.real.aclose()

    def __getattr__(self, name: str) -> Any:
        # only names this class lacks get here (`run`, `start`, `limits`, ...)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real, name)
