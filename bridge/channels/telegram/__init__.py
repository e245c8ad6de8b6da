"""The Telegram channel (python-telegram-bot): polling or webhook, replies, files."""
