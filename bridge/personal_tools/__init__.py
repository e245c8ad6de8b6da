"""Personal tools (`me.*`) in a running roost: the bridge side of the forge.

`catalog` finds each tenant's saved tools cheaply every turn, `source`
offers `forge_create` and the `me.*` tools to the model and runs them in the
sandbox, `commands` holds /tool and /tools, `view` feeds prompt block 9.
"""
