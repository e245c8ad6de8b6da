"""Layer 1, the core: config, tenants, access and pairing, routing, commands, the turn
and agent loop, sessions, and the small primitives (locks, atomic writes, file cache).

The core imports only `bridge.types`; it never imports a capability, a channel,
a backend, aiohttp or telegram.
"""
