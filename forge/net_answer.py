"""What a tool sees of a response, built in one place so that every field of
it passes the masker (issue 21, item 6): the status (a number), each header's
NAME and value, the body text, the final URL, and a refusal's text. Vault values
the call holds are replaced by `[vault:name]` in every spelling a server echoes
without being asked to transform them (forge.net_rules.spellings: as is,
URL-, JSON-, Python- and HTML-escaped, hex, base64), regardless of case (header
and host names are case-blind and arrive lower-cased; a server may re-case what
it echoes).

The body is masked twice: its raw BYTES before they are decoded (each spelling in
UTF-8, the value in UTF-16, UTF-32 and Latin-1: `net_rules.byte_spellings`),
then the decoded text. The charset label is the server's, or the tool's through
a reflecting endpoint: a value echoed as UTF-8 under `charset=utf-16-le` decoded
to unrelated characters that `str.encode("utf-16-le")` turned back into the value
(atk3 F1). The agent loop masks again, in every spelling it knows, before
anything reaches the model; what neither can see (a value the server transforms
otherwise: encrypted, split, base64 inside a longer blob ...) is the limit
docs/security.md states.
"""

from __future__ import annotations

from collections.abc import Mapping

from forge.net_rules import mask, mask_bytes
from forge.protocol.net import NetAnswer


class RawResponse:
    """A response as the broker read it (never handed to a tool as is)."""

    __slots__ = ("body", "charset", "headers", "status", "url")

    def __init__(
        self, status: int, headers: list[tuple[str, str]], body: bytes, charset: str, url: str
    ) -> None:
        self.status, self.headers, self.body, self.charset, self.url = (
            status,
            headers,
            body,
            charset,
            url,
        )

    def headers_get(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)

    def text(self, secrets: Mapping[str, str]) -> str:
        """The body as text: its bytes masked, then decoded with its charset."""
        body = mask_bytes(self.body, secrets)
        try:
            return body.decode(self.charset, errors="replace")
        except (LookupError, ValueError):  # no text codec; idna/punycode take no "replace"
            return body.decode("utf-8", errors="replace")


def tool_answer(raw: RawResponse, secrets: Mapping[str, str]) -> NetAnswer:
    """The answer a tool receives: every text field masked (the body's bytes too)."""
    headers = tuple((_mask(name, secrets), _mask(value, secrets)) for name, value in raw.headers)
    text = _mask(raw.text(secrets), secrets)
    return NetAnswer(True, raw.status, headers, text, _mask(raw.url, secrets))


def _mask(text: str, secrets: Mapping[str, str]) -> str:
    return mask(text, secrets, fold_case=True)


def refused_answer(error: str, secrets: Mapping[str, str]) -> NetAnswer:
    """A refusal: its fixed text, masked too (it may name a host)."""
    return NetAnswer(False, error=_mask(error, secrets))
