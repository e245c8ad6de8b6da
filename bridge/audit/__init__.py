"""The unified audit hash chain: writer, redaction, verification (docs/audit.md)."""

from bridge.audit.chain import AuditChain
from bridge.audit.keys import HmacKeyError, load_hmac_key
from bridge.audit.redact import redact
from bridge.audit.store import ChainCorrupt
from bridge.audit.verify import VerifyResult, tail, verify

__all__ = [
    "AuditChain",
    "ChainCorrupt",
    "HmacKeyError",
    "VerifyResult",
    "load_hmac_key",
    "redact",
    "tail",
    "verify",
]
