"""The terminal channel: `roost chat` and `roost send` (prompt, rendering, history)."""
