"""Layer 0, the shared types: messages, the backend and tool interfaces, the audit sink.

Nothing here imports anything else from the project; every other layer may import it.
"""
