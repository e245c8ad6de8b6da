"""Our RestrictedPython policy (layer 2 of 4), in three parts as RestrictedPython
itself separates them: `compile` (the restricted compile), `guards` (the run-time
guards), `globals` (the fresh namespace of one run). Neither is the boundary on
its own; the process is (forge.confine).
"""
