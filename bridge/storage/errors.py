"""What the storage layer raises: driver exceptions never reach a store."""

from __future__ import annotations


class StorageError(Exception):
    """A statement failed (syntax, constraint, a type the backend refused, ...)."""


class IntegrityError(StorageError):
    """A unique, primary-key, check or foreign-key constraint refused the write."""


class DatabaseUnavailable(StorageError):
    """The database server went away mid-run; the statement did not happen (or its
    transaction was rolled back). The backend reconnects in the background."""


class DatabaseUnreachable(StorageError):
    """The database could not be opened at start; the message names `database.url`."""


class MigrationError(StorageError):
    """The schema cannot be brought to this roost's version."""


class LeaseHeld(StorageError):
    """A lease (e.g. an instance name) is held by another live owner."""
