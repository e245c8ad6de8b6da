"""Tests of the model backends (bridge/llm) and the fake OpenAI server."""
