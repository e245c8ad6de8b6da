"""`net` as the module proxies list it (forge.modules): its functions refuse, since
only a sandbox child has a channel to the broker; each child binds its own."""

from forge.net_client import NetError, Response, make_net_module

_unbound = make_net_module(None)
get = _unbound.get
post = _unbound.post

__all__ = ["NetError", "Response", "get", "post"]
