"""Fixtures of the audit tests."""

from audit_helpers import key_file, make_chain

__all__ = ["key_file", "make_chain"]
