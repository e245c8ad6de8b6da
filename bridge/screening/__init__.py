"""Capability: what memory, the profile and audience notes refuse to store: secrets
(provider shapes and context), prompt injections, hidden Unicode."""
