"""Capability: reminders, recurring jobs and the outbox that delivers them."""
