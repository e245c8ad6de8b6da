"""What looks like a credential but is meant to be shared (pure functions).

Public keys are not secrets: OpenSSH public keys (`ssh-ed25519 AAAA...`,
FIDO `sk-ssh-ed25519@openssh.com`), PGP public key blocks, X.509
certificates and certificate requests, age recipients (`age1...`), Nostr
`npub1...`, Stripe publishable keys (`pk_live_`, `pk_test_`), Mailgun
`pubkey-`, Lob `*_pub_`, Langfuse `pk-lf-`, PostHog `phc_` project keys.
Key names that hold identifiers, not secrets (`key_id`, `primary_key`,
`sort_key`, `public_key`, `site_key`, `token_type`, `keyboard`, ...) follow
gitleaks' generic-rule allowlist. A value that is a reference to where the
secret lives (`${DB_PASSWORD}`, `os.environ[...]`, `{{ secrets.X }}`,
`<password>`, `[value]`) is not the secret either.
"""

from __future__ import annotations

import math
import re
from collections import Counter

_PUBLIC_VALUE = re.compile(
    r"(?:ssh-(?:ed25519|rsa|dss)|ecdsa-sha2-nistp\d{3}|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@"
    r"|AAAA[BCE][0-9A-Za-z]{4}|age1[02-9ac-hj-np-z]{50}|npub1|pk_(?:live|test)_|pubkey-"
    r"|(?:live|test)_pub_|pk-lf-|phc_|-----BEGIN (?:PGP PUBLIC|PUBLIC|RSA PUBLIC|CERTIFICATE"
    r"|X509 CRL|NEW CERTIFICATE|CERTIFICATE REQUEST))"
)
_CODE_REF = re.compile(
    r"(?i)(?:os\.environ|os\.getenv|process\.env|env\(|getenv|system\.getenv|config\[|settings\."
    r"|env\.|secrets\.|vars\.|ENV\[|\$\{|\$\(|\{\{|%\(|@\{)"
)
# Last parts of a key that name an identifier or a setting, not a secret value.
_NOT_SECRET_LAST = frozenset(
    """id ids name names type types url uri urls endpoint endpoints host hostname domain
    version length len size count alias aliases path file files dir ref refs hash hashes
    prefix suffix format formats algorithm algorithms alg expiry expires expiration ttl
    timeout fingerprint kid index idx field fields column region location zone mode level
    label labels header headers param parameter policy scope scopes rotation hint hints
    user username email account issuer audience provider source store storetype vault""".split()  # noqa: SIM905
)
# Qualifiers anywhere in a key that make "key"/"token" a data-structure or public word.
_NOT_SECRET_PART = frozenset(
    """public pub publishable site primary foreign partition sort cache bucket natural
    composite unique lookup schema sequence hot turkey monkey donkey jwks csrf xsrf
    keyboard keystroke keycode keypress idempotency dedup dedupe recipient""".split()  # noqa: SIM905
)
_PLACEHOLDER_SHAPE = re.compile(r"(?i)^(?:x{4,}|\*{3,}|\.{3,}|<[^>]*>?|\[[^\]]*\]?|#+|-+|0{6,})$")
_PATH = re.compile(r"^(?:~?/|[A-Za-z]:\\|\.\.?/)[^\s]*[/\\]")


def public_value(value: str) -> bool:
    """A value that is published on purpose (a public key, a publishable key...)."""
    return _PUBLIC_VALUE.match(value.strip("\"'`")) is not None


def reference(value: str) -> bool:
    """A pointer to the secret (variable, template, lookup, placeholder), or a path."""
    v = value.strip("\"'`")
    return (
        _CODE_REF.match(v) is not None
        or _PLACEHOLDER_SHAPE.match(v) is not None
        or _PATH.match(v) is not None
        or v[:1] in "$%"
    )


def identifier_key(parts: list[str]) -> bool:
    """Key parts (lower-case) that name an identifier or setting, not a secret."""
    return bool(parts) and (parts[-1] in _NOT_SECRET_LAST or not _NOT_SECRET_PART.isdisjoint(parts))


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())
