"""The PostgreSQL backend: `PostgresDatabase` over an asyncpg pool."""

from bridge.storage.postgres.database import PostgresDatabase

__all__ = ["PostgresDatabase"]
