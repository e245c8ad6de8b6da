"""The verified TLS context the HTTP clients of the channels share, made once a process.

httpx makes a new `ssl.SSLContext` for every client, and each one reads the whole
certificate bundle. The Telegram channel holds two clients (sending, and
`getUpdates`), made again at every start of the channel: making a channel took 57 ms
of CPU on a quiet 2-core machine, 0.6-1.1 ms with the shared context; the tests make
hundreds. `verified()` makes the context once, the way httpx would
(`httpx.create_ssl_context()`: certifi's bundle, or `SSL_CERT_FILE` /
`SSL_CERT_DIR`; hostnames checked, certificates required), and hands out that same
context after. An `SSLContext` is meant to be shared by many connections and
threads (aiohttp keeps one a process the same way); nothing here changes it once made.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def verified() -> ssl.SSLContext:
    """The process's verifying client context (made at the first call)."""
    return httpx.create_ssl_context()
