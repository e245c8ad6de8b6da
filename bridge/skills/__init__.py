"""Skills: per-tenant procedures in `skills/<name>.md`, graded by outcomes.

`files` reads them, `grades` keeps their grades in SQLite, `usage` decides
which skills a reply used, `observer` grades after each turn and from the
next message, `view` feeds prompt block 7, `commands` holds /skills.
"""
