"""Storage: one small async `Database` protocol the stores use, and its two backends.

`protocol` (the interface the core and capabilities see: no driver type
leaks), `errors`, `placeholders` (one placeholder style, translated per
backend), `migrations` (versioned, per-backend SQL) + `schema` (the logical
list), `dialect` (the SQL bits that differ), `fts` (terms and the ranking
contract), `leases`, `tenants` (discovery for export and forget). The
backends are the packages `sqlite` and `postgres`; only the composition root
(`bridge.app`) names them (import-linter checks it).
"""
