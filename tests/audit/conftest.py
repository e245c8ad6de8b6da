"""Fixtures of the audit tests."""

from audit_helpers import make_chain

__all__ = ["make_chain"]
