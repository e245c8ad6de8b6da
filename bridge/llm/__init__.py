"""Model backends: one module per kind of model server.

`select.select_backend` picks one from configuration. `openai` speaks the
OpenAI chat-completions protocol (any compatible server); `offline` answers
that no model is configured. Import the module you need; importing this
package imports no backend.
"""
