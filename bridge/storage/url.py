"""A PostgreSQL URL as roost takes it (`[database] url`): checked, shown without its password.

The URL is a secret (it may carry the password): `redact` is the only form of
it that reaches a message, a log line or `roost doctor`. `with_password`
puts a password read from `[database] password_file` into a URL without one.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

SCHEMES = ("postgresql://", "postgres://")


def check(url: str) -> None:
    """ValueError (naming no secret) when `url` is no PostgreSQL URL roost can use."""
    if not url.startswith(SCHEMES):
        raise ValueError("must start with postgresql:// (SQLite needs no url: leave it out)")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise ValueError(
            "not a valid URL (postgresql://user[:password]@host[:port]/dbname)"
        ) from None
    if not parts.path.strip("/") and "dbname=" not in parts.query:
        raise ValueError("names no database (postgresql://user@host/dbname)")


def redact(url: str) -> str:
    """The URL without its password (it may reach a log or an error message)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + host))


def password_of(url: str) -> str | None:
    return urlsplit(url).password


def with_password(url: str, password: str) -> str:
    """`url` (which has none) with `password`, quoted for the URL."""
    parts = urlsplit(url)
    user, host = parts.netloc.rsplit("@", 1) if "@" in parts.netloc else ("", parts.netloc)
    return urlunsplit(parts._replace(netloc=f"{user}:{quote(password, safe='')}@{host}"))
