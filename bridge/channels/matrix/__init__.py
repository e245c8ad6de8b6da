"""Matrix: a bot account on a homeserver; one package, one row in the channel table.

`platform` (what shared code knows: `PLATFORM`), `api` (the client-server
API through mautrix's HTTP layer, retries on 429/5xx), `events` (a `/sync`
answer as messages, invites and leaves), `render` (Markdown to `body` +
`formatted_body`, split), `send` (answers, streaming by `m.replace` edits,
files, voice), `media` (files in, size checked first), `reply` (one
answer), `store` (SQLite: the sync token, each person's direct room),
`outbox` (proactive messages), `channel` (the sync loop and the dispatch),
`make` (the channel from `[matrix]`).
"""
