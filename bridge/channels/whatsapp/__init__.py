"""WhatsApp through Meta's official Cloud API: one package, one row in the channel table.

`platform` (what shared code knows: `PLATFORM`), `signature` (X-Hub-Signature-256),
`payload` (the webhook's JSON as our own types), `render` (Markdown to WhatsApp's
formatting, split at 4096), `buttons` (one-tap offers as reply buttons or a list),
`client` (the Graph API over aiohttp, retries), `media` (files in, size and host
checked first), `store` (SQLite: ids already answered, the 24-hour window, what
became of sent messages), `reply` (one answer: read receipt, typing, text,
buttons, files, voice), `outbox` (proactive messages: in the window, as the
template, or waiting), `channel` (the webhook route and the dispatch).
"""
