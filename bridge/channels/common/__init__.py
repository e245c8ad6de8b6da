"""What chat platforms share: rendering Markdown to text and spans, splitting by a limit
without cutting a word or an emoji, retries with backoff.

For now the text machinery is Telegram's (pure functions in `telegram_render`,
`telegram_split`, `telegram_entities`), re-exported by `common.text`; a
platform package imports it from here, never from another platform.
"""
