"""The web channel: the aiohttp page and its API (chats, streams, uploads, speech)."""
