"""Capability: the nine-block system prompt: block pipeline, base prompts, the frozen
snapshot, the block table, and the view rows of blocks 7–9."""
