"""The user-style learner: loadout layer 2, the bullets of prompt block 8.

A daily sweep (`roost style sweep`, systemd/roost-style.timer) reads the
`skill.outcome_graded` events of the audit chain, proposes a flag-shaped
bullet for a skill that keeps drawing corrections, has a separate model call
judge it, tests it in a per-bullet shadow A/B for three days, promotes or
rejects it, and rolls live bullets back when their skill keeps failing.
See docs/style.md. Modules: `rules` (thresholds and pure decisions),
`records` (reading the chain), `aggregate` (signals and cohorts), `store`
(SQLite), `judge`, `sweep`, `view` (the loadout's StyleView), `cli`.
"""
