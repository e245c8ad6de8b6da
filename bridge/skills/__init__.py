"""Skills: per-tenant procedures in `skills/<name>.md`, graded by outcomes.

`files` reads them, `grades` keeps their grades in SQLite, `usage` decides
which skills a reply used (and which a request was about), `observer` grades
after each turn and from the next message, `view` feeds prompt block 7,
`commands` holds /skills and /skill. skill-forge: `tool` (the model's
`skill_propose`), `proposals` (per-chat proposals, checks, diffs, the
small-edit rule), `forge` (save, remove, undo, audit), `journal` (undo).
"""
