"""What a shared client TLS context must be, whichever HTTP library made it: the
library's own default, which verifies (tests/telegram/test_tls_shared.py,
tests/mcp/test_client_http.py)."""

from __future__ import annotations

import ssl


def assert_verifies(context: ssl.SSLContext) -> None:
    """Certificates required, host names checked, and certificate authorities loaded."""
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.get_ca_certs() or context.cert_store_stats()["x509_ca"] > 0
