"""Channels: one module per chat platform (web, cli, telegram).

`ChannelStartError` is what a channel raises when it cannot start (a port in
use, a rejected bot token); the CLI prints its message, not a traceback.
"""


class ChannelStartError(Exception):
    """A channel could not start; the message says why and what to do."""
