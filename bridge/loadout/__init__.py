"""The loadout: memory, profile, steering, vault, persona, audience and the nine-block prompt.

`bridge.app.loadout.Loadout` builds every part from the settings and the
database; the daemon asks it for the prompt source, the memory tools and the
chat command sets. Each part lives in its own small module.
"""
