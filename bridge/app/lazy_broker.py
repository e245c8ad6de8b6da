"""The sandbox's network broker, made when a tool first asks for the network.

`forge.broker.Broker` brings aiohttp with it (about a third of a command's
start-up on a small machine). Most runs of `roost send` and `roost chat` never
run a tool that declares `NETWORK`, so the composition root hands the sandbox
runner this stand-in: the first `open_call` imports and builds the real
broker (`make`), and every call after goes to that one instance, so its rate
limits hold across calls as before.
"""

from __future__ import annotations

from collections.abc import Mapping

from bridge.app.lazy import Lazy
from forge.net_call import NetBroker, NetCall, OnHttp
from forge.net_rules import HostRule
from forge.protocol.net import NetAnswer, NetRequest


class LazyBroker(Lazy[NetBroker]):
    """A `NetBroker` that builds the real one on first use."""

    def open_call(
        self,
        *,
        tool: str,
        network: tuple[HostRule, ...],
        secrets: Mapping[str, str],
        deadline: float,
        rate_key: str,
        on_http: OnHttp | None,
    ) -> NetCall:
        return self.real.open_call(
            tool=tool,
            network=network,
            secrets=secrets,
            deadline=deadline,
            rate_key=rate_key,
            on_http=on_http,
        )

    async def fetch(self, call: NetCall, request: NetRequest) -> NetAnswer:
        return await self.real.fetch(call, request)

    async def close_call(self, call: NetCall) -> None:
        await self.real.close_call(call)
