"""Capability: memory topic files, the MEMORY.md index, the undo journal, and the
memory tools and commands."""
